#!/usr/bin/env bash
# The layers of docs/ARCHITECTURE.md, checked on the includes: data flows one way,
#   kernel_templates/, core/  <-  db/  <-  jit/  <-  runtime/, tuner/  <-  tools/, bench/, examples/, python/, tests/
# (jit/ is NVRTC and the cubin fetch both runtime/ and tuner/ compile through; tuner/ may use
# runtime/'s driver, module and cuBLAS wrappers; nothing below includes above).
# include/ktune/ is the installed public API: it includes only itself, and each of its headers sits
# in the layer that implements it (below).
#
# Every .h/.hpp/.cpp/.cu/.cuh file under those folders, nested folders too, and every include
# form (`#include "x"`, `#  include <x>`, `#include<ktune/x.h>`) is read. An include is resolved
# as the compiler would: quoted ones beside the including file first, then the include roots of
# CMakeLists.txt (include/, the repository root, kernel_templates/); headers NVRTC finds by file
# name among kernel_templates/ (jit/compiler.cpp) count as kernel_templates/. One that names a
# project folder but resolves to no file is judged by the folder it names.
#
# A public header sits in the layer of the file that implements it: the .cpp whose first include
# it is (ktune/device_info.h is core/device_info.cpp's API, ktune/device.h runtime/device.cpp's,
# ktune/compiler.h jit/compiler.cpp's), so including it reaches that layer, and its own includes
# are judged as that layer's; a header no file implements (ktune/error.h) sits with core/. One
# header has one floor: a header implemented in two layers fails (split it, as ktune/device_info.h
# was split from ktune/device.h), and until it is split it counts in the higher of them.
#
# An upward include that cannot be removed by a small move may be listed in KNOWN below, with
# why: it is printed but passes. Any other upward include fails, and so does a KNOWN entry that
# no longer occurs (remove it from the list).
#
# Usage: layering_check.sh [ROOT]      check the tree at ROOT (default: this repository)
#        layering_check.sh --self-test check that the checker catches includes planted upward
set -euo pipefail

# "from -> to" (repository paths) | why. Matched on the files, not on line numbers.
KNOWN=()

declare -A API_HOME  # public header -> the file implementing it
declare -A API_SPLIT # public header -> its implementing files, where they sit in two layers

