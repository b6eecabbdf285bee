#!/usr/bin/env python3
"""A real torch.distributed.pipelining run of a small GPT, profiled, one Chrome trace per rank:
what `pipette import pytorch` reads (docs/import.md).

    torchrun --nproc-per-node 2 scripts/pytorch/trace_pipeline.py \
        --schedule Interleaved1F1B --microbatches 8 --out traces/
    pipette import pytorch traces/trace-rank*.json.gz --model gpt-tiny

Runs on CPUs with gloo (the default), or with NCCL and one GPU per rank (--backend nccl). Schedules:
GPipe, Interleaved1F1B, LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble, DualPipeV, or a pipette
CSV (--csv FILE: `pipette schedule NAME -p P -m M --format csv`; how a 1F1B run is profiled, since
Schedule1F1B names no ranges). Needs PyTorch >= 2.9 (the runtime's "PP:" ranges). Steps: --warmup
unprofiled, then --steps profiled (ProfilerStep#N ranges); AdamW after each step.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining import schedules
from torch.profiler import ProfilerActivity, profile
from torch.profiler import schedule as profiler_schedule

MULTI_STAGE = {
    "Interleaved1F1B": ("ScheduleInterleaved1F1B", "loop"),
    "LoopedBFS": ("ScheduleLoopedBFS", "loop"),
    "InterleavedZeroBubble": ("ScheduleInterleavedZeroBubble", "loop"),
    "ZBVZeroBubble": ("ScheduleZBVZeroBubble", "v"),
    "DualPipeV": ("ScheduleDualPipeV", "v"),
}


class Block(nn.Module):
    """A pre-norm decoder block: causal self-attention and a GELU MLP."""

    def __init__(self, width, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        n = x.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf"), device=x.device), diagonal=1)
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class Stage(nn.Module):
    """One pipeline stage of the GPT: the embedding on the first, the head on the last."""

    def __init__(self, index, stages, blocks, width, heads, vocab, seq):
        super().__init__()
        self.first, self.last = index == 0, index == stages - 1
        if self.first:
            self.embed = nn.Embedding(vocab, width)
            self.positions = nn.Parameter(torch.zeros(seq, width))
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(blocks))
        if self.last:
            self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocab)

    def forward(self, x):
        if self.first:
            x = self.embed(x) + self.positions[: x.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)) if self.last else x


def stage_indices(rank, ranks, v, layout):
    if layout == "v":  # rank r holds stages r and 2p-1-r
        return [rank, 2 * ranks - 1 - rank]
    return [rank + k * ranks for k in range(v)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedule", default="Interleaved1F1B",
                        choices=["GPipe", *MULTI_STAGE, "csv"])
    parser.add_argument("--csv", help="a pipette compute-only CSV (with --schedule csv)")
    parser.add_argument("--v", type=int, default=2, help="stages per rank (loop layouts)")
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--micro-batch-size", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--blocks-per-stage", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    parser.add_argument("--out", default="traces")
    args = parser.parse_args()

    dist.init_process_group(args.backend)
    rank, ranks = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) \
        if args.backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(1)

    if args.schedule == "GPipe":
        layout, v = "loop", 1
    elif args.schedule == "csv":
        layout, v = "loop", args.v  # a V-layout CSV names its own stages: give --v 2
    else:
        layout = MULTI_STAGE[args.schedule][1]
        v = 2 if layout == "v" else args.v
    stages_total = ranks * v
    mine = stage_indices(rank, ranks, v, layout)
    stages = []
    for index in mine:
        module = Stage(index, stages_total, args.blocks_per_stage, args.width, args.heads,
                       args.vocab, args.seq_len).to(device)
        stages.append(PipelineStage(module, index, stages_total, device))
    params = [p for s in stages for p in s.submod.parameters()]
    optimizer = torch.optim.AdamW(params, lr=1e-3)

    def loss_fn(logits, target):
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

    m = args.microbatches
    if args.schedule == "GPipe":
        schedule = schedules.ScheduleGPipe(stages[0], n_microbatches=m, loss_fn=loss_fn)
    elif args.schedule == "csv":
        schedule = schedules._PipelineScheduleRuntime(stages, n_microbatches=m, loss_fn=loss_fn)
        schedule._load_csv(args.csv, format="compute_only")
    else:
        cls = getattr(schedules, MULTI_STAGE[args.schedule][0])
        schedule = cls(stages, n_microbatches=m, loss_fn=loss_fn)

    batch = m * args.micro_batch_size
    has_first, has_last = 0 in mine, stages_total - 1 in mine
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"trace-rank{rank}.json.gz")
    with profile(activities=activities,
                 schedule=profiler_schedule(wait=0, warmup=args.warmup, active=args.steps),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(args.warmup + args.steps):
            tokens = torch.randint(args.vocab, (batch, args.seq_len + 1), device=device)
            x, y = tokens[:, :-1], tokens[:, 1:]
            kwargs = {"target": y} if has_last else {}
            if has_first:
                schedule.step(x, **kwargs)
            else:
                schedule.step(**kwargs)
            optimizer.step()
            optimizer.zero_grad()
            prof.step()
    dist.barrier()
    if rank == 0:
        print(f"wrote {ranks} traces to {args.out}: pipette import pytorch "
              f"{args.out}/trace-rank*.json.gz")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
