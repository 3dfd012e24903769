#!/usr/bin/env python3
"""ktune.attention_varlen (packed sequences of different lengths) beside PyTorch's FlashAttention-2 varlen kernel
(torch.ops.aten._flash_attention_forward with cumulative lengths: flash_attn_varlen_func's kernel) and its
scaled_dot_product_attention on nested jagged tensors (PyTorch's public way to run packed sequences; "njt-"
columns), in one process, and beside ktune.attention on
the same sequences padded to the longest (what a caller without varlen pays; causal rows only: with causal
masking the padding after a sequence is past every one of its rows' diagonals, without it the padded keys would
count).

Each row: bf16 q / k / v of a batch of sequences with the lengths given (self-attention: q and kv lengths equal),
heads and kv heads as a real model's, packed (tokens, heads, head_dim). Every column is verified first on the
first and last 32 query rows of every sequence against FP64 of that sequence alone (max |error| <= 2^-6 +
2^-6 |ref|); a column that fails or does not run says so. Nested tensors take no GQA: PyTorch's column gets k and
v with their heads repeated (its extra reads are a small share of a compute-bound prefill). Timed as
bench/attention_vs_torch.py times (warm-up, the L2 flushed, a GPU delay before each call, the median of 25).
TFLOPS count each sequence's own visible pairs (4 H D per pair, causal bottom-right aligned).

Usage: python3 bench/attention_varlen_vs_torch.py [--json OUT.json]
"""
import argparse
import itertools
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(__file__))
from attention_vs_torch import Timer  # noqa: E402

import ktune  # noqa: E402

# (name, heads, kv_heads, head_dim, causal, sequence lengths)
ROWS = [
    ("llama3-8b packed 16k", 32, 8, 128, True, [4096, 1024, 512, 3000, 200, 7000, 452]),
    ("llama3-8b packed 16k, full", 32, 8, 128, False, [4096, 1024, 512, 3000, 200, 7000, 452]),
    ("llama3-8b 8 x 2k", 32, 8, 128, True, [2048] * 8),
    ("mistral 64 short", 32, 8, 128, True, [97 + 61 * i for i in range(64)]),
    ("gemma d256 packed", 16, 8, 256, True, [3000, 1500, 700, 2900]),
    ("gpt2 d64 packed", 12, 12, 64, True, [1024, 333, 1024, 900, 17, 1024, 800]),
]
BACKENDS = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION)]


def pairs(n, causal):
    return n * (n + 1) / 2 if causal else float(n) * n


