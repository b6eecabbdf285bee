#!/usr/bin/env python3
"""cuDNN's fused attention as the reference for the CUDA engine's attention (issue 15).

Times torch.nn.functional.scaled_dot_product_attention under
torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION), bf16, causal, for the attention of the
benchmark's stages (GPT-3-1.3B: 16 heads of 128; Llama-3.2-1B: 32 query heads of 64 over 8 KV
heads; s 2048, micro-batch 4): forward alone and forward + backward, CUDA events, the median of
--iters after warm-ups. FLOPs as llm.c and Megatron-LM count them (no causal discount): forward
4 * batch * seq^2 * heads * head_dim, backward twice that.

Prints one JSON object (also written to --json FILE). Never fails for a missing piece: without
torch, CUDA or the cuDNN backend it reports {"available": false, "reason": ...} and exits 0.
"""
import argparse
import json
import sys

SHAPES = [
    {"name": "gpt3-1.3b", "batch": 4, "seq": 2048, "heads": 16, "kv_heads": 16, "head_dim": 128},
    {"name": "llama3.2-1b", "batch": 4, "seq": 2048, "heads": 32, "kv_heads": 8, "head_dim": 64},
]


def attention_flops(shape, backward):
    """Megatron/llm.c attention-core FLOPs: Q K^T and P V over the full square."""
    forward = 4.0 * shape["batch"] * shape["seq"] ** 2 * shape["heads"] * shape["head_dim"]
    return 2 * forward if backward else forward


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


def unavailable(reason):
    return {"available": False, "reason": reason, "backend": "cudnn", "shapes": []}


def time_ms(torch, fn, iters, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return median(times)


def measure_shape(torch, sdpa, shape, iters, warmup):
    b, s, h, kv, d = (shape[k] for k in ("batch", "seq", "heads", "kv_heads", "head_dim"))
    opts = {"device": "cuda", "dtype": torch.bfloat16, "requires_grad": True}
    q = torch.randn(b, h, s, d, **opts)
    k = torch.randn(b, kv, s, d, **opts)
    v = torch.randn(b, kv, s, d, **opts)
    gqa = {}
    if kv != h:
        try:  # torch >= 2.5 groups the heads itself
            sdpa(q, k, v, is_causal=True, enable_gqa=True)
            gqa = {"enable_gqa": True}
        except (TypeError, RuntimeError):  # older: K and V expanded to every query head
            k = k.detach().repeat_interleave(h // kv, dim=1).requires_grad_(True)
            v = v.detach().repeat_interleave(h // kv, dim=1).requires_grad_(True)
    dout = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)

    def forward():
        with torch.no_grad():
            sdpa(q, k, v, is_causal=True, **gqa)

    def forward_backward():
        out = sdpa(q, k, v, is_causal=True, **gqa)
        out.backward(dout)

    fwd = time_ms(torch, forward, iters, warmup)
    fwd_bwd = time_ms(torch, forward_backward, iters, warmup)
    flops_f = attention_flops(shape, False)
    flops_fb = flops_f + attention_flops(shape, True)
    result = dict(shape)
    result.update({"gqa": "native" if gqa else ("expanded" if kv != h else "none"),
                   "fwd_ms": fwd, "fwd_bwd_ms": fwd_bwd,
                   "fwd_flops": flops_f, "fwd_bwd_flops": flops_fb,
                   "fwd_tflops": flops_f / (fwd * 1e-3) / 1e12 if fwd > 0 else 0.0,
                   "fwd_bwd_tflops": flops_fb / (fwd_bwd * 1e-3) / 1e12 if fwd_bwd > 0 else 0.0})
    return result


def measure(iters, warmup):
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:  # noqa: BLE001 (any import problem means: no reference)
        return unavailable("torch or torch.nn.attention not importable: %s" % e)
    if not torch.cuda.is_available():
        return unavailable("torch sees no CUDA device")
    sdpa = torch.nn.functional.scaled_dot_product_attention
    out = {"available": True, "backend": "cudnn", "torch": torch.__version__,
           "device": torch.cuda.get_device_name(0),
           "cudnn": torch.backends.cudnn.version(), "shapes": []}
    try:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            for shape in SHAPES:
                out["shapes"].append(measure_shape(torch, sdpa, shape, iters, warmup))
    except Exception as e:  # noqa: BLE001 (the backend refused the shape or is missing)
        failed = unavailable("cuDNN attention failed: %s" % e)
        failed.update({"torch": out["torch"], "device": out["device"]})
        return failed
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the JSON here")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)
    result = measure(args.iters, args.warmup)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
