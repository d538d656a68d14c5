#!/usr/bin/env bash
# lsh-europarl.sh OUT_DIR: the large-vocabulary LSH evaluation, in one run on one H100.
#
#   1. builds the CUDA engine (BUILD_DIR, default build-gpu) unless TRANSLATE is set;
#   2. unless MODEL names an existing model file: trains the Italian->English
#      word-level model with python/train/train-europarl.sh (time budget
#      TIME_BUDGET, scratch WORK) and evaluates the $WORK/model.fp16.bin it exports;
#   3. runs dev/eval/lsh-grid at beams 5 and 12 on the test split
#      ($DATA/test.it.gz -> test.en.gz, 3,000 lines) within EVAL_BUDGET seconds:
#      full softmax (its BLEU is the model's), the LSH grid, the TOP baseline, and
#      batch / sentence / row sharing on the first SHARE_SETTINGS LSH settings;
#   4. leaves in OUT_DIR (the device returns at most 8 files): lsh-europarl.json,
#      lsh-europarl.md (tables), lsh-europarl.log (everything this script printed),
#      lsh-europarl-work.tar.gz (hypotheses, --stats files, engine logs, training
#      summary and log) and, when matplotlib is importable, lsh-europarl.png.
#
# On the device (carry .carry: data in .carry/data/europarl-it-en, libraries in
# .carry/deps):  dev/eval/lsh-europarl.sh "$OUT"
# Environment (all optional): DATA (.carry/data/europarl-it-en), WORK (out/europarl),
# MODEL (skip training), TRANSLATE (skip the build), BUILD_DIR (build-gpu), PYTHON
# (python3), DEVICE (cuda), TIME_BUDGET (training seconds, the trainer's default
# when unset), EVAL_BUDGET (420), BEAMS (5,12), GRID (8,3,500,8/6/12;8,3,200,4/3/6:
# each {K,u,W} with its own thresholds), TOPS (2000,3000,5000), THRESHOLDS (4,8: for
# entries without their own), TOP_BASELINE (2000,3000,5000,7000,10000), SHARES
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
BEAMS=${BEAMS:-5,12} GRID=${GRID:-8,3,500,8/6/12;8,3,200,4/3/6} TOPS=${TOPS:-2000,3000,5000}
THRESHOLDS=${THRESHOLDS:-4,8} TOP_BASELINE=${TOP_BASELINE:-2000,3000,5000,7000,10000}
SHARES=${SHARES:-sentence,batch,row} SHARE_SETTINGS=${SHARE_SETTINGS:-1}
BATCH_SIZE=${BATCH_SIZE:-64} SPEED_BATCH=${SPEED_BATCH:-64} SPEED_LINES=${SPEED_LINES:-600}
REPEATS=${REPEATS:-3} QUALITY_LINES=${QUALITY_LINES:-0}
NAME=lsh-europarl
# shellcheck source=dev/eval/lsh-common.sh
. dev/eval/lsh-common.sh

lsh_begin lsh train-out
ls -la "$DATA"
lsh_build_engine

if [ -z "${MODEL:-}" ] || [ ! -f "$MODEL" ]; then
    echo "=== training (python/train/train-europarl.sh, budget ${TIME_BUDGET:-the trainer default}s)"
    export WORK
    [ -n "${TIME_BUDGET:-}" ] && export TIME_BUDGET
    run python/train/train-europarl.sh "$WORK/train-out"
    MODEL=$WORK/model.fp16.bin
fi
[ -f "$MODEL" ] || { echo "no model at $MODEL"; exit 1; }
echo "model: $MODEL ($(stat -c %s "$MODEL") bytes)"

lsh_run_grid europarl-it-en "$MODEL" "$DATA/test.it.gz" "$DATA/test.en.gz"