def ref_rows(q, k, v, causal, rows):
    """FP64 attention of query rows `rows` of one sequence: q (S, H, D), k and v (S, Hk, D)."""
    S, H, D = q.shape
    Hk = k.shape[1]
    qs = q[rows].double().transpose(0, 1)
    kk = k.double().transpose(0, 1).repeat_interleave(H // Hk, dim=0)
    vv = v.double().transpose(0, 1).repeat_interleave(H // Hk, dim=0)
    s = torch.einsum("hqd,hkd->hqk", qs, kk) / math.sqrt(D)
    if causal:
        qi = torch.tensor(rows, device=q.device).view(-1, 1)
        s = s.masked_fill(torch.arange(S, device=q.device).view(1, -1) > qi, float("-inf"))
    return torch.einsum("hqk,hkd->hqd", torch.softmax(s, dim=-1), vv).transpose(0, 1)


def run_row(row, timer):
    name, H, Hk, D, causal, lens = row
    g = torch.Generator(device="cuda").manual_seed(99)
    T, B, S = sum(lens), len(lens), max(lens)
    q = torch.randn(T, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(T, Hk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(T, Hk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    cu = torch.tensor([0] + list(itertools.accumulate(lens)), dtype=torch.int32, device="cuda")
    checks = []  # (token offset, rows, reference)
    for b, n in enumerate(lens):
        t0 = int(cu[b])
        rows = sorted(set(list(range(min(32, n))) + list(range(max(0, n - 32), n))))
        checks.append((t0, rows, ref_rows(q[t0:t0 + n], k[t0:t0 + n], v[t0:t0 + n], causal, rows)))
    flop = sum(4.0 * H * D * pairs(n, causal) for n in lens)

    # PyTorch: nested jagged (B, j, H, D) viewed as (B, H, j, D), k / v heads repeated.
    offsets = cu.long()
    kr, vr = (x.repeat_interleave(H // Hk, dim=1) for x in (k, v))
    # The lengths' extremes given, so that no call reads them back from the GPU (a sync, which the
    # delay before each timed call would then count).
    nq, nk, nv = (torch.nested.nested_tensor_from_jagged(x, offsets, min_seqlen=min(lens), max_seqlen=S)
                  .transpose(1, 2) for x in (q, kr, vr))
    sdpa = lambda: F.scaled_dot_product_attention(nq, nk, nv, is_causal=causal)
    varlen = lambda: ktune.attention_varlen(q, k, v, cu, cu, S, S, causal=causal)
    # Padded to the longest: (B, S, H, D), each sequence's rows first, zeros after.
    qp = torch.zeros(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    kp = torch.zeros(B, S, Hk, D, device="cuda", dtype=torch.bfloat16)
    vp = torch.zeros(B, S, Hk, D, device="cuda", dtype=torch.bfloat16)
    for b, n in enumerate(lens):
        t0 = int(cu[b])
        qp[b, :n], kp[b, :n], vp[b, :n] = q[t0:t0 + n], k[t0:t0 + n], v[t0:t0 + n]
    padded_out = torch.empty_like(qp)

    def padded():
        ktune.attention(qp, kp, vp, causal=causal, out=padded_out)
        return padded_out

    def padded_rows(o):
        return torch.cat([o[b, :n] for b, n in enumerate(lens)])

    # FlashAttention-2's own varlen entry inside PyTorch (flash_attn_varlen_func's kernel; GQA native).
    fa2_varlen = lambda: torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, S, S, 0.0, causal, False)[0]

    columns = [("ktune varlen", varlen, None, lambda o: o), ("torch fa2-varlen", fa2_varlen, None, lambda o: o)]
    columns += [("torch njt-" + n, sdpa, be, lambda o: o.transpose(1, 2).values()) for n, be in BACKENDS]
    if causal:
        columns += [("ktune padded", padded, None, padded_rows)]
    out = {"name": name, "heads": H, "kv_heads": Hk, "head_dim": D, "causal": causal, "lens": lens,
           "flops": flop, "columns": {}}
    for col, fn, backend, packed in columns:
        res = {}
        try:
            with sdpa_kernel([backend] if backend is not None else [b for _, b in BACKENDS]):
                o = packed(fn())
                torch.cuda.synchronize()
                worst = max(((o[t0 + torch.tensor(rows, device="cuda")].double() - ref).abs() - 2 ** -6 * ref.abs())
                            .max().item() for t0, rows, ref in checks)
                if not worst <= 2 ** -6:
                    res["status"] = "wrong (max |err| - 2^-6 |ref| = %.3g)" % worst
                else:
                    ms = timer.median_ms(fn)
                    res.update(status="ok", ms=ms, tflops=flop / ms / 1e9)
        except (RuntimeError, ValueError) as e:
            res["status"] = "does not run: " + str(e).split("\n")[0][:120]
        out["columns"][col] = res
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dev = torch.cuda.get_device_name(0)
    print("device: %s, torch %s" % (dev, torch.__version__))
    timer = Timer()
    results = []
    for row in ROWS:
        r = run_row(row, timer)
        results.append(r)
        cols = r["columns"]
        best = max((c["tflops"] for n, c in cols.items() if n.startswith("torch") and c.get("status") == "ok"),
                   default=None)
        kt = cols["ktune varlen"]
        line = "%-28s %3d seqs %6d tokens: " % (r["name"], len(r["lens"]), sum(r["lens"]))
        line += "  ".join("%s %s" % (n, "%.0f TFLOPS" % c["tflops"] if c.get("status") == "ok" else c["status"][:40])
                          for n, c in cols.items())
        if best and kt.get("status") == "ok":
            line += "  | ktune varlen / best torch %.2fx" % (kt["tflops"] / best)
        print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "rows": results}, f, indent=1)


if __name__ == "__main__":
    main()
