#!/usr/bin/env bash
# dev/bench/score_speed.sh's output (not its timings): on the CPU with the
# test model, 20 lines, references given and the beam's own output as
# targets, one JSON line a batch size with positive speeds, the ratio of
# the two times, and a finite mean log-probability.
# shellcheck source=tests/common/shell_lib.sh
source "$(dirname "$0")/../common/shell_lib.sh"
: "${NMT_SOURCE_DIR:?}" "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
random_lines "$TMP/src" 11 20 8 0 "ein mann frau hund spielt im park Haus rot Ball ."
random_lines "$TMP/ref" 12 20 8 0 "a man woman dog plays in the park house red ball ."
for ref in "$TMP/ref" beam; do
    NMT_TRANSLATE=$NMT_TRANSLATE "$NMT_SOURCE_DIR/dev/bench/score_speed.sh" -m "$NMT_TEST_MODEL" \
        --src "$TMP/src" --ref "$ref" --lines 20 --batches "1 8" --runs 1 --work "$TMP/work" \
        -- --device cpu > "$TMP/out.json" 2> "$TMP/err" || fail "ref $ref: $(cat "$TMP/err")"
    python3 - "$TMP/out.json" <<'PY' || fail "ref $ref: $(cat "$TMP/out.json")"
import json, math, sys
rows = [json.loads(r) for r in open(sys.argv[1])]
assert [r["batch"] for r in rows] == [1, 8], rows
for r in rows:
    assert r["lines"] == 20 and r["decode_sents_per_s"] > 0 and r["score_sents_per_s"] > 0
    assert abs(r["ratio"] - r["decode_seconds"] / r["score_seconds"]) < 0.05 * r["ratio"] + 0.01
    assert math.isfinite(r["mean_log_prob"]) and r["mean_log_prob"] < 0
PY
done
exit $((failures > 0))
