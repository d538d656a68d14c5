#!/usr/bin/env bash
# roofline.sh: the kernels of a decoder step against the H200's peaks
# (docs/performance.md, "Roofline"). ncu reads, per kernel of a window of
# decode steps: time, DRAM bytes, L2 bytes and tensor-pipe activity; then
# dev/profile/roofline.py folds them per kernel name into one step and
# prints time, bytes, FLOPs (the GEMMs' from their shapes) and the fraction
# of the peak that bounds each kernel.
#
#   dev/profile/roofline.sh BUILD_DIR OUT_DIR [TRANSLATE OPTIONS...]
#
# Two windows: batch 1 (4 test lines, 5 rows a step) and batch 1,024
# (5,120 rows), fp16 unless the options say otherwise, CUDA graphs and the
# warm-up off so that the windows count launches from the first batch. Env:
# MODEL (models/multi30k-de-en.bin), SRC (.carry/data/multi30k/train.de.gz).
set -uo pipefail
usage="usage: dev/profile/roofline.sh BUILD_DIR OUT_DIR [TRANSLATE OPTIONS...]"
build=${1:?$usage} dest=${2:?$usage}
shift 2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$root/dev/carry-env.sh"
use_carried_deps "$root"
model=${MODEL:-$root/models/multi30k-de-en.bin}
src=${SRC:-$root/.carry/data/multi30k/train.de.gz}
mkdir -p "$dest"
work=$(mktemp -d)
zcat -f "$src" | head -1024 >"$work/1024.txt"
sed -n 20,23p "$work/1024.txt" >"$work/4.txt"

# The metrics this ncu knows, of those wanted (names differ across versions).
want="gpu__time_duration.sum dram__bytes.sum dram__bytes.sum.pct_of_peak_sustained_elapsed
lts__t_bytes.sum lts__t_bytes.sum.pct_of_peak_sustained_elapsed
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed
sm__throughput.avg.pct_of_peak_sustained_elapsed"
ncu --query-metrics >"$work/known.txt" 2>&1 || true
metrics=
for m in $want; do
    grep -q "^${m%%.*} " "$work/known.txt" && metrics+="${metrics:+,}$m"
done
echo "metrics: $metrics" | tee "$dest/metrics.txt"

window() { # name input skip count batch
    timeout 280 ncu --clock-control none --cache-control all --metrics "$metrics" --csv \
        --launch-skip "$3" --launch-count "$4" --log-file "$dest/$1.csv" \
        "$build/translate" -m "$model" --device cuda --beam 5 --batch-size "$5" \
        --warmup off --cuda-graphs off --precision fp16 --quiet "${@:6}" <"$2" >/dev/null \
        2>"$dest/$1.err" || { echo "ncu $1 failed"; tail -5 "$dest/$1.err"; }
}
extra=("$@")
window batch1 "$work/4.txt" 200 150 1 "${extra[@]}"
window batch1024 "$work/1024.txt" 400 100 1024 "${extra[@]}"
python3 "$root/dev/profile/roofline.py" --rows 5 "$dest/batch1.csv" >"$dest/roofline.md"
python3 "$root/dev/profile/roofline.py" --rows 5120 "$dest/batch1024.csv" >>"$dest/roofline.md"
cat "$dest/roofline.md"
