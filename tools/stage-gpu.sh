#!/usr/bin/env bash
# Copies what a GPU machine needs from build/ into build-gpu/ (ignored by git, like build/): the
# ktune program, the test binary, the bench tools, libktune.a and the two headers beyond pybind11's
# that tools/python-gpu-check.sh's PREBUILT mode compiles the Python bindings with. The whole build
# tree (object files included) is larger than what travels to a lent device machine (64 MiB with
# the working tree); this is about 35 MiB. On the device: `ln -sfn build-gpu build` first, so that
# scripts naming ./build/ktune find it. muparser (user kernel specs' expressions) is a shared library
# the device machine lacks: it travels in build-gpu/lib, for LD_LIBRARY_PATH=build-gpu/lib there.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build-gpu
mkdir -p build-gpu/tests build-gpu/bench build-gpu/deps/include build-gpu/lib
cp build/ktune build/libktune.a build-gpu/
cp build/tests/ktune_tests build-gpu/tests/
cp build/bench/* build-gpu/bench/
cp -r /usr/include/nlohmann build-gpu/deps/include/
cp /usr/local/cuda/include/cuda.h build-gpu/deps/include/
cp -L /usr/lib/x86_64-linux-gnu/libmuparser.so.2 build-gpu/lib/
strip --strip-debug build-gpu/ktune build-gpu/tests/ktune_tests build-gpu/bench/* 2>/dev/null || true
du -sh build-gpu
