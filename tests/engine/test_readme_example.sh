#!/usr/bin/env bash
# Compiles the C API example of README.md against the built shared library and
# the one-file nmt.h as installed (build/include: no other header needed), and
# runs it on the test model: the README's example must stay true.
set -euo pipefail
: "${NMT_SOURCE_DIR:?}" "${NMT_BINARY_DIR:?}" "${NMT_TEST_MODEL:?}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
sed -n '/<!-- example:begin -->/,/<!-- example:end -->/p' "$NMT_SOURCE_DIR/README.md" |
    sed '/^```/d; /<!--/d' > "$TMP/example.c"
[ "$(wc -l < "$TMP/example.c")" -ge 20 ] || { echo "example not found in README.md"; exit 1; }
cc -std=c11 -Wall -Werror -I"$NMT_BINARY_DIR/include" "$TMP/example.c" -o "$TMP/example" \
    -L"$NMT_BINARY_DIR" -lnmt -Wl,-rpath,"$NMT_BINARY_DIR"
"$TMP/example" "$NMT_TEST_MODEL" > "$TMP/out.txt"
[ "$(wc -l < "$TMP/out.txt")" -eq 2 ] || { echo "expected 2 lines, got: $(cat "$TMP/out.txt")"; exit 1; }
echo "test_readme_example: passed"
