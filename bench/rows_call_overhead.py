"""Host cost of one row-op or GEMM call from Python: ktune's wrapper and runtime beside PyTorch's eager op.

A small problem (the kernel takes a few microseconds) is called N times back to back and the wall
time divided by N, after warm-up; the GPU runs far ahead only if the host is the bottleneck, so this
is the per-call host cost (a lower bound on eager latency). Then a cProfile of ktune's calls shows
where its host time goes (Python wrapper, binding, runtime).

    PYTHONPATH=python:build/python python3 bench/rows_call_overhead.py [--calls N] [--table T]
"""
import argparse
import cProfile
import pstats
import sys
import time

import torch
import torch.nn.functional as F

import ktune


def per_call_us(fn, calls):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
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
    print("%s; torch %s; host microseconds a call, %d calls back to back" % (torch.cuda.get_device_name(0), torch.__version__, args.calls))
    print("%-24s %10s %10s" % ("op", "ktune us", "torch us"))
    for name, k, t in cases:
        print("%-24s %10.2f %10.2f" % (name, per_call_us(k, args.calls), per_call_us(t, args.calls)))
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
