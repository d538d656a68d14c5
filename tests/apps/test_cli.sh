#!/usr/bin/env bash
# End-to-end tests of the translate program on the random-weight test model:
# one output line per input line in order, bad lines reported with their
# number and answered with an empty line, determinism across runs and batch
# sizes, options from INI with the command line winning, exit codes.
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL

# Random sentences over a few words (some in the test vocabulary, some not),
# with capitals and punctuation; a fresh seed each run, printed for replay.
SEED=${NMT_TEST_SEED:-$RANDOM}
echo "seed $SEED (set NMT_TEST_SEED to replay)" >&2
awk -v seed="$SEED" 'BEGIN {
    srand(seed);
    split("ein eine der die das mann frau hund katze spielt läuft im park auf straße Haus " \
          "Ball rot grün kind wasser , . ! Zwei EIN Müller", w, " ");
    n = length(w);
    for (i = 0; i < 60; i++) {
        len = 1 + int(rand() * 18); line = "";
        for (j = 0; j < len; j++) line = line (j ? " " : "") w[1 + int(rand() * n)];
        print line;
    }
}' > "$TMP/in.txt"

# 1. line count and determinism across runs and batch sizes
"$T" -m "$M" --device cpu --batch-size 1 < "$TMP/in.txt" > "$TMP/b1.txt" 2>"$TMP/err1" || fail "batch 1 exit $?"
"$T" -m "$M" --device cpu --batch-size 37 < "$TMP/in.txt" > "$TMP/b37.txt" 2>/dev/null || fail "batch 37 exit $?"
"$T" -m "$M" --device cpu --batch-size 37 < "$TMP/in.txt" > "$TMP/b37b.txt" 2>/dev/null || fail "rerun exit $?"
[ "$(wc -l < "$TMP/b1.txt")" -eq 60 ] || fail "expected 60 output lines, got $(wc -l < "$TMP/b1.txt")"
cmp -s "$TMP/b1.txt" "$TMP/b37.txt" || fail "batch size 1 and 37 differ: $(diff "$TMP/b1.txt" "$TMP/b37.txt" | head -4)"
cmp -s "$TMP/b37.txt" "$TMP/b37b.txt" || fail "two identical runs differ"
[ "$(grep -c . "$TMP/b1.txt")" -gt 0 ] || fail "every output line is empty"
# a sentence alone gives what it gave inside the batch of 37
line7=$(sed -n 7p "$TMP/in.txt")
alone=$(printf '%s\n' "$line7" | "$T" -m "$M" --device cpu 2>/dev/null)
[ "$alone" = "$(sed -n 7p "$TMP/b37.txt")" ] || fail "line 7 alone differs from inside the batch"

# 2. bad lines: invalid UTF-8, over-long, NUL byte, empty; the others still translate in order
{
    echo "ein mann"
    printf 'ein \xff kaputt\n'
    echo ""
    head -c 5000 /dev/zero | tr '\0' 'a'; echo
    printf 'vor\0nach\n'
    echo "eine frau"
} > "$TMP/bad.txt"
"$T" -m "$M" --device cpu < "$TMP/bad.txt" > "$TMP/bad.out" 2> "$TMP/bad.err"
code=$?
[ $code -eq 1 ] || fail "bad lines: exit $code, expected 1"
[ "$(wc -l < "$TMP/bad.out")" -eq 6 ] || fail "bad lines: expected 6 output lines, got $(wc -l < "$TMP/bad.out")"
grep -q "line 2:.*UTF-8" "$TMP/bad.err" || fail "invalid UTF-8 on line 2 not reported: $(cat "$TMP/bad.err")"
grep -q "line 4:.*too long" "$TMP/bad.err" || fail "over-long line 4 not reported"
grep -q "line 5:.*NUL" "$TMP/bad.err" || fail "NUL byte on line 5 not reported"
grep -q "line 3:" "$TMP/bad.err" && fail "the empty line 3 was reported as an error"
for n in 2 3 4 5; do [ -z "$(sed -n ${n}p "$TMP/bad.out")" ] || fail "line $n output not empty"; done
good1=$(printf 'ein mann\n' | "$T" -m "$M" --device cpu 2>/dev/null)
good6=$(printf 'eine frau\n' | "$T" -m "$M" --device cpu 2>/dev/null)
[ "$(sed -n 1p "$TMP/bad.out")" = "$good1" ] || fail "line 1 changed by its bad neighbours"
[ "$(sed -n 6p "$TMP/bad.out")" = "$good6" ] || fail "line 6 changed by its bad neighbours"

