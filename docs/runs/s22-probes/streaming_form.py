#!/usr/bin/env python3
"""Session 22: how near the best gemm_skinny16 config found is the streaming form, at each decode shape tuned.

Reads the trial logs of the session's decode tunes (models suite decode rows, and the public
1x4096x4096 / 16x4096x4096 tune of the IL probe's baseline) and prints, per problem, the best time,
the streaming form (KG = NT / 32, DEPTH 2, CL 1; any LDH / MINB and split) by split and grid, and the
best cluster config, each relative to the best.
  python3 docs/runs/s22-probes/streaming_form.py
(run from the repository root; unpacks what it needs into /tmp/s22-trials)
"""
import collections, gzip, json, math, os, tarfile

runs = "docs/runs"
tmp = "/tmp/s22-trials"
os.makedirs(tmp, exist_ok=True)
with tarfile.open(os.path.join(runs, "2026-11-26-h100-s22-probe-pf-il.tgz")) as t:
    t.extractall(tmp)
rows = [json.loads(l) for l in gzip.open(os.path.join(runs, "2026-11-26-h100-s22-models-decode-trials.jsonl.gz"), "rt")]
rows += [json.loads(l) for l in open(os.path.join(tmp, "probes", "trials-il0.jsonl"))]
by = collections.defaultdict(dict)
for r in rows:
    if r.get("status") != "ok":
        continue
    k = json.dumps(r["config"], sort_keys=True)
    by[r["problem"]][k] = min(r["time_ms"] * 1e3, by[r["problem"]].get(k, 1e9))
for p, d in by.items():
    m, n, k = map(int, p.split("/")[3].split("x"))
    best = min(d.values())
    print("%s: best %.2f us over %d configs" % (p, best, len(d)))
    form = collections.defaultdict(lambda: 1e9)
    for kk, t in d.items():
        c = json.loads(kk)
        if c["CL"] == 1 and c["DEPTH"] == 2 and c["KG"] == c["NT"] // 32:
            grid = math.ceil(n / 64) * math.ceil(m / c["MT"]) * c["SPLITK"]
            key = (c["NT"], c["MT"], c["SPLITK"], grid, c["LDH"], c["MINB"])
            form[key] = min(form[key], t)
    for key, t in sorted(form.items()):
        print("   streaming NT %d MT %d SPLITK %d (grid %d) LDH %d MINB %d: %.3f" % (*key, t / best))
    cl = [t for kk, t in d.items() if json.loads(kk)["CL"] > 1]
    if cl:
        print("   best cluster config: %.3f" % (min(cl) / best))
