#!/usr/bin/env python3
"""Attention's acceptance bars (the attention issue, docs/PERFORMANCE.md "Attention") read from the JSON
files bench/attention_acceptance.sh leaves in a folder: each bar with what one job measured and
whether it is met. Nothing is timed here.

  public.json     bench/attention_vs_torch.py on configs/suites/attention.json, the shipped tables
  untuned-*.json  the same on a suite of shapes nobody tuned (--untuned: no table, first use)
  tables-*.json   the same with the shipped tables there to lend from
  paged.json      bench/attention_paged.py --warm-small-inputs (paged against contiguous, decode rows, as a
                  decode step serves them: q, seq_lens and the block table in L2, K and V cold)
  paged-cold.json the same with every input cold (shown beside the paged bar, not judged)
  floor-bench.json, floor-read.json
                  `ktune bench` over the public suite's decode rows and bench/read_floor --json at
                  their K and V bytes (whole MiB, rounded up): both timed by the C++ timer
  steps.txt       each step's outcome, a line a run ("NAME<TAB>exit N<TAB>its JSON files" or
                  "NAME<TAB>skipped ..."): a step whose last run did not exit 0, or left a JSON file
                  missing here, is listed as not measured

Bars:
  prefill, head dim 128, >= 4096 tokens: non-causal >= 1.0x cuDNN and >= 600 TFLOPS; causal >= 1.0x cuDNN
  every prefill row of the public suite: >= 1.2x FlashAttention-2 and >= 1.0x the best backend
  decode rows of the public suite: >= 1.3x the best backend in geomean, none below 1.0x
  shapes nobody tuned (each untuned suite): >= 1.0x the best backend in geomean, no row below 0.9x
  paged at page size >= 64: within 5 % of contiguous (each row's paged time over contiguous <= 1/0.95), as
    served where paged.json says so (its warm_small_inputs)
  decode rows: K and V read at >= 90 % of bench/read_floor at the same bytes (the floor's time over
  ktune's, both by the C++ timer; the Python bench's times carry the host call's cost beside it);
  each row also shows read_floor's best split read merged across blocks at its bytes, where the
  floor measured one (what any decode kernel that splits its keys can reach; not the bar), and the
  decode geomean's ceiling: a kernel at the read floor, and at that split-and-merge floor where a row
  must split (with public.json beside the floor's files)

Usage: python3 bench/attention_acceptance.py DIR   (exit 1 when a file cannot be read, 0 otherwise)
"""
import glob
import json
import math
import os
import sys


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def is_decode(row):
    return row["q_len"] <= 64 and row["q_len"] < row["kv_len"]


def ktune_ms(r):
    k = r["backends"].get("ktune", {})
    return k.get("ms") if k.get("status") == "ok" else None


def ratio_to(r, backend):
    """The backend's time over ktune's (> 1: ktune faster); None where either did not run."""
    b, k = r["backends"].get(backend, {}), ktune_ms(r)
    return b["ms"] / k if k and b.get("status") == "ok" else None


def label(row):
    return "%s %dx%d/%dx%dx%dx%d%s" % (row.get("model", ""), row["batch"], row["heads"], row["kv_heads"], row["q_len"],
                                       row["kv_len"], row["head_dim"], " c" if row["layout"] == "causal" else "")


def ratio_bar(rep, title, pairs, geomean_at_least=None, min_at_least=None):
    """A bar over (ratio or None, bench row) pairs: met where every row has its ratio and the geomean
    and the minimum clear the floors given."""
    got = [x for x in pairs if x[0] is not None]
    if not got:
        rep.bar(title, False, "no row measured")
        return
    g = geomean([x for x, _ in got])
    worst = min(got, key=lambda x: x[0])
    met = (len(got) == len(pairs) and (geomean_at_least is None or g >= geomean_at_least) and
           (min_at_least is None or worst[0] >= min_at_least))
    rep.bar(title, met, "geomean %.3fx, min %.3fx (%s), %d of %d rows" % (g, worst[0], label(worst[1]["row"]), len(got),
                                                                      len(pairs)))


