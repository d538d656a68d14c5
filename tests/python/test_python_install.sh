#!/usr/bin/env bash
# docs/python.md's install, as written, then its first example with the
# installed package: in a copy of the checkout (python/, include/nmt.h, the
# built libnmt.so as build/libnmt.so, the shipped model), the doc's venv and
# `pip install ./python` lines (with the doc's offline flag
# --no-build-isolation), then the first ```python block run by
# .venv/bin/python from the copy's root, without PYTHONPATH or NMT_LIBRARY:
# the installed package must find the library it was installed with. Skips
# (77) without venv, pip, setuptools or wheel for the tests' Python.
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_SOURCE_DIR:?}" "${NMT_BINARY_DIR:?}"
PY=${NMT_PYTHON:-/usr/bin/python3}
for module in venv ensurepip pip setuptools wheel; do
    "$PY" -c "import $module" 2> /dev/null || { echo "skipped: no $module for $PY"; exit 77; }
done
model=$NMT_SOURCE_DIR/models/multi30k-de-en.bin
[ -f "$model" ] || { echo "skipped: no $model"; exit 77; }
doc=$NMT_SOURCE_DIR/docs/python.md
repo=$TMP/repo
mkdir -p "$repo/include" "$repo/build" "$repo/models"
cp -r "$NMT_SOURCE_DIR/python" "$repo/python"
rm -rf "$repo/python/build" "$repo/python/nmt.egg-info"
cp "$NMT_SOURCE_DIR/include/nmt.h" "$repo/include/"
ln -s "$NMT_BINARY_DIR/libnmt.so" "$repo/build/libnmt.so"
ln -s "$model" "$repo/models/"

# The install block: the first ```sh block after "## Install", less the build.
sed -n '/^## Install/,/^## Usage/p' "$doc" | sed -n '/^```sh/,/^```$/p' | sed '1d;$d' |
    grep -v '^cmake ' > "$TMP/install.sh"
grep -q 'pip install ./python' "$TMP/install.sh" || fail "no pip install line in: $(cat "$TMP/install.sh")"
sed -i 's#pip install ./python#pip install --no-build-isolation --no-index ./python#; s#^python3 #"$PY" #' \
    "$TMP/install.sh"
# The first Python example of the doc.
sed -n '/^```python/,/^```$/p' "$doc" | sed '1d' | sed '/^```$/q' | sed '$d' > "$TMP/example.py"
[ "$(wc -l < "$TMP/example.py")" -ge 5 ] || fail "no python example in $doc"

(cd "$repo" && env -u PYTHONPATH -u NMT_LIBRARY PY="$PY" bash -e "$TMP/install.sh") \
    > "$TMP/install.log" 2>&1 || fail "the install lines failed: $(cat "$TMP/install.log")"
# The source is gone: only the installed copy (and its record) is left.
rm -rf "$repo/python"
(cd "$repo" && env -u PYTHONPATH -u NMT_LIBRARY .venv/bin/python "$TMP/example.py") \
    > "$TMP/out.txt" 2> "$TMP/err.txt" || fail "the example failed: $(cat "$TMP/err.txt")"
# beam 5, n-best 2: two rows for each of the two lines, then two texts
[ "$(wc -l < "$TMP/out.txt")" -eq 6 ] || fail "the example printed: $(cat "$TMP/out.txt")"
grep -q "dog" "$TMP/out.txt" || fail "the example did not translate: $(cat "$TMP/out.txt")"
[ $failures -eq 0 ] && echo "test_python_install: passed"
exit $((failures > 0))
