#!/usr/bin/env python3
"""Summarises what `tools/gpu-check.sh profile` wrote: for each shape, the key Nsight Compute
counters of ktune's kernel and of cuBLAS's kernels measured in the same process (per-kernel
averages), and the opcode mix of ktune's SASS. Usage: profile_summary.py DIR"""
import collections
import glob
import os
import re
import sys

KEYS = [
    ("gpu__time_duration.sum", "time"),
    ("launch__registers_per_thread", "regs"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy %"),
    ("smsp__issue_active.avg.pct_of_peak_sustained_active", "issue active %"),
    ("sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active", "FMA pipe %"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM %"),
    ("dram__bytes_read.sum", "DRAM read"),
    ("dram__bytes_write.sum", "DRAM write"),
    ("smsp__inst_executed.sum", "warp instructions"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "smem ld conflicts"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "smem st conflicts"),
]
# Kernels of the verification (FP64 reference, conversions, comparison) are not what is compared.
SKIP = re.compile(r"ktune_|f64f64|dgemm|internal::kernel<int, int, double")


def kernels(path):
    out, cur = collections.OrderedDict(), None
    for line in open(path, errors="replace"):
        m = re.match(r"^  (\S.*?) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\).*Invocations (\d+)", line)
        if m:
            cur = f"{m.group(1)[:90]} grid ({m.group(2)},{m.group(3)},{m.group(4)}) block {m.group(5)}"
            out[cur] = {}
            continue
        m = re.match(r"^\s+(\S+)\s+(\S+)?\s+([\d,.]+)\s+([\d,.]+)\s+([\d,.]+)\s*$", line)
        if m and cur:
            out[cur][m.group(1)] = (m.group(4), m.group(2) or "")
    return {k: v for k, v in out.items() if not SKIP.search(k)}


def sass_mix(path):
    ops = collections.Counter()
    for line in open(path, errors="replace"):
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?", line)
        if m:
            ops[m.group(1)] += 1
    return ops


def main(d):
    for ncu in sorted(glob.glob(os.path.join(d, "ncu_*.txt"))):
        shape = os.path.basename(ncu)[4:-4]
        print(f"== {shape}")
        for name, v in kernels(ncu).items():
            print(f"  {name}")
            print("    " + "; ".join(f"{label} {v[k][0]}{' ' + v[k][1] if v[k][1] and label in ('time', 'DRAM read', 'DRAM write') else ''}"
                                    for k, label in KEYS if k in v))
            stalls = {k.split("stalled_")[1].split("_per_issue")[0]: float(val[0].replace(",", ""))
                      for k, val in v.items() if "issue_stalled" in k}
            if stalls:
                print("    warps per issue, by state: " + ", ".join(f"{s} {x:.2f}" for s, x in sorted(stalls.items(), key=lambda t: -t[1]) if x >= 0.05))
        sass = os.path.join(d, shape + ".sass")
        if os.path.exists(sass):
            ops = sass_mix(sass)
            total = sum(ops.values())
            top = ", ".join(f"{op} {n}" for op, n in ops.most_common(12))
            print(f"  ktune SASS (cuobjdump --dump-sass, whole module): {total} instructions; {top}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
