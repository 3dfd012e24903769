#!/usr/bin/env bash
# Prints the path of a Python interpreter that can build and test the Python package (python/):
# Python 3.9+, its headers (Python.h), pybind11 2.10+ and pytest. Tried in order: $PYTHON, python3
# on PATH, /usr/bin/python3 (where tools/setup-deps.sh installs python3-dev, python3-pybind11 and
# python3-pytest). Where none has all of them, pybind11 and pytest are pip-installed into each
# candidate that has its headers and lets pip install (not a Debian-managed one) until one works.
# Exits 1, saying what each candidate lacks, where none can be made to work: the Python suite must
# run, not be skipped. Messages go to stderr; stdout is the path alone.
#   KTUNE_FIND_PYTHON_NO_PIP=1  report only, install nothing (a dry run)
set -uo pipefail

# What the interpreter lacks, on one line (empty: nothing); status 0 when it lacks nothing.
lacks() {
  "$1" - <<'PY' 2>/dev/null
import os, sys, sysconfig
missing = []
if sys.version_info < (3, 9):
    missing.append("Python 3.9+ (is %d.%d)" % sys.version_info[:2])
if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
    missing.append("Python.h (python3-dev)")
try:
    import pybind11
    if tuple(int(x) for x in pybind11.__version__.split(".")[:2]) < (2, 10):
        missing.append("pybind11 2.10+ (has %s)" % pybind11.__version__)
except ImportError:
    missing.append("pybind11")
try:
    import pytest  # noqa: F401
except ImportError:
    missing.append("pytest")
print(", ".join(missing))
sys.exit(1 if missing else 0)
PY
}

# The interpreters to try, by real executable (pyenv's shim and /usr/bin/python3 may be one).
candidates=()
declare -A seen
for name in ${PYTHON:+"$PYTHON"} python3 /usr/bin/python3; do
  exe=$(command -v "$name" 2>/dev/null) || continue
  real=$("$exe" -c 'import sys; print(sys.executable)' 2>/dev/null) || { echo "find-python: $exe does not run" >&2; continue; }
  if [ -z "$real" ] || [ -n "${seen[$real]:-}" ]; then continue; fi
  seen[$real]=1
  candidates+=("$real")
done
if [ ${#candidates[@]} -eq 0 ]; then
  echo "find-python: no Python 3 interpreter runs (tried ${PYTHON:+$PYTHON, }python3, /usr/bin/python3)" >&2
  exit 1
fi

found() { # the interpreter that works: said on stderr, its path on stdout
  echo "find-python: using $1 ($("$1" -c 'import sys, pybind11, pytest; print("Python %d.%d.%d," % sys.version_info[:3], "pybind11", pybind11.__version__ + ", pytest", pytest.__version__)'))" >&2
  echo "$1"
  exit 0
}

for py in "${candidates[@]}"; do
  missing=$(lacks "$py") && found "$py"
  echo "find-python: $py lacks ${missing:-everything (it does not run)}" >&2
done

if [ "${KTUNE_FIND_PYTHON_NO_PIP:-0}" != 1 ]; then
  for py in "${candidates[@]}"; do
    missing=$(lacks "$py") || true
    # pip cannot bring Python.h or a newer Python, only the two packages.
    [[ $missing == *Python.h* || $missing == *"Python 3.9+"* ]] && continue
    echo "find-python: pip-installing pybind11 and pytest into $py" >&2
    "$py" -m pip install -q 'pybind11>=2.10' pytest >&2 && lacks "$py" >/dev/null && found "$py"
  done
fi
echo "find-python: no interpreter with Python.h, pybind11 2.10+ and pytest (tools/setup-deps.sh installs python3-dev, python3-pybind11 and python3-pytest for /usr/bin/python3)" >&2
exit 1
