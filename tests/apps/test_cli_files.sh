#!/usr/bin/env bash
# translate's file options and alignment output: -i/-o give what stdin/stdout
# give; a bad -i or -o path fails at once (exit 2) before any work, an -o that
# cannot be written exits 5 naming it; --alignment appends " ||| s-t ..." to
# every line and n-best row (t = 0..n-1 in order, s a source token) and leaves
# the text as it was; --n-best-format marian; --input-format/--output-format
# tokens; --quiet silences the notes, not the errors.
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL
printf 'ein mann läuft im park .\nzwei hund\n\nein \xff hund\nrot Ball !\n' > "$TMP/in.txt"
O=(--device cpu -b 3 --max-len-b 6)

"$T" -m "$M" "${O[@]}" < "$TMP/in.txt" > "$TMP/std.txt" 2> "$TMP/std.err"; code=$?
[ $code -eq 1 ] || fail "stdin run: exit $code, expected 1 (one refused line)"
"$T" -m "$M" "${O[@]}" -i "$TMP/in.txt" -o "$TMP/file.txt" 2> "$TMP/file.err"; code=$?
[ $code -eq 1 ] || fail "-i/-o run: exit $code, expected 1"
cmp -s "$TMP/std.txt" "$TMP/file.txt" || fail "-i/-o output differs from stdin/stdout's"
[ "$(wc -l < "$TMP/file.txt")" -eq 5 ] || fail "-o has $(wc -l < "$TMP/file.txt") lines, not 5"
grep -q "line 4" "$TMP/file.err" || fail "-i: the refused line 4 is not reported"

"$T" -m "$M" "${O[@]}" -i "$TMP/missing.txt" > /dev/null 2> "$TMP/err"; code=$?
[ $code -eq 2 ] && grep -q "missing.txt: cannot open" "$TMP/err" || fail "missing -i: exit $code"
# a directory as -i fails before the model loads (the model here is missing:
# reaching the load would say so, exit 3)
mkdir -p "$TMP/dir"
"$T" -m "$TMP/no-model.bin" -i "$TMP/dir" > /dev/null 2> "$TMP/err"; code=$?
[ $code -eq 2 ] && grep -q "dir: is a directory" "$TMP/err" ||
    fail "-i DIR: exit $code, expected 2 before the model ($(head -c 300 "$TMP/err"))"
"$T" -m "$TMP/no-model.bin" -i "$TMP/in.txt" -o "$TMP/no/such/dir/out.txt" 2> "$TMP/err"; code=$?
[ $code -eq 2 ] && grep -q "out.txt: cannot open" "$TMP/err" ||
    fail "-o in a missing directory: exit $code (before the model: $(cat "$TMP/err"))"
if [ -w /dev/full ]; then
    "$T" -m "$M" "${O[@]}" -i "$TMP/in.txt" -o /dev/full 2> "$TMP/err"; code=$?
    [ $code -eq 5 ] && grep -q "error writing /dev/full" "$TMP/err" || fail "-o /dev/full: exit $code"
fi

# --alignment: the text before " ||| " is the plain output; pairs s-t with t = 0, 1, ...
"$T" -m "$M" "${O[@]}" --alignment -i "$TMP/in.txt" > "$TMP/align.txt" 2> /dev/null
python3 - "$TMP/std.txt" "$TMP/align.txt" <<'PY' || failures=$((failures + 1))
import sys
plain = open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]
aligned = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
ok = len(plain) == len(aligned) == 5
for p, a in zip(plain, aligned):
    text, sep, pairs = a.partition(" |||")
    pairs = [x.split("-") for x in pairs.split()]
    ok = ok and sep and text == p
    ok = ok and all(int(t) == k and 0 <= int(s) < 64 for k, (s, t) in enumerate(pairs))
    ok = ok and (len(pairs) > 0) == (p != "")
if not ok:
    print("FAIL: --alignment output", plain, aligned, file=sys.stderr)
sys.exit(0 if ok else 1)
PY
"$T" -m "$M" "${O[@]}" -n 2 --alignment -i "$TMP/in.txt" > "$TMP/nbest.txt" 2> /dev/null
[ "$(grep -c ' |||' "$TMP/nbest.txt")" -eq 10 ] || fail "--alignment with -n 2: not 10 rows with ' |||'"

