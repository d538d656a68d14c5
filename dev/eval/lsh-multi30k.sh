#!/usr/bin/env bash
# lsh-multi30k.sh OUT_DIR: the LSH grid on the shipped Multi30k model (German->English,
# ~4.8k target words), on one H100.
#
#   1. builds the CUDA engine (BUILD_DIR, default build-gpu) unless TRANSLATE is set;
#   2. runs dev/eval/lsh-grid at beams 5 and 12 on test_2016_flickr (1,000 lines)
#      within EVAL_BUDGET seconds: full softmax, the LSH grid (smaller T than on
#      Europarl: the vocabulary is ~7x smaller), the TOP baseline, and batch /
#      sentence / row sharing on the first SHARE_SETTINGS LSH settings;
#   3. leaves in OUT_DIR: lsh-multi30k.json, lsh-multi30k.md, lsh-multi30k.log,
#      lsh-multi30k-work.tar.gz (hypotheses, --stats files, engine logs) and, when
#      matplotlib is importable, lsh-multi30k.png.
#
# On the device (carry .carry: data in .carry/data/multi30k, libraries in .carry/deps):
#   dev/eval/lsh-multi30k.sh "$OUT"
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
BEAMS=${BEAMS:-5,12} GRID=${GRID:-16,3,100;8,3,100} TOPS=${TOPS:-100,250}
THRESHOLDS=${THRESHOLDS:-1,2} TOP_BASELINE=${TOP_BASELINE:-100,250,500,1000,2000}
SHARES=${SHARES:-sentence,batch,row} SHARE_SETTINGS=${SHARE_SETTINGS:-1}
BATCH_SIZE=${BATCH_SIZE:-64} SPEED_BATCH=${SPEED_BATCH:-64} SPEED_LINES=${SPEED_LINES:-1000}
REPEATS=${REPEATS:-3} QUALITY_LINES=${QUALITY_LINES:-0}
NAME=lsh-multi30k
# shellcheck source=dev/eval/lsh-common.sh
. dev/eval/lsh-common.sh

lsh_begin lsh
ls -la "$MODEL" "$DATA/test_2016_flickr.de.gz" "$DATA/test_2016_flickr.en.gz"
lsh_build_engine
lsh_run_grid multi30k-de-en "$MODEL" "$DATA/test_2016_flickr.de.gz" "$DATA/test_2016_flickr.en.gz"
