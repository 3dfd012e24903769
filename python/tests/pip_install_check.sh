#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment, then `import ktune` from outside the source
# tree (ctest: Python.PipInstall). Usage: pip_install_check.sh SOURCE_DIR WORK_DIR [PYTHON].
# Fails, saying why, where no virtual environment can be made or PyPI (the build requirements,
# scikit-build-core and pybind11) cannot be reached: CI reaches PyPI, so either is a broken setup.
# A machine without network leaves this test out on purpose: ctest -E Python.PipInstall.
set -euo pipefail
src=$1 work=$2 py=${3:-python3}
rm -rf "$work"
mkdir -p "$work"
if ! "$py" -m venv "$work/venv" >"$work/venv.log" 2>&1; then
  echo "FAILED: $py -m venv failed (apt-get install python3-venv): $(tail -1 "$work/venv.log")"
  exit 1
fi
if ! "$work/venv/bin/pip" download -q --timeout 30 --retries 3 --no-deps --dest "$work/probe" scikit-build-core >"$work/probe.log" 2>&1; then
  echo "FAILED: PyPI cannot be reached for the build requirements: $(tail -1 "$work/probe.log")"
  echo "(without network, leave this test out on purpose: ctest -E Python.PipInstall)"
  exit 1
fi
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} "$work/venv/bin/pip" install -q "$src"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import os
import ktune
from ktune._tune import find_cli
print("ktune", ktune.__version__, "from", os.path.dirname(ktune.__file__))
assert ktune.__version__ == "0.1.0"
assert "site-packages" in ktune.__file__
s = ktune.best_config(1024, 1024, 1024, dtype="f32", arch="sm_90")
assert s["provenance"] in ("exact", "cublas"), s
cli = find_cli()
assert cli.startswith(os.path.dirname(ktune.__file__)), cli  # the program installed in the package
print("best_config:", s["provenance"], s["family"], "| tune drives", cli)
# The PyTorch fast path's sources travel with the package, for python -m ktune.build_torch_ext.
from ktune import build_torch_ext
src, src_dir = build_torch_ext.sources()
assert src and src.startswith(os.path.dirname(ktune.__file__)), src
print("torch_ext sources:", src_dir, "| fast path:", ktune.torch_fast_path())
PY
# pip puts the program on PATH (the venv's bin): it answers as the package's own does.
"$work/venv/bin/ktune" --version | tee "$work/cli-version.txt"
grep -q "0.1.0" "$work/cli-version.txt"
"$work/venv/bin/ktune" space --family gemm_naive --problem 64x64x64 >/dev/null
