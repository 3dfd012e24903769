#!/usr/bin/env bash
# The layers of docs/ARCHITECTURE.md, checked on the includes: data flows one way,
#   kernel_templates/ and core/  <-  db/  <-  runtime/, tuner/  <-  tools/
# (tuner/ may use runtime/'s driver, module and cuBLAS wrappers; nothing below includes above).
# Prints every offending include and fails when there is one.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
bad=0
check() { # folder, then the folders its quoted includes may name
  local dir=$1; shift
  local allowed="ktune|$dir$(printf '|%s' "$@")"
  while IFS= read -r line; do
    echo "layering: $line (from $dir/ only ${allowed//|/, } may be included)"
    bad=1
  done < <(grep -Hn '^#include "' "$dir"/*.h "$dir"/*.cpp 2>/dev/null | grep -Ev "#include \"($allowed)/" || true)
}
# kernel_templates/<op>/ sits below everything (its argument blocks are shared with the host).
ops=$(cd kernel_templates && ls -d */ | tr -d / | tr '\n' ' ')
check core
check db core
# shellcheck disable=SC2086
check runtime core db $ops
# shellcheck disable=SC2086
check tuner core db runtime $ops
if [ "$bad" = 0 ]; then echo "layering: core, db, runtime and tuner include only their own layer and the ones below"; fi
exit "$bad"
