#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment, then `import ktune` from outside the source
# tree (ctest: Python.PipInstall). Usage: pip_install_check.sh SOURCE_DIR WORK_DIR [PYTHON].
# Exit 77 (skipped) where no virtual environment can be made or PyPI (the build requirements,
# scikit-build-core and pybind11) cannot be reached.
set -euo pipefail
src=$1 work=$2 py=${3:-python3}
rm -rf "$work"
mkdir -p "$work"
if ! "$py" -m venv "$work/venv" >"$work/venv.log" 2>&1; then
  echo "SKIPPED: $py -m venv failed (apt-get install python3-venv): $(tail -1 "$work/venv.log")"
  exit 77
fi
if ! "$work/venv/bin/pip" download -q --timeout 10 --retries 0 --no-deps --dest "$work/probe" scikit-build-core >/dev/null 2>&1; then
  echo "SKIPPED: PyPI cannot be reached for the build requirements"
  exit 77
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
PY
