#!/usr/bin/env bash
# dev/bench/ensemble.sh's output (not its timings): on the CPU with the test
# model and its twin of another seed, the three records (A, B, A + B) with
# their speeds, A's time ratio 1 and the lines each shares with A and B.
set -uo pipefail
: "${NMT_BINARY_DIR:?}" "${NMT_TEST_MODEL:?}" "${NMT_TEST_MODEL_SEED2:?}"
SRC=${NMT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
printf 'der hund sieht die katze\nich liest ein buch\ndas haus ist sehr groß\n' > "$TMP/src.txt"
printf 'the dog sees the cat\nI read a book\nthe house is very big\n' > "$TMP/ref.txt"
if ! DEVICE=cpu PYTHON=${NMT_PYTHON:-python3} bash "$SRC/dev/bench/ensemble.sh" "$NMT_BINARY_DIR" "$NMT_TEST_MODEL" \
        "$NMT_TEST_MODEL_SEED2" "$TMP/src.txt" "$TMP/src.txt" "$TMP/ref.txt" "$TMP/out" 2 \
        > "$TMP/table.txt" 2> "$TMP/err"; then
    echo "FAIL: ensemble.sh: $(tail -5 "$TMP/err")" >&2
    exit 1
fi
python3 - "$TMP/out/ensemble.json" <<'PY' || exit 1
import json, sys
records = json.load(open(sys.argv[1]))
ok = [r["models"] for r in records] == ["A", "B", "A + B"]
ok = ok and all(r["sents_per_s"] > 0 and r["lines"] == 3 and r["batch_size"] == 2
                for r in records)
ok = ok and records[0]["time_over_a"] == 1.0 and records[0]["same_as_a"] == 3
ok = ok and records[1]["same_as_b"] == 3
print(json.dumps(records))
sys.exit(0 if ok else 1)
PY
echo "test_ensemble_bench: passed"