class Report:
    def __init__(self):
        self.lines = []

    def bar(self, name, met, measured):
        self.lines.append("%-9s %s: %s" % ("met" if met else "NOT MET", name, measured))


def public_bars(rep, rows):
    prefill = [r for r in rows if not is_decode(r["row"])]
    decode = [r for r in rows if is_decode(r["row"])]
    missing = [label(r["row"]) for r in rows if ktune_ms(r) is None]
    if missing:
        rep.bar("every public row served and verified", False, "ktune did not run: " + "; ".join(missing))
    big = [r for r in prefill if r["row"]["head_dim"] == 128 and r["row"]["q_len"] >= 4096]
    for causal in (False, True):
        sel = [r for r in big if (r["row"]["layout"] == "causal") == causal]
        if not sel:
            continue
        cud = [(ratio_to(r, "cudnn"), r) for r in sel]
        worst = min((x for x in cud if x[0] is not None), key=lambda x: x[0], default=(None, None))
        ok = all(x is not None and x >= 1.0 for x, _ in cud)
        text = "min %.3fx cuDNN (%s)" % (worst[0], label(worst[1]["row"])) if worst[1] else "cuDNN did not run"
        if not causal:
            tf = [r["backends"]["ktune"]["tflops"] for r in sel if ktune_ms(r)]
            ok = ok and bool(tf) and min(tf) >= 600
            text += ", %s TFLOPS" % ("-".join("%.0f" % t for t in (min(tf), max(tf))) if tf else "none")
        rep.bar("prefill d128 >= 4096 tokens %s" % ("causal: >= 1.0x cuDNN" if causal else
                                                    "non-causal: >= 1.0x cuDNN, >= 600 TFLOPS"), ok, text)
    if prefill:
        ratio_bar(rep, "every public prefill row >= 1.2x FlashAttention-2",
                  [(r.get("ktune_vs_flash"), r) for r in prefill], min_at_least=1.2)
        ratio_bar(rep, "every public prefill row >= 1.0x the best backend",
                  [(r.get("ktune_vs_best"), r) for r in prefill], min_at_least=1.0)
    if decode:
        ratio_bar(rep, "public decode rows >= 1.3x the best backend in geomean, none below 1.0x",
                  [(r.get("ktune_vs_best"), r) for r in decode], 1.3, 1.0)
        for r in decode:
            k = r["backends"].get("ktune", {})
            if "of_copy" in k:
                rep.lines.append("          %-40s ktune %.2f TB/s, %.0f %% of a copy, %.3fx the best backend" %
                                 (label(r["row"]), k["kv_tb_s"], 100 * k["of_copy"], r.get("ktune_vs_best") or 0))


def page_ratios(rows, key):
    """The rows' vs_contiguous at column `key` (contiguous time over paged: 1.0 = as fast, 0.95 = 5 %
    slower): ([(ratio, row)], [the rows measured without one, with their status])."""
    xs, failed = [], []
    for r in rows:
        c = r.get("columns", {}).get(key)
        if c is None:
            continue
        if c.get("vs_contiguous") is None:
            failed.append("%s: %s" % (label(r["row"]), c.get("status", "?")))
        else:
            xs.append((c["vs_contiguous"], r))
    return xs, failed


def ratios_text(xs):
    worst = min(xs, key=lambda x: x[0])
    return "geomean %.3fx, min %.3fx (%s)" % (geomean([x for x, _ in xs]), worst[0], label(worst[1]["row"]))


