#!/usr/bin/env python3
"""ktune.attention_decode over a paged KV cache whose sequences are shorter than its capacity, as a
decode step served through CUDA graphs sees them (the block table as wide as the longest context
the graph was captured for, each sequence's own length in seq_lens), under each of several ktune
databases in one process: an A/B of the configs they hold for the problem.

For each row, bf16, random normal data in pages of `page` keys at random places (a block table per
sequence), lengths drawn uniformly from [lo, hi] x the capacity (seeded; at least one key). Every
database's output is checked first against an FP64 reference over each sequence's own keys
(max |err| <= 2^-6 + 2^-6 |ref|), then timed as bench/attention_vs_torch.py times (L2 flushed, queued
behind a GPU delay, median of 25), the databases in turn for --rounds rounds. TB/s counts the K and
V bytes of the sequences' own keys.

Usage: python3 bench/decode_ragged.py --db NAME=PATH [--db NAME=PATH ...]
                                      [--row BxHxHKVxSQxCAPxD:PAGE:LO:HI ...] [--rounds 2] [--json OUT]
A database is served alone (no shipped tables, no first-use timing): each should hold a tuned entry
for every row's problem (op attention_paged, causal), e.g. from `ktune tune --restrict`. The paged
family has one split order, the turns (ILV 1; an entry recorded with contiguous splits reads as
taking them, docs/TEMPLATES.md), so databases differ here in the other parameters; the
contiguous-against-turns A/B of docs/runs/2026-12-05-h100-decode-turns.md ran on f4f7850, where a
paged config could still take contiguous splits. The name
"served" with the path "untuned" is the runtime as a user gets it with no database: the shipped
tables, and first use timing the candidates (lenders, the default and its neighbours) on the row's
first call, with its lengths.
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_paged import paged_copy  # noqa: E402
from attention_vs_torch import Timer, reference_rows  # noqa: E402

import ktune  # noqa: E402

ROWS = ["4x32x8x1x32768x128:64:0.03:0.25", "4x32x8x1x32768x128:64:0.75:1.0", "16x32x8x1x8192x128:64:0.1:1.0"]


def reference(q, k, v, lens):
    """FP64 decode attention of q (B, SQ, H, D) over each sequence's first lens[b] keys of k, v
    (B, CAP, HKV, D), causal bottom-right aligned to each sequence's own length: (B, SQ, H, D).
    Each sequence is attention_vs_torch's reference over its own keys."""
    rows = list(range(q.shape[1]))
    out = [reference_rows(q[b:b + 1].transpose(1, 2), k[b:b + 1, :int(L)].transpose(1, 2),
                          v[b:b + 1, :int(L)].transpose(1, 2), True, rows).transpose(1, 2)
           for b, L in enumerate(lens)]
    return torch.cat(out)


def parse_row(text):
    shape, page, lo, hi = text.split(":")
    B, H, HKV, SQ, CAP, D = (int(x) for x in shape.split("x"))
    return dict(batch=B, heads=H, kv_heads=HKV, q_len=SQ, capacity=CAP, head_dim=D, page=int(page), lo=float(lo),
                hi=float(hi))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", action="append", required=True, help="NAME=PATH, a database to serve from (repeatable)")
    ap.add_argument("--row", action="append", help="BxHxHKVxSQxCAPxD:PAGE:LO:HI (default: %s)" % " ".join(ROWS))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    dbs = []
    for d in a.db:
        name, sep, path = d.partition("=")
        if not sep or not (path == "untuned" or os.path.exists(path)):
            sys.exit("decode_ragged: --db takes NAME=PATH of an existing database (or NAME=untuned), got %r" % d)
        dbs.append((name, path))
    timer = Timer()
    print("# %s, torch %s; lengths uniform in [lo, hi] x capacity, causal, bf16" %
          (torch.cuda.get_device_name(0), torch.__version__))
    results = []
    for text in a.row or ROWS:
        r = parse_row(text)
        B, H, HKV, SQ, CAP, D, P = (r[k] for k in ("batch", "heads", "kv_heads", "q_len", "capacity", "head_dim", "page"))
        if CAP % P:
            sys.exit("decode_ragged: the capacity %d is not a whole number of pages of %d" % (CAP, P))
        g = torch.Generator(device="cuda").manual_seed(1234)
        q = torch.randn(B, SQ, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(B, CAP, HKV, D, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(B, CAP, HKV, D, device="cuda", dtype=torch.bfloat16, generator=g)
        u = torch.rand(B, device="cuda", generator=g)
        lens = ((r["lo"] + (r["hi"] - r["lo"]) * u) * CAP).clamp(min=SQ, max=CAP).to(torch.int32)
        kc, vc, bt = paged_copy(k, v, P, g)
        ref = reference(q, k, v, lens.tolist())
        read = 2.0 * HKV * D * 2 * float(lens.sum())
        call = lambda: ktune.attention_decode(q, kc, vc, lens, block_table=bt, causal=True)  # noqa: E731
        times = {name: [] for name, _ in dbs}
        status = {}
        for rnd in range(a.rounds):
            for name, path in dbs:
                if path == "untuned":  # a database that does not exist: none
                    ktune.configure(db=os.path.join(os.path.sep, "nonexistent", "ktune.db"), shipped_tables=True,
                                    measure_untuned=True)
                else:
                    ktune.configure(db=path, shipped_tables=False, measure_untuned=False)
                if rnd == 0:
                    o = call()
                    torch.cuda.synchronize()
                    err = ((o.double() - ref).abs() - 2 ** -6 * ref.abs()).max().item()
                    status[name] = "ok" if err <= 2 ** -6 else "wrong (max |err| - 2^-6 |ref| = %.3g)" % err
                if status[name] == "ok":
                    times[name].append(timer.median_ms(call))
        row = {"row": text, "lens": lens.tolist(), "kv_bytes": read, "columns": {}}
        cells = []
        for name, _ in dbs:
            if status[name] != "ok":
                row["columns"][name] = {"status": status[name]}
                cells.append("%s %s" % (name, status[name]))
                continue
            ms = statistics.median(times[name])
            row["columns"][name] = {"status": "ok", "ms": ms, "rounds_ms": times[name], "kv_tb_s": read / ms / 1e9}
            cells.append("%s %7.1f us %5.2f TB/s" % (name, ms * 1e3, read / ms / 1e9))
        first = row["columns"][dbs[0][0]]
        for name, _ in dbs[1:]:
            c = row["columns"][name]
            if c.get("status") == "ok" and first.get("status") == "ok":
                c["vs_first"] = first["ms"] / c["ms"]
                cells.append("%s/%s %.2fx" % (name, dbs[0][0], c["vs_first"]))
        print("%-36s lens %5d-%5d  %s" % (text, min(row["lens"]), max(row["lens"]), "  ".join(cells)), flush=True)
        results.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "rows": results}, f, indent=1)


if __name__ == "__main__":
    main()
