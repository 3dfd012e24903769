#!/usr/bin/env python3
"""Two builds of ktune side by side: `ktune bench` of one suite with build A, then build B, then A
again, ..., for a number of rounds on one GPU, and per problem the median over rounds of each
build's time and their ratio (B / A, < 1: B faster). Alternating keeps a drift of the device (clocks,
temperature, a neighbour on the host) from landing on one build only.

    python3 bench/ab_builds.py --a old/ktune --b build/ktune --suite configs/suites/public.json \
        --dtype bf16 --rounds 2 --out DIR

Each run's JSON (`ktune bench --json`) is kept under DIR as <label>-<round>.json; the summary is
printed and written to DIR/summary.txt. GEMM rows compare ktune's time (ktune_ms), row-op and other
bandwidth rows their ms. A failed run stops the script with its output.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys


def run(binary, suite, dtype, out_json):
    cmd = [binary, "bench", "--suite", suite, "--json", out_json]
    if dtype:
        cmd += ["--dtype", dtype]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s failed (exit %d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    with open(out_json) as f:
        return json.load(f)


def times(report):
    out = {}
    for r in report["rows"]:
        key = r.get("problem") or r.get("name")
        t = r.get("ktune_ms", r.get("ms"))
        if key and t:
            out[key] = t
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="ktune program of build A (the baseline)")
    ap.add_argument("--b", required=True, help="ktune program of build B")
    ap.add_argument("--suite", required=True)
    ap.add_argument("--dtype", default="")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", required=True, help="folder for the runs' JSON and the summary")
    ap.add_argument("--label", default="", help="prefix of the files written")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    per = {"A": [], "B": []}
    device = ""
    for i in range(args.rounds):
        for build, binary in (("A", args.a), ("B", args.b)):
            rep = run(binary, args.suite, args.dtype, os.path.join(args.out, "%s%s-%d.json" % (args.label, build, i)))
            device = rep.get("device", device)
            per[build].append(times(rep))
    keys = [k for k in per["A"][0] if all(k in t for t in per["A"] + per["B"])]
    lines = ["%s: %s %s, %d rounds, A = %s, B = %s" % (device, args.suite, args.dtype or "(suite's dtype)", args.rounds,
                                                       args.a, args.b),
             "%-44s %10s %10s %8s" % ("problem", "A ms", "B ms", "B / A")]
    logs = []
    for k in keys:
        a = statistics.median(t[k] for t in per["A"])
        b = statistics.median(t[k] for t in per["B"])
        logs.append(math.log(b / a))
        lines.append("%-44s %10.4f %10.4f %8.3f" % (k, a, b, b / a))
    gm = math.exp(sum(logs) / len(logs)) if logs else float("nan")
    lines.append("geomean B / A over %d problems: %.4f (worst %.3f, best %.3f)"
                 % (len(logs), gm, math.exp(max(logs)) if logs else float("nan"), math.exp(min(logs)) if logs else float("nan")))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(args.out, "%ssummary.txt" % args.label), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
