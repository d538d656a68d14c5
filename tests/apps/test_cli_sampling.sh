#!/usr/bin/env bash
# translate's sampling and logit rules (docs/decoding.md):
# - --sampling-topk with --n-best N prints N rows a line, beam 1 implied; the
#   output is the same at --batch-size 1 and 7, with --workers 2, through an
#   INI file, and a line keeps its samples under --skip-lines (its key is its
#   number in the input); another --seed gives other samples;
# - --suppress as a LIST and as a FILE: no output holds a suppressed token,
#   and without it the same input does (so the test shows something);
#   --ban-unk and --min-length hold in every row; --coverage-penalty runs
#   with --search-rules onmt;
# - refused with a message and exit 2 (usage) or at create: a sampling beam,
#   top-p without a top-K, the coverage penalty with the v1 rules, an unknown
#   suppressed token, sampling with --lsh, sampling with
#   --return-alternatives or --score-target, --score-target with a logit
#   rule;
# - --target-prefix with the rules: every row starts with its prefix and
#   the rules hold after it;
# - --target-prefix with sampling: every sample starts with its line's
#   prefix (an empty one: none), the same at --batch-size 1 and 7.
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL
O=(--device cpu --quiet --max-len-b 12)

random_lines "$TMP/in.txt" 5 24 10 0 "ein mann frau hund sieht im park Haus katze kind Zebra"
n_in=$(wc -l < "$TMP/in.txt")
S=(--sampling-topk 10 --n-best 3 --seed 9)

"$T" -m "$M" "${O[@]}" "${S[@]}" -i "$TMP/in.txt" -o "$TMP/s1.txt" --batch-size 1 ||
    fail "sampling, batch 1"
[ "$(wc -l < "$TMP/s1.txt")" -eq $((3 * n_in)) ] || fail "sampling: not 3 rows a line"
"$T" -m "$M" "${O[@]}" "${S[@]}" -i "$TMP/in.txt" -o "$TMP/s7.txt" --batch-size 7 ||
    fail "sampling, batch 7"
cmp -s "$TMP/s1.txt" "$TMP/s7.txt" || fail "sampling: batch 1 and batch 7 differ"
"$T" -m "$M" "${O[@]}" "${S[@]}" -i "$TMP/in.txt" -o "$TMP/w2.txt" --workers 2 \
    --batch-size 4 || fail "sampling, 2 workers"
cmp -s "$TMP/s1.txt" "$TMP/w2.txt" || fail "sampling: 2 workers differ"
printf 'sampling_topk = 10\nn_best = 3\nseed = 9\n' > "$TMP/s.ini"
"$T" -m "$M" "${O[@]}" -c "$TMP/s.ini" -i "$TMP/in.txt" -o "$TMP/ini.txt" ||
    fail "sampling from the INI file"
cmp -s "$TMP/s1.txt" "$TMP/ini.txt" || fail "sampling: the INI file's output differs"
# Lines 6.. alone (their numbers kept): the rows of those lines.
"$T" -m "$M" "${O[@]}" "${S[@]}" -i "$TMP/in.txt" -o "$TMP/skip.txt" --skip-lines 5 ||
    fail "sampling, --skip-lines"
grep -v -P '^[1-5]\t' "$TMP/s1.txt" | cmp -s - "$TMP/skip.txt" ||
    fail "sampling: --skip-lines 5 changed the later lines' samples"
"$T" -m "$M" "${O[@]}" --sampling-topk 10 --n-best 3 --seed 10 -i "$TMP/in.txt" \
    -o "$TMP/seed10.txt" || fail "sampling, seed 10"
cmp -s "$TMP/s1.txt" "$TMP/seed10.txt" && fail "seeds 9 and 10 gave the same samples"
"$T" -m "$M" "${O[@]}" --sampling-topk 0 --sampling-temperature 0.7 -i "$TMP/in.txt" \
    -o "$TMP/all.txt" || fail "sampling from every word"
[ "$(wc -l < "$TMP/all.txt")" -eq "$n_in" ] || fail "sampling 1 sample: not a row a line"

# The rules. Beam 4, 4 rows a line; the suppressed tokens are the plain
# output's commonest (none with a comma: a LIST splits there), so that the
# test suppresses tokens it produces.
R=(--beam 4 --n-best 4 --output-format tokens)
"$T" -m "$M" "${O[@]}" "${R[@]}" -i "$TMP/in.txt" -o "$TMP/plain.txt" || fail "plain"
read -r first second < <(cut -f4 "$TMP/plain.txt" | tr ' ' '\n' | grep -v '^$' | grep -v , |
                         sort | uniq -c | sort -rn | awk 'NR <= 2 {printf "%s ", $2}')
[ -n "${second:-}" ] || fail "the plain output has fewer than two tokens"
holds() { cut -f4 "$1" | tr ' ' '\n' | grep -qxF -- "$2"; }
holds "$TMP/plain.txt" "$first" || fail "the plain output lacks $first"
"$T" -m "$M" "${O[@]}" "${R[@]}" -i "$TMP/in.txt" -o "$TMP/list.txt" \
    --suppress "$first,$second" || fail "--suppress LIST"
printf '%s\n%s\n' "$first" "$second" > "$TMP/suppress.txt"
"$T" -m "$M" "${O[@]}" "${R[@]}" -i "$TMP/in.txt" -o "$TMP/file.txt" \
    --suppress "$TMP/suppress.txt" || fail "--suppress FILE"
