#!/usr/bin/env bash
# python/nmt/_option_table.py is what dev/option-table/option_table_py.c
# writes from translate's option table (apps/common/option_table.c): the
# Python binding checks its keywords against those rows, so a row changed
# without regenerating the file fails here.
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_BINARY_DIR:?}" "${NMT_SOURCE_DIR:?}"
GEN=$NMT_BINARY_DIR/option-table-py
FILE=$NMT_SOURCE_DIR/python/nmt/_option_table.py
"$GEN" > "$TMP/rows.py"
code=$?
if [ $code -ne 0 ]; then
    fail "$GEN exited $code"
elif ! diff -u "$FILE" "$TMP/rows.py" > "$TMP/diff"; then
    fail "python/nmt/_option_table.py differs from translate's option table; regenerate:" \
         "build/option-table-py > python/nmt/_option_table.py"
    cat "$TMP/diff" >&2
fi
# Every option translate --help lists is a row of the file.
: "${NMT_TRANSLATE:?}"
"$NMT_TRANSLATE" --help | sed -n 's/^  \(-., \)\{0,1\} *--\([a-z0-9-]*\).*/\2/p' > "$TMP/listed"
[ "$(wc -l < "$TMP/listed")" -gt 0 ] || fail "no option in translate --help"
missing=$(python3 -c 'import sys; d = {}; exec(open(sys.argv[1]).read(), d)
print(" ".join(n for n in open(sys.argv[2]).read().split() if n not in d["ROWS"]))' \
    "$TMP/rows.py" "$TMP/listed")
[ -z "$missing" ] || fail "options of translate --help without a row: $missing"
exit $((failures > 0))
