#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention backends on configs/suites/attention.json, in one process: the bar
ktune's attention op is held to (its issue: >= 1.0x the best backend that runs, >= 1.2x the flash backend on
prefill; decode KV reads at >= 90 % of the read floor), with ktune's own column (ktune.attention, the tuned table
of the database the runtime reads: KTUNE_DB, else the default) when the package imports.

For each row and each backend (flash = FlashAttention-2, cudnn, efficient, math where it fits): q / k / v bf16,
random normal, in (B, S, H, D) memory viewed as (B, H, S, D), as FlashAttention's callers hold them; GQA through
enable_gqa. Each backend is verified first: the first and last 64 query rows of every (batch, head) against an
FP64 reference of those rows (the causal mask bottom-right aligned, as FlashAttention's), max |error| <= 2^-6 +
2^-6 |ref|, a bf16 output's rounding several times over; a backend that fails or does not run says so. Then
timed as docs/METHOD says: warm-up, CUDA events around each call, the L2 flushed before each, the call queued
behind a GPU delay (so that the host's cost of making the call, tens of microseconds in Python for every
backend, is not what a small decode row measures; --no-delay times it too), the median of 25 calls. Each
backend of a row is timed over --placements allocations of its inputs (4; fewer where they would pass 4 GiB):
q, k and v copied to other addresses, all alive at once, every placement verified; its time is the median of
theirs. Where a call is short, where its inputs lie moves it by more than a config does: a 10 us decode call
read 10.0-10.1 us at half its placements and 10.7-10.9 us at the other half (H100,
docs/runs/2026-12-06-h100-paged-placements.md), so one placement a backend compares allocations, not kernels.
Prefill in TFLOPS (4 B H Sq Sk D, halved when causal), decode in TB/s of K and V read (GQA-aware: the kv heads'
bytes) and as a share of a device-to-device copy of the same bytes (the read floor's stand-in).

Usage: python3 bench/attention_vs_torch.py [--suite configs/suites/attention.json] [--json OUT.json] [--rows N]
                                           [--placements N]
"""
import argparse
import json
import math
import os
import statistics
import sys
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH), ("ktune", None)]
try:
    import ktune
except ImportError as e:  # the column says why
    ktune = None
    KTUNE_MISSING = str(e).split("\n")[0][:100]
REPS = 25
DELAY = True  # --no-delay: the host's cost of each call counts where it exceeds the flush
PRELUDE = None  # --prelude: a kernel run on every SM after the flush, before each timed call
WARM_CODE = False  # --warm-code: after the flush, one call of the same backend on other buffers
# The most bytes a backend's placements of a row may hold at once (4 GiB: a row of more than 1 GiB gets
# fewer than 4 placements, one of more than 2 GiB one, where an address's luck is a small share of the
# call).
PLACEMENT_BYTES = 4 << 30


def make_prelude(kind):
    """A kernel over every SM that leaves it in the shared-memory configuration of a kernel with
    200 KiB of shared memory ("smem": a GEMM's, the op a decode step's attention follows) or of one
    with 1 KiB ("small"), so that every backend starts a timed call from the same one. CuPy's, on
    torch's stream."""
    import cupy

    src = r'''extern "C" __global__ void ktune_prelude(float* sink) {
      extern __shared__ float s[];
      s[threadIdx.x] = threadIdx.x;
      __syncthreads();
      if (s[(threadIdx.x + 1) % blockDim.x] < 0.f) sink[0] = 1.f;  // never; keeps the stores
    }'''
    k = cupy.RawKernel(src, "ktune_prelude")
    smem = 200 * 1024 if kind == "smem" else 1024
    k.max_dynamic_shared_size_bytes = smem
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    sink = cupy.zeros(1, dtype=cupy.float32)
    ts = torch.cuda.current_stream()  # the bench's one stream
    try:  # CuPy 14's way (the stream protocol); the older one warns there
        stream = cupy.cuda.Stream.from_external(ts)
    except (AttributeError, TypeError):
        stream = cupy.cuda.ExternalStream(ts.cuda_stream)

    def run():
        with stream:
            k((sms * (1 if kind == "smem" else 8),), (256,), (sink,), shared_mem=smem)
    return run


def is_causal(r):
    return r.get("layout") == "causal" or r.get("causal", False)


def flops(r):
    f = 4.0 * r["batch"] * r["heads"] * r["q_len"] * r["kv_len"] * r["head_dim"]
    return f / 2 if is_causal(r) and r["q_len"] == r["kv_len"] else f


def kv_bytes(r):
    return 2.0 * r["batch"] * r["kv_heads"] * r["kv_len"] * r["head_dim"] * 2


def io_bytes(r):
    """q, k, v and the output (bf16)."""
    return kv_bytes(r) + 2.0 * r["batch"] * r["heads"] * r["q_len"] * r["head_dim"] * 2


def placements_for(nbytes, wanted):
    """How many placements (independent allocations of a call's inputs, `nbytes` each) a row is timed
    over: `wanted`, fewer where they would pass PLACEMENT_BYTES together, at least one."""
    return max(1, min(wanted, int(PLACEMENT_BYTES // max(nbytes, 1))))


class Timer:
    def __init__(self):
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
        # 500k cycles, 250 us or more at an H100's or H200's clock: longer than any backend's host
        # cost of one call.
        self.delay_cycles = 500_000 if DELAY else 0
        self.start = [torch.cuda.Event(enable_timing=True) for _ in range(REPS)]
        self.stop = [torch.cuda.Event(enable_timing=True) for _ in range(REPS)]

    def median_ms(self, fn, warm=None):
        """warm: called after each flush (e.g. reading the inputs a real step finds in L2)."""
        fn()
        fn()
        torch.cuda.synchronize()
        for i in range(REPS):
            # Read, not written: a memset's 2 x L2 of dirty lines would be written back during
            # the timed call, charging it traffic not its own (runtime/l2_flush.h, the C++ timer's
            # flush, reads too).
            self.flush.sum()
            if warm is not None:
                warm()
            if PRELUDE is not None:
                PRELUDE()
            if self.delay_cycles:
                torch.cuda._sleep(self.delay_cycles)  # the GPU busy while the host makes the call
            self.start[i].record()
            fn()
            self.stop[i].record()
        torch.cuda.synchronize()
        t = sorted(a.elapsed_time(b) for a, b in zip(self.start, self.stop))
        return t[len(t) // 2]


def reference_rows(q, k, v, causal, rows):
    """FP64 attention of the query rows `rows` (indices into q_len) of every (batch, head)."""
    B, H, Sq, D = q.shape
    Hk, Sk = k.shape[1], k.shape[2]
    qs = q[:, :, rows].double()
    kk = k.double().repeat_interleave(H // Hk, dim=1)
    vv = v.double().repeat_interleave(H // Hk, dim=1)
    s = torch.einsum("bhqd,bhkd->bhqk", qs, kk) / math.sqrt(D)
    if causal:
        # Bottom-right aligned: query row i sees keys up to i + (Sk - Sq).
        qi = torch.tensor(rows, device=q.device).view(-1, 1)
        kj = torch.arange(Sk, device=q.device).view(1, -1)
        s = s.masked_fill(kj > qi + (Sk - Sq), float("-inf"))
    return torch.einsum("bhqk,bhkd->bhqd", torch.softmax(s, dim=-1), vv)


def ktune_selection(before, op="attention"):
    """What served ktune's row: the selection of the call of `op` this row made (ktune keeps one per
    shape, dtype and strides), first use's timed candidates included, so that an A/B of first-use
    rules can say which config won a row and by how much it led."""
    made = [c for key, c in ktune._runtime.calls.items() if key not in before and key[0] == op]
    if len(made) != 1:
        return None
    s = made[0].selection
    keep = ("family", "config", "neighbour", "measured_ms")
    return {"family": s["family"], "config": s["config"], "provenance": s["provenance"], "why": s["why"],
            "candidates": [{k: c[k] for k in keep} for c in s["candidates"] if c.get("measured_ms") is not None]}


def run_row(r, timer, copy_tb_s, placements=1):
    g = torch.Generator(device="cuda").manual_seed(1234)
    B, H, Hk, Sq, Sk, D = r["batch"], r["heads"], r["kv_heads"], r["q_len"], r["kv_len"], r["head_dim"]
    # (B, S, H, D) in memory, viewed as (B, H, S, D).
    q = torch.randn(B, Sq, H, D, device="cuda", dtype=torch.bfloat16, generator=g).transpose(1, 2)
    k = torch.randn(B, Sk, Hk, D, device="cuda", dtype=torch.bfloat16, generator=g).transpose(1, 2)
    v = torch.randn(B, Sk, Hk, D, device="cuda", dtype=torch.bfloat16, generator=g).transpose(1, 2)
    # --warm-code: a second set of inputs, which one untimed call of the same backend reads after each
    # flush: the timed call then finds its kernels' code, the launch path and the driver's state warm,
    # and its own q / k / v still cold (the twin's are other memory).
    twin = [torch.randn_like(x.transpose(1, 2)).transpose(1, 2) for x in (q, k, v)] if WARM_CODE else None
    rows = sorted(set(list(range(min(64, Sq))) + list(range(max(0, Sq - 64), Sq))))
    ref = reference_rows(q, k, v, is_causal(r), rows)
    n = placements_for(io_bytes(r), placements)
    # PyTorch's is_causal is top-left aligned; bottom-right (FlashAttention's) only matters when Sq != Sk, and
    # decode rows (Sq <= 4) see every key but the last Sq - 1 - i: they run as non-causal when Sq == 1.
    causal = is_causal(r) and Sq > 1
    if causal and Sq != Sk:
        from torch.nn.attention.bias import causal_lower_right
        mask = causal_lower_right(Sq, Sk)
        sdpa_on = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=Hk != H)
    else:
        sdpa_on = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=Hk != H)
    # ktune takes (B, S, H, D) views, bottom-right causal for any Sq.
    ktune_on = lambda q, k, v: ktune.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                               causal=is_causal(r)).transpose(1, 2)

    def placed(i):
        """Placement i's (q, k, v): the row's own at 0, else copies of them at other addresses, in
        the same (B, S, H, D) memory."""
        if i == 0:
            return q, k, v
        return [x.transpose(1, 2).clone().transpose(1, 2) for x in (q, k, v)]

    out = {"row": r, "placements": n, "backends": {}}
    for name, backend in BACKENDS:
        res = {}
        if name == "ktune" and ktune is None:
            res["status"] = "not importable: " + KTUNE_MISSING
            out["backends"][name] = res
            continue
        on = ktune_on if name == "ktune" else sdpa_on
        before = set(ktune._runtime.calls) if name == "ktune" else None
        warm = (lambda: on(*twin)) if twin is not None else None
        if name == "math" and B * H * Sq * Sk > (1 << 31):
            res["status"] = "skipped (the scores would not fit)"
            out["backends"][name] = res
            continue
        places = o = None
        try:
            with sdpa_kernel([backend] if backend is not None else [b for _, b in BACKENDS if b is not None]):
                places = [placed(i) for i in range(n)]
                for i, inputs in enumerate(places):
                    o = on(*inputs)
                    torch.cuda.synchronize()
                    err = ((o[:, :, rows].double() - ref).abs() - (2 ** -6) * ref.abs()).max().item()
                    res["max_excess"] = max(err, res.get("max_excess", err))
                    if not err <= 2 ** -6:
                        res["status"] = "wrong (max |err| - 2^-6 |ref| = %.3g%s)" % (
                            err, ", placement %d" % i if i else "")
                        break
                if "status" not in res:
                    each = [timer.median_ms(lambda x=inputs: on(*x), warm=warm) for inputs in places]
                    ms = statistics.median(each)
                    res.update(status="ok", ms=ms, tflops=flops(r) / ms / 1e9, kv_tb_s=kv_bytes(r) / ms / 1e9)
                    if n > 1:
                        res["placement_ms"] = each
                    if Sq <= 16:
                        res["of_copy"] = res["kv_tb_s"] / copy_tb_s(kv_bytes(r))
        except (RuntimeError, ValueError) as e:
            res["status"] = "does not run: " + str(e).split("\n")[0][:120]
        finally:
            # Nothing of this backend's placements kept while the next one allocates its own.
            places = o = None
        if before is not None:
            res["selection"] = ktune_selection(before)
        out["backends"][name] = res
    return out


def main():
    # PyTorch explains on every call why a backend refused a row; the table says it once.
    warnings.filterwarnings("ignore", category=UserWarning)
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default=os.path.join(os.path.dirname(__file__), "..", "configs", "suites", "attention.json"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--rows", type=int, default=0, help="only the first N rows")
    ap.add_argument("--no-delay", action="store_true", help="no GPU delay before each call: host cost counts")
    ap.add_argument("--untuned", action="store_true",
                    help="ktune without its shipped tables (set KTUNE_DB to an empty file too): the rows served as "
                         "shapes nobody tuned are, by the families' defaults and first-use timing")
    ap.add_argument("--no-neighbours", action="store_true",
                    help="first use times only the lenders and family defaults of a shape nobody tuned, not their "
                         "neighbours (ktune.configure(neighbours=False)): the A/B of what the neighbours win")
    ap.add_argument("--explain", action="store_true",
                    help="a line under each row: the config ktune ran and where it came from (the JSON has every "
                         "candidate first use timed)")
    ap.add_argument("--prelude", choices=["smem", "small"], default=None,
                    help="after each flush, a kernel on every SM with 200 KiB (smem) or 1 KiB (small) of shared memory")
    ap.add_argument("--warm-code", action="store_true",
                    help="after each flush, one untimed call of the same backend on other inputs: the timed call's "
                         "code and launch path warm, its data cold (how much of a short call is its code's first fetch)")
    ap.add_argument("--placements", type=int, default=4,
                    help="time each backend of a row over this many allocations of its inputs, the median of "
                         "theirs (fewer where they would pass 4 GiB; 1: the row's own inputs only)")
    a = ap.parse_args()
    if a.placements < 1:
        ap.error("--placements must be 1 or more")
    if a.untuned and ktune is not None:
        ktune.configure(shipped_tables=False)
    if a.no_neighbours and ktune is not None:
        ktune.configure(neighbours=False)
    global DELAY, PRELUDE, WARM_CODE
    DELAY = not a.no_delay
    WARM_CODE = a.warm_code
    PRELUDE = make_prelude(a.prelude) if a.prelude else None
    suite = json.load(open(a.suite))
    rows = suite["problems"][: a.rows or None]
    dev = torch.cuda.get_device_name(0)
    timer = Timer()
    copies = {}

    def copy_tb_s(nbytes):
        n = int(nbytes)
        if n not in copies:
            src = torch.empty(n, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            copies[n] = 2 * n / timer.median_ms(lambda: dst.copy_(src)) / 1e9
        return copies[n]

    print("# %s, torch %s, cuDNN %s, %s%s" % (dev, torch.__version__, torch.backends.cudnn.version(),
                                           "calls queued behind a GPU delay" if DELAY else "no delay: host cost counts",
                                           (", ktune without its shipped tables" if a.untuned else "") +
                                           (", first use without neighbours" if a.no_neighbours else "") +
                                           (", code warmed by a call on other inputs" if a.warm_code else "") +
                                           (", prelude " + a.prelude if a.prelude else "") +
                                           (", %d placements a backend" % a.placements if a.placements > 1 else "")))
    print("%-28s %-34s %s" % ("model", "B x Hq/Hkv x Sq x Sk x D causal", "  ".join("%-16s" % n for n, _ in BACKENDS)))
    results = []
    for r in rows:
        res = run_row(r, timer, copy_tb_s, a.placements)
        results.append(res)
        shape = "%d x %d/%d x %d x %d x %d %s" % (r["batch"], r["heads"], r["kv_heads"], r["q_len"], r["kv_len"],
                                                  r["head_dim"], "c" if is_causal(r) else "-")
        cells = []
        for n, _ in BACKENDS:
            b = res["backends"][n]
            if b.get("status") != "ok":
                cells.append("%-16s" % b.get("status", "?")[:16])
            elif r["q_len"] <= 16:
                cells.append("%-16s" % ("%.2f TB/s %3.0f%%" % (b["kv_tb_s"], 100 * b["of_copy"])))
            else:
                cells.append("%-16s" % ("%.0f TFLOPS" % b["tflops"]))
        print("%-28s %-34s %s" % (r.get("model", "")[:28], shape, "  ".join(cells)), flush=True)
        sel = res["backends"].get("ktune", {}).get("selection")
        if a.explain and sel:
            timed = sorted(sel["candidates"], key=lambda c: c["measured_ms"])
            lead = ", first use %.4f ms, next %.4f ms of %d timed" % (
                timed[0]["measured_ms"], timed[1]["measured_ms"], len(timed)) if len(timed) > 1 else ""
            print("    ktune ran %s %s, %s%s" % (sel["family"], json.dumps(sel["config"], separators=(",", ":")),
                                              sel["provenance"], lead if sel["provenance"] != "exact" else ""))
        if a.explain and res["placements"] > 1:
            print("    over %d placements (us): %s" % (res["placements"], ", ".join(
                "%s %s" % (n, "/".join("%.2f" % (1000 * t) for t in b["placement_ms"]))
                for n, b in res["backends"].items() if "placement_ms" in b)))
    # ktune against the best backend that ran and against flash (FlashAttention-2), per row and in geomean.
    ratios = {"best": [], "flash": []}
    for res in results:
        kt = res["backends"]["ktune"]
        if kt.get("status") != "ok":
            continue
        others = [b["ms"] for n, b in res["backends"].items() if n != "ktune" and b.get("status") == "ok"]
        if others:
            res["ktune_vs_best"] = min(others) / kt["ms"]
            ratios["best"].append(res["ktune_vs_best"])
        if res["backends"]["flash"].get("status") == "ok":
            res["ktune_vs_flash"] = res["backends"]["flash"]["ms"] / kt["ms"]
            ratios["flash"].append(res["ktune_vs_flash"])
    for what, v in ratios.items():
        if v:
            print("ktune vs %-5s: geomean %.3fx, min %.3fx over %d rows" %
                  (what, math.exp(sum(map(math.log, v)) / len(v)), min(v), len(v)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                       "ktune_tables": "database only (--untuned)" if a.untuned else "shipped and database",
                       "neighbours": not a.no_neighbours,
                       "prelude": a.prelude,
                       "placements": a.placements,
                       "rows": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
