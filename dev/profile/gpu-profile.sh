#!/usr/bin/env bash
# gpu-profile.sh: where the CUDA engine's time goes, on the device.
#   1. wall time of translate (--timing) at batch 1 and 64, beam 5
#   2. ncu kernel times (gpu__time_duration, serialized: no launch gaps) of a
#      window of decode steps at batch 1 and 64, and of the softmax + top-K
#      kernel in bench_softmax_topk at small rows
#   3. tables (dev/profile/kernel_times.py) into $OUT/profile.md
# Run after a build into build-gpu (dev/gpu-check.sh does one). Env:
# PROFILE_MODEL, PROFILE_SRC, PROFILE_PRECISION (fp32), NMT_PROFILE_SKIP_NCU=1, NMT_PROFILE_SOFTMAX_CASES
# (space-separated rows,V,K triples; empty skips the softmax kernel timings).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
. "$root/dev/carry-env.sh"
use_carried_deps "$root"
dest="${OUT:-out}"
mkdir -p "$dest"
work="$(mktemp -d)"
build=build-gpu
model="${PROFILE_MODEL:-models/multi30k-de-en.bin}"
src="${PROFILE_SRC:-.carry/data/multi30k/test_2016_flickr.de.gz}"
tr="$build/translate"
precision="${PROFILE_PRECISION:-fp32}" # translate's own default, auto, is fp16 for fp16 files
report="$dest/profile.md"
: >"$report"

zcat "$src" | head -300 >"$work/300.de"
head -64 "$work/300.de" >"$work/64.de"
head -4 "$work/300.de" >"$work/4.de"

echo "# gpu-profile ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))" >>"$report"
echo '```' >>"$report"
for cfg in "1 64" "64 300"; do
    set -- $cfg
    for rep in 1 2 3; do
        "$tr" -m "$model" --device cuda --precision "$precision" --beam 5 --batch-size "$1" --timing "$work/t.json" \
            <"$work/$2.de" >/dev/null 2>"$work/err" || cat "$work/err"
        echo "batch $1 lines $2 rep $rep: $(tr -d '\n' <"$work/t.json")" >>"$report"
    done
done
echo '```' >>"$report"

ncu_run() { # name, input file, then the command (its stdout is dropped)
    local name=$1 input=$2; shift 2
    timeout 240 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
        --log-file "$work/$name.csv" "$@" <"$input" >/dev/null 2>"$work/$name.err" ||
        { echo "ncu $name failed"; tail -5 "$work/$name.err"; }
    python3 dev/profile/kernel_times.py "$work/$name.csv" >>"$report"
}
if [[ "${NMT_PROFILE_SKIP_NCU:-0}" != 1 ]]; then
    # --warmup off: the windows count launches from the first real batch.
    ncu_run batch1 "$work/4.de" --launch-skip 150 --launch-count 250 \
        "$tr" -m "$model" --device cuda --precision "$precision" --beam 5 --batch-size 1 --warmup off
    ncu_run batch64 "$work/64.de" --launch-skip 500 --launch-count 150 \
        "$tr" -m "$model" --device cuda --precision "$precision" --beam 5 --batch-size 64 --warmup off
    ncu_run batch64-tf32x2 "$work/64.de" --launch-skip 500 --launch-count 150 \
        "$tr" -m "$model" --device cuda --beam 5 --batch-size 64 --warmup off --precision tf32x2
    for cfg in ${NMT_PROFILE_SOFTMAX_CASES-1,10240,1 1,10240,50 60,10240,5 5,4778,10 320,4778,10 1,50000,5}; do
        set -- ${cfg//,/ }
        NMT_BENCH_ROWS=$1 NMT_BENCH_VOCABS=$2 NMT_BENCH_KS=$3 NMT_BENCH_REPEATS=15 \
            NMT_BENCH_BASELINE=0 ncu_run "softmax_r$1_v$2_k$3" /dev/null -k regex:fused_topk \
            --launch-skip 20 --launch-count 5 "$build/bench_softmax_topk"
    done
    # Where one small-row softmax + top-K launch spends its time (stall reasons).
    for cfg in "5 4778 10" "1 10240 1"; do
        set -- $cfg
        NMT_BENCH_ROWS=$1 NMT_BENCH_VOCABS=$2 NMT_BENCH_KS=$3 NMT_BENCH_REPEATS=15 \
            NMT_BENCH_BASELINE=0 timeout 120 ncu --clock-control none -k regex:fused_topk \
            --launch-skip 20 --launch-count 1 --section LaunchStats --section Occupancy \
            --section SchedulerStats --section WarpStateStats --section SpeedOfLight \
            "$build/bench_softmax_topk" >"$dest/ncu-softmax-r$1-v$2-k$3.txt" 2>&1 || true
    done
fi
cat "$report"