cmp -s "$TMP/list.txt" "$TMP/file.txt" || fail "--suppress LIST and FILE differ"
for token in "$first" "$second"; do
    holds "$TMP/list.txt" "$token" && fail "a suppressed token came: $token"
done
"$T" -m "$M" "${O[@]}" "${R[@]}" -i "$TMP/in.txt" -o "$TMP/rules.txt" --ban-unk \
    --min-length 3 --no-repeat-ngram-size 2 --repetition-penalty 1.5 || fail "rules"
python3 - "$TMP/rules.txt" "$TMP/in.txt" <<'PY' ||
import sys
sources = open(sys.argv[2], encoding="utf-8").read().split("\n")
for row in open(sys.argv[1], encoding="utf-8"):
    fields = row.rstrip("\n").split("\t")
    tokens = fields[3].split()
    assert "<unk>" not in tokens, row
    assert len(tokens) >= 3 or not sources[int(fields[0]) - 1].strip(), row
    grams = list(zip(tokens, tokens[1:]))
    assert len(grams) == len(set(grams)), row
PY
    fail "a row breaks --ban-unk, --min-length 3 or the 2-grams"
"$T" -m "$M" "${O[@]}" --search-rules onmt --coverage-penalty wu --coverage-beta 0.2 \
    -i "$TMP/in.txt" -o "$TMP/cov.txt" || fail "--coverage-penalty wu"
[ "$(wc -l < "$TMP/cov.txt")" -eq "$n_in" ] || fail "coverage: not a row a line"

# Refused, each with a message.
refused() {
    local name=$1
    shift
    "$T" -m "$M" "${O[@]}" -i "$TMP/in.txt" -o "$TMP/refused.txt" "$@" 2> "$TMP/err.txt"
    local code=$?
    [ "$code" -ne 0 ] && grep -q "$name" "$TMP/err.txt" ||
        fail "$* was not refused naming $name (exit $code: $(cat "$TMP/err.txt"))"
}
refused beam --sampling-topk 10 --beam 3
refused sampling_topp --sampling-topk 0 --sampling-topp 0.5
refused coverage_penalty --coverage-penalty wu
refused suppress --suppress "no-such-token-anywhere"
refused shrink --sampling-topk 10 --lsh 8,2,16,20,2
# With target files (docs/decoding.md, "Target prefixes" and "Scoring").
printf 'the\n' > "$TMP/prefix1.txt"
yes the | head -n "$n_in" > "$TMP/prefix.txt"
refused "scoring: not with sampling" --sampling-topk 10 --score-target "$TMP/prefix.txt"
refused return_alternatives --sampling-topk 10 --n-best 2 --return-alternatives
refused "scoring: not with the logit rules" --score-target "$TMP/prefix1.txt" \
    --repetition-penalty 1.5

# A prefix with the rules: every row starts with it, and the rules hold
# after it (no 2-gram twice, no <unk>).
"$T" -m "$M" "${O[@]}" "${R[@]}" -i "$TMP/in.txt" -o "$TMP/prefix_rules.txt" \
    --target-prefix "$TMP/prefix.txt" --ban-unk --no-repeat-ngram-size 2 ||
    fail "a prefix with the rules"
python3 - "$TMP/prefix_rules.txt" "$TMP/in.txt" <<'PY' ||
import sys
sources = open(sys.argv[2], encoding="utf-8").read().split("\n")
for row in open(sys.argv[1], encoding="utf-8"):
    fields = row.rstrip("\n").split("\t")
    if not sources[int(fields[0]) - 1].strip():
        continue
    tokens = fields[3].split()
    assert tokens[:1] == ["the"], row
    assert "<unk>" not in tokens, row
    grams = list(zip(tokens, tokens[1:]))
    assert len(grams) == len(set(grams)), row
PY
    fail "a row misses its prefix or breaks --ban-unk or the 2-grams"

# Samples of prefixes: each continues its line's prefix (docs/decoding.md,
# "Target prefixes"), whatever the batch.
for ((i = 1; i <= n_in; i++)); do
    case $((i % 3)) in 0) echo "the" ;; 1) echo "a dog" ;; 2) echo "" ;; esac
done > "$TMP/prefixes.txt"
for batch in 1 7; do
    "$T" -m "$M" "${O[@]}" "${S[@]}" --output-format tokens -i "$TMP/in.txt" \
        --target-prefix "$TMP/prefixes.txt" --batch-size "$batch" -o "$TMP/sp$batch.txt" ||
        fail "samples of prefixes, batch $batch"
done
[ "$(wc -l < "$TMP/sp1.txt")" -eq $((3 * n_in)) ] || fail "samples of prefixes: not 3 rows a line"
cmp -s "$TMP/sp1.txt" "$TMP/sp7.txt" || fail "samples of prefixes: batch 1 and batch 7 differ"
python3 - "$TMP/sp1.txt" "$TMP/in.txt" "$TMP/prefixes.txt" <<'PY' ||
import sys
sources = open(sys.argv[2], encoding="utf-8").read().split("\n")
prefixes = open(sys.argv[3], encoding="utf-8").read().split("\n")
started = 0
for row in open(sys.argv[1], encoding="utf-8"):
    fields = row.rstrip("\n").split("\t")
    line = int(fields[0]) - 1
    if not sources[line].strip():
        continue
    want = prefixes[line].split()
    assert fields[3].split()[:len(want)] == want, row
    started += len(want) > 0
assert started > 0
PY
    fail "a sample misses its line's prefix"
exit $((failures > 0))
