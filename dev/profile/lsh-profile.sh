#!/usr/bin/env bash
# lsh-profile.sh: where the shrunk output layer's time goes, on the device.
# For each setting (full softmax, TOP, LSH ...), on the first LINES lines of SRC
# at beam BEAM and batch BATCH:
#   1. decode time (--timing, CUDA graphs on: the real speed; median of REPEATS
#      runs) and the output layer's GPU time (one --stats run);
#   2. ncu kernel times (gpu__time_duration, serialized) of a window of decode
#      steps (launches SKIP.. SKIP+COUNT, --warmup off, graphs off), tabled per
#      kernel by dev/profile/kernel_times.py.
# Writes $OUT/lsh-profile.md (and the raw CSVs). Env: MODEL, SRC (gzip),
# TRANSLATE (build-gpu/translate), LINES (128), BEAM (12), BATCH (64), REPEATS
# (3), SKIP (600), COUNT (800), SETTINGS (';'-separated option strings; an
# empty one is the full softmax), PRECISION (--precision, default fp32).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
. "$root/dev/carry-env.sh"
use_carried_deps "$root"
dest="${OUT:-out}"
mkdir -p "$dest"
work="$(mktemp -d)"
model="${MODEL:?MODEL: the model file}"
src="${SRC:?SRC: gzip source text}"
tr="${TRANSLATE:-build-gpu/translate}"
lines="${LINES:-128}" beam="${BEAM:-12}" batch="${BATCH:-64}" repeats="${REPEATS:-3}"
skip="${SKIP:-600}" count="${COUNT:-800}"
settings="${SETTINGS-;--top-words 2000;--lsh 8,3,500,2000,6 --lsh-share sentence}"
report="$dest/lsh-profile.md"

zcat "$src" | head -"$lines" >"$work/src"
{
    echo "# lsh-profile ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
    echo
    echo "model \`$model\`, $lines lines of \`$src\`, beam $beam, batch $batch;" \
        "ncu window: launches $skip..$((skip + count)), --warmup off, graphs off"
    echo
    echo "| setting | decode s (median of $repeats) | output layer ms | steps |"
    echo "|---|---:|---:|---:|"
} >"$report"
IFS=';' read -r -a list <<<"$settings"
n=0
for opts in "${list[@]}"; do
    n=$((n + 1))
    label=$opts
    opts="--precision ${PRECISION:-fp32} $opts" # PRECISION: the GEMMs (translate's default is auto)
    # shellcheck disable=SC2086
    for rep in $(seq "$repeats"); do
        "$tr" -m "$model" --device cuda --beam "$beam" --batch-size "$batch" --no-progress \
            $opts --timing "$work/t$n-$rep.json" <"$work/src" >/dev/null 2>"$work/err$n" ||
            { echo "translate failed: $opts"; tail -5 "$work/err$n"; }
    done
    "$tr" -m "$model" --device cuda --beam "$beam" --batch-size "$batch" --no-progress \
        $opts --stats "$work/s$n.json" <"$work/src" >/dev/null 2>>"$work/err$n"
    python3 - "$label" "$work/s$n.json" "$work"/t$n-*.json >>"$report" <<'EOF'
import json, statistics, sys
try:
    stats = json.load(open(sys.argv[2]))
except (OSError, ValueError):
    stats = {}
runs = [json.load(open(p)) for p in sys.argv[3:]]
decode = statistics.median(r["decode_seconds"] for r in runs)
layer = stats.get("output_layer_ms")
print(f"| `{sys.argv[1] or 'full softmax'}` | {decode:.4f} | {layer if layer is None else f'{layer:.1f}'} | "
      f"{runs[0].get('steps', '-')} |")
EOF
    # shellcheck disable=SC2086
    timeout 240 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
        --launch-skip "$skip" --launch-count "$count" --log-file "$dest/ncu-$n.csv" \
        "$tr" -m "$model" --device cuda --beam "$beam" --batch-size "$batch" --warmup off \
        --cuda-graphs off --no-progress $opts <"$work/src" >/dev/null 2>"$work/ncu$n.err" ||
        { echo "ncu failed: $opts"; tail -5 "$work/ncu$n.err"; }
done
echo >>"$report"
n=0
for opts in "${list[@]}"; do
    n=$((n + 1))
    echo "### \`${opts:-full softmax}\`" >>"$report"
    python3 dev/profile/kernel_times.py "$dest/ncu-$n.csv" >>"$report"
done
cat "$report"
