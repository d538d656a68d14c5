#!/usr/bin/env bash
# The README's C API example, built as a user of an installed nmt builds it:
# `cmake --install` into a temporary prefix (not the configured one: the
# installed nmt.pc must be relocatable), then the example compiled with
#  - `pkg-config --cflags --libs nmt` against the shared library, and
#  - `pkg-config --static --libs nmt` against libnmt.a (only the system and
#    CUDA libraries shared: Libs.private must list all that libnmt.a needs;
#    with CUDA built in, that is the toolkit's cublas and cudart),
# and each binary run on the test model: the README's example must stay true.
set -euo pipefail
: "${NMT_SOURCE_DIR:?}" "${NMT_BINARY_DIR:?}" "${NMT_TEST_MODEL:?}"
command -v pkg-config > /dev/null || { echo "skipped: no pkg-config"; exit 77; }
CC=${CC:-cc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
sed -n '/<!-- example:begin -->/,/<!-- example:end -->/p' "$NMT_SOURCE_DIR/README.md" |
    sed '/^```/d; /<!--/d' > "$TMP/example.c"
[ "$(wc -l < "$TMP/example.c")" -ge 20 ] || { echo "example not found in README.md"; exit 1; }

prefix=$TMP/prefix
cmake --install "$NMT_BINARY_DIR" --prefix "$prefix" > "$TMP/install.log" ||
    { cat "$TMP/install.log"; exit 1; }
pc=$(find "$prefix" -name nmt.pc)
[ -n "$pc" ] || { echo "no nmt.pc installed under $prefix"; exit 1; }
export PKG_CONFIG_PATH=${pc%/nmt.pc}
includedir=$(pkg-config --variable=includedir nmt)
libdir=$(pkg-config --variable=libdir nmt)
# relocatable: the paths lie under the prefix given at install time
[ -f "$includedir/nmt.h" ] || { echo "nmt.pc's includedir $includedir has no nmt.h"; exit 1; }
[ -f "$libdir/libnmt.a" ] || { echo "nmt.pc's libdir $libdir has no libnmt.a"; exit 1; }
case "$(cd "$includedir" && pwd -P)" in
"$(cd "$prefix" && pwd -P)"/*) ;;
*) echo "nmt.pc points outside the install prefix: $includedir"; exit 1 ;;
esac

check_output() {
    [ "$(wc -l < "$TMP/out.txt")" -eq 2 ] || { echo "$1: expected 2 lines, got: $(cat "$TMP/out.txt")"; exit 1; }
}

# shared: the one installed header and -lnmt
# shellcheck disable=SC2046
$CC -std=c11 -Wall -Werror "$TMP/example.c" -o "$TMP/example" $(pkg-config --cflags --libs nmt) \
    -Wl,-rpath,"$libdir"
"$TMP/example" "$NMT_TEST_MODEL" > "$TMP/out.txt"
check_output "shared"

# static: libnmt.a (-Bstatic for it alone) and Libs.private
libs=$(pkg-config --static --libs nmt)
libs=${libs/-lnmt/-Wl,-Bstatic -lnmt -Wl,-Bdynamic}
# shellcheck disable=SC2046,SC2086
$CC -std=c11 -Wall -Werror "$TMP/example.c" -o "$TMP/example-static" $(pkg-config --cflags nmt) $libs
if readelf -d "$TMP/example-static" 2>/dev/null | grep -q 'libnmt\.so'; then
    echo "static: the example still needs libnmt.so"
    exit 1
fi
"$TMP/example-static" "$NMT_TEST_MODEL" > "$TMP/out.txt"
check_output "static"
echo "test_readme_example: passed (shared and static, installed to a temporary prefix)"
