#!/usr/bin/env bash
# translate under valgrind on the test model with good, empty and invalid
# lines: no invalid access, no use of uninitialized memory, no leak.
# Exit status 1 of translate (a refused line) is expected; 99 is valgrind's.
set -uo pipefail
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
command -v valgrind >/dev/null || { echo "skipped: valgrind not installed"; exit 77; }
input=$(printf 'ein mann läuft im park.\n\nZwei Hunde spielen!\nbad \xff line\nEIN KIND\n')
printf '%s\n' "$input" | valgrind -q --error-exitcode=99 --leak-check=full \
    --suppressions="$(dirname "$0")/valgrind.supp" \
    --errors-for-leak-kinds=definite,indirect "$NMT_TRANSLATE" -m "$NMT_TEST_MODEL" \
    --device cpu --beam 3 --n-best 2 > /dev/null
code=$?
[ $code -eq 1 ] || { echo "test_cli_valgrind: FAILED (exit $code, expected 1: one refused line)"; exit 1; }
echo "test_cli_valgrind: passed"
