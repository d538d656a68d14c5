#!/usr/bin/env bash
# The README's main job: set up the dependencies, build the engine
# (incrementally: a no-op when nothing changed) and translate the demo file
# with the shipped model. Usage: scripts/demo.sh [extra translate options]
# The build is the one scripts/run-tests.sh uses (same directory, same
# RelWithDebInfo type), so neither command rebuilds what the other built.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
# Installs the missing Debian packages when it can (root or password-less
# sudo), or prints the apt-get line and stops (scripts/deps.sh).
source scripts/deps.sh
nmt_deps_ensure demo build feature || exit 1

if ! grep -qx 'CMAKE_BUILD_TYPE:STRING=RelWithDebInfo' "$BUILD/CMakeCache.txt" 2>/dev/null; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
# Always: an edited source is rebuilt, never a stale binary run.
cmake --build "$BUILD" -j"$(nproc)" --target translate test_model >&2

MODEL=models/multi30k-de-en.bin
if [ ! -f "$MODEL" ]; then
    echo "demo: $MODEL not found, using the random-weight test model" >&2
    MODEL=$BUILD/test-model.bin
fi
echo "demo: translating models/demo.de with $MODEL" >&2
"$BUILD/translate" -m "$MODEL" "$@" < models/demo.de