# --n-best-format marian: "ID ||| TEXT ||| F0= LOGPROB ||| SCORE", IDs 0-based, the
# same texts and scores as the tsv rows.
"$T" -m "$M" "${O[@]}" -n 2 -i "$TMP/in.txt" > "$TMP/tsv.txt" 2> /dev/null
"$T" -m "$M" "${O[@]}" -n 2 --n-best-format marian -i "$TMP/in.txt" > "$TMP/marian.txt" 2> /dev/null
python3 - "$TMP/tsv.txt" "$TMP/marian.txt" <<'PY' || failures=$((failures + 1))
import sys
tsv = [l.split("\t") for l in open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]]
mar = [l.split(" ||| ") for l in open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]]
ok = len(tsv) == len(mar) == 10
for t, m in zip(tsv, mar):
    ok = ok and len(m) == 4 and int(m[0]) == int(t[0]) - 1 and m[1] == t[3]
    ok = ok and m[2].startswith("F0= ") and m[3] == t[2]
if not ok:
    print("FAIL: --n-best-format marian", tsv[:3], mar[:3], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
# with --alignment and --token-scores, Marian's order (marian-decoder's
# OutputPrinter): "ID ||| TEXT ||| ALIGNMENT ||| WordScores= ... ||| F0= LOGPROB ||| SCORE",
# the alignment and the scores those of the tsv rows
"$T" -m "$M" "${O[@]}" -n 2 --alignment --token-scores -i "$TMP/in.txt" > "$TMP/tsv2.txt" \
    2> /dev/null
"$T" -m "$M" "${O[@]}" -n 2 --n-best-format marian --alignment --token-scores \
    -i "$TMP/in.txt" > "$TMP/marian2.txt" 2> /dev/null
python3 - "$TMP/tsv2.txt" "$TMP/marian2.txt" <<'PY' || failures=$((failures + 1))
import sys
# an empty tsv field is " |||" alone; Marian's rows always split on " ||| "
tsv = [l.split(" |||") for l in open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]]
mar = [l.split(" ||| ") for l in open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]]
ok = len(tsv) == len(mar) == 10
for t, m in zip(tsv, mar):
    line, rank, score, text = t[0].split("\t")
    ok = ok and len(m) == 6 and int(m[0]) == int(line) - 1 and m[1] == text
    ok = ok and m[2] == t[1].strip() and m[3] == ("WordScores=" + t[2]).rstrip()
    ok = ok and m[4].startswith("F0= ") and m[5] == score
if not ok:
    print("FAIL: marian rows with fields", tsv[:2], mar[:2], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
"$T" -m "$M" "${O[@]}" --n-best-format moses -i "$TMP/in.txt" > /dev/null 2> "$TMP/err"; code=$?
[ $code -eq 2 ] || fail "--n-best-format moses: exit $code, expected 2"

# --input-format tokens: the tokenizer's tokens, joined by spaces, translate as the raw
# lines; --output-format tokens, detokenized, gives the text output (pynmt's tokenizer,
# the engine's twin, makes and joins the tokens).
python3 - "$TMP/in.txt" "$TMP/tok.txt" <<'PY'
import sys
from pynmt import tokenizer
lines = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
out = []
for raw in lines:
    ok, _ = tokenizer.utf8_valid(raw)
    out.append(" ".join(t.text for t in tokenizer.tokenize(raw)) if ok else raw.decode("latin-1"))
open(sys.argv[2], "w", encoding="utf-8").write("\n".join(out) + "\n")
PY
"$T" -m "$M" "${O[@]}" --input-format tokens -i "$TMP/tok.txt" > "$TMP/from_tokens.txt" 2> /dev/null
python3 - "$TMP/std.txt" "$TMP/from_tokens.txt" <<'PY' || failures=$((failures + 1))
import sys
a = open(sys.argv[1], encoding="utf-8").read().split("\n")
b = open(sys.argv[2], encoding="utf-8").read().split("\n")
bad = [i for i in range(len(a)) if i != 3 and a[i] != b[i]]  # line 4 is refused either way
if len(a) != len(b) or bad:
    print("FAIL: --input-format tokens differs on lines", bad, file=sys.stderr)
    sys.exit(1)
PY
"$T" -m "$M" "${O[@]}" --output-format tokens -i "$TMP/in.txt" > "$TMP/tokens_out.txt" 2> /dev/null
python3 - "$TMP/std.txt" "$TMP/tokens_out.txt" <<'PY' || failures=$((failures + 1))
import sys
from pynmt import tokenizer
text = open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]
toks = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
ok = len(text) == len(toks) and all(tokenizer.detokenize(t.split(" ") if t else []) == x
                                    for t, x in zip(toks, text))
