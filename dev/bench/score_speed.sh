#!/usr/bin/env bash
# Scoring against beam-5 decoding on the same lines at the same batch
# (docs/decoding.md, "Scoring"; issue 42's target: >= 5x the sentences/s):
# translate --beam 5 over the first N source lines, then translate
# --score-target with the references (default: the beam's own output), both
# timed by translate --timing's decode_seconds (no model load, no warm-up),
# the best of R runs each. Prints one JSON line a batch size:
#   {"batch", "lines", "decode_seconds", "score_seconds", "decode_sents_per_s",
#    "score_sents_per_s", "ratio", "mean_log_prob"}
#
#   dev/bench/score_speed.sh [-m MODEL] [--src FILE] [--ref FILE] [--lines N]
#                            [--batches "64 2048"] [--runs R] [--work DIR]
#                            [-- TRANSLATE OPTIONS (--device, --precision, ...)]
# Default input: the 200 test lines in tests/data/golden, scored against the
# beam's own output.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=models/multi30k-de-en.bin
src=tests/data/golden/test_2016_flickr.200.de
ref=beam
lines=1000
batches="64 2048"
runs=3
work=/tmp/nmt-score-bench
translate=${NMT_TRANSLATE:-build/translate}
usage="usage: $0 [-m MODEL] [--src FILE] [--ref FILE|beam] [--lines N] [--batches LIST] [--runs R] [--work DIR] [-- OPTIONS]"
while [ $# -gt 0 ]; do
    case $1 in
    -m) model=$2; shift 2 ;;
    --src) src=$2; shift 2 ;;
    --ref) ref=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "$usage" >&2; exit 2 ;;
    esac
done
mkdir -p "$work"
first_lines() { # FILE OUT: the first $lines lines (gzip or not)
    case $1 in
    *.gz) { zcat "$1" || true; } | head -n "$lines" > "$2" ;; # zcat: SIGPIPE
    *) head -n "$lines" "$1" > "$2" ;;
    esac
}
first_lines "$src" "$work/src"
n=$(wc -l < "$work/src")

seconds() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["decode_seconds"])' "$1"; }

# translate, where exit 1 (some lines refused: an empty source cannot be
# scored) still gives every line and the timing.
run() { "$translate" "$@" || [ $? -eq 1 ]; }

for batch in $batches; do
    : > "$work/times"
    for ((r = 0; r < runs; r++)); do
        run -m "$model" --beam 5 --batch-size "$batch" -i "$work/src" \
            -o "$work/beam.$batch" --quiet --timing "$work/decode.json" "$@"
        if [ "$ref" = beam ]; then
            cp "$work/beam.$batch" "$work/ref"
        else
            first_lines "$ref" "$work/ref"
        fi
        run -m "$model" --beam 5 --batch-size "$batch" -i "$work/src" \
            --score-target "$work/ref" -o "$work/score.$batch" --quiet \
            --timing "$work/score.json" "$@"
        echo "$(seconds "$work/decode.json") $(seconds "$work/score.json")" >> "$work/times"
    done
    python3 - "$batch" "$n" "$work/times" "$work/score.$batch" <<'PY'
import json, math, sys
batch, n = int(sys.argv[1]), int(sys.argv[2])
times = [tuple(map(float, row.split())) for row in open(sys.argv[3])]
d, s = min(t[0] for t in times), min(t[1] for t in times)  # the best run of each
logps = [float(row.split("\t")[0]) for row in open(sys.argv[4], encoding="utf-8")]
finite = [x for x in logps if math.isfinite(x)]
print(json.dumps({"batch": batch, "lines": n, "decode_seconds": round(d, 6),
                  "score_seconds": round(s, 6),
                  "decode_sents_per_s": round(n / d, 1) if d > 0 else None,
                  "score_sents_per_s": round(n / s, 1) if s > 0 else None,
                  "ratio": round(d / s, 2) if s > 0 else None,
                  "mean_log_prob": round(sum(finite) / len(finite), 4) if finite else None}))
PY
done
