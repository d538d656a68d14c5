#!/usr/bin/env bash
# The README's main job: check the build dependencies, build the engine
# (incrementally: a no-op when nothing changed) and translate the demo file
# with the shipped model. Usage: scripts/demo.sh [extra translate options]
# The build is the one scripts/run-tests.sh uses (same directory, same
# RelWithDebInfo type), so neither command rebuilds what the other built.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
# What the build needs on Debian/Ubuntu (the README's install line has these).
BUILD_PACKAGES="cmake make gcc g++ pkg-config zlib1g-dev libutf8proc-dev libinih-dev"

# Reports each missing dependency by the Debian package that provides it.
missing=()
need_command() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need_command cmake cmake
need_command make make
need_command "${CC:-cc}" gcc
need_command "${CXX:-c++}" g++
need_command pkg-config pkg-config
if command -v "${CC:-cc}" >/dev/null 2>&1; then
    # Where CMake looks too: the compiler's paths and CMAKE_PREFIX_PATH's include/.
    include_flags=()
    IFS=: read -ra prefixes <<< "${CMAKE_PREFIX_PATH:-}"
    for prefix in "${prefixes[@]}"; do include_flags+=("-I$prefix/include"); done
    have_header() {
        echo "#include <$1>" | "${CC:-cc}" "${include_flags[@]}" -E -x c - >/dev/null 2>&1
    }
    have_header zlib.h || missing+=(zlib1g-dev)
    have_header utf8proc.h || missing+=(libutf8proc-dev)
    if command -v pkg-config >/dev/null 2>&1; then
        pkg-config --exists inih || missing+=(libinih-dev)  # CMake finds inih through pkg-config
    else
        have_header ini.h || missing+=(libinih-dev)
    fi
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "demo: missing build dependencies: ${missing[*]}" >&2
    echo "demo: install them with:  sudo apt-get install ${missing[*]}" >&2
    echo "demo: (everything the build needs: sudo apt-get install $BUILD_PACKAGES)" >&2
    exit 1
fi

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
