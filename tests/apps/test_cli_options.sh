#!/usr/bin/env bash
# translate's options as a new user meets them: a missing value is named as
# such; the INI file and the command line refuse the same combinations and
# accept the same keys (flags as key = 1/0), each once; -c refuses a directory; --n-best N
# gives N rows for every line, refused ones included; --device cuda without a
# usable GPU is a configuration error (2); --help, the README's option table
# and its exit statuses agree; --search-rules; --max-memory sizes; every
# option in --help (translate's and nmt-server's) is an INI key; long options
# by their full names only, each with a value given once.
set -uo pipefail
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL
SRC=${NMT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# check NAME CODE PATTERN: the last command's exit status ($code) and its stderr ($TMP/err)
check() {
    [ "$code" -eq "$2" ] || fail "$1: exit $code, expected $2 ($(head -c 300 "$TMP/err"))"
    grep -q -- "$3" "$TMP/err" || fail "$1: stderr lacks '$3': $(head -c 300 "$TMP/err")"
}

# 1. an option without its value: "needs a value", not "unknown option"
for opt in --beam -b --stats --lsh --device; do
    "$T" -m "$M" $opt < /dev/null > /dev/null 2> "$TMP/err"; code=$?
    check "$opt without a value" 2 "option $opt needs a value"
    grep -q "unknown option" "$TMP/err" && fail "$opt without a value: called unknown"
done
"$T" -m "$M" --bogus < /dev/null > /dev/null 2> "$TMP/err"; code=$?
check "--bogus" 2 "unknown option '--bogus'"

# 2. --lsh and --top-words exclude each other in the INI file as on the command line
"$T" -m "$M" --device cpu --lsh 8,3,16,20,2 --top-words 20 < /dev/null 2> "$TMP/err"; code=$?
check "--lsh with --top-words" 2 "exclude each other"
printf 'lsh = 8,3,16,20,2\ntop_words = 20\n' > "$TMP/both.ini"
"$T" -m "$M" --device cpu -c "$TMP/both.ini" < /dev/null 2> "$TMP/err"; code=$?
check "INI lsh with top_words" 2 "both.ini: lsh and top_words (--lsh and --top-words) exclude each other"
# across the two, the command line wins as for every key
printf 'lsh = 8,3,16,20,2\n' > "$TMP/lsh.ini"
echo 'ein mann' | "$T" -m "$M" --device cpu -c "$TMP/lsh.ini" --top-words 20 > /dev/null 2> "$TMP/err"
code=$?; [ $code -eq 0 ] || fail "INI lsh, command line --top-words: exit $code ($(cat "$TMP/err"))"

# 3. every flag is an INI key taking 1/0 (true/false, on/off, yes/no)
printf 'ein mann\nzwei kinder spielen\n' > "$TMP/in.txt"
"$T" -m "$M" --device cpu --no-unk-replace --scores < "$TMP/in.txt" > "$TMP/cli.out" 2>/dev/null
printf 'no_unk_replace = 1\nscores = true\nno_progress = yes\n' > "$TMP/flags.ini"
"$T" -m "$M" --device cpu -c "$TMP/flags.ini" < "$TMP/in.txt" > "$TMP/ini.out" 2> "$TMP/err"; code=$?
[ $code -eq 0 ] || fail "flags as INI keys: exit $code ($(cat "$TMP/err"))"
cmp -s "$TMP/cli.out" "$TMP/ini.out" || fail "no_unk_replace = 1, scores = true differ from the flags"
printf 'no_unk_replace = 0\nscores = off\nprogress = 0\n' > "$TMP/off.ini"
"$T" -m "$M" --device cpu < "$TMP/in.txt" > "$TMP/plain.out" 2>/dev/null
"$T" -m "$M" --device cpu -c "$TMP/off.ini" < "$TMP/in.txt" > "$TMP/off.out" 2> "$TMP/err" ||
    fail "flags = 0 in the INI: exit $? ($(cat "$TMP/err"))"
cmp -s "$TMP/plain.out" "$TMP/off.out" || fail "flags = 0 in the INI changed the output"
printf 'scores = maybe\n' > "$TMP/maybe.ini"
"$T" -m "$M" -c "$TMP/maybe.ini" < /dev/null 2> "$TMP/err"; code=$?
check "scores = maybe" 2 "maybe.ini:1: bad value for scores: 'maybe'"
# a key given twice is refused, naming it and the line of the repeat (also
# across sections: [translate] and [server] keys set the same settings)
printf '[translate]\nbeam = 3\ndevice = cpu\n\nbeam = 4\n' > "$TMP/twice.ini"
"$T" -m "$M" -c "$TMP/twice.ini" < /dev/null 2> "$TMP/err"; code=$?
check "beam given twice" 2 "twice.ini:5: key 'beam' is given twice"

# 4. -c must name a readable file, not a directory (which reads as empty)
"$T" -m "$M" --device cpu -c "$TMP" < /dev/null 2> "$TMP/err"; code=$?
check "-c DIRECTORY" 2 "is a directory"
"$T" -m "$M" --device cpu -c "$TMP/missing.ini" < /dev/null 2> "$TMP/err"; code=$?
check "-c missing file" 2 "missing.ini: cannot open"

# 5. --n-best N: N rows per input line, the refused line (invalid UTF-8) and
# the empty line included, each LINE RANK SCORE TEXT
printf 'ein mann\nbad \xff line\n\n' > "$TMP/nbest.in"
"$T" -m "$M" --device cpu -b 3 -n 3 < "$TMP/nbest.in" > "$TMP/nbest.out" 2> "$TMP/err"; code=$?
check "--n-best 3 with a refused line" 1 "line 2:"
[ "$(wc -l < "$TMP/nbest.out")" -eq 9 ] || fail "--n-best 3: expected 9 rows, got: $(cat "$TMP/nbest.out")"
for n in 1 2 3; do
    ranks=$(awk -F'\t' -v n=$n 'NF == 4 && $1 == n { printf "%s ", $2 }' "$TMP/nbest.out")
    [ "$ranks" = "1 2 3 " ] || fail "--n-best 3: line $n has ranks '$ranks', expected '1 2 3 '"
done
[ "$(grep -c "^2	[123]	-inf	\$" "$TMP/nbest.out")" -eq 3 ] ||
    fail "--n-best 3: the refused line 2 is not three rows 'LINE RANK -inf <empty>'"

# 6. --device cuda where no GPU is usable (none visible here; or a build
# without CUDA): a configuration error, exit 2, saying what to do
echo 'ein mann' | CUDA_VISIBLE_DEVICES='' "$T" -m "$M" --device cuda > /dev/null 2> "$TMP/err"; code=$?
check "--device cuda without a GPU" 2 "\-\-device cuda"
grep -q "use --device cpu" "$TMP/err" || fail "--device cuda without a GPU: no hint ($(cat "$TMP/err"))"

# 7. --help, the README and the exit statuses agree
"$T" --help > "$TMP/help.txt" || fail "--help: exit $?"
for opt in $(grep -oE -- '--[a-z][a-z0-9-]+' "$TMP/help.txt" | sort -u); do
    grep -q -- "\`[^\`]*$opt" "$SRC/README.md" || fail "README's option table lacks $opt (in --help)"
done
for opt in $(sed -n '/^| option | default | meaning/,/^$/p' "$SRC/README.md" |
             grep -oE -- '--[a-z][a-z0-9-]+' | sort -u); do
    grep -q -- "$opt" "$TMP/help.txt" || fail "README's option table has $opt, --help does not"
done
for status in 0 1 2 3 4 5; do
    grep -qE "(^|: |; )$status [a-z]" "$TMP/help.txt" || fail "--help does not document exit status $status"
    grep -qE "(^|: |; )$status [a-z]" "$SRC/README.md" || fail "README does not document exit status $status"
done

# 8. --search-rules v1|onmt (also the INI key search_rules); onmt brings
# onmt_translate's length limit (1.25, 5) unless one is given (the GPU runs
# onmt too: tests/engine/test_gpu_onmt_rules.c)
"$T" -m "$M" --device cpu --search-rules onmt --scores < "$TMP/in.txt" > "$TMP/onmt.out" 2> "$TMP/err"
code=$?; [ $code -eq 0 ] || fail "--search-rules onmt: exit $code ($(cat "$TMP/err"))"
printf 'search_rules = onmt\nscores = 1\n' > "$TMP/onmt.ini"
"$T" -m "$M" --device cpu -c "$TMP/onmt.ini" < "$TMP/in.txt" > "$TMP/onmt-ini.out" 2>/dev/null
cmp -s "$TMP/onmt.out" "$TMP/onmt-ini.out" || fail "search_rules = onmt differs from --search-rules onmt"
"$T" -m "$M" --device cpu --search-rules onmt --max-len-a 1.25 --max-len-b 5 --scores \
    < "$TMP/in.txt" > "$TMP/onmt-len.out" 2>/dev/null
cmp -s "$TMP/onmt.out" "$TMP/onmt-len.out" || fail "--search-rules onmt: not --max-len-a 1.25 --max-len-b 5"
"$T" -m "$M" --device cpu --search-rules v1 --scores < "$TMP/in.txt" > "$TMP/v1.out" 2>/dev/null
"$T" -m "$M" --device cpu --scores < "$TMP/in.txt" > "$TMP/default.out" 2>/dev/null
cmp -s "$TMP/v1.out" "$TMP/default.out" || fail "--search-rules v1 is not the default"
"$T" -m "$M" --search-rules onmt2 < /dev/null 2> "$TMP/err"; code=$?
check "--search-rules onmt2" 2 "bad value for --search-rules: 'onmt2'"

# 9. --max-memory SIZE (INI max_memory): bytes with a K, M or G suffix (1024-based);
# the CPU has no cap, so any accepted value leaves the output as it was
for size in 0 4096 64K 512M 1G 2g; do
    "$T" -m "$M" --device cpu --max-memory $size --scores < "$TMP/in.txt" > "$TMP/mem.out" 2> "$TMP/err"
    code=$?; [ $code -eq 0 ] || fail "--max-memory $size: exit $code ($(cat "$TMP/err"))"
    cmp -s "$TMP/mem.out" "$TMP/default.out" || fail "--max-memory $size changed the CPU's output"
done
printf 'max_memory = 256M\nscores = 1\n' > "$TMP/mem.ini"
"$T" -m "$M" --device cpu -c "$TMP/mem.ini" < "$TMP/in.txt" > "$TMP/mem-ini.out" 2> "$TMP/err"
code=$?; [ $code -eq 0 ] || fail "max_memory = 256M: exit $code ($(cat "$TMP/err"))"
cmp -s "$TMP/mem-ini.out" "$TMP/default.out" || fail "max_memory = 256M changed the CPU's output"
for bad in -1 1.5G 1T 12KB K ' 5' 9999999999G 99999999999999999999; do
    "$T" -m "$M" --device cpu --max-memory "$bad" < /dev/null 2> "$TMP/err"; code=$?
    check "--max-memory '$bad'" 2 "bad value for --max-memory: '$bad'"
done
printf 'max_memory = 3X\n' > "$TMP/mem-bad.ini"
"$T" -m "$M" --device cpu -c "$TMP/mem-bad.ini" < /dev/null 2> "$TMP/err"; code=$?
check "max_memory = 3X" 2 "mem-bad.ini:1: bad value for max_memory: '3X'"

# 10. every option --help lists (but -c, -h, -V) is an INI key that parses its
# value: '@bad@' is refused by name as a bad value (a path takes it), never as
# an unknown key; nmt-server's own options likewise in its [server] section,
# where translate's keys are unknown
# check_keys PROGRAM HELP_FILE SECTION LEAST: each option of HELP_FILE (but
# -c, -h, -V) as an INI key in SECTION ('' for none) with the value '@bad@'
check_keys() {
    local n=0 line=1 opt key
    [ -n "$3" ] && line=2
    for opt in $(grep -oE -- '^(  -[a-zA-Z], |      )--[a-z][a-z0-9-]+' "$2" | sed 's/.*--//'); do
        case $opt in config|help|version) continue ;; esac
        key=${opt//-/_}
        { [ -n "$3" ] && printf '[%s]\n' "$3"; printf '%s = @bad@\n' "$key"; } > "$TMP/key.ini"
        "$1" -c "$TMP/key.ini" --help > /dev/null 2> "$TMP/err"; code=$?
        grep -q "unknown key" "$TMP/err" && fail "$1 --$opt: INI key $key is unknown"
        [ $code -eq 0 ] || grep -q "key.ini:$line: bad value for $key: '@bad@'" "$TMP/err" ||
            fail "$1: $key = @bad@: exit $code ($(cat "$TMP/err"))"
        n=$((n + 1))
    done
    [ $n -ge "$4" ] || fail "$1 --help lists $n INI keys, expected $4 or more"
}
check_keys "$T" "$TMP/help.txt" '' 40
printf 'unk_replace = 0\n' > "$TMP/key.ini"
"$T" -c "$TMP/key.ini" --help > /dev/null 2> "$TMP/err" || fail "unk_replace = 0: $(cat "$TMP/err")"
"$T" -m "$M" --unk-replace < /dev/null 2> "$TMP/err"; code=$?
check "--unk-replace (an INI key only)" 2 "unknown option '--unk-replace'"
if [ -n "${NMT_SERVER:-}" ]; then
    "$NMT_SERVER" --help > "$TMP/server-all.txt" || fail "nmt-server --help: exit $?"
    sed -n '/^Server options/,/^$/p' "$TMP/server-all.txt" > "$TMP/server-help.txt"
    check_keys "$NMT_SERVER" "$TMP/server-help.txt" server 12
    printf '[server]\nbeam = 3\n' > "$TMP/key.ini"
    "$NMT_SERVER" -c "$TMP/key.ini" --help > /dev/null 2> "$TMP/err"; code=$?
    check "[server] beam" 2 "key.ini:2: unknown key 'beam'"
fi

# 11. only full option names: glibc's getopt takes a unique prefix (--score
# for --scores), which is refused, naming the option meant; a full name with
# '=' works. An option with a value given twice is refused (-m names
# ensembles), as two that set the same thing; a flag may repeat.
"$T" -m "$M" --device cpu --score < /dev/null > /dev/null 2> "$TMP/err"; code=$?
check "--score (abbreviated)" 2 "unknown option '--score' (options are not abbreviated: --scores, --score-target?)"
"$T" -m "$M" --device cpu --n-best-form=marian < /dev/null > /dev/null 2> "$TMP/err"; code=$?
check "--n-best-form=marian" 2 "unknown option '--n-best-form' (options are not abbreviated"
"$T" -m "$M" --dev cpu < /dev/null > /dev/null 2> "$TMP/err"; code=$?
check "--dev (a prefix of three)" 2 "unknown option '--dev' (options are not abbreviated: --device, --device-index, --devices?)"
"$T" --conf "$TMP/onmt.ini" -m "$M" --device cpu < /dev/null > /dev/null 2> "$TMP/err"; code=$?
check "--conf (abbreviated -c)" 2 "unknown option '--conf'"
echo 'ein mann' | "$T" -m "$M" --device=cpu --beam=3 --scores --scores > "$TMP/eq.out" 2> "$TMP/err"
code=$?; [ $code -eq 0 ] || fail "--device=cpu --beam=3 --scores --scores: exit $code ($(cat "$TMP/err"))"
"$T" -m "$M" --device cpu --beam 3 -b 4 < /dev/null 2> "$TMP/err"; code=$?
check "--beam 3 -b 4" 2 "\-\-beam is given twice: give each option once"
"$T" -m "$M" -m "$M" --device cpu < /dev/null 2> "$TMP/err"; code=$?
check "-m A -m B" 2 "\-\-model is given twice: several models (an ensemble, -m A -m B) are not supported yet"
"$T" -m "$M" --device cpu --stats "$TMP/s.json" --timing "$TMP/t.json" < /dev/null 2> "$TMP/err"; code=$?
check "--stats with --timing" 2 "\-\-stats and \-\-timing set the same thing: give one"
"$T" -c "$TMP/onmt.ini" -c "$TMP/mem.ini" -m "$M" < /dev/null 2> "$TMP/err"; code=$?
check "-c twice" 2 "\-\-config is given twice"
if [ -n "${NMT_SERVER:-}" ]; then
    "$NMT_SERVER" -m "$M" --por 0 < /dev/null > /dev/null 2> "$TMP/err"; code=$?
    check "nmt-server --por" 2 "unknown option '--por' (options are not abbreviated: --port?)"
    "$NMT_SERVER" -m "$M" --port 0 --port 1 < /dev/null > /dev/null 2> "$TMP/err"; code=$?
    check "nmt-server --port twice" 2 "\-\-port is given twice"
    "$NMT_SERVER" -m "$M" -m "$M" < /dev/null > /dev/null 2> "$TMP/err"; code=$?
    check "nmt-server -m twice" 2 "ensemble, -m A -m B) are not supported yet"
fi

if [ $failures -ne 0 ]; then echo "test_cli_options: $failures failures" >&2; exit 1; fi
echo "test_cli_options: passed"
