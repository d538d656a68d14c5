#!/usr/bin/env bash
# translate --score-target, --target-prefix and --return-alternatives
# (docs/decoding.md, "Scoring" and "Target prefixes"), on the CPU's
# reference kernels:
# - scoring prints one LOGPROB<TAB>SCORE line per input line, then the
#   fields asked for; the token scores sum to LOGPROB; scoring the
#   translation translate found gives its numbers (--n-best-format marian's
#   F0= and score, the same text after %.9g);
# - a pair that cannot be scored (an empty source, a target line missing,
#   too long or with a NUL byte) gives "-inf<TAB>-inf", its reason on
#   stderr with its line number, exit 1; the other lines are scored as
#   alone; --skip-lines skips both files alike; the INI keys work;
# - --target-prefix: every hypothesis starts with its line's prefix (an
#   empty line: none, the plain translation); --return-alternatives gives
#   N rows with different words after the prefix;
# - the host pipeline carries the target lines: --workers 3 with windows of
#   2 lines, a worker that fails mid-run (its windows, targets and all, go to
#   the others), and resuming with --skip-lines give one worker's output;
# - the two files exclude each other, and --dry-run takes neither; a missing
#   file fails before the model.
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL
O=(--device cpu --cpu-kernels reference -b 3 --max-len-b 8)
printf 'ein mann läuft im park .\nzwei hund\n\nrot Ball !\nder hund\n' > "$TMP/src.txt"
printf 'a man runs in the park .\ntwo dogs\nx\nred ball !\n' > "$TMP/tgt.txt"

# Scoring the translations translate finds: their own numbers.
"$T" -m "$M" "${O[@]}" -i "$TMP/src.txt" -n 2 --n-best-format marian --output-format tokens \
    --no-unk-replace > "$TMP/nbest.txt" 2> /dev/null
python3 - "$TMP/nbest.txt" "$TMP" <<'PY'
import sys
rows = [r.split(" ||| ") for r in open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]]
src = open(sys.argv[2] + "/src.txt", encoding="utf-8").read().split("\n")[:-1]
with open(sys.argv[2] + "/pairs.src", "w", encoding="utf-8") as s, \
        open(sys.argv[2] + "/pairs.tgt", "w", encoding="utf-8") as t, \
        open(sys.argv[2] + "/pairs.want", "w") as w:
    for line, text, logp, score in rows:
        if score.strip() == "-inf" or not src[int(line)]:
            continue  # none, or the empty line's empty translation (nothing to score)
        s.write(src[int(line)] + "\n")
        t.write(text + "\n")
        w.write("%s\t%s\n" % (logp.split("=")[1].strip(), score.strip()))
PY
"$T" -m "$M" "${O[@]}" --input-format tokens -i "$TMP/pairs.src" \
    --score-target "$TMP/pairs.tgt" > "$TMP/pairs.got" 2> "$TMP/err"; code=$?
[ $code -eq 0 ] || fail "scoring the n-best: exit $code ($(head -c 300 "$TMP/err"))"
[ -s "$TMP/pairs.want" ] && cmp -s "$TMP/pairs.want" "$TMP/pairs.got" ||
    fail "scoring the search's hypotheses: $(diff "$TMP/pairs.want" "$TMP/pairs.got" | head -5)"

# Fields, refusals, and lines scored as alone.
"$T" -m "$M" "${O[@]}" -i "$TMP/src.txt" --score-target "$TMP/tgt.txt" --token-scores \
    --alignment > "$TMP/score.txt" 2> "$TMP/err"; code=$?
[ $code -eq 1 ] || fail "score: exit $code, expected 1 (refused pairs)"
[ "$(wc -l < "$TMP/score.txt")" -eq 5 ] || fail "score: $(wc -l < "$TMP/score.txt") lines, not 5"
grep -q "line 3: the source is empty" "$TMP/err" || fail "the empty source is not reported"
grep -q "line 5: --score-target line: none" "$TMP/err" || fail "the missing target is not reported"
python3 - "$TMP/score.txt" <<'PY' || fail "score lines: $(cat "$TMP/score.txt")"
import math, sys
rows = open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]
for i, row in enumerate(rows):
    numbers, align, scores = row.split(" |||")
    logp, score = (float(x) for x in numbers.split("\t"))
    if i in (2, 4):
        assert math.isinf(logp) and math.isinf(score) and not align.strip() and not scores.strip(), row
        continue
    tokens = [float(x) for x in scores.split()]
    assert abs(sum(tokens) - logp) < 1e-4 * (1 + abs(logp)), row
    assert len(align.split()) == len(tokens) - 1 and score < 0, row
PY
head -n 2 "$TMP/src.txt" > "$TMP/src2.txt"
head -n 2 "$TMP/tgt.txt" > "$TMP/tgt2.txt"
"$T" -m "$M" "${O[@]}" -i "$TMP/src2.txt" --score-target "$TMP/tgt2.txt" --token-scores \
    --alignment > "$TMP/score2.txt" 2> /dev/null
head -n 2 "$TMP/score.txt" | cmp -s - "$TMP/score2.txt" || fail "lines scored with others differ"
"$T" -m "$M" "${O[@]}" -i "$TMP/src.txt" --score-target "$TMP/tgt.txt" --token-scores \
    --alignment --skip-lines 3 > "$TMP/skip.txt" 2> /dev/null
tail -n 2 "$TMP/score.txt" | cmp -s - "$TMP/skip.txt" || fail "--skip-lines skips the files apart"
printf 'ein hund\nein hund\n' > "$TMP/s.txt"
{ printf 'a dog\n'; head -c 300 /dev/zero | tr '\0' 'a'; printf '\n'; } > "$TMP/t.txt"
"$T" -m "$M" "${O[@]}" --max-line-bytes 100 -i "$TMP/s.txt" --score-target "$TMP/t.txt" \
    > /dev/null 2> "$TMP/err"
