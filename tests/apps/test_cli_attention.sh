#!/usr/bin/env bash
# translate --attention and --token-scores (with --alignment, n-best in both
# formats, pre-tokenized I/O, the INI keys): one output line per input line
# (N rows with --n-best N), refused, empty and NUL lines included; the
# fields come in the order alignment, token scores, attention; every
# attention field is one JSON document (python3's json) whose source and
# target token lists match the weights' shape, whose rows sum to 1 and whose
# largest weight is the --alignment pair's; the token scores are n + 1
# numbers summing to the hypothesis's log-probability (Marian's F0=); in
# Marian's n-best rows they come before the scores, the token scores labelled
# WordScores= as marian-decoder prints them; the
# text is what translate prints without the fields; --help names both.
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL
O=(--device cpu --max-line-bytes 120 --max-len-b 8)

python3 - "$TMP/in.txt" <<'PY'
import random, sys
r = random.Random(11)
w = "ein mann frau hund spielt im park Haus rot Ball . ! Zwei kind läuft Zebra xylophon".split()
lines = [" ".join(r.choice(w) for _ in range(r.randint(1, 12))) for _ in range(40)]
lines[5] = ""                              # empty: an empty translation
lines[9] = " ".join(["hund"] * 40)         # too long (> 120 bytes): refused
lines[13] = "ein \"hund\" \\ mann"          # JSON needs escapes
with open(sys.argv[1], "wb") as f:
    f.write("\n".join(lines).encode() + b"\n")
    f.write(b"ein\0mann\n")                 # NUL: refused
PY
n_in=$(wc -l < "$TMP/in.txt")

# check_fields FILE ROWS_PER_LINE MODE: every row's fields (MODE: tsv n-best,
# marian n-best, or plain lines).
check_fields() {
    python3 - "$1" "$2" "$3" "$n_in" <<'PY' || fail "fields of $1 ($3, $2 a line)"
import json, sys
path, per_line, mode, n_in = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rows = open(path, encoding="utf-8").read().split("\n")
assert rows[-1] == "", "no final newline"
rows = rows[:-1]
assert len(rows) == n_in * per_line, "%d rows for %d lines" % (len(rows), n_in)
bad = 0
for i, row in enumerate(rows):
    # The last three fields (in a Marian row, the three before its two
    # score fields, as marian-decoder places its alignment and word scores);
    # no token holds a space, so neither they nor the JSON document hold
    # " |||" (an empty field is " |||" alone).
    parts = row.split(" |||")
    if mode == "marian":
        parts, (f0, total) = parts[:-2], parts[-2:]
        assert f0.startswith(" F0= ") and float(total) == float(total), row
    head, (align, scores, doc) = " |||".join(parts[:-3]), parts[-3:]
    d = json.loads(doc)
    src, tgt, weights = d["src"], d["tgt"], d["weights"]
    pairs = [tuple(map(int, p.split("-"))) for p in align.split()]
    if mode == "marian":  # Marian's label
        assert scores.startswith(" WordScores="), row
        scores = scores[len(" WordScores="):]
    scores = [float(x) for x in scores.split()]
    if mode == "marian":
        fields = head.split(" ||| ")
        text, log_prob = fields[1], float(f0.split()[1])
    elif mode == "tsv":
        fields = head.split("\t")
        text, log_prob = fields[3], None
    else:
        text, log_prob = head, None
    if not scores:  # a refused line (or a row past its hypotheses)
        assert src == [] and tgt == [] and weights == [] and pairs == [], row
        continue
    n = len(tgt)
    assert len(scores) == n + 1 and len(weights) == n and len(pairs) == n, row
    assert all(len(r) == len(src) for r in weights), row
    for t, (s, tt) in enumerate(pairs):
        assert tt == t, row
        assert abs(sum(weights[t]) - 1.0) < 1e-4, (row, sum(weights[t]))
        assert weights[t][s] == max(weights[t]), (row, t, s)
    assert all(x <= 1e-5 for x in scores), row
    if log_prob is not None:
        assert abs(sum(scores) - log_prob) < 1e-4 * (n + 2), (row, sum(scores), log_prob)
    if mode == "tokens":
        assert text == " ".join(tgt), (text, tgt)
print("%d rows checked" % len(rows))
PY
}

# 1. plain lines: the text is translate's without the fields
"$T" -m "$M" "${O[@]}" < "$TMP/in.txt" > "$TMP/plain.out" 2> /dev/null
"$T" -m "$M" "${O[@]}" --alignment --token-scores --attention < "$TMP/in.txt" \
    > "$TMP/all.out" 2> "$TMP/err"; code=$?
[ "$code" -eq 1 ] || fail "--attention: exit $code, expected 1 (refused lines) ($(head -c 300 "$TMP/err"))"
check_fields "$TMP/all.out" 1 plain
sed 's/ |||.*//' "$TMP/all.out" | cmp -s - "$TMP/plain.out" ||
    fail "the text with the fields differs from translate's"

# 2. n-best, both formats: N rows a line, the sums against Marian's F0=
"$T" -m "$M" "${O[@]}" -b 4 -n 3 --alignment --token-scores --attention \
    < "$TMP/in.txt" > "$TMP/tsv.out" 2> /dev/null
check_fields "$TMP/tsv.out" 3 tsv
"$T" -m "$M" "${O[@]}" -b 4 -n 3 --n-best-format marian --alignment --token-scores \
    --attention < "$TMP/in.txt" > "$TMP/marian.out" 2> /dev/null
check_fields "$TMP/marian.out" 3 marian

# 3. pre-tokenized I/O: the target tokens are the text's
"$T" -m "$M" "${O[@]}" --input-format tokens --output-format tokens --alignment \
    --token-scores --attention < "$TMP/in.txt" > "$TMP/tokens.out" 2> /dev/null
check_fields "$TMP/tokens.out" 1 tokens

# 4. the INI keys; each field alone
printf 'alignment = 1\ntoken_scores = 1\nattention = 1\n' > "$TMP/fields.ini"
"$T" -m "$M" "${O[@]}" -c "$TMP/fields.ini" < "$TMP/in.txt" > "$TMP/ini.out" 2> /dev/null
cmp -s "$TMP/ini.out" "$TMP/all.out" || fail "INI attention / token_scores differ from the options"
"$T" -m "$M" "${O[@]}" --token-scores < "$TMP/in.txt" > "$TMP/scores.out" 2> /dev/null
sed 's/ |||[^|]*$//' "$TMP/scores.out" | cmp -s - "$TMP/plain.out" ||
    fail "--token-scores alone: not one field after the text"
grep -c ' |||' "$TMP/scores.out" | grep -qx "$n_in" || fail "--token-scores: not one field a line"
"$T" -m "$M" "${O[@]}" --attention < "$TMP/in.txt" > "$TMP/attn.out" 2> /dev/null
python3 -c '
import json, sys
for row in open(sys.argv[1], encoding="utf-8"):
    json.loads(row.rstrip("\n").rsplit(" ||| ", 1)[1])
' "$TMP/attn.out" || fail "--attention alone: a field that is not JSON"

# 5. --help names both
"$T" --help > "$TMP/help.txt"
grep -q -- "--attention" "$TMP/help.txt" || fail "--help lacks --attention"
grep -q -- "--token-scores" "$TMP/help.txt" || fail "--help lacks --token-scores"

echo "test_cli_attention: $failures failures"
exit $((failures > 0))
