#!/usr/bin/env bash
# The test command of the README: configure, build and run every test.
# CUDA code is built when nvcc is found; GPU tests skip without a GPU.
# The build is scripts/demo.sh's (same directory, same RelWithDebInfo type):
# after the demo, only the tests and tools are left to build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" "$@"