# 3. options: INI file, command line wins, n-best rows, scores, exit codes
printf '[translate]\nbeam = 3\nn_best = 3\n' > "$TMP/ok.ini"
"$T" -m "$M" --device cpu -c "$TMP/ok.ini" < <(head -4 "$TMP/in.txt") > "$TMP/nbest.txt" 2>/dev/null || fail "ini exit $?"
[ "$(wc -l < "$TMP/nbest.txt")" -ge 4 ] || fail "n-best rows missing"
awk -F'\t' 'NF != 4 || $2 < 1 || $2 > 3 { bad = 1 } END { exit bad }' "$TMP/nbest.txt" || fail "n-best rows are not LINE RANK SCORE TEXT"
awk -F'\t' '$1 == prev && $3 > last + 1e-6 { bad = 1 } { prev = $1; last = $3 } END { exit bad }' "$TMP/nbest.txt" || fail "n-best not sorted by score"
"$T" -m "$M" --device cpu -c "$TMP/ok.ini" --n-best 1 < <(head -4 "$TMP/in.txt") > "$TMP/one.txt" 2>/dev/null || fail "cli override exit $?"
[ "$(wc -l < "$TMP/one.txt")" -eq 4 ] || fail "--n-best 1 did not override the INI's n_best"
"$T" -m "$M" --device cpu --scores < <(head -3 "$TMP/in.txt") | awk -F'\t' 'NF != 2 || $1 > 0 { bad = 1 } END { exit bad }' || fail "--scores format"
printf 'beem = 3\n' > "$TMP/bad.ini"
"$T" -m "$M" -c "$TMP/bad.ini" < /dev/null 2> "$TMP/ini.err"; code=$?
[ $code -eq 2 ] || fail "unknown INI key: exit $code, expected 2"
grep -q "bad.ini:1: unknown key 'beem'" "$TMP/ini.err" || fail "INI error message: $(cat "$TMP/ini.err")"
"$T" -m "$M" --beam 0 < /dev/null 2>/dev/null; [ $? -eq 2 ] || fail "--beam 0 accepted"
"$T" --bogus < /dev/null 2>/dev/null; [ $? -eq 2 ] || fail "unknown option accepted"
"$T" -m "$TMP/missing.bin" < /dev/null 2>/dev/null; [ $? -eq 3 ] || fail "missing model: expected exit 3"
head -c 100 "$M" > "$TMP/trunc.bin"
"$T" -m "$TMP/trunc.bin" < /dev/null 2> "$TMP/trunc.err"; [ $? -eq 3 ] || fail "truncated model: expected exit 3"
[ -s "$TMP/trunc.err" ] || fail "truncated model: no message"
"$T" --help > "$TMP/help.txt" || fail "--help: exit $?"  # a file: grep -q would close a pipe early
grep -q "Usage:" "$TMP/help.txt" || fail "--help: no usage line"
: | "$T" -m "$M" --device cpu > "$TMP/empty.out" 2>/dev/null || fail "empty input exit $?"
[ ! -s "$TMP/empty.out" ] || fail "empty input gave output"

# 4. vocabulary shrinking and stats: bad values refused by name (exit 2), every
# line still answered, the stats file is JSON that counts the lines
for bad in "--lsh 8,3" "--lsh 8,3,16,20,2,9" "--lsh 8,x,16,20,2" "--lsh-share all" \
           "--top-words 3" "--lsh 8,3,16,20,2 --top-words 20" "--lsh 8,3,16,20,17" \
           "--lsh-lists fast" "--precision fp8" "--cuda-gemm tf32x2" "--cuda-graphs maybe" "--warmup 2" \
           "--check-every 0" "--check-every 65"; do
    # shellcheck disable=SC2086
    "$T" -m "$M" --device cpu $bad < /dev/null 2> "$TMP/shrink.err"; code=$?
    [ $code -eq 2 ] || fail "'$bad': exit $code, expected 2"
    [ -s "$TMP/shrink.err" ] || fail "'$bad': no message"
done
head -9 "$TMP/in.txt" > "$TMP/in9.txt"
for opts in "--lsh 8,2,16,20,2 --lsh-share row" "--top-words 20"; do
    # shellcheck disable=SC2086
    "$T" -m "$M" --device cpu $opts --stats "$TMP/stats.json" < "$TMP/in9.txt" > "$TMP/shrink.out" \
        2>/dev/null || fail "'$opts': exit $?"
    [ "$(wc -l < "$TMP/shrink.out")" -eq 9 ] || fail "'$opts': expected 9 output lines"
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(d["lines"] != 9 or d["sentences"] != 9 or d["decode_seconds"] <= 0)' \
        "$TMP/stats.json" || fail "'$opts': stats file: $(cat "$TMP/stats.json")"
done
# The CUDA launch options parse everywhere (the CPU engine ignores them): same output.
"$T" -m "$M" --device cpu < "$TMP/in9.txt" > "$TMP/plain.out" 2>/dev/null || fail "plain: exit $?"
"$T" -m "$M" --device cpu --cuda-graphs off --warmup off --check-every 3 --precision bf16 \
    < "$TMP/in9.txt" > "$TMP/launch.out" 2>/dev/null || fail "CUDA launch options: exit $?"
cmp -s "$TMP/plain.out" "$TMP/launch.out" || fail "CUDA launch options changed the CPU output"
printf 'cuda_graphs = off\nwarmup = off\ncheck_every = 2\nprecision = fp16\n' > "$TMP/launch.ini"
"$T" -m "$M" --device cpu -c "$TMP/launch.ini" < /dev/null > /dev/null 2>&1 || fail "launch options from INI: exit $?"
printf 'lsh = 8,2,16,20,2\nlsh_share = sentence\ntiming = %s\n' "$TMP/timing.json" > "$TMP/lsh.ini"
"$T" -m "$M" --device cpu -c "$TMP/lsh.ini" < "$TMP/in9.txt" > /dev/null 2>&1 || fail "LSH from INI: exit $?"
grep -q '"vocab_mode": "lsh"' "$TMP/timing.json" || fail "LSH from INI: timing file $(cat "$TMP/timing.json")"
# --precision auto (the default) is what the GEMMs ran in: fp32 on the CPU.
for p in "" "--precision auto" "--precision fp16"; do
    # shellcheck disable=SC2086
    "$T" -m "$M" --device cpu $p --timing "$TMP/prec.json" < "$TMP/in9.txt" > "$TMP/prec.out" \
        2>/dev/null || fail "'$p': exit $?"
    cmp -s "$TMP/plain.out" "$TMP/prec.out" || fail "'$p' changed the CPU output"
    grep -q '"precision": "fp32"' "$TMP/prec.json" || fail "'$p': timing file $(cat "$TMP/prec.json")"
done

if [ $failures -ne 0 ]; then echo "test_cli: $failures failures" >&2; exit 1; fi
echo "test_cli: passed"
