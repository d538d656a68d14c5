#!/usr/bin/env bash
# The test command of the README: set up the dependencies, configure, build
# and run every test.
# CUDA code is built when nvcc is found; GPU tests skip without a GPU.
# The build is scripts/demo.sh's (same directory, same RelWithDebInfo type):
# after the demo, only the tests and tools are left to build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
# The build's packages are required; without a test package its tests skip
# (named here, and by ctest). Installed when it can (scripts/deps.sh).
source scripts/deps.sh
nmt_deps_ensure run-tests build "feature test browser" || exit 1
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" "$@"
