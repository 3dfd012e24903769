#!/usr/bin/env python3
"""How close a family's default config comes to the best config at each shape of a sweep: for every
problem, the default rule's config (`ktune space --default`, the nominal device of the arch: an
H100's or H200's 132 SMs for sm_90) looked up among the measured trials, its speed as a share of
the fastest trial's, and the geomean and minimum over the problems. Needs no GPU. Reads
bench/attention_decode_sweep.sh's sweep-trials.csv, or the trial log of `ktune tune --trials-out`
(.jsonl or .jsonl.gz, any family: --family attention_wgmma for prefill sweeps such as
docs/runs/2026-11-30-h200-attention-d64-cwg-trials.jsonl).

--first-use: also the best of the default and the runtime's first-use candidates of the family at
each problem nobody tuned (`ktune query --json`: with the shipped tables, as served; candidates the
trials did not measure are left out), as a share of the best trial: what first use reaches where
its timing picks the fastest of them.

Usage: python3 bench/attention_decode_rule.py TRIALS.csv|TRIALS.jsonl [...] [--family F] [--ktune ./build/ktune]
                                              [--arch sm_90] [--first-use]
"""
import argparse
import csv
import gzip
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
    ap.add_argument("--first-use", action="store_true")
    a = ap.parse_args()
    for path in a.csv:
        trials = defaultdict(dict)
        devices = set()
        # The sweep's CSV holds the config as JSON text and the time as median_ms; a trial log,
        # the config as an object and the time as time_ms.
        jsonl = path.endswith((".jsonl", ".jsonl.gz"))
        text = (gzip.open if path.endswith(".gz") else open)(path, "rt")
        rows = [json.loads(line) for line in text if line.strip()] if jsonl else csv.DictReader(text)
        for r in rows:
            if r.get("status") == "ok" and r["family"] == a.family:
                key = json.dumps(r["config"] if jsonl else json.loads(r["config"]), sort_keys=True)
                t = float(r["time_ms"] if jsonl else r["median_ms"])
                # A config measured more than once (rounds): its fastest time, as the best is.
                trials[r["problem"]][key] = min(t, trials[r["problem"]].get(key, t))
                devices.add(r["device"])
        print("# %s: %d problems measured on %s; default rule of %s for %s" %
              (path, len(trials), ", ".join(sorted(devices)), a.family, a.arch))
        ratios, served = [], []
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
            extra = ""
            if a.first_use:
                q = subprocess.run([a.ktune, "query", "--op", op, "--problem", shape, "--dtype", dtype, "--layout",
                                    layout, "--arch", a.arch, "--json"], capture_output=True, text=True)
                if q.returncode != 0:
                    sys.exit("ktune query failed for %s: %s" % (key, q.stderr.strip()))
                sel = json.loads(q.stdout)
                if sel["provenance"] == "exact":
                    extra = "  (tuned: no first use)"
                else:
                    cands = [json.dumps(c["config"], sort_keys=True) for c in sel["candidates"] if c["family"] == a.family]
                    timed = [c for c in cands + [default] if c in t]
                    served.append(t[best] / min(t[c] for c in timed))
                    extra = "  first use %.3f (%d of %d candidates measured)" % (served[-1], len(timed) - 1, len(cands))
            print("  %-26s %.3f  default %s  best %s%s" % (shape, ratio, default, best, extra))
        geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
        if ratios:
            print("  default vs best: geomean %.3f, min %.3f over %d problems" % (geo(ratios), min(ratios), len(ratios)))
        if served:
            print("  best of the default and its first-use candidates vs best: geomean %.3f, min %.3f over %d problems "
                  "nobody tuned" % (geo(served), min(served), len(served)))


if __name__ == "__main__":
    sys.exit(main())