grep -q "line 2: --score-target line too long" "$TMP/err" || fail "a long target: $(cat "$TMP/err")"
printf '[translate]\nscore_target = %s\n' "$TMP/tgt2.txt" > "$TMP/score.ini"
"$T" -m "$M" "${O[@]}" -c "$TMP/score.ini" -i "$TMP/src2.txt" > "$TMP/ini.txt" 2> /dev/null
cut -f1-2 -d' ' "$TMP/score2.txt" | sed 's/ |||//' | cmp -s - "$TMP/ini.txt" ||
    fail "the INI key score_target: $(cat "$TMP/ini.txt")"

# Prefixes and alternatives.
printf 'the\n\na dog\nthe\nthe red\n' > "$TMP/prefix.txt"
"$T" -m "$M" "${O[@]}" -i "$TMP/src.txt" --target-prefix "$TMP/prefix.txt" -n 3 \
    --output-format tokens > "$TMP/prefixed.txt" 2> "$TMP/err"; code=$?
[ $code -eq 0 ] || fail "prefix: exit $code ($(cat "$TMP/err"))"
"$T" -m "$M" "${O[@]}" -i "$TMP/src.txt" -n 3 --output-format tokens > "$TMP/plain.txt" 2> /dev/null
python3 - "$TMP/prefixed.txt" "$TMP/plain.txt" "$TMP/prefix.txt" <<'PY' || fail "prefixed rows"
import sys
got = [r.split("\t") for r in open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]]
plain = [r.split("\t") for r in open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]]
prefixes = open(sys.argv[3], encoding="utf-8").read().split("\n")[:-1]
assert len(got) == 15, len(got)
for row, same in zip(got, plain):
    line = int(row[0]) - 1
    if line == 2:  # the empty source: its empty translation, prefix or not
        continue
    if not prefixes[line]:
        assert row == same, (row, same)
    elif row[2] != "-inf":
        assert (row[3] + " ").startswith(prefixes[line] + " "), row
PY
"$T" -m "$M" "${O[@]}" -i "$TMP/src.txt" --target-prefix "$TMP/prefix.txt" -n 3 \
    --return-alternatives --output-format tokens > "$TMP/alt.txt" 2> "$TMP/err"; code=$?
[ $code -eq 0 ] || fail "alternatives: exit $code ($(cat "$TMP/err"))"
python3 - "$TMP/alt.txt" <<'PY' || fail "alternatives: $(head -n 6 "$TMP/alt.txt")"
import sys
rows = [r.split("\t") for r in open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]]
first = [r[3].split() for r in rows if r[0] == "1"]  # prefix "the": the word after it
assert len(first) == 3 and all(w[0] == "the" and len(w) > 1 for w in first), first
assert len({w[1] for w in first}) == 3, first
PY

# Through the pipeline's threads: more workers, a failing one, a resume.
for target in "--score-target $TMP/tgt.txt" "--target-prefix $TMP/prefix.txt"; do
    # shellcheck disable=SC2086 # the option and its file
    "$T" -m "$M" "${O[@]}" -i "$TMP/src.txt" $target -n 2 > "$TMP/one.txt" 2> /dev/null
    # shellcheck disable=SC2086
    NMT_TEST_PIPELINE_HOLD=1 NMT_TEST_TRANSLATOR_FAIL=1 "$T" -m "$M" "${O[@]}" \
        -i "$TMP/src.txt" $target -n 2 --workers 3 --maxi-batch 2 --host-threads 2 \
        > "$TMP/three.txt" 2> "$TMP/err"
    cmp -s "$TMP/one.txt" "$TMP/three.txt" ||
        fail "${target%% *} on 3 workers, one failing: $(diff "$TMP/one.txt" "$TMP/three.txt")"
    grep -q "warning: CPU worker 1 failed" "$TMP/err" ||
        fail "${target%% *}: the failed worker is not named: $(cat "$TMP/err")"
    # shellcheck disable=SC2086
    "$T" -m "$M" "${O[@]}" -i "$TMP/src.txt" $target -n 2 --workers 2 --maxi-batch 1 \
        --skip-lines 2 > "$TMP/rest.txt" 2> /dev/null
    per_line=2 # -n 2's rows; scoring prints one line a pair
    [ "${target%% *}" = --score-target ] && per_line=1
    tail -n +$((2 * per_line + 1)) "$TMP/one.txt" | cmp -s - "$TMP/rest.txt" ||
        fail "${target%% *} --skip-lines 2 is not the rest of the output"
done
"$T" -m "$M" "${O[@]}" -i "$TMP/src.txt" --score-target "$TMP/tgt.txt" --dry-run \
    > /dev/null 2> "$TMP/err"; code=$?
[ $code -eq 2 ] && grep -q "dry-run decodes nothing" "$TMP/err" ||
    fail "--dry-run --score-target: exit $code ($(cat "$TMP/err"))"
"$T" -m "$M" "${O[@]}" -i "$TMP/src.txt" --score-target "$TMP/tgt.txt" \
    --target-prefix "$TMP/prefix.txt" > /dev/null 2> "$TMP/err"; code=$?
[ $code -eq 2 ] && grep -q "exclude each other" "$TMP/err" || fail "both files: exit $code"
"$T" -m "$TMP/no-model.bin" --score-target "$TMP/missing.txt" < "$TMP/src.txt" > /dev/null \
    2> "$TMP/err"; code=$?
[ $code -eq 2 ] && grep -q "score-target .*missing.txt: cannot open" "$TMP/err" ||
    fail "a missing --score-target: exit $code ($(cat "$TMP/err"))"
exit $((failures > 0))
