#!/usr/bin/env bash
# The README's main job: build the engine (if needed) and translate the demo
# file with the shipped model. Usage: tools/demo.sh [extra translate options]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ ! -x "$BUILD/translate" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$BUILD" -j"$(nproc)" --target translate make-test-model test_model >&2
fi
MODEL=models/multi30k-de-en.bin
if [ ! -f "$MODEL" ]; then
    echo "demo: $MODEL not found, using the random-weight test model" >&2
    MODEL=$BUILD/test-model.bin
fi
echo "demo: translating models/demo.de with $MODEL" >&2
"$BUILD/translate" -m "$MODEL" "$@" < models/demo.de
