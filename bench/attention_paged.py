#!/usr/bin/env python3
"""A paged KV cache against a contiguous one, on the decode rows of configs/suites/attention.json: what
the issue's "paged within 5 % of contiguous at page size >= 64" is measured with.

For each decode row (q_len <= 16), one process, bf16, random normal data: K and V written once as a
contiguous cache (batch, kv_len, kv_heads, head_dim) and once in pages of P keys (P = 16, 64, 256) laid
out in a random permutation of the pages (a block table per sequence, as a vLLM cache after a while of
serving), every sequence full (seq_lens = kv_len). Columns:
  contiguous   ktune.attention on the contiguous cache (op attention: the tuned table where it has the row)
  one page     ktune.attention_decode(block_table=None): op attention_paged, one page a sequence
  page P       ktune.attention_decode with the block table
Every output is checked first against an FP64 reference (max |err| <= 2^-6 + 2^-6 |ref|), then timed as
bench/attention_vs_torch.py times (L2 flushed, queued behind a GPU delay, median of 25). Each column is
timed over --placements allocations of its inputs (4; fewer where their K and V would pass 4 GiB): q,
seq_lens and the caches copied to other addresses, the pages in another random order, all alive at
once; its time is the median of theirs. Where a call is short, where its inputs lie moves it by more
than the layout does: at 1 x 32/8 x 1024 (a 10 us call, H100, every input cold) the contiguous column
read 10.0-10.1 us at half its placements and 10.7-10.9 us at the other half, in two runs alike, so
one placement a column compares allocations, not layouts. TB/s of K and V read; "vs contiguous" is each paged column's
time over the contiguous column's. The JSON keeps, for each
column, the selection that served it (family, config, provenance, first use's timed candidates): the
paged columns of a shape nobody tuned for paging are served by first use, which may pick differently
at each page size.

--warm-small-inputs: after each flush, q, seq_lens and the block table are read back into the L2 (K and V
stay cold), as a decode step serves them: q was just written by the step's previous kernel, and the
block table and lengths are one tensor each for every layer of the step, read by the layers before.
Every column gets the same (the contiguous and one-page columns: q and seq_lens).

Usage: python3 bench/attention_paged.py [--suite configs/suites/attention.json] [--json OUT.json]
                                        [--placements N] [--warm-small-inputs] [--profile]
"""
import argparse
import json
import math
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_vs_torch import (Timer, is_causal, ktune_selection, kv_bytes, placements_for,  # noqa: E402
                                reference_rows)

import ktune  # noqa: E402

PAGES = (16, 64, 256)


def paged_copy(k, v, page, g):
    """k and v (B, S, Hk, D) in pages of `page` keys at the same random places:
    (k_cache, v_cache, block_table)."""
    B, S, Hk, D = k.shape
    pps = S // page
    perm = torch.randperm(B * pps, device=k.device, generator=g).to(torch.int32)
    caches = []
    for x in (k, v):
        cache = torch.empty(B * pps, page, Hk, D, device=x.device, dtype=x.dtype)
        cache[perm.long()] = x.reshape(B * pps, page, Hk, D)
        caches.append(cache)
    return caches[0], caches[1], perm.view(B, pps)


