#!/usr/bin/env bash
# bench_service's checks themselves (not its timings): on the CPU with the
# test model, a closed loop with cancellations and an open loop with
# deadlines and cancellations must report 0 lost, 0 duplicated, 0 different
# (exit 0), and the counts must add up to the requests.
set -uo pipefail
: "${NMT_BINARY_DIR:?}" "${NMT_TEST_MODEL:?}"
B=$NMT_BINARY_DIR/bench_service
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
python3 - "$TMP/lines.txt" <<'PY'
import random, sys
r = random.Random(5)
words = "ein mann frau hund spielt im park Haus rot Ball . ! Zwei kind läuft".split()
lines = [" ".join(r.choice(words) for _ in range(r.randint(1, 10))) for _ in range(60)]
lines[7] = "ein \udcff hund".encode("utf-8", "surrogateescape").decode("latin-1")  # refused line
open(sys.argv[1], "w", encoding="latin-1").write("\n".join(lines) + "\n")
PY
run() {
    local name=$1
    shift
    "$B" -m "$NMT_TEST_MODEL" -i "$TMP/lines.txt" --device cpu --beam 3 --workers 2 "$@" \
        > "$TMP/out.json" 2> "$TMP/err"
    local code=$?
    if [ $code -ne 0 ]; then
        echo "FAIL: $name: exit $code: $(cat "$TMP/out.json" "$TMP/err")" >&2
        failures=$((failures + 1))
        return
    fi
    python3 - "$TMP/out.json" "$name" <<'PY' || failures=$((failures + 1))
import json, sys
r = json.load(open(sys.argv[1]))
name = sys.argv[2]
ok = r["lost"] == 0 and r["duplicated"] == 0 and r["different"] == 0
ok = ok and r["requests"] == 600 and r["sents_per_s"] > 0 and r["batch_fill"] >= 1
if "cancel" in name:
    ok = ok and r["cancelled"] > 0
print(name, json.dumps(r))
sys.exit(0 if ok else 1)
PY
}
run "closed loop with cancel" --closed 8 --requests 600 --cancel 0.3 --max-delay-us 500
run "open loop with cancel and deadline" --open 2000 --requests 600 --cancel 0.2 --deadline-ms 200
exit $((failures > 0))
