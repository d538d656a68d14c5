#!/usr/bin/env bash
# lsh-multi30k.sh OUT_DIR: the LSH grid on the shipped Multi30k model (German->English,
# ~4.8k target words), on one H100.
#
#   1. builds the CUDA engine (BUILD_DIR, default build-gpu) unless TRANSLATE is set;
#   2. runs tools/eval/lsh-grid at beams 5 and 12 on test_2016_flickr (1,000 lines)
#      within EVAL_BUDGET seconds: full softmax, the LSH grid (smaller T than on
#      Europarl: the vocabulary is ~7x smaller), the TOP baseline, and batch /
#      sentence / row sharing on the first SHARE_SETTINGS LSH settings;
#   3. leaves in OUT_DIR: lsh-multi30k.json, lsh-multi30k.md, lsh-multi30k.log,
#      lsh-multi30k-work.tar.gz (hypotheses, --stats files, engine logs) and, when
#      matplotlib is importable, lsh-multi30k.png.
#
# On the device (carry .carry: data in .carry/data/multi30k, libraries in .carry/deps):
#   tools/eval/lsh-multi30k.sh "$OUT"
# Environment (all optional): MODEL (models/multi30k-de-en.bin), DATA
# (.carry/data/multi30k), WORK (out/multi30k-lsh), TRANSLATE (skip the build), BUILD_DIR
# (build-gpu), PYTHON (python3), DEVICE (cuda), EVAL_BUDGET (150), BEAMS (5,12), GRID
# (16,3,100;8,3,100), TOPS (100,250), THRESHOLDS (1,2), TOP_BASELINE
# (100,250,500,1000,2000), SHARES (sentence,batch,row), SHARE_SETTINGS (1), BATCH_SIZE
# (64), SPEED_BATCH (64), SPEED_LINES (1000), REPEATS (3), QUALITY_LINES (0: all),
# GRID_ARGS (more lsh-grid options).
set -euo pipefail

OUT=${1:?usage: $0 OUT_DIR}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
MODEL=${MODEL:-models/multi30k-de-en.bin}
DATA=${DATA:-.carry/data/multi30k}
WORK=${WORK:-out/multi30k-lsh}
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
EVAL_BUDGET=${EVAL_BUDGET:-150}
NAME=lsh-multi30k
export PYTHONPATH=tools${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
mkdir -p "$WORK"
exec > >(tee -a "$OUT/$NAME.log") 2>&1
started=$(date +%s)

run() { echo "+ $*"; "$@"; }

# shellcheck disable=SC2317  # called by the EXIT trap
on_exit() {
    status=$?
    tar -czf "$OUT/$NAME-work.tar.gz" -C "$WORK" lsh 2>/dev/null || true
    echo "=== $NAME: exit $status after $(( $(date +%s) - started ))s; files in $OUT:"
    ls -la "$OUT" || true
}
trap on_exit EXIT

echo "=== environment"
"$PYTHON" -c 'import sys, sacrebleu; print("python", sys.version.split()[0], "sacrebleu", sacrebleu.__version__)'
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
ls -la "$MODEL" "$DATA/test_2016_flickr.de.gz" "$DATA/test_2016_flickr.en.gz"

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

echo "=== LSH grid (budget ${EVAL_BUDGET}s)"
grid_status=0
# shellcheck disable=SC2086
run "$PYTHON" tools/eval/lsh-grid --translate "$TRANSLATE" -m "$MODEL" --label multi30k-de-en \
    --src "$DATA/test_2016_flickr.de.gz" --ref "$DATA/test_2016_flickr.en.gz" --device "$DEVICE" \
    --beams "${BEAMS:-5,12}" --grid "${GRID:-16,3,100;8,3,100}" --tops "${TOPS:-100,250}" \
    --thresholds "${THRESHOLDS:-1,2}" --top-baseline "${TOP_BASELINE:-100,250,500,1000,2000}" \
    --shares "${SHARES:-sentence,batch,row}" --share-settings "${SHARE_SETTINGS:-1}" \
    --batch-size "${BATCH_SIZE:-64}" --speed-batch "${SPEED_BATCH:-64}" \
    --speed-lines "${SPEED_LINES:-1000}" --repeats "${REPEATS:-3}" \
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