layer_of() { # repository path -> its layer: kt (kernel_templates/, core/), db, jit, runtime, tuner, top
  case $1 in
    include/*) if [ -n "${API_HOME[$1]:-}" ]; then layer_of "${API_HOME[$1]}"; else echo kt; fi ;;
    kernel_templates/* | core/*) echo kt ;;
    db/*) echo db ;;
    jit/*) echo jit ;;
    runtime/*) echo runtime ;;
    tuner/*) echo tuner ;;
    *) echo top ;;
  esac
}

allowed() { # from-layer, to-layer -> status 0 when the include flows down or sideways
  case $1:$2 in
    *:kt | db:db | jit:db | jit:jit | runtime:db | runtime:jit | runtime:runtime | tuner:db | tuner:jit | tuner:runtime | tuner:tuner) return 0 ;;
    *) return 1 ;;
  esac
}

may_include() { # layer -> what it may include, for the message
  case $1 in
    kt) echo "kernel_templates/, core/ and the public headers they implement" ;;
    db) echo "kernel_templates/, core/, db/ and the public headers these implement" ;;
    jit) echo "kernel_templates/, core/, db/, jit/ and the public headers these implement" ;;
    runtime) echo "kernel_templates/, core/, db/, jit/, runtime/ and the public headers these implement" ;;
    tuner) echo "kernel_templates/, core/, db/, jit/, runtime/, tuner/ and the public headers these implement" ;;
  esac
}

layer_name() {
  case $1 in kt) echo "core/" ;; *) echo "$1/" ;; esac
}

# The public headers' homes: a file of a layer folder whose first include is include/ktune/<x>.
# Where files of two layers implement one header, it is noted in API_SPLIT (check_tree fails on
# it) and the higher layer wins meanwhile (reaching either reaches it).
index_api_homes() {
  local f first inc rank=" kt db jit runtime tuner "
  local re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](ktune/[^>"]+)[>"]'
  while IFS= read -r f; do
    first=$(grep -m1 -E '^[[:space:]]*#[[:space:]]*include' "$f" || true)
    [[ $first =~ $re ]] || continue
    inc=include/${BASH_REMATCH[1]}
    [ -f "$inc" ] || continue
    if [ -n "${API_HOME[$inc]:-}" ]; then
      local have new
      have=${rank%% "$(layer_of "${API_HOME[$inc]}")" *}
      new=${rank%% "$(layer_of "$f")" *}
      if [ ${#new} != ${#have} ]; then
        API_SPLIT[$inc]="${API_SPLIT[$inc]:-${API_HOME[$inc]}} $f"
      fi
      [ ${#new} -gt ${#have} ] || continue
    fi
    API_HOME[$inc]=$f
  done < <(find kernel_templates core db jit runtime tuner -type f \( -name '*.cpp' -o -name '*.cu' \) 2>/dev/null | sort)
}

# Normalizes a relative path: drops "./" and folds "dir/..".
normalize() {
  local IFS=/ part out=()
  # shellcheck disable=SC2206
  local parts=($1)
  for part in "${parts[@]}"; do
    case $part in
      "" | .) ;;
      ..) [ ${#out[@]} -gt 0 ] && unset 'out[${#out[@]}-1]' ;;
      *) out+=("$part") ;;
    esac
  done
  echo "${out[*]}"
}

# NVRTC's view: kernel_templates' headers by file name.
declare -A NVRTC_HEADER
index_nvrtc_headers() {
  local f
  while IFS= read -r f; do NVRTC_HEADER[${f##*/}]=$f; done < <(find kernel_templates -type f \( -name '*.h' -o -name '*.cuh' \) 2>/dev/null | sort)
}

resolve() { # including file, quote or angle, include text -> repository path, or nothing (not a project file)
  local from=$1 form=$2 inc=$3 c
  local candidates=()
  [ "$form" = quote ] && candidates+=("$(dirname "$from")/$inc")
  candidates+=("include/$inc" "$inc" "kernel_templates/$inc")
  for c in "${candidates[@]}"; do
    c=$(normalize "$c")
    if [ -f "$c" ]; then echo "$c"; return; fi
  done
  # Named by a project folder but missing: judge it by that folder.
  case $inc in
    ktune/*) echo "include/$inc"; return ;;
    core/* | db/* | jit/* | runtime/* | tuner/* | tools/* | bench/* | examples/* | python/* | tests/*) normalize "$inc"; return ;;
  esac
  if [ "$form" = quote ] && [[ $from == kernel_templates/* ]] && [ -n "${NVRTC_HEADER[${inc##*/}]:-}" ]; then
    echo "${NVRTC_HEADER[${inc##*/}]}"
  fi
}

