#!/usr/bin/env python3
"""How close a family's default config comes to the best config at each shape of a sweep: for every
problem, the default rule's config (`ktune space --default`, the nominal device of the arch: an
H100's or H200's 132 SMs for sm_90) looked up among the measured trials, its speed as a share of
the fastest trial's, and the geomean and minimum over the problems. Needs no GPU. Reads
bench/attention_decode_sweep.sh's sweep-trials.csv, or the trial log of `ktune tune --trials-out`
(.jsonl, any family: --family attention_wgmma for prefill sweeps such as
docs/runs/2026-11-30-h200-attention-d64-cwg-trials.jsonl).

Usage: python3 bench/attention_decode_rule.py TRIALS.csv|TRIALS.jsonl [...] [--family F] [--ktune ./build/ktune] [--arch sm_90]
"""
import argparse
import csv
import json
import math
import subprocess
import sys
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--ktune", default="./build/ktune")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--family", default="attention_decode")
    a = ap.parse_args()
    for path in a.csv:
        trials = defaultdict(dict)
        devices = set()
        # The sweep's CSV holds the config as JSON text and the time as median_ms; a trial log,
        # the config as an object and the time as time_ms.
        jsonl = path.endswith(".jsonl")
        rows = [json.loads(line) for line in open(path) if line.strip()] if jsonl else csv.DictReader(open(path))
        for r in rows:
            if r.get("status") == "ok" and r["family"] == a.family:
                key = json.dumps(r["config"] if jsonl else json.loads(r["config"]), sort_keys=True)
                t = float(r["time_ms"] if jsonl else r["median_ms"])
                # A config measured more than once (rounds): its fastest time, as the best is.
                trials[r["problem"]][key] = min(t, trials[r["problem"]].get(key, t))
                devices.add(r["device"])
        print("# %s: %d problems measured on %s; default rule of %s for %s" %
              (path, len(trials), ", ".join(sorted(devices)), a.family, a.arch))
        ratios = []
        for key in sorted(trials):
            op, dtype, layout, shape = key.split("/")[:4]
            out = subprocess.run([a.ktune, "space", "--family", a.family, "--problem", shape, "--dtype", dtype,
                                  "--layout", layout, "--arch", a.arch, "--default"],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit("ktune space --default failed for %s: %s" % (key, out.stderr.strip()))
            default = json.dumps(json.loads(out.stdout), sort_keys=True)
            t = trials[key]
            best = min(t, key=t.get)
            if default not in t:
                # Trials recorded before the family gained a parameter cannot hold the rule's choice of it.
                missing = sorted(set(json.loads(default)) - set().union(*(json.loads(c) for c in t)))
                print("  %-26s default %s was not measured%s" % (
                    shape, default, " (the trials were recorded before %s)" % ", ".join(missing) if missing else ""))
                continue
            ratio = t[best] / t[default]
            ratios.append(ratio)
            print("  %-26s %.3f  default %s  best %s" % (shape, ratio, default, best))
        if ratios:
            print("  default vs best: geomean %.3f, min %.3f over %d problems" %
                  (math.exp(sum(map(math.log, ratios)) / len(ratios)), min(ratios), len(ratios)))


if __name__ == "__main__":
    sys.exit(main())
