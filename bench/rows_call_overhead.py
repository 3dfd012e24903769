"""Host cost of one row-op or GEMM call from Python: ktune's wrapper and runtime beside PyTorch's eager op.

A small problem is called N times back to back while the GPU is held by a sleep kernel queued
first (torch.cuda._sleep), so that the loop never waits for the GPU: its wall time divided by N is
the host cost a call (wrapper, binding, runtime, driver launch), whatever the kernel's own time.
The host's speed drifts by tens of percent over seconds on a shared machine, so the measurements
of one op are interleaved round by round (ktune, PyTorch, floor, allocation, ...) and each column
is a median over rounds, the ratio the median of per-round ratios.

Columns: ktune (ktune.softmax etc., through the C++ fast path ktune._torch_ext where it is built,
else the Python one; the header says which; KTUNE_TORCH_EXT=0 times the Python one), torch
(PyTorch's op), ratio ktune / torch; floor: the least a wrapper written in Python over ktune's
runtime can cost, a tensor allocated for the result
(torch.empty_like / new_empty) and the prepared handle called with its pointers (no checks, no
lookup); alloc: the allocation alone; launch: the prepared handle alone (binding, runtime and the
driver's launch, or cuBLASLt's where cuBLAS serves). Then the same loop with the GPU free (what
an eager loop sees), and a cProfile of ktune's calls.

    PYTHONPATH=python:build/python python3 bench/rows_call_overhead.py [--calls N] [--rounds R] [--table T]
"""
import argparse
import cProfile
import pstats
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import ktune


def one_round(fn, calls):
    """Host microseconds a call over `calls` calls queued behind a sleep kernel that outlasts them;
    None where the GPU finished first (the loop was not host-only)."""
    done = torch.cuda.Event()
    torch.cuda._sleep(100_000_000)  # ~50 ms at H100 clocks
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    done.record()
    outran = done.query()
    torch.cuda.synchronize()
    return None if outran else (t1 - t0) / calls * 1e6


def host_us(fns, calls, rounds):
    """Interleaved rounds of every fn; per fn the list of per-round microseconds."""
    for fn in fns:
        for _ in range(50):
            fn()
    torch.cuda.synchronize()
    per = [[] for _ in fns]
    for _ in range(rounds):
        got = [one_round(fn, calls) for fn in fns]
        if any(g is None for g in got):
            print("warning: a round outlasted the sleep kernel and was dropped; use fewer --calls", file=sys.stderr)
            continue
        for lst, g in zip(per, got):
            lst.append(g)
    return per


def loop_us(fn, calls, rounds):
    """Microseconds a call of a back-to-back loop with the GPU free: max(host cost, kernel time)."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    r = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        r.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400, help="calls a round (the launch queue must hold them)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--table", action="append", default=[])
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("rows_call_overhead: no CUDA device", file=sys.stderr)
        return 1
    ktune.configure(db="/nonexistent/ktune.db", tables=args.table)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(4096, device="cuda", dtype=torch.bfloat16) + 0.5
    b = torch.rand(4096, device="cuda", dtype=torch.bfloat16) - 0.5
    ga = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    gb = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    gc = torch.empty(512, 512, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    rt = ktune._runtime.runtime(device=torch.cuda.current_device())
    stream = torch._C._cuda_getCurrentRawStream
    dev = torch.cuda.current_device()
    px, pw, pb, py = x.data_ptr(), w.data_ptr(), b.data_ptr(), y.data_ptr()
    pa, pgb, pc = ga.data_ptr(), gb.data_ptr(), gc.data_ptr()
    h_rms = rt.rows_call("rmsnorm", "bf16", 1, 4096, 4096, 4096, 1e-6)
    h_ln = rt.rows_call("layernorm", "bf16", 1, 4096, 4096, 4096, 1e-5)
    h_sm = rt.rows_call("softmax", "bf16", 1, 4096, 4096, 4096, 1.0)
    h_mm = rt.gemm_call(512, 512, 512, "bf16", "NN", 512, 512, 512)
    empty_like = torch.empty_like
    cases = [
        ("rmsnorm bf16 1x4096", lambda: ktune.rms_norm(x, w, eps=1e-6), lambda: F.rms_norm(x, (4096,), w, 1e-6),
         lambda: h_rms(px, empty_like(x).data_ptr(), pw, 0, stream(dev)), lambda: empty_like(x),
         lambda: h_rms(px, py, pw, 0, stream(dev))),
        ("gemm bf16 512x512x512", lambda: ktune.gemm(ga, gb), lambda: torch.matmul(ga, gb),
         lambda: h_mm(pa, pgb, ga.new_empty((512, 512)).data_ptr(), 1.0, 0.0, stream(dev)), lambda: ga.new_empty((512, 512)),
         lambda: h_mm(pa, pgb, pc, 1.0, 0.0, stream(dev))),
        ("layernorm bf16 1x4096", lambda: ktune.layer_norm(x, w, b), lambda: F.layer_norm(x, (4096,), w, b),
         lambda: h_ln(px, empty_like(x).data_ptr(), pw, pb, stream(dev)), lambda: empty_like(x),
         lambda: h_ln(px, py, pw, pb, stream(dev))),
        ("softmax bf16 1x4096", lambda: ktune.softmax(x), lambda: torch.softmax(x, -1),
         lambda: h_sm(px, empty_like(x).data_ptr(), 0, 0, stream(dev)), lambda: empty_like(x),
         lambda: h_sm(px, py, 0, 0, stream(dev))),
    ]
    for case in cases:
        case[1]()  # the first call prepares; from the second on the fast path serves
    print("%s; torch %s; ktune's fast path: %s" % (torch.cuda.get_device_name(0), torch.__version__, ktune.torch_fast_path()))
    print("host microseconds a call (GPU held), %d calls a round, medians over %d interleaved rounds" % (args.calls, args.rounds))
    print("%-24s %8s %8s %7s %8s %7s %8s %8s %10s %10s" % (
        "op", "ktune", "torch", "ratio", "floor", "fl/tor", "alloc", "launch", "ktune loop", "torch loop"))
    worst, worst_floor = 0.0, 0.0
    for name, k, t, fl, al, la in cases:
        per = host_us([k, t, fl, al, la], args.calls, args.rounds)
        if not per[0]:
            print("%-24s no round was host-only" % name)
            continue
        med = [statistics.median(p) for p in per]
        ratio = statistics.median([a / b for a, b in zip(per[0], per[1])])
        floor_ratio = statistics.median([a / b for a, b in zip(per[2], per[1])])
        worst, worst_floor = max(worst, ratio), max(worst_floor, floor_ratio)
        print("%-24s %8.2f %8.2f %7.3f %8.2f %7.3f %8.2f %8.2f %10.2f %10.2f" % (
            name, med[0], med[1], ratio, med[2], floor_ratio, med[3], med[4], loop_us(k, args.calls, 5),
            loop_us(t, args.calls, 5)), flush=True)
    print("largest ktune / torch host cost: %.3f; largest floor / torch: %.3f" % (worst, worst_floor))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        cases[0][1]()
    prof.disable()
    torch.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)
    return 0


if __name__ == "__main__":
    sys.exit(main())