def paged_bars(rep, data, cold=None):
    """The bar on `data` (paged.json); `cold` (paged-cold.json, every input cold), where measured, on a
    line of its own beside it: what the table's read costs where nothing of the step is in L2."""
    rows = data["rows"] if isinstance(data, dict) else data
    served = isinstance(data, dict) and data.get("warm_small_inputs")
    for page in (64, 256):
        key = "page %d" % page
        xs, failed = page_ratios(rows, key)
        if not xs and not failed:
            continue
        text = ratios_text(xs) if xs else "no row measured"
        if failed:
            text += "; not measured: " + "; ".join(failed)
        rep.bar("paged at page %d within 5 %% of contiguous%s" % (page, " (as served: q, seq_lens, table in L2)" if served else ""),
                not failed and min(x for x, _ in xs) >= 0.95, text)
        cold_xs = page_ratios(cold["rows"], key)[0] if cold is not None else []
        if cold_xs:
            rep.lines.append("          every input cold: " + ratios_text(cold_xs))


def kv_mib(B, HKV, SK, D):
    """MiB of K and V (bf16 / f16) of a decode row, rounded up: the read_floor size it is held to."""
    return -(-2 * B * HKV * SK * D * 2 // (1 << 20))


def merge_floor_ms(size):
    """The best split read merged across blocks (read_floor's combine, cluster and last kinds) of one
    read_floor size, or None where the floor measured none: what a decode call that splits its keys
    can reach at those bytes."""
    kinds = [size[k] for k in ("combine_read_ms", "cluster_read_ms", "last_read_ms") if k in size]
    return min(kinds) if kinds else None


def floor_bars(rep, bench, floor):
    by_mib = {s["mib"]: s["read_ms"] for s in floor["sizes"]}
    merged = {s["mib"]: ms for s in floor["sizes"] for ms in [merge_floor_ms(s)] if ms is not None}
    xs, failed = [], []
    for r in bench["rows"]:
        name = r["problem"].split("/")[3]
        dims = [int(x) for x in name.split("x")]
        mib = kv_mib(dims[0], dims[2], dims[4], dims[5])
        if r.get("error") or not r.get("ms") or mib not in by_mib:
            failed.append("%s: %s" % (name, r.get("error") or ("no floor at %d MiB" % mib)))
            continue
        xs.append((by_mib[mib] / r["ms"], name, mib, r["ms"], by_mib[mib]))
    worst = min(xs) if xs else None
    text = "min %.1f %% (%s)" % (100 * worst[0], worst[1]) if xs else "no row measured"
    if failed:
        text += "; not measured: " + "; ".join(failed)
    rep.bar("decode rows' K and V read >= 90 % of bench/read_floor", bool(xs) and not failed and worst[0] >= 0.9, text)
    for share, name, mib, ms, floor_ms in xs:
        text = "          %-28s %4d MiB: ktune %8.1f us, floor %8.1f us, %5.1f %%" % (name, mib, ms * 1e3, floor_ms * 1e3,
                                                                                      100 * share)
        if mib in merged:
            text += "; a split read merged %.1f us (%.1f %% of the floor), ktune %.1f %% of it" % (
                merged[mib] * 1e3, 100 * floor_ms / merged[mib], 100 * merged[mib] / ms)
        rep.lines.append(text)


def ceiling_line(rep, public_rows, bench, floor):
    """How far the decode geomean can go with the backends' times as measured: each decode row's ratio
    to the best backend over its share of the read floor is the ratio of a kernel reading at the
    floor; a row that must split its keys (batch x KV heads x 16-row blocks below two thirds of the
    SMs, the decode rule's test) is capped by the split-and-merge floor at its bytes instead, where
    read_floor measured one."""
    sms = floor.get("sm_count")
    by_mib = {s["mib"]: s for s in floor["sizes"]}
    times = {r["problem"].split("/")[3]: r["ms"] for r in bench["rows"] if r.get("ms") and not r.get("error")}
    at_read, at_merge, split, unmeasured = [], [], 0, set()
    for r in public_rows:
        row, ratio = r["row"], r.get("ktune_vs_best")
        if not is_decode(row) or ratio is None:
            continue
        B, H, HKV, SQ, SK, D = (row[k] for k in ("batch", "heads", "kv_heads", "q_len", "kv_len", "head_dim"))
        shape = "x".join(str(x) for x in (B, H, HKV, SQ, SK, D))
        mib = kv_mib(B, HKV, SK, D)
        if shape not in times or mib not in by_mib or sms is None:
            return  # not every decode row measured against its floor: no ceiling to state
        size = by_mib[mib]
        top = ratio * times[shape] / size["read_ms"]
        at_read.append(top)
        blocks = B * HKV * -(-SQ * (H // HKV) // 16)
        if 3 * blocks < 2 * sms:
            split += 1
            merge_ms = merge_floor_ms(size)
            if merge_ms is not None:
                top *= size["read_ms"] / merge_ms
            else:
                unmeasured.add(mib)
        at_merge.append(top)
    if not at_read:
        return
    text = "          ceiling with the backends as measured: %.3fx in geomean at the read floor" % geomean(at_read)
    if split:
        text += ", %.3fx with the rows that must split (%d) at the split-and-merge floor" % (geomean(at_merge), split)
        if unmeasured:
            text += " (not measured at %s MiB: the read floor taken)" % ", ".join(str(m) for m in sorted(unmeasured))
    rep.lines.append(text)


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    folder = argv[1]
    rep = Report()
    try:
        steps = os.path.join(folder, "steps.txt")
        if os.path.exists(steps):
            last = {}
            for text in open(steps):
                name, _, rest = text.rstrip("\n").partition("\t")
                outcome, _, files = rest.partition("\t")
                if name:
                    last[name] = (outcome, files)
            for name, (outcome, files) in sorted(last.items()):
                missing = [os.path.basename(f) for f in files.split() if not os.path.exists(os.path.join(folder, os.path.basename(f)))]
                if outcome != "exit 0":
                    rep.bar("step %s measured" % name, False, "not measured: " + outcome)
                elif missing:
                    rep.bar("step %s measured" % name, False, "not measured: no " + ", ".join(missing))
        pub = os.path.join(folder, "public.json")
        public = json.load(open(pub)) if os.path.exists(pub) else None
        if public is not None:
            rep.lines.append("# %s, torch %s, cuDNN %s" % (public.get("device"), public.get("torch"), public.get("cudnn")))
            public_bars(rep, public["rows"])
        for kind, served in (("untuned", "nobody tuned, no table"), ("tables", "nobody tuned, shipped tables")):
            for path in sorted(glob.glob(os.path.join(folder, kind + "-*.json"))):
                name = os.path.basename(path)[len(kind) + 1:-len(".json")]
                ratio_bar(rep, "%s (%s): >= 1.0x the best backend in geomean, none below 0.9x" % (name, served),
                          [(r.get("ktune_vs_best"), r) for r in json.load(open(path))["rows"]], 1.0, 0.9)
        fb, fr = os.path.join(folder, "floor-bench.json"), os.path.join(folder, "floor-read.json")
        if os.path.exists(fb) and os.path.exists(fr):
            bench, floor = json.load(open(fb)), json.load(open(fr))
            floor_bars(rep, bench, floor)
            if public is not None:
                ceiling_line(rep, public["rows"], bench, floor)
        paged, paged_cold = os.path.join(folder, "paged.json"), os.path.join(folder, "paged-cold.json")
        if os.path.exists(paged):
            paged_bars(rep, json.load(open(paged)), json.load(open(paged_cold)) if os.path.exists(paged_cold) else None)
    except (OSError, ValueError, KeyError) as e:
        print("attention_acceptance: cannot read the results in %s: %s" % (folder, e), file=sys.stderr)
        return 1
    if not rep.lines:
        print("attention_acceptance: no results in %s (public.json, untuned-*.json, paged.json, floor-*.json)" % folder,
              file=sys.stderr)
        return 1
    print("\n".join(rep.lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
