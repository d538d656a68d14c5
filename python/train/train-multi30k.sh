#!/usr/bin/env bash
# train-multi30k.sh OUT_DIR: the demo model, end to end, on one GPU (~8 minutes on an H100).
#
# Trains model v1 on Multi30k de->en (time-budgeted), exports model.bin as fp32
# and fp16, decodes test_2016_flickr and val with the PyTorch reference decoder
# (weights read back from model.bin) at beams 1, 5 and 10, scores each with
# sacreBLEU (cased, 13a) and, when build/translate exists, also scores the C
# engine at beam 5. Copies the fp16 model, the training log and history, the
# beam-5 test translations and a summary (summary.json, summary.txt) to OUT_DIR.
#
# Environment (all optional): DATA (default .carry/data/multi30k), WORK (scratch,
# default out/multi30k), PYTHON (default python3), TIME_BUDGET (training seconds,
# default 360), DEVICE (default cuda), TRAIN_ARGS (extra train.py options).
set -euo pipefail

OUT=${1:?usage: $0 OUT_DIR}
cd "$(dirname "$0")/../.."
DATA=${DATA:-.carry/data/multi30k}
WORK=${WORK:-out/multi30k}
PYTHON=${PYTHON:-python3}
TIME_BUDGET=${TIME_BUDGET:-360}
DEVICE=${DEVICE:-cuda}
export PYTHONPATH=python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$WORK"
rm -rf "$WORK/ckpt"
started=$(date +%s)

on_exit() {
    status=$?
    if [ -f "$WORK/ckpt/train.log" ]; then
        echo "=== training log (tail) ==="
        tail -n 25 "$WORK/ckpt/train.log"
        cp "$WORK/ckpt/train.log" "$OUT/" 2>/dev/null || true
    fi
    echo "=== done: exit $status after $(( $(date +%s) - started ))s ==="
}
trap on_exit EXIT

echo "=== environment ==="
$PYTHON -c 'import sys, torch, sacrebleu, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "sacrebleu", sacrebleu.__version__, "numpy", numpy.__version__, "cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0))'
ls "$DATA"

echo "=== training (budget ${TIME_BUDGET}s) ==="
# shellcheck disable=SC2086
$PYTHON python/train/train.py --data "$DATA" --src-lang de --tgt-lang en \
    --save-dir "$WORK/ckpt" --device "$DEVICE" --time-budget "$TIME_BUDGET" \
    --emb-size 256 --hidden-size 512 --layers 2 --src-min-freq 2 --tgt-min-freq 3 \
    --dropout 0.3 --label-smoothing 0.1 --lr 1e-3 --batch-tokens 2000 \
    --max-epochs 40 --patience 5 --seed 1234 ${TRAIN_ARGS:-}
train_done=$(date +%s)

echo "=== export ==="
$PYTHON python/export/export.py "$WORK/ckpt/best.pt" -o "$WORK/model.fp32.bin"
$PYTHON python/export/export.py "$WORK/ckpt/best.pt" -o "$WORK/model.fp16.bin" --fp16

echo "=== BLEU (reference decoder over model.bin) ==="
mkdir -p "$WORK/eval"
score() {  # name model split [translator args...]
    local name=$1 model=$2 split=$3
    shift 3
    echo "--- $name $split"
    $PYTHON dev/eval/bleu -m "$model" --src "$DATA/$split.de.gz" --ref "$DATA/$split.en.gz" \
        --json "$WORK/eval/$name.$split.json" --save-hyp "$WORK/eval/$name.$split.hyp" "$@"
}
for split in test_2016_flickr val; do
    for beam in 1 5 10; do
        score "reference-fp32-beam$beam" "$WORK/model.fp32.bin" "$split" --reference -- \
            --beam "$beam" --batch-size 64 --device "$DEVICE"
    done
done
score reference-fp16-beam5 "$WORK/model.fp16.bin" test_2016_flickr --reference -- \
    --beam 5 --batch-size 64 --device "$DEVICE"
if [ -x build/translate ]; then
    echo "=== BLEU (C engine, build/translate) ==="
    for model in fp32 fp16; do
        score "engine-$model-beam5" "$WORK/model.$model.bin" test_2016_flickr \
            --translate build/translate -- --beam 5 --device "$DEVICE" \
            || echo "engine $model: failed (not fatal here)"
    done
fi

echo "=== summary ==="
cp "$WORK/model.fp16.bin" "$WORK/ckpt/history.json" "$OUT/"
cp "$WORK/eval/reference-fp32-beam5.test_2016_flickr.hyp" "$OUT/test_2016_flickr.beam5.en" 
$PYTHON - "$WORK" "$OUT" "$(( train_done - started ))" <<'EOF'
import glob, json, os, sys
work, out, train_seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
history = json.load(open(os.path.join(work, "ckpt", "history.json")))
best = max(history, key=lambda r: r["valid_bleu"])
scores = {}
for path in sorted(glob.glob(os.path.join(work, "eval", "*.json"))):
    name = os.path.basename(path)[:-len(".json")]
    r = json.load(open(path))
    scores[name] = {"bleu": round(r["bleu"], 2), "signature": r["signature"],
                    "seconds": r["seconds"]}
summary = {
    "task": "multi30k de->en, test_2016_flickr and val, sacreBLEU cased 13a",
    "train_seconds_wall": train_seconds, "epochs": len(history),
    "best_epoch": best["epoch"], "best_valid_bleu_greedy": round(best["valid_bleu"], 2),
    "best_valid_ppl": round(best["valid_ppl"], 3),
    "epoch_seconds": [round(r["train_time"], 1) for r in history],
    "model_bytes": {k: os.path.getsize(os.path.join(work, f"model.{k}.bin")) for k in ("fp32", "fp16")},
    "bleu": scores,
}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
lines = [f"{k:44s} {v['bleu']:6.2f}  ({v['seconds']:.1f}s)" for k, v in scores.items()]
lines += [f"model fp16: {summary['model_bytes']['fp16'] / 1e6:.2f} MB, fp32: "
          f"{summary['model_bytes']['fp32'] / 1e6:.2f} MB",
          f"training: {len(history)} epochs in {train_seconds}s wall, best epoch {best['epoch']} "
          f"(valid greedy BLEU {best['valid_bleu']:.2f}, ppl {best['valid_ppl']:.2f})",
          "signature: " + next(iter(scores.values()))["signature"]]
open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
