#!/usr/bin/env python3
"""Golden PyTorch orders over a grid of (p, v, m), one file per schedule with a PyTorch counterpart.

This is an independent transcription of the schedule-generation logic of PyTorch's
torch/distributed/pipelining/schedules.py at commit 1f1416a34fd869bab1df91ac807ced3e3f11c722
(with runtime.py at the same commit for the lowering check, and _utils.py at b0c050f0314f for the
"v" stage-to-rank map). No torch is imported: the classes' constructor checks, their order
functions and the two checks every _PipelineScheduleRuntime constructor runs (_validate_schedule
and the send/recv lowering _add_send_recv, which raises on a schedule that cannot make progress)
are re-expressed here in plain Python. See SOURCES_pytorch_grid.md.

Usage: python3 pytorch_grid.py OUT_DIR   (writes pytorch-grid_<schedule>.txt into OUT_DIR)

Output format, one line per grid point, sorted by p, v, m:
    p v m ok H0 H1 ... H(p-1)     PyTorch builds the schedule; Hr = FNV-1a 64 (hex) of rank r's
                                   compute-only order written as pipette writes it: actions
                                   "<stage><kind><microbatch>" joined by single spaces, an
                                   overlapped cell as "(<F>;<B>)"; PyTorch's None slots dropped.
    p v m raises REASON            PyTorch's constructor raises (REASON is one word).
For p <= 3 the accepted lines carry, after the hashes, " | " and the rank orders themselves
separated by " / ", so small cases can be read.
"""

import sys
from collections import defaultdict

F, I, W, B = "F", "I", "W", "B"


class Raise(Exception):
    """PyTorch would raise (ValueError, AssertionError) while building the schedule."""


# ---------------------------------------------------------------- single-stage classes (v = 1)


def single_stage_check(p, m):
    # PipelineScheduleSingle.__init__: n_microbatches < num_stages raises.
    if m < p:
        raise Raise("m<num_stages")


def gpipe(p, v, m):
    if v != 1:
        raise Raise("single_stage")
    single_stage_check(p, m)
    # ScheduleGPipe._step_microbatches: all forwards, then all backwards, ascending.
    return {r: [(r, F, i) for i in range(m)] + [(r, B, i) for i in range(m)] for r in range(p)}


def one_f_one_b(p, v, m):
    if v != 1:
        raise Raise("single_stage")
    single_stage_check(p, m)
    # Schedule1F1B._step_microbatches (the runtime; its _get_pipeline_order IR is not what runs):
    # warmup min(m, num_stages - stage) forwards, then "1B1F" until the forwards run out, then the
    # remaining backwards.
    order = {}
    for r in range(p):
        ops = []
        warmup = min(m, p - r)
        fwd = bwd = 0
        for _ in range(warmup):
            ops.append((r, F, fwd))
            fwd += 1
        while True:
            ops.append((r, B, bwd))
            bwd += 1
            if fwd == m:
                break
            ops.append((r, F, fwd))
            fwd += 1
        while bwd < m:
            ops.append((r, B, bwd))
            bwd += 1
        order[r] = ops
    return order


# ---------------------------------------------------------------- multi-stage classes


def loop_map(p, stages):
    return {s: s % p for s in range(stages)}