if not ok:
    print("FAIL: --output-format tokens does not detokenize to the text output", toks, text,
          file=sys.stderr)
sys.exit(0 if ok else 1)
PY
"$T" -m "$M" "${O[@]}" --input-format words -i "$TMP/in.txt" > /dev/null 2> "$TMP/err"; code=$?
[ $code -eq 2 ] || fail "--input-format words: exit $code, expected 2"

# --max-batch-tokens: the same translations in more, smaller batches (more decoder
# steps summed over the batches, from --timing's counters).
python3 -c "
import random
r = random.Random(3)
w = 'ein mann frau hund spielt im park Haus rot Ball . ! Zwei kind'.split()
print('\n'.join(' '.join(r.choice(w) for _ in range(r.randint(1, 9))) for _ in range(40)))" \
    > "$TMP/forty.txt"
"$T" -m "$M" "${O[@]}" --batch-size 64 -i "$TMP/forty.txt" -o "$TMP/b64.txt" \
    --timing "$TMP/b64.json" 2> /dev/null
"$T" -m "$M" "${O[@]}" --batch-size 64 --max-batch-tokens 12 -i "$TMP/forty.txt" \
    -o "$TMP/t12.txt" --timing "$TMP/t12.json" 2> /dev/null
cmp -s "$TMP/b64.txt" "$TMP/t12.txt" || fail "--max-batch-tokens 12 changed the translations"
python3 - "$TMP/b64.json" "$TMP/t12.json" <<'PY' || failures=$((failures + 1))
import json, sys
a, b = (json.load(open(p))["steps"] for p in sys.argv[1:3])
if not b > a:
    print("FAIL: --max-batch-tokens 12 took %d steps, one batch %d: not smaller batches" % (b, a),
          file=sys.stderr)
    sys.exit(1)
PY
"$T" -m "$M" "${O[@]}" --max-batch-tokens -1 -i "$TMP/in.txt" > /dev/null 2> "$TMP/err"; code=$?
[ $code -eq 2 ] || fail "--max-batch-tokens -1: exit $code, expected 2"

# --quiet: no notes (the CPU fallback of --device auto), errors still.
"$T" -m "$M" -b 3 --max-len-b 6 --device auto --quiet -i "$TMP/in.txt" > /dev/null 2> "$TMP/err"
grep -q "translating on the CPU\|lines/s" "$TMP/err" && fail "--quiet printed a note: $(cat "$TMP/err")"
grep -q "line 4" "$TMP/err" || fail "--quiet hid the refused line's error"
# --log-level: error is --quiet, warning keeps the notes, a bad level is refused.
"$T" -m "$M" -b 3 --max-len-b 6 --device auto --log-level error -i "$TMP/in.txt" > /dev/null 2> "$TMP/err"
grep -q "translating on the CPU" "$TMP/err" && fail "--log-level error printed a note: $(cat "$TMP/err")"
grep -q "line 4" "$TMP/err" || fail "--log-level error hid the refused line's error"
"$T" -m "$M" -b 3 --max-len-b 6 --device auto --log-level info -i "$TMP/in.txt" \
    > /dev/null 2> "$TMP/err-info"
if grep -q "translating on the CPU" "$TMP/err-info"; then # no GPU here: the note exists
    "$T" -m "$M" -b 3 --max-len-b 6 --device auto --log-level warning -i "$TMP/in.txt" \
        > /dev/null 2> "$TMP/err"
    grep -q "translating on the CPU" "$TMP/err" || fail "--log-level warning hid the note"
fi
printf 'log_level = error\n' > "$TMP/ll.ini"
"$T" -m "$M" -b 3 --max-len-b 6 --device auto -c "$TMP/ll.ini" -i "$TMP/in.txt" > /dev/null 2> "$TMP/err"
grep -q "translating on the CPU" "$TMP/err" && fail "log_level = error printed a note"
"$T" -m "$M" --log-level loud < /dev/null > /dev/null 2> "$TMP/err"; code=$?
[ $code -eq 2 ] && grep -q "bad value for --log-level: 'loud'" "$TMP/err" || \
    fail "--log-level loud: exit $code ($(cat "$TMP/err"))"
exit $((failures > 0))
