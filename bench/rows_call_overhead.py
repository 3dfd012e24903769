"""Host cost of one row-op or GEMM call from Python: ktune's wrapper and runtime beside PyTorch's eager op.

A small problem is called N times back to back while the GPU is held by a sleep kernel queued
first (torch.cuda._sleep), so that the loop never waits for the GPU: its wall time divided by N is
the host cost a call (wrapper, binding, runtime, driver launch), whatever the kernel's own time;
median of several rounds after warm-up. Beside it, the same loop with the GPU free (the per-call
time of an eager loop: the larger of host cost and kernel time). Then a cProfile of ktune's calls
shows where the Python share of its host time goes.

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


def host_us(fn, calls, rounds):
    """Host microseconds a call: `calls` calls queued behind a sleep kernel long enough to outlast
    them (checked: a round whose loop outran the sleep is reported)."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    per_call, outran = [], 0
    for _ in range(rounds):
        done = torch.cuda.Event(enable_timing=False)
        torch.cuda._sleep(100_000_000)  # ~50 ms at H100 clocks
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        done.record()
        outran += done.query()  # the GPU already finished everything: the loop was not host-only
        torch.cuda.synchronize()
        per_call.append((t1 - t0) / calls * 1e6)
    if outran:
        print("warning: %d of %d rounds outlasted the sleep kernel; use fewer --calls" % (outran, rounds), file=sys.stderr)
    return statistics.median(per_call)


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
    ap.add_argument("--calls", type=int, default=500, help="calls a round (the launch queue must hold them)")
    ap.add_argument("--rounds", type=int, default=9)
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
    cases = [
        ("rmsnorm bf16 1x4096", lambda: ktune.rms_norm(x, w, eps=1e-6), lambda: F.rms_norm(x, (4096,), w, 1e-6)),
        ("gemm bf16 512x512x512", lambda: ktune.gemm(ga, gb), lambda: torch.matmul(ga, gb)),
        ("layernorm bf16 1x4096", lambda: ktune.layer_norm(x, w, b), lambda: F.layer_norm(x, (4096,), w, b)),
        ("softmax bf16 1x4096", lambda: ktune.softmax(x), lambda: torch.softmax(x, -1)),
    ]
    print("%s; torch %s; microseconds a call, %d calls a round, median of %d rounds" % (
        torch.cuda.get_device_name(0), torch.__version__, args.calls, args.rounds))
    print("host: GPU held by a sleep kernel (host cost only); loop: GPU free (eager loop time)")
    print("%-24s %10s %10s %8s %10s %10s" % ("op", "ktune host", "torch host", "ratio", "ktune loop", "torch loop"))
    worst = 0.0
    for name, k, t in cases:
        kh, th = host_us(k, args.calls, args.rounds), host_us(t, args.calls, args.rounds)
        worst = max(worst, kh / th)
        print("%-24s %10.2f %10.2f %8.3f %10.2f %10.2f" % (name, kh, th, kh / th, loop_us(k, args.calls, args.rounds),
                                                       loop_us(t, args.calls, args.rounds)))
    print("largest ktune / torch host cost: %.3f" % worst)
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