def kernels_of(call):
    """The GPU kernels one call launches (after a warm-up call): [(name, microseconds)], from the
    PyTorch profiler (CUPTI sees ktune's driver-API launches too)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    return [(e.name, e.time_range.elapsed_us()) for e in prof.events() if e.device_type == DeviceType.CUDA]


def run_row(r, timer, profile_calls=False, warm_small=False, placements=1):
    g = torch.Generator(device="cuda").manual_seed(4321)
    B, H, Hk, Sq, Sk, D = r["batch"], r["heads"], r["kv_heads"], r["q_len"], r["kv_len"], r["head_dim"]
    causal = is_causal(r)
    q = torch.randn(B, Sq, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(B, Sk, Hk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(B, Sk, Hk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    lens = torch.full((B,), Sk, dtype=torch.int32, device="cuda")
    ref = reference_rows(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal, list(range(Sq)))
    n = placements_for(kv_bytes(r), placements)  # a paged column also holds the row's contiguous K and V

    # Each column's placements: (call, the small inputs a decode step finds in L2). Placement 0 reads
    # q, k, v and lens themselves; the others fresh copies (the same values at other addresses, the
    # paged caches in pages of another random order), all alive at once so that no two share memory.
    def column(name, i):
        qq, ll = (q, lens) if i == 0 else (q.clone(), lens.clone())
        if name in ("contiguous", "one page"):
            kk, vv = (k, v) if i == 0 else (k.clone(), v.clone())
            if name == "contiguous":
                return (lambda: ktune.attention(qq, kk, vv, causal=causal)), [qq, ll]
            return (lambda: ktune.attention_decode(qq, kk, vv, ll, causal=causal)), [qq, ll]
        kc, vc, bt = paged_copy(k, v, int(name.split()[1]), g)
        return (lambda: ktune.attention_decode(qq, kc, vc, ll, block_table=bt, causal=causal)), [qq, ll, bt]

    names = ["contiguous", "one page"] + ["page %d" % p for p in PAGES if Sk % p == 0]
    res = {"row": r, "placements": n, "columns": {}}
    for name in names:
        c = {}
        places = o = call = small = warm = None
        try:
            places = [column(name, i) for i in range(n)]
            before = set(ktune._runtime.calls)
            for i, (call, _) in enumerate(places):
                o = call()
                torch.cuda.synchronize()
                if i == 0:
                    selection = ktune_selection(before, "attention" if name == "contiguous" else "attention_paged")
                    if selection is not None:
                        c["selection"] = selection
                err = ((o.transpose(1, 2).double() - ref).abs() - (2 ** -6) * ref.abs()).max().item()
                c["max_excess"] = max(err, c.get("max_excess", err))
                if not err <= 2 ** -6:
                    c["status"] = "wrong (max |err| - 2^-6 |ref| = %.3g, placement %d)" % (err, i)
                    break
            if "status" not in c:
                ms = []
                for call, small in places:
                    # Read back into the L2: a sum of each (one small kernel each, every column the same).
                    warm = (lambda ts=small: [t.sum() for t in ts]) if warm_small else None
                    ms.append(timer.median_ms(call, warm))
                mid = statistics.median(ms)
                c.update(status="ok", ms=mid, placement_ms=ms, kv_tb_s=kv_bytes(r) / mid / 1e9)
                if profile_calls:
                    c["kernels"] = kernels_of(places[0][0])
        except (RuntimeError, ValueError) as e:
            c["status"] = "fails: " + str(e).split("\n")[0][:120]
        finally:
            # Nothing of this column's placements kept while the next one allocates its own.
            places = o = call = small = warm = None
        res["columns"][name] = c
    base = res["columns"]["contiguous"]
    for name, c in res["columns"].items():
        if name != "contiguous" and c.get("status") == "ok" and base.get("status") == "ok":
            c["vs_contiguous"] = base["ms"] / c["ms"]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default=os.path.join(os.path.dirname(__file__), "..", "configs", "suites", "attention.json"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", action="store_true", help="also list each column's kernels and their times")
    ap.add_argument("--placements", type=int, default=4,
                    help="time each column over this many allocations of its inputs (fewer where they pass 4 GiB of K and V)")
    ap.add_argument("--warm-small-inputs", action="store_true",
                    help="q, seq_lens and the block table in L2 at each call (K and V cold), as a decode step finds them")
    a = ap.parse_args()
    rows = [r for r in json.load(open(a.suite))["problems"] if r["q_len"] <= 16]
    dev = torch.cuda.get_device_name(0)
    timer = Timer()
    names = ["contiguous", "one page"] + ["page %d" % p for p in PAGES]
    print("# %s, torch %s; TB/s of K and V read (vs contiguous: its time over the column's)%s" %
          (dev, torch.__version__, "; q, seq_lens, block table warm in L2" if a.warm_small_inputs else ""))
    print("%-14s %-28s %s" % ("model", "B x Hq/Hkv x Sq x Sk x D", "  ".join("%-17s" % n for n in names)))
    results = []
    ratios = {}
    for r in rows:
        res = run_row(r, timer, a.profile, a.warm_small_inputs, max(1, a.placements))
        results.append(res)
        if a.profile:
            for n in names:
                for k, us in res["columns"].get(n, {}).get("kernels", []):
                    print("    %-10s %8.1f us  %s" % (n, us, k[:150]))
        cells = []
        for n in names:
            c = res["columns"].get(n, {"status": "-"})
            if c.get("status") != "ok":
                cells.append("%-17s" % c.get("status", "?")[:17])
            elif "vs_contiguous" in c:
                cells.append("%-17s" % ("%.2f TB/s %.3fx" % (c["kv_tb_s"], c["vs_contiguous"])))
                ratios.setdefault(n, []).append(c["vs_contiguous"])
            else:
                cells.append("%-17s" % ("%.2f TB/s" % c["kv_tb_s"]))
        shape = "%d x %d/%d x %d x %d x %d" % (r["batch"], r["heads"], r["kv_heads"], r["q_len"], r["kv_len"],
                                               r["head_dim"])
        print("%-14s %-28s %s" % (r.get("model", "")[:14], shape, "  ".join(cells)), flush=True)
        if res["placements"] > 1:
            print("    over %d placements (us): %s" % (res["placements"], ", ".join(
                "%s %s" % (n, "/".join("%.2f" % (1000 * t) for t in c["placement_ms"]))
                for n, c in res["columns"].items() if c.get("status") == "ok")))
    for n, v in ratios.items():
        print("%-10s vs contiguous: geomean %.3fx, min %.3fx over %d rows" %
              (n, math.exp(sum(map(math.log, v)) / len(v)), min(v), len(v)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "warm_small_inputs": a.warm_small_inputs,
                       "rows": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
