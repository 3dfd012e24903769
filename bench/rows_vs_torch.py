"""ktune's row ops beside PyTorch's, in one process on one GPU (issue 18, "Bench side by side").

For every problem of a suite (default configs/suites/rows.json): the same random tensors go to
ktune (ktune.softmax / layer_norm / rms_norm, i.e. the runtime's tuned choice) and to PyTorch
(torch.softmax, F.layer_norm, F.rms_norm); both results are verified first against FP64 on the same
rounded inputs with the tuner's rule (the output's rounding 2^-8 bf16 / 2^-11 f16 + 1e-5 relative,
plus half the f16 subnormal spacing an element). Then each is timed two ways, L2 flushed before
every repetition (a buffer twice its size written), warm-up first, medians of CUDA-event times:
  kernel  one call captured in a CUDA graph and replayed: the GPU's time for the op, the Python
          and launch overheads of both libraries left out (what a graph-captured model sees);
  eager   one plain call from Python: what an eager loop sees when the GPU waits for the host.
Reported per row: milliseconds, TB/s of the op's minimum bytes (x read, y written, weight/bias
once), the fraction of the device-to-device copy measured in the same run, PyTorch time / ktune
time for the kernel and for the eager call; then geometric means. Exit status 1 if any result
fails verification.

    PYTHONPATH=python:build/python python3 bench/rows_vs_torch.py [--suite FILE] [--json OUT] [--reps N] [--table T]
"""
import argparse
import json
import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F

import ktune

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
ROUNDING = {"f32": 0.0, "bf16": 2.0 ** -8, "f16": 2.0 ** -11}
SCALARS = {"softmax": ("scale", 1.0), "layernorm": ("eps", 1e-5), "rmsnorm": ("eps", 1e-6)}


def median_ms(fn, reps, flush):
    """Median over reps of one call, each after an L2 flush, timed with CUDA events. The events are
    made (and their CUDA events created, at a first record) before the repetitions: creating one
    costs microseconds of host time, which would come out of the flush's lead over the call."""
    times = []
    for _ in range(3):  # warm-up: first-use selection, module loads, clocks
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, stop in events:
        start.record()
        stop.record()
    torch.cuda.synchronize()
    for start, stop in events:
        flush.sum()  # read, not written: no dirty lines left to write back during the call (runtime/l2_flush.h)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def graph_ms(fn, reps, flush):
    """Median over reps of one replay of fn captured in a CUDA graph, each after an L2 flush."""
    for _ in range(3):  # warm-up outside the capture: first-use selection and module loads
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return median_ms(graph.replay, reps, flush)


def copy_tb_s(reps, flush):
    src = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src), reps, flush)
    return 2 * src.numel() / (ms * 1e-3) / 1e12


def reference(op, x, w, b, s):
    xd = x.double()
    if op == "softmax":
        return torch.softmax(xd * s, -1)
    if op == "layernorm":
        return F.layer_norm(xd, (x.shape[-1],), w.double(), b.double(), s)
    return xd / torch.sqrt((xd * xd).mean(-1, keepdim=True) + s) * w.double()


