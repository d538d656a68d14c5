#!/usr/bin/env bash
# lsh-europarl.sh OUT_DIR: the large-vocabulary LSH evaluation, in one run on one H100.
#
#   1. builds the CUDA engine (BUILD_DIR, default build-gpu) unless TRANSLATE is set;
#   2. unless MODEL names an existing model file: trains the Italian->English
#      word-level model with tools/train/train-europarl.sh (time budget
#      TIME_BUDGET, scratch WORK) and evaluates the $WORK/model.fp16.bin it exports;
#   3. runs tools/eval/lsh-grid at beams 5 and 12 on the test split
#      ($DATA/test.it.gz -> test.en.gz, 3,000 lines) within EVAL_BUDGET seconds:
#      full softmax (its BLEU is the model's), the LSH grid, the TOP baseline, and
#      batch / sentence / row sharing on the first SHARE_SETTINGS LSH settings;
#   4. leaves in OUT_DIR (the device returns at most 8 files): lsh-europarl.json,
#      lsh-europarl.md (tables), lsh-europarl.log (everything this script printed),
#      lsh-europarl-work.tar.gz (hypotheses, --stats files, engine logs, training
#      summary and log) and, when matplotlib is importable, lsh-europarl.png.
#
# On the device (carry .carry: data in .carry/data/europarl-it-en, libraries in
# .carry/deps):  tools/eval/lsh-europarl.sh "$OUT"
# Environment (all optional): DATA (.carry/data/europarl-it-en), WORK (out/europarl),
# MODEL (skip training), TRANSLATE (skip the build), BUILD_DIR (build-gpu), PYTHON
# (python3), DEVICE (cuda), TIME_BUDGET (training seconds, the trainer's default
# when unset), EVAL_BUDGET (420), BEAMS (5,12), GRID (16,3,500;8,3,500), TOPS
# (1000), THRESHOLDS (2,4,8), TOP_BASELINE (1000,2000,5000,10000), SHARES
# (sentence,batch,row), SHARE_SETTINGS (1), BATCH_SIZE (64), SPEED_BATCH (64),
# SPEED_LINES (600), REPEATS (3), QUALITY_LINES (0: all), GRID_ARGS (more lsh-grid options).
set -euo pipefail

OUT=${1:?usage: $0 OUT_DIR}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
DATA=${DATA:-.carry/data/europarl-it-en}
WORK=${WORK:-out/europarl}
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
EVAL_BUDGET=${EVAL_BUDGET:-420}
NAME=lsh-europarl
export PYTHONPATH=tools${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
mkdir -p "$WORK"
exec > >(tee -a "$OUT/$NAME.log") 2>&1
started=$(date +%s)

run() { echo "+ $*"; "$@"; }

# shellcheck disable=SC2317  # called by the EXIT trap
on_exit() {
    status=$?
    # hypotheses, stats, engine logs, the training summary: one tarball, no models
    parts=()
    for d in lsh train-out; do [ -e "$WORK/$d" ] && parts+=("$d"); done
    if [ ${#parts[@]} -gt 0 ]; then
        tar -czf "$OUT/$NAME-work.tar.gz" --exclude='*.bin' --exclude='*.pt' --exclude='*.pkl*' \
            -C "$WORK" "${parts[@]}" || true
    fi
    echo "=== $NAME: exit $status after $(( $(date +%s) - started ))s; files in $OUT:"
    ls -la "$OUT" || true
}
trap on_exit EXIT

echo "=== environment"
"$PYTHON" -c 'import sys, sacrebleu; print("python", sys.version.split()[0], "sacrebleu", sacrebleu.__version__)'
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
ls -la "$DATA"

if [ -z "${TRANSLATE:-}" ]; then
    echo "=== build (${BUILD_DIR:-build-gpu})"
    BUILD_DIR=${BUILD_DIR:-build-gpu}
    if [ -d .carry/deps ]; then  # libinih and libutf8proc for the device image (see tools/gpu-check.sh)
        deps="$PWD/.carry/deps"
        export PKG_CONFIG_PATH="$deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
        export CMAKE_PREFIX_PATH="$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
        export LD_LIBRARY_PATH="$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    run cmake -S . -B "$BUILD_DIR" -DNMT_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$WORK/configure.log"
    run cmake --build "$BUILD_DIR" --target translate -j "$(nproc)" >"$WORK/build.log" \
        || { tail -40 "$WORK/build.log"; exit 1; }
    TRANSLATE=$BUILD_DIR/translate
fi
echo "translate: $TRANSLATE"

if [ -z "${MODEL:-}" ] || [ ! -f "$MODEL" ]; then
    echo "=== training (tools/train/train-europarl.sh, budget ${TIME_BUDGET:-the trainer default}s)"
    export WORK
    [ -n "${TIME_BUDGET:-}" ] && export TIME_BUDGET
    run tools/train/train-europarl.sh "$WORK/train-out"
    MODEL=$WORK/model.fp16.bin
fi
[ -f "$MODEL" ] || { echo "no model at $MODEL"; exit 1; }
echo "model: $MODEL ($(stat -c %s "$MODEL") bytes)"

echo "=== LSH grid (budget ${EVAL_BUDGET}s)"
grid_status=0
# shellcheck disable=SC2086
run "$PYTHON" tools/eval/lsh-grid --translate "$TRANSLATE" -m "$MODEL" --label europarl-it-en \
    --src "$DATA/test.it.gz" --ref "$DATA/test.en.gz" --device "$DEVICE" \
    --beams "${BEAMS:-5,12}" --grid "${GRID:-16,3,500;8,3,500}" --tops "${TOPS:-1000}" \
    --thresholds "${THRESHOLDS:-2,4,8}" --top-baseline "${TOP_BASELINE:-1000,2000,5000,10000}" \
    --shares "${SHARES:-sentence,batch,row}" --share-settings "${SHARE_SETTINGS:-1}" \
    --batch-size "${BATCH_SIZE:-64}" --speed-batch "${SPEED_BATCH:-64}" \
    --speed-lines "${SPEED_LINES:-600}" --repeats "${REPEATS:-3}" \
    --quality-lines "${QUALITY_LINES:-0}" --time-budget "$EVAL_BUDGET" --run-timeout 300 \
    --work "$WORK/lsh" --json "$OUT/$NAME.json" --markdown "$OUT/$NAME.md" ${GRID_ARGS:-} || grid_status=$?

if "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
    run "$PYTHON" tools/eval/plot-lsh "$OUT/$NAME.json" -o "$OUT/$NAME.png" || true
else
    echo "matplotlib not importable here: plot later with tools/eval/plot-lsh $NAME.json"
fi
echo "=== summary"
sed -n '/^## Summary/,/^## Results/p' "$OUT/$NAME.md" || true
exit "$grid_status"
