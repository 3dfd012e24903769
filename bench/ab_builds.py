#!/usr/bin/env python3
"""Two builds of ktune side by side: `ktune bench` of one suite with build A, then build B, then A
again, ..., for a number of rounds on one GPU, and per problem the median over rounds of each
build's time and their ratio (B / A, < 1: B faster). Alternating keeps a drift of the device (clocks,
temperature, a neighbour on the host) from landing on one build only.

    python3 bench/ab_builds.py --a old/ktune --b build/ktune --suite configs/suites/public.json \
        --dtype bf16 --rounds 2 --out DIR

tools/gpu-check.sh ab runs it over its suites. Each run's JSON (`ktune bench --json`) is kept under DIR as
<label><A or B>-<round>.json; the summary is
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


def run(binary, suite, dtype, out_json, db):
    cmd = [binary, "bench", "--suite", suite, "--json", out_json]
    if dtype:
        cmd += ["--dtype", dtype]
    env = dict(os.environ)
    if db:  # a database that does not exist: only the shipped tables serve (KTUNE_DB, as the default)
        for f in (db, db + "-wal", db + "-shm"):
            if os.path.exists(f):
                os.remove(f)
        env["KTUNE_DB"] = db
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
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
    ap.add_argument("--fresh-db", action="store_true",
                    help="no user database (KTUNE_DB names one that does not exist): only the shipped tables serve")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    per = {"A": [], "B": []}
    geomeans = []
    device = ""
    for i in range(args.rounds):
        for build, binary in (("A", args.a), ("B", args.b)):
            name = "%s%s-%d" % (args.label, build, i)
            rep = run(binary, args.suite, args.dtype, os.path.join(args.out, name + ".json"),
                      os.path.join(args.out, name + ".db") if args.fresh_db else "")
            device = rep.get("device", device)
            per[build].append(times(rep))
            if "geomean_ratio" in rep:  # GEMM suites: each run's ratio to cuBLAS, timed in that run
                geomeans.append("%s %s: against cuBLAS runtime %.3f, kernels %.3f"
                                % (build, i, rep["geomean_ratio"], rep["geomean_kernel_ratio"]))
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
    lines += geomeans
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(args.out, "%ssummary.txt" % args.label), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