def v_map(p, stages):
    # generate_stage_to_rank_mapping(style="v")
    if stages % p != 0:
        raise Raise("v_divisibility")
    mapping, rank = {}, 0
    for s in range(stages):
        mapping[s] = rank
        if (s + 1) % p == 0:
            continue
        rank = rank + 1 if (s // p) % 2 == 0 else rank - 1
    return mapping


def leaves(action):
    """An overlapped cell is ("O", f, b); its halves are checked as two actions."""
    return [action[1], action[2]] if action[0] == "O" else [action]


def validate_schedule(order, p, stages, m):
    # _validate_schedule: per stage, F before I/B, I before W; every stage sees m forwards and m
    # backwards (B, or I and W); a stage lives on one rank.
    seen = {s: {F: set(), B: set(), I: set(), W: set()} for s in range(stages)}
    owner = {}
    for r in range(p):
        for action in order[r]:
            if action is None:
                continue
            for s, kind, mb in leaves(action):
                if kind in (B, I) and mb not in seen[s][F]:
                    raise Raise("backward_before_forward")
                if kind == W and mb not in seen[s][I]:
                    raise Raise("weight_before_input")
                seen[s][kind].add(mb)
                if owner.setdefault(s, r) != r:
                    raise Raise("stage_on_two_ranks")
    for s in range(stages):
        f, b, i, w = (len(seen[s][k]) for k in (F, B, I, W))
        if f != m or i != w or b + (i + w) // 2 != m:
            raise Raise("incomplete")
    return owner


def add_send_recv(order, owner, stages):
    # runtime._add_send_recv: ranks take turns (ascending); a rank's next action is placed when
    # its inputs are there (its receive was placed by the sender, or the producer is local);
    # "Malformed compute schedule" when a full turn places nothing.
    pending = {r: list(order[r]) for r in order if order[r]}
    done = {r: set() for r in order}

    def has_comms(a):
        s, kind, _ = a
        if kind == F:
            return s != stages - 1 and owner[s + 1] != owner[s]
        if kind in (I, B):
            return s != 0 and owner[s - 1] != owner[s]
        return False

    def ready(a, prev):
        if a is None:
            return True
        s, kind, mb = a
        if kind == F and s != 0:
            return (s, "RECV_F", mb) in prev or (s - 1, F, mb) in prev
        if kind in (I, B) and s != stages - 1:
            return ((s, "RECV_B", mb) in prev or (s + 1, I, mb) in prev
                    or (s + 1, B, mb) in prev)
        return True

    while pending:
        progress = False
        for r in sorted(pending):
            action = pending[r][0]
            parts = leaves(action) if action is not None else [None]
            if not all(ready(a, done[r]) for a in parts):
                continue
            if action is not None:
                for a in parts:
                    done[r].add(a)
                    if has_comms(a):
                        s, kind, mb = a
                        done[r].add((s, "SEND", mb))
                        recv = (s + 1, "RECV_F", mb) if kind == F else (s - 1, "RECV_B", mb)
                        done[owner[recv[0]]].add(recv)
            pending[r].pop(0)
            if not pending[r]:
                del pending[r]
            progress = True
        if not progress:
            raise Raise("malformed_send_recv")


def runtime_checks(order, p, stages, m):
    owner = validate_schedule(order, p, stages, m)
    add_send_recv(order, owner, stages)


def get_warmup_ops(rank, v, mpr, p, m, factor):
    return min((v - 1) * mpr + factor * ((p - 1) - rank), m * v)


def one_f_one_b_rank_ops(v, p, warmup, fwd_bwd, cooldown, rank, fstage, bstage, n_1f1b=0,
                         zero_bubble=False):
    # _get_1f1b_rank_ops without the None padding (dropped anyway).
    fmb, bmb, wmb = defaultdict(int), defaultdict(int), defaultdict(int)
    ops, backward_ids, weights = [], [], 0
    bkind = I if zero_bubble else B

    def weight():
        nonlocal weights
        s = bstage(backward_ids[weights])
        ops.append((s, W, wmb[s]))
        wmb[s] += 1
        weights += 1

    for op in range(warmup + fwd_bwd + cooldown):
        if op < warmup + fwd_bwd:
            s = fstage(op)
            ops.append((s, F, fmb[s]))
            fmb[s] += 1
        if op >= warmup:
            s = bstage(op)
            ops.append((s, bkind, bmb[s]))
            bmb[s] += 1
            backward_ids.append(op)
            if zero_bubble and op - warmup >= n_1f1b:
                weight()
    while zero_bubble and weights < len(backward_ids):
        weight()
    return ops


def interleaved(p, v, m, zero_bubble):
    # ScheduleInterleaved1F1B / ScheduleInterleavedZeroBubble: rounds = max(1, m // p),
    # microbatches_per_round = m // rounds, m % rounds != 0 raises.
    rounds = max(1, m // p)
    mpr = m // rounds
    if m % rounds != 0:
        raise Raise("m_not_multiple_of_rounds")
    order = {}
    for r in range(p):
        warmup = get_warmup_ops(r, v, mpr, p, m, 1 if zero_bubble else 2)
        fwd_bwd = v * m - warmup
        cooldown = v * m - fwd_bwd

        def fstage(step, r=r):
            return ((step // mpr) % v) * p + r

        def bstage(step, r=r, warmup=warmup):
            return (v - 1 - ((step - warmup) // mpr) % v) * p + r

        order[r] = one_f_one_b_rank_ops(v, p, warmup, fwd_bwd, cooldown, r, fstage, bstage,
                                        n_1f1b=r, zero_bubble=zero_bubble)
    if zero_bubble:
        add_bubbles(order, p, p * v)
    runtime_checks(order, p, p * v, m)
    return order


def add_bubbles(order, p, stages):
    # ScheduleInterleavedZeroBubble._add_bubbles_to_actions only inserts None (dropped here) and
    # never reorders; but it loops until every rank's forward input is there. It is run so that a
    # point where it would never finish (a hang in PyTorch's constructor) is reported.
    seen, pointer = set(), {r: 0 for r in range(p)}
    steps, limit = 0, 4 * sum(len(order[r]) for r in range(p)) + 16
    while True:
        stop, new = True, set()
        for r in range(p):
            t = pointer[r]
            if t >= len(order[r]):
                continue
            stop = False
            s, kind, mb = order[r][t]
            blocked = kind == F and s != 0 and (s - 1, F, mb) not in seen
            if not blocked:
                new.add((s, kind, mb))
                pointer[r] += 1
        seen |= new
        if stop:
            return
        steps += 1
        if steps > limit:
            raise Raise("add_bubbles_never_ends")


def interleaved_1f1b(p, v, m):
    return interleaved(p, v, m, zero_bubble=False)


def interleaved_zb(p, v, m):
    return interleaved(p, v, m, zero_bubble=True)


def looped_bfs(p, v, m):
    order = {}
    for r in range(p):
        stages = range(r, p * v, p)
        ops = [(s, F, i) for s in stages for i in range(m)]
        ops += [(s, B, i) for s in reversed(stages) for i in reversed(range(m))]
        order[r] = ops
    runtime_checks(order, p, p * v, m)
    return order


def zbv(p, v, m):
    if v != 2:
        raise Raise("needs_2_stages_per_rank")
    stages = 2 * p
    owner = v_map(p, stages)
    n = max(2 * p - 1, m)
    order = {}
    for r in range(p):
        ops = []
        c0, c1 = r, stages - 1 - r
        f0 = f1 = b0 = b1 = 0
        for _ in range(2 * (p - r) - 1):
            ops.append((c0, F, f0)); f0 += 1
        for _ in range(r):
            ops.append((c1, F, f1)); f1 += 1
            ops.append((c0, F, f0)); f0 += 1
        for _ in range(p - r):
            ops.append((c1, F, f1)); f1 += 1
            ops.append((c1, I, b1)); ops.append((c1, W, b1)); b1 += 1
        while f1 < f0 or f0 < n:
            if f0 < n:
                ops.append((c0, F, f0)); f0 += 1
            ops.append((c0, I, b0)); ops.append((c0, W, b0)); b0 += 1
            ops.append((c1, F, f1)); f1 += 1
            ops.append((c1, I, b1)); ops.append((c1, W, b1)); b1 += 1
        w0, w1 = b0, b1
        for _ in range(r):
            ops.append((c0, I, b0)); b0 += 1
            ops.append((c1, I, b1)); b1 += 1
        for _ in range(p - r):
            ops.append((c0, I, b0)); b0 += 1
            ops.append((c0, W, w0)); w0 += 1
        while w1 < b1:
            ops.append((c1, W, w1)); w1 += 1
        while w0 < b0:
            ops.append((c0, W, w0)); w0 += 1
        if not (w0 == b0 == f0 and w1 == b1 == f1):
            raise Raise("zbv_counts")
        order[r] = [a for a in ops if a[2] < m]
    assert all(owner[a[0]] == r for r in order for a in order[r])
    runtime_checks(order, p, stages, m)
    return order


def dualpipe_v(p, v, m):
    if v != 2:
        raise Raise("needs_2_stages_per_rank")
    stages = 2 * p
    if m < stages:
        raise Raise("m<num_stages")
    owner = v_map(p, stages)
    order = {}
    for r in range(p):
        # generate_rank_to_stage_mapping(style="v"): rank r holds stages r and 2p-1-r.
        s0, s1 = sorted(s for s in range(stages) if owner[s] == r)
        ops, count, wq = [], defaultdict(int), []

        def act(s, kind, ops=ops, count=count, wq=wq):
            key = (s, I) if kind in (B, I) else (s, kind)
            mb = count[key]
            ops.append((s, kind, mb))
            count[key] = mb + 1
            if kind == I:
                wq.append((s, mb))

        def overlap(sf, sb, ops=ops, count=count):
            f = (sf, F, count[(sf, F)])
            b = (sb, B, count[(sb, I)])
            ops.append(("O", f, b))
            count[(sf, F)] += 1
            count[(sb, I)] += 1

        def weight(ops=ops, wq=wq):
            if wq:
                s, mb = wq.pop(0)
                ops.append((s, W, mb))

        for _ in range((p - r - 1) * 2):
            act(s0, F)
        for _ in range(r + 1):
            act(s0, F); act(s1, F)
        for _ in range(p - r - 1):
            act(s1, I); weight(); act(s1, F)
        for i in range(m - 2 * p + r + 1):
            if i == 0 and r == p - 1:
                act(s0, F); act(s1, B)
            else:
                overlap(s0, s1)
            overlap(s1, s0)
        for _ in range(p - r - 1):
            act(s1, B); overlap(s1, s0)
        zb = False
        for i in range(r + 1):
            if i == (r + 1) // 2 and r % 2 == 1:
                zb = True
            act(s1, I if zb else B)
            if i == (r + 1) // 2 and r % 2 == 0:
                zb = True
            act(s0, I if zb else B)
        for _ in range(p - r - 1):
            weight(); act(s0, I if zb else B)
        for _ in range(r + 1):
            weight()
        order[r] = ops
    runtime_checks(order, p, stages, m)
    return order


SCHEDULES = {
    "gpipe": (gpipe, [1]),
    "1f1b": (one_f_one_b, [1]),
    "interleaved-1f1b": (interleaved_1f1b, [1, 2, 3, 4]),
    "interleaved-gpipe": (looped_bfs, [1, 2, 3, 4]),
    "interleaved-zb": (interleaved_zb, [1, 2, 3, 4]),
    "zbv": (zbv, [2]),
    "dualpipe-v": (dualpipe_v, [2]),
}
# Grid: p = 1..8; v as listed (a schedule with a fixed v is also tried at the other v values of
# 1..4, where PyTorch raises); m = 1..3p+1.
P_VALUES = range(1, 9)


def cell(a):
    if a[0] == "O":
        return "(%s;%s)" % (cell(a[1]), cell(a[2]))
    return "%d%s%d" % a


def fnv1a64(text):
    h = 0xcbf29ce484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def lines_for(name):
    fn, _ = SCHEDULES[name]
    out = []
    for p in P_VALUES:
        for v in range(1, 5):
            for m in range(1, 3 * p + 2):
                try:
                    order = fn(p, v, m)
                except Raise as e:
                    out.append("%d %d %d raises %s" % (p, v, m, e.args[0]))
                    continue
                ranks = [" ".join(cell(a) for a in order[r] if a is not None) for r in range(p)]
                line = "%d %d %d ok %s" % (p, v, m, " ".join(fnv1a64(t) for t in ranks))
                if p <= 3:
                    line += " | " + " / ".join(ranks)
                out.append(line)
    return out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    for name in SCHEDULES:
        lines = lines_for(name)
        header = ("# PyTorch %s orders over p=1..8, v=1..4, m=1..3p+1; generated by "
                  "tests/data/reference/pytorch_grid.py from torch/distributed/pipelining/"
                  "schedules.py at 1f1416a34fd869bab1df91ac807ced3e3f11c722\n" % name)
        with open("%s/pytorch-grid_%s.txt" % (out_dir, name), "w") as f:
            f.write(header + "\n".join(lines) + "\n")
        ok = sum(1 for l in lines if " ok " in l)
        print("%s: %d points, %d accepted by PyTorch" % (name, len(lines), ok))


if __name__ == "__main__":
    main()
