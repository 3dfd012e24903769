#!/usr/bin/env python3
"""Kernel Tuner (pip kernel_tuner, CuPy backend) on the same kernel and search space as ktune's small-kernel
throughput run in bench/kernel_specs.sh: examples/kernels/transpose at 1024 x 1024, its 40 configs (TILE, ROWS,
PAD and the spec's three constraints), brute force, each config's output checked against the transposed input
(Kernel Tuner's `answer`). Prints one line: configs, wall seconds, configs/s, and the best config with its time.

Kernel Tuner hands every tunable parameter to the source as a #define, so a template parameter may not share a
parameter's name: in the text given to it, the kernel's template parameters are renamed (TILE -> TILE_T, ...) and its
body reads the macros, which hold the same values; nothing else changes.

Kernel Tuner compiles each config with NVRTC in its own process, one after the other, and times 7 launches (its
default, L2 warm); ktune compiles on every core and times as docs/METHOD.md says (L2 flushed, a launch lead):
compare the throughput, and the two best configs, not the times.

Usage: python3 bench/kernel_tuner_beside.py [ROWS COLS]
"""
import json
import os
import sys
import time

import numpy as np

try:
    from importlib.metadata import version

    from kernel_tuner import tune_kernel
except ImportError as e:  # not a dependency of ktune: say so and stop
    print("kernel_tuner is not importable here (%s): pip install kernel_tuner" % e)
    sys.exit(3)

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = json.load(open(os.path.join(root, "examples/kernels/transpose/transpose.json")))
source = open(os.path.join(root, "examples/kernels/transpose/transpose.cu")).read()
header = "template <int TILE, int ROWS, int PAD>"
assert header in source, "examples/kernels/transpose/transpose.cu changed: update " + __file__
source = source.replace(header, "template <int TILE_T, int ROWS_T, int PAD_T>")
rows, cols = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (1024, 1024)

rng = np.random.default_rng(7)
x = rng.uniform(-1, 1, rows * cols).astype(np.float32)
out = np.zeros_like(x)
args = [x, out, np.int32(rows), np.int32(cols)]
answer = [None, x.reshape(rows, cols).T.copy().ravel(), None, None]

start = time.perf_counter()
results, env = tune_kernel(
    "transpose_tiled<TILE,ROWS,PAD>", source, (cols, rows), args, spec["params"],
    restrictions=spec["constraints"], block_size_names=["TILE", "ROWS"], grid_div_x=["TILE"], grid_div_y=["TILE"],
    answer=answer, atol=0.0, lang="cupy", strategy="brute_force", quiet=True)
wall = time.perf_counter() - start
ok = [r for r in results if isinstance(r.get("time"), float)]
best = min(ok, key=lambda r: r["time"])
print("kernel_tuner %s on %s: %d configs (%d timed) in %.2f s of wall: %.1f configs/s; best %s at %.4f ms (its own timing)"
      % (version("kernel_tuner"), env.get("device_name", "?"), len(results), len(ok), wall,
         len(results) / wall, json.dumps({k: best[k] for k in spec["params"]}), best["time"]))
