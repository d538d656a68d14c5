#!/usr/bin/env bash
# train-europarl.sh OUT_DIR: the large-vocabulary model (Italian -> English,
# word level, 30,000 target words + 4 specials) on one GPU, for the LSH
# evaluation (docs/lsh.md). About 8 minutes on an H100 with the defaults.
#
# Europarl it-en (../shared/data/europarl-it-en, already tokenized; copied to
# .carry/data/europarl-it-en so it travels to the device) -> tokenized and
# mapped by python/train/preprocess.py; that takes ~100 s of Python for 300k
# pairs, so the result is cached in $PREPARED (.pkl.xz) and a cache made
# beforehand (on any machine, same command with TIME_BUDGET=0) is reused.
# Then train.py (time-budgeted, bf16 autocast), export of best.pt to fp32 and
# fp16 model.bin. The fp16 model is split into 15 MB parts with a sha256 so
# that it can come back through the device's 16 MB file limit
# (python/train/join-parts.sh rejoins and checks it).
#
# Sizes: E=128, H=512, 2 layers; source vocabulary capped at 20,000 words,
# target at 30,004 ids: ~29M parameters, ~59 MB as fp16.
#
# Environment (all optional): DATA (default .carry/data/europarl-it-en), WORK
# (default out/europarl), PREPARED (default .carry/europarl/prepared.pkl.xz),
# PYTHON (default python3), TIME_BUDGET (training seconds, default 420; 0:
# only prepare the cache), DEVICE (default cuda), TRAIN_ARGS (extra options).
set -euo pipefail

OUT=${1:?usage: $0 OUT_DIR}
cd "$(dirname "$0")/../.."
DATA=${DATA:-.carry/data/europarl-it-en}
WORK=${WORK:-out/europarl}
PREPARED=${PREPARED:-.carry/europarl/prepared.pkl.xz}
PYTHON=${PYTHON:-python3}
TIME_BUDGET=${TIME_BUDGET:-420}
DEVICE=${DEVICE:-cuda}
export PYTHONPATH=python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$WORK"
started=$(date +%s)
trap 'echo "=== train-europarl: exit $? after $(( $(date +%s) - started ))s ==="' EXIT

# The data options: they must stay what the cache was made with.
source python/train/europarl-data.sh
data_args=("${EUROPARL_DATA_ARGS[@]}" --data "$DATA" --prepared "$PREPARED")

if [ "$TIME_BUDGET" = 0 ]; then  # only the cache, and the model size it implies
    $PYTHON python/train/preprocess.py "${data_args[@]}" --emb-size 128 --hidden-size 512 --layers 2
    exit 0
fi

echo "=== environment ==="
$PYTHON -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0))'

echo "=== training (budget ${TIME_BUDGET}s) ==="
rm -rf "$WORK/ckpt"
# shellcheck disable=SC2086
$PYTHON python/train/train.py "${data_args[@]}" --save-dir "$WORK/ckpt" --device "$DEVICE" \
    --time-budget "$TIME_BUDGET" --emb-size 128 --hidden-size 512 --layers 2 \
    --dropout 0.2 --label-smoothing 0.1 --lr 1e-3 --batch-tokens 6000 --amp bf16 \
    --max-epochs 10 --patience 3 --seed 1234 --log-interval 200 \
    --valid-batch-size 256 ${TRAIN_ARGS:-}

echo "=== export ==="
$PYTHON python/export/export.py "$WORK/ckpt/best.pt" -o "$WORK/model.fp32.bin"
$PYTHON python/export/export.py "$WORK/ckpt/best.pt" -o "$WORK/model.fp16.bin" --fp16
cp "$WORK/ckpt/train.log" "$WORK/ckpt/history.json" "$OUT/"
(cd "$WORK" && sha256sum model.fp16.bin > model.fp16.bin.sha256 &&
 split -b 15000000 -d model.fp16.bin model.fp16.bin.part)
cp "$WORK"/model.fp16.bin.part* "$WORK/model.fp16.bin.sha256" "$OUT/"
ls -l "$OUT"
