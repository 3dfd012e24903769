#!/usr/bin/env python3
"""Replays the runtime's first-use candidates at recorded shapes, without a GPU.

For every problem of the trial logs (ktune tune --trials-out, *.jsonl or *.jsonl.gz) that ktune
answers "nearest" (no table holds it), asks `ktune query --json` which configs first use would
time there (lenders and their neighbours) and looks each up among the trials of that problem. It
prints, per problem, how many candidates the trials measured and the best of them against the best
trial: 1.000 means first use would have found the fastest config the tune saw, 0.90 that it would
run 1.11x its time. A rule for neighbours is judged by these before it is timed on a GPU (session
19, docs/PERFORMANCE.md). Candidates the trials never timed count for nothing, so a problem with
few measured candidates says little.

  python3 tools/replay_neighbours.py --ktune build/ktune docs/runs/*h100*trials.jsonl.gz
  python3 tools/replay_neighbours.py --ktune build/ktune --show 3072x768x3072 docs/runs/*trials*.gz

Options: --dtype (bf16), --family (gemm_wgmma), --arch (sm_90), --device-contains (H100: trials of
another GPU are left out), --min-trials (20), --show SHAPE[,SHAPE] (each candidate and the best
trials of those shapes), --ignore P[,P] (parameters left out of matching a candidate to a trial,
e.g. SWZ: a lender's raster swizzle, which the tunes rarely timed beside the neighbours' others).
"""
import argparse
import collections
import gzip
import json
import math
import subprocess
import sys


def open_log(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+", help="trial logs (.jsonl or .jsonl.gz)")
    ap.add_argument("--ktune", default="build/ktune")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--family", default="gemm_wgmma")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--device-contains", default="H100")
    ap.add_argument("--min-trials", type=int, default=20)
    ap.add_argument("--show", default="")
    ap.add_argument("--ignore", default="")
    a = ap.parse_args()
    ignored = set(filter(None, a.ignore.split(",")))

    # Configs recorded before a parameter existed lack it; the family's canonical form fills it in
    # the same way (its upgrade), and equal configs must compare equal here.
    keys, defaults = None, {"SWAP": 0, "SK": 0, "PP": 0, "MC": 0, "PT": 0, "EPI": 0, "CL": 1, "SPLITK": 1, "PACK": 0, "TMA": 1}
    trials = collections.defaultdict(dict)  # problem key -> config key -> fastest time_ms
    for path in a.logs:
        with open_log(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("status") != "ok" or r.get("family") != a.family or a.device_contains not in r.get("device", ""):
                    continue
                if f"/{a.dtype}/" not in r["problem"]:
                    continue
                keys = keys or sorted((set(r["config"]) | set(defaults)) - ignored)
                k = tuple(r["config"].get(n, defaults.get(n, -1)) for n in keys)
                d = trials[r["problem"]]
                d[k] = min(d.get(k, math.inf), r["time_ms"])
    if not trials:
        sys.exit("no trials of family %s, dtype %s on a device naming %s" % (a.family, a.dtype, a.device_contains))

    def key(config):
        return tuple(config.get(n, defaults.get(n, -1)) for n in keys)

    def query(problem):
        shape, layout = problem.split("/")[3], problem.split("/")[2]
        out = subprocess.run([a.ktune, "query", "--arch", a.arch, "--dtype", a.dtype, "--layout", layout, "--problem", shape, "--json"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("ktune query failed for %s: %s" % (problem, out.stderr.strip()))
        return json.loads(out.stdout)

    show = set(filter(None, a.show.split(",")))
    ratios = []
    print("%-34s %7s %6s %9s %10s %10s %6s" % ("problem", "trials", "cands", "measured", "best us", "cand us", "ratio"))
    for problem, d in sorted(trials.items()):
        if len(d) < a.min_trials:
            continue
        q = query(problem)
        if q.get("provenance") != "nearest":
            continue
        cands = [key(c["config"]) for c in q.get("candidates", []) if c["family"] == a.family]
        measured = [d[c] for c in cands if c in d]
        best = min(d.values())
        line = "%-34s %7d %6d %9d %10.1f" % (problem, len(d), len(cands), len(measured), best * 1e3)
        if measured:
            ratios.append(best / min(measured))
            line += " %10.1f %6.3f" % (min(measured) * 1e3, ratios[-1])
        print(line)
        if problem.split("/")[3] in show:
            short = lambda k: " ".join("%s%d" % (n, v) for n, v in zip(keys, k) if n not in ("TMA", "PACK", "SPLITK", "CL"))
            for c in cands:
                print("    candidate %s %s" % (short(c), "%.1f us" % (d[c] * 1e3) if c in d else "-"))
            for k, t in sorted(d.items(), key=lambda x: x[1])[:6]:
                print("    trial     %s %.1f us" % (short(k), t * 1e3))
    if ratios:
        print("geometric mean of best trial / best measured candidate over %d problems: %.3f"
              % (len(ratios), math.exp(sum(map(math.log, ratios)) / len(ratios))))


if __name__ == "__main__":
    main()
