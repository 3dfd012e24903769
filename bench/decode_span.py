#!/usr/bin/env python3
"""Where a decode call's time goes, L2 cold as bench/attention_vs_torch.py times it: for each decode
row (q_len <= 16) of a suite, 15 calls of ktune.attention (L2 flushed by a read, then a GPU delay,
then the call) under the PyTorch profiler (CUPTI sees ktune's driver-API launches), and per row the
median of: the split kernel's duration, the combine step's (0 where the splits merge in their
cluster or there is one split), and the span from the split kernel's start to the last kernel's
end. Set beside bench/read_floor's time for the same bytes, it shows what a second kernel costs a
short call.

Usage: python3 bench/decode_span.py [--suite configs/suites/attention.json]
"""
import argparse
import json
import os
import statistics
import sys

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_vs_torch import Timer, is_causal, kv_bytes  # noqa: E402

import ktune  # noqa: E402

CALLS = 15


def sorted_calls(ev):
    """The kernels of ev (sorted by start) grouped by call: a split kernel starts a call, its combine
    step (if any) follows it."""
    calls = []
    for x in ev:
        if "combine" in x[2] and calls:
            calls[-1].append(x)
        else:
            calls.append([x])
    return calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default=os.path.join(os.path.dirname(__file__), "..", "configs", "suites", "attention.json"))
    ap.add_argument("--warm-code", action="store_true",
                    help="after each flush, one untimed call on other inputs (code warm, the timed call's data cold)")
    a = ap.parse_args()
    rows = [r for r in json.load(open(a.suite))["problems"] if r["q_len"] <= 16]
    timer = Timer()  # its L2 flush (a read of 2 x L2) and GPU delay, as the bench times a call
    print("# %s; medians of %d calls, L2 cold%s" % (torch.cuda.get_device_name(0), CALLS,
                                                   ", code warmed by a call on other inputs" if a.warm_code else ""))
    for r in rows:
        g = torch.Generator(device="cuda").manual_seed(1234)
        B, H, Hk, Sq, Sk, D = r["batch"], r["heads"], r["kv_heads"], r["q_len"], r["kv_len"], r["head_dim"]
        q = torch.randn(B, Sq, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(B, Sk, Hk, D, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(B, Sk, Hk, D, device="cuda", dtype=torch.bfloat16, generator=g)
        call = lambda: ktune.attention(q, k, v, causal=is_causal(r))
        twin = [torch.randn_like(x) for x in (q, k, v)] if a.warm_code else None
        call()
        call()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(CALLS):
                timer.flush.sum()
                if twin is not None:
                    ktune.attention(*twin, causal=is_causal(r))
                torch.cuda._sleep(timer.delay_cycles)
                call()
            torch.cuda.synchronize()
        ev = sorted((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                    if e.device_type == DeviceType.CUDA and "attention_decode" in e.name)
        if twin is not None:  # each call's twin ran first: keep the timed call's kernels, every second launch
            ev = [x for n, x in enumerate(sorted_calls(ev)) if n % 2 == 1]
            ev = [k for call_kernels in ev for k in call_kernels]
        split = [x for x in ev if "combine" not in x[2]]
        comb = [x for x in ev if "combine" in x[2]]
        spans = []
        for s, e, _ in split:
            after = [c for c in comb if s <= c[0] < s + 1000]  # this call's combine step, if any
            spans.append(max([e] + [c[1] for c in after[:1]]) - s)
        print("%-22s %5.0f MiB  split %6.1f us  combine %5.1f us  span %6.1f us  %s" % (
            "%dx%d/%dx%dx%dx%d" % (B, H, Hk, Sq, Sk, D), kv_bytes(r) / 2**20,
            statistics.median(e - s for s, e, _ in split),
            statistics.median(e - s for s, e, _ in comb) if comb else 0.0, statistics.median(spans),
            split[0][2].split("(")[0]), flush=True)


if __name__ == "__main__":
    sys.exit(main())