def verified(y, ref, dtype):
    err = (y.double() - ref).norm().item()
    norm = ref.norm().item()
    allowed = (ROUNDING[dtype] + 1e-5) * norm + math.sqrt(ref.numel()) * (2.0 ** -25 if dtype == "f16" else 0.0)
    return bool(torch.isfinite(y).all().item()) and err <= allowed, err / norm if norm else err


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default=os.path.join(ROOT, "configs", "suites", "rows.json"))
    ap.add_argument("--json", default="")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--table", action="append", default=[],
                    help="a tuning table the runtime reads ahead of the shipped ones (repeatable); "
                         "the user's database is not read, so the figures depend on the tables only")
    args = ap.parse_args()
    ktune.configure(db="/nonexistent/ktune.db", tables=args.table)  # a missing file: no database
    if not torch.cuda.is_available():
        print("rows_vs_torch: no CUDA device; nothing to measure", file=sys.stderr)
        return 1
    suite = json.load(open(args.suite))
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    copy = copy_tb_s(args.reps, flush)
    device = torch.cuda.get_device_name(0)
    print("%s; device-to-device copy %.3f TB/s; torch %s; ktune's fast path: %s" % (
        device, copy, torch.__version__, ktune.torch_fast_path()))
    print("kernel: one call in a CUDA graph; eager: one call from Python; speedup = torch time / ktune time")
    print("%-32s %10s %8s %6s %10s %8s %6s %8s %9s %9s %8s" % (
        "problem", "ktune ms", "TB/s", "%copy", "torch ms", "TB/s", "%copy", "speedup", "ktune eag", "torch eag", "eager x"))
    rows, failed = [], False
    g = torch.Generator(device="cuda").manual_seed(1)
    for p in suite["problems"]:
        op = p.get("op", suite.get("op", "gemm"))
        dtype = p.get("dtype", "f32")
        r, c = p["rows"], p["cols"]
        dt = DTYPES[dtype]
        name, s = SCALARS[op]
        s = p.get(name, s)
        x = (torch.rand((r, c), device="cuda", generator=g) * 6 - 3).to(dt)
        w = (torch.rand(c, device="cuda", generator=g) + 0.5).to(dt)
        b = (torch.rand(c, device="cuda", generator=g) - 0.5).to(dt)
        if op == "softmax":
            k_fn, t_fn = (lambda: ktune.softmax(x, scale=s)), (lambda: torch.softmax(x * s if s != 1 else x, -1))
        elif op == "layernorm":
            k_fn, t_fn = (lambda: ktune.layer_norm(x, w, b, eps=s)), (lambda: F.layer_norm(x, (c,), w, b, s))
        else:
            k_fn, t_fn = (lambda: ktune.rms_norm(x, w, eps=s)), (lambda: F.rms_norm(x, (c,), w, s))
        ref = reference(op, x, w, b, s)
        k_ok, k_err = verified(k_fn(), ref, dtype)
        t_ok, t_err = verified(t_fn(), ref, dtype)
        key = ktune._ktune.problem_key(op, r, c, dtype)
        bytes_ = x.element_size() * (2 * r * c + {"softmax": 0, "layernorm": 2, "rmsnorm": 1}[op] * c)
        row = {"problem": key, "ktune_rel_error": k_err, "torch_rel_error": t_err, "ktune_ok": k_ok, "torch_ok": t_ok}
        if not k_ok:
            failed = True
            print("%-32s ktune FAILED verification (rel error %.3g)" % (key, k_err))
        else:
            k_ms = graph_ms(k_fn, args.reps, flush)
            t_ms = graph_ms(t_fn, args.reps, flush)
            k_eager = median_ms(k_fn, args.reps, flush)
            t_eager = median_ms(t_fn, args.reps, flush)
            row.update({"ktune_ms": k_ms, "torch_ms": t_ms, "min_bytes": bytes_,
                        "ktune_tb_s": bytes_ / (k_ms * 1e-3) / 1e12, "torch_tb_s": bytes_ / (t_ms * 1e-3) / 1e12,
                        "speedup": t_ms / k_ms, "ktune_eager_ms": k_eager, "torch_eager_ms": t_eager,
                        "eager_speedup": t_eager / k_eager})
            print("%-32s %10.4f %8.3f %5.1f%% %10.4f %8.3f %5.1f%% %8.3f %9.4f %9.4f %8.3f%s" % (
                key, k_ms, row["ktune_tb_s"], 100 * row["ktune_tb_s"] / copy, t_ms, row["torch_tb_s"],
                100 * row["torch_tb_s"] / copy, row["speedup"], k_eager, t_eager, row["eager_speedup"],
                "" if t_ok else "  (torch outside the rule)"))
        rows.append(row)
    for what, field in (("kernel", "speedup"), ("eager", "eager_speedup")):
        speedups = [r[field] for r in rows if field in r]
        if speedups:
            print("geometric mean of torch time / ktune time, %s: %.3f over %d rows; lowest %.3f"
                  % (what, math.exp(sum(map(math.log, speedups)) / len(speedups)), len(speedups), min(speedups)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "torch": torch.__version__, "copy_tb_s": copy, "command": " ".join(sys.argv),
                       "rows": rows}, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