check_tree() {
  local bad=0 seen=0 n_known=0 f line inc form to from_layer to_layer entry lineno text what
  declare -A known_why known_hit
  for entry in "${KNOWN[@]}"; do
    known_why[${entry%% | *}]=${entry#* | }
  done
  index_nvrtc_headers
  index_api_homes
  local homes=""
  for f in $(printf '%s\n' "${!API_HOME[@]}" | sort); do
    [ "$(layer_of "$f")" = kt ] || homes+=" ${f#include/} (${API_HOME[$f]})"
  done
  [ -z "$homes" ] || echo "layering: public headers implemented above core/:$homes"
  for f in $(printf '%s\n' "${!API_SPLIT[@]}" | sort); do
    echo "layering: $f is implemented in two layers (${API_SPLIT[$f]}): one public header has one floor, split it"
    bad=1
  done
  local re='^[[:space:]]*#[[:space:]]*include[[:space:]]*([<"])([^>"]+)[>"]'
  while IFS= read -r f; do
    from_layer=$(layer_of "$f")
    while IFS= read -r line; do
      lineno=${line%%:*}
      text=${line#*:}
      if [[ ! $text =~ $re ]]; then
        echo "layering: $f:$lineno: cannot read this include: $text"
        bad=1
        continue
      fi
      seen=$((seen + 1))
      form=angle
      [ "${BASH_REMATCH[1]}" = '"' ] && form=quote
      inc=${BASH_REMATCH[2]}
      to=$(resolve "$f" "$form" "$inc")
      [ -n "$to" ] || continue # a system or third-party header
      to_layer=$(layer_of "$to")
      what=$to
      [ -z "${API_HOME[$to]:-}" ] || what="$to (the API of ${API_HOME[$to]})"
      if [[ $f == include/* && $to != include/* ]]; then
        # An installed header can only reach other installed headers.
        echo "layering: $f:$lineno includes $what: the public headers include only include/ktune/"
        bad=1
        continue
      fi
      allowed "$from_layer" "$to_layer" && continue
      entry="$f -> $to"
      if [ -n "${known_why[$entry]:-}" ]; then
        echo "layering: known: $f:$lineno includes $what: ${known_why[$entry]}"
        known_hit[$entry]=1
        n_known=$((n_known + 1))
      else
        echo "layering: $f:$lineno includes $what: from $(layer_name "$from_layer") only $(may_include "$from_layer") may be included"
        bad=1
      fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$f" || true)
  done < <(find kernel_templates core include db jit runtime tuner -type f \
             \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null | sort)
  for entry in "${!known_why[@]}"; do
    if [ -z "${known_hit[$entry]:-}" ]; then
      echo "layering: the known upward include '$entry' no longer occurs: remove it from KNOWN in tests/layering_check.sh"
      bad=1
    fi
  done
  if [ "$seen" = 0 ]; then
    echo "layering: no include found under kernel_templates, core, include, db, jit, runtime, tuner: wrong root?"
    bad=1
  fi
  if [ "$bad" = 0 ] && [ "$n_known" = 0 ]; then
    echo "layering: $seen includes read; each flows down or sideways"
  elif [ "$bad" = 0 ]; then
    echo "layering: $seen includes read; each flows down or sideways, but for the $n_known known upward ones above"
  fi
  return "$bad"
}

self_test() { # trees with upward includes planted in every form the check must read, and a split header
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$tmp"/{core/deep,db,jit,runtime,tuner,include/ktune,kernel_templates/gemm,tools}
  : >"$tmp/runtime/module.h"; : >"$tmp/tuner/session.h"; : >"$tmp/db/store.h"; : >"$tmp/tools/cli.h"
  : >"$tmp/include/ktune/problem.h"; : >"$tmp/kernel_templates/gemm/gemm_args.h"; : >"$tmp/core/trial.h"
  : >"$tmp/include/ktune/device.h"; printf '#include "ktune/device.h"\n' >"$tmp/runtime/device.cpp"
  : >"$tmp/include/ktune/device_info.h"; printf '#include "ktune/device_info.h"\n' >"$tmp/core/device_info.cpp"
  : >"$tmp/include/ktune/compiler.h"; printf '#include "ktune/compiler.h"\n' >"$tmp/jit/compiler.cpp"
  : >"$tmp/include/ktune/config.h"; printf '#include "ktune/config.h"\n' >"$tmp/core/config.cpp"
  : >"$tmp/jit/load_or_compile.h"; printf '#include "ktune/family.h"\n' >"$tmp/core/family.cpp"
  printf '#include "ktune/problem.h"\n#include <vector>\n#include "gemm/gemm_args.h"\n#include "ktune/device_info.h"\n' >"$tmp/core/ok.cpp"
  printf '#include "db/store.h"\n#include "runtime/module.h"\n#include <ktune/device.h>\n#include "jit/load_or_compile.h"\n' >"$tmp/tuner/ok.cpp"
  printf '#include "db/store.h"\n#include "ktune/compiler.h"\n#include <ktune/device_info.h>\n' >"$tmp/jit/ok.cpp"
  printf '#include "jit/load_or_compile.h"\n#include "ktune/compiler.h"\n' >"$tmp/runtime/ok.cpp"
  local planted=(
    "core/deep/nested.cpp|#include \"runtime/module.h\"|core/deep/nested.cpp:1 includes runtime/module.h"
    "core/indented.h|  #  include \"db/store.h\"|core/indented.h:1 includes db/store.h"
    "db/angle.cpp|#include <tuner/session.h>|db/angle.cpp:1 includes tuner/session.h"
    "runtime/up.cu|#include\"tuner/session.h\"|runtime/up.cu:1 includes tuner/session.h"
    "kernel_templates/gemm/x.cuh|#include \"../../db/store.h\"|kernel_templates/gemm/x.cuh:1 includes db/store.h"
    "include/ktune/api.h|#include \"core/trial.h\"|include/ktune/api.h:1 includes core/trial.h"
    "db/missing.hpp|#include \"tuner/not_there.h\"|db/missing.hpp:1 includes tuner/not_there.h"
    "tuner/tool.cpp|#include <tools/cli.h>|tuner/tool.cpp:1 includes tools/cli.h"
    "db/api_above.h|#include <ktune/device.h>|db/api_above.h:1 includes include/ktune/device.h (the API of runtime/device.cpp)"
    "db/compiles.h|#include \"ktune/compiler.h\"|db/compiles.h:1 includes include/ktune/compiler.h (the API of jit/compiler.cpp)"
    "db/cubins.h|#include \"jit/load_or_compile.h\"|db/cubins.h:1 includes jit/load_or_compile.h"
    "jit/up.cpp|#include \"runtime/module.h\"|jit/up.cpp:1 includes runtime/module.h"
    "include/ktune/family.h|#include \"ktune/device.h\"|include/ktune/family.h:1 includes include/ktune/device.h (the API of runtime/device.cpp)"
    "runtime/config_too.cpp|#include \"ktune/config.h\"|include/ktune/config.h is implemented in two layers (core/config.cpp runtime/config_too.cpp)"
  )
  local p file text want out fail=0
  for p in "${planted[@]}"; do
    IFS='|' read -r file text want <<<"$p"
    printf '%s\n' "$text" >"$tmp/$file"
  done
  out=$(cd "$tmp" && KNOWN=() && check_tree) && { echo "layering self-test: the planted tree passed"; fail=1; }
  for p in "${planted[@]}"; do
    IFS='|' read -r file text want <<<"$p"
    grep -qF "layering: $want" <<<"$out" || { echo "layering self-test: missed $want"; fail=1; }
  done
  if grep -qE 'ok\.cpp' <<<"$out"; then echo "layering self-test: a downward include was reported"; fail=1; fi
  [ "$fail" = 0 ] || echo "$out"
  # A known upward include passes; once it is gone, its entry fails until removed.
  for p in "${planted[@]}"; do rm "$tmp/${p%%|*}"; done
  printf '#include "db/store.h"\n' >"$tmp/core/known.cpp"
  out=$(cd "$tmp" && KNOWN=("core/known.cpp -> db/store.h | planted") && check_tree) ||
    { echo "layering self-test: a known upward include failed"; echo "$out"; fail=1; }
  rm "$tmp/core/known.cpp"
  out=$(cd "$tmp" && KNOWN=("core/known.cpp -> db/store.h | planted") && check_tree) &&
    { echo "layering self-test: a stale known entry passed"; fail=1; }
  grep -qF "'core/known.cpp -> db/store.h' no longer occurs" <<<"$out" || { echo "layering self-test: no word of the stale entry"; fail=1; }
  if [ "$fail" = 0 ]; then
    echo "layering self-test: all ${#planted[@]} planted faults (upward includes, a header implemented in two layers) reported; a known one passes; a stale known entry fails"
  fi
  return "$fail"
}

if [ "${1:-}" = --self-test ]; then
  self_test
else
  cd "${1:-$(dirname "$0")/..}"
  check_tree
fi
