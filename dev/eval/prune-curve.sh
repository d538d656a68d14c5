#!/usr/bin/env bash
# prune-curve.sh OUT_DIR: BLEU against sparsity for a model and its corpus.
#
# For each sparsity in SPARSITIES (percent): 0 is MODEL as it is; every other
# one fine-tunes MODEL with gradual magnitude pruning (python/train/train.py
# --init-model --prune-sparsity, Zhu & Gupta's cubic schedule over steps
# 0..PRUNE_END, every PRUNE_EVERY, then STEPS - PRUNE_END steps at the final
# sparsity), exports fp16 with the pruned matrices sparse (section SPRS), and
# scores the C engine on the first LINES lines of the corpus's test set
# (sacreBLEU cased 13a). The one-shot baseline prunes MODEL with
# python/export/prune.py at the same sparsities, with no training. Writes
# OUT_DIR/curve.json, curve.txt and curve.png.
#
# CORPUS picks the model, data and test set:
#   multi30k  models/multi30k-de-en.bin, .carry/data/multi30k, test_2016_flickr
#             (fine-tuning batches of 2,000 target tokens);
#   europarl  MODEL must be given (python/train/train-europarl.sh's export),
#             .carry/data/europarl-it-en through the PREPARED cache, its 3,000
#             test lines (batches of 6,000 tokens, bf16 autocast, as trained).
#
# Environment (all optional): CORPUS (multi30k), MODEL, DATA, PREPARED
# (europarl: .carry/europarl/prepared.pkl.xz), PYTHON (with torch;
# default /usr/bin/python3), PYTHON_EVAL (with sacrebleu and matplotlib;
# default python3; without sacrebleu the hypotheses are kept and BLEU is
# null), TRANSLATE (default build/translate), DEVICE (training: cpu or cuda;
# default cpu), EVAL_DEVICE (translate --device; default cpu), SPARSITIES ("0 50 70 80 90 95"), STEPS (100),
# PRUNE_END (70), PRUNE_EVERY (10), LR (2.5e-4), LINES (1000), BEAM (5),
# WORKERS (2), TENSORS (which matrices: sparse = the ones model.bin may store
# sparse, as prune.py prunes; default sparse), ONESHOT (1: also the baseline).
set -euo pipefail

OUT=${1:?usage: $0 OUT_DIR}
cd "$(dirname "$0")/../.."
CORPUS=${CORPUS:-multi30k}
case "$CORPUS" in
multi30k)
    MODEL=${MODEL:-models/multi30k-de-en.bin}
    DATA=${DATA:-.carry/data/multi30k}
    TEST_SRC=$DATA/test_2016_flickr.de.gz TEST_REF=$DATA/test_2016_flickr.en.gz
    TEST_NAME=test_2016_flickr TITLE="Multi30k de-en"
    data_args=(--data "$DATA" --src-lang de --tgt-lang en)
    tune_args=(--batch-tokens 2000) ;;
europarl)
    MODEL=${MODEL:?CORPUS=europarl needs MODEL (python/train/train-europarl.sh)}
    DATA=${DATA:-.carry/data/europarl-it-en}
    TEST_SRC=$DATA/test.it.gz TEST_REF=$DATA/test.en.gz TEST_NAME=europarl-test
    TITLE="Europarl it-en"
    source python/train/europarl-data.sh
    data_args=("${EUROPARL_DATA_ARGS[@]}" --data "$DATA" \
               --prepared "${PREPARED:-.carry/europarl/prepared.pkl.xz}")
    tune_args=(--batch-tokens 6000 --amp bf16) ;;
*) echo "prune-curve: CORPUS $CORPUS: multi30k or europarl" >&2; exit 2 ;;
esac
PYTHON=${PYTHON:-/usr/bin/python3}
PYTHON_EVAL=${PYTHON_EVAL:-python3}
TRANSLATE=${TRANSLATE:-build/translate}
DEVICE=${DEVICE:-cpu}
EVAL_DEVICE=${EVAL_DEVICE:-cpu}
SPARSITIES=${SPARSITIES:-0 50 70 80 90 95}
STEPS=${STEPS:-100}
PRUNE_END=${PRUNE_END:-70}
PRUNE_EVERY=${PRUNE_EVERY:-10}
LR=${LR:-2.5e-4}
LINES=${LINES:-1000}
BEAM=${BEAM:-5}
WORKERS=${WORKERS:-2}
TENSORS=${TENSORS:-sparse}
ONESHOT=${ONESHOT:-1}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1

case "$DEVICE:$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null)" in
    cpu:*/blas/libblas.so.3) echo "prune-curve: WARNING: libblas.so.3 is the reference BLAS;" \
        "Debian's torch trains ~20x slower with it (apt-get install libopenblas0-pthread)" >&2 ;;
esac
zcat "$TEST_SRC" | sed -n "1,${LINES}p" > "$OUT/test.src"
zcat "$TEST_REF" | sed -n "1,${LINES}p" > "$OUT/test.ref"
LINES=$(wc -l < "$OUT/test.src")

score() {  # name model: translate, score, write OUT/name.json
    local name=$1 model=$2 t0 t1
    t0=$(date +%s.%N)
    local workers=()
    [ "$EVAL_DEVICE" = cpu ] && workers=(--workers "$WORKERS")
    "$TRANSLATE" -m "$model" --device "$EVAL_DEVICE" "${workers[@]}" -b "$BEAM" \
        < "$OUT/test.src" > "$OUT/$name.hyp"
    t1=$(date +%s.%N)
    "$PYTHON_EVAL" - "$OUT/$name.hyp" "$OUT/test.ref" "$OUT/$name.json" "$model" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" <<'EOF'
import json, os, sys
hyp, ref, out, model, seconds = sys.argv[1:6]
hyps = open(hyp, encoding="utf-8").read().splitlines()
refs = open(ref, encoding="utf-8").read().splitlines()
assert len(hyps) == len(refs), (len(hyps), len(refs))
try:
    import sacrebleu
    metric = sacrebleu.metrics.BLEU()
    bleu, signature = round(metric.corpus_score(hyps, [refs]).score, 2), str(metric.get_signature())
except ImportError:  # scored later from the kept .hyp files
    bleu, signature = None, None
json.dump({"bleu": bleu, "signature": signature,
           "lines": len(hyps), "translate_seconds": round(float(seconds), 1),
           "model_bytes": os.path.getsize(model)}, open(out, "w"), indent=1)
print(f"{os.path.basename(out)}: BLEU {bleu} ({len(hyps)} lines, {float(seconds):.0f}s)")
EOF
}

for s in $SPARSITIES; do
    frac=$(awk -v s="$s" 'BEGIN { printf "%.4f", s / 100 }')
    if [ "$s" = 0 ]; then
        score dense "$MODEL"
        continue
    fi
    if [ "$ONESHOT" = 1 ]; then
        "$PYTHON" python/export/prune.py "$MODEL" "$OUT/oneshot-$s.bin" --sparsity "$frac" --fp16
        score "oneshot-$s" "$OUT/oneshot-$s.bin"
    fi
    rm -rf "$OUT/ckpt-$s"
    t0=$(date +%s)
    "$PYTHON" python/train/train.py "${data_args[@]}" "${tune_args[@]}" \
        --save-dir "$OUT/ckpt-$s" --device "$DEVICE" --init-model "$MODEL" --no-validate \
        --max-steps "$STEPS" --lr "$LR" --prune-sparsity "$frac" --prune-start 0 \
        --prune-end "$PRUNE_END" --prune-every "$PRUNE_EVERY" --prune-tensors "$TENSORS" \
        --log-interval 25 | grep -v "pruned to" || true
    echo "$(( $(date +%s) - t0 ))" > "$OUT/ckpt-$s/seconds"
    "$PYTHON" python/export/export.py "$OUT/ckpt-$s/last.pt" -o "$OUT/gradual-$s.bin" --fp16
    score "gradual-$s" "$OUT/gradual-$s.bin"
done

"$PYTHON_EVAL" - "$OUT" "$STEPS" "$PRUNE_END" "$PRUNE_EVERY" "$LR" "$BEAM" "$TENSORS" \
    "$SPARSITIES" "$DEVICE" "$MODEL" "$TEST_NAME" "$TITLE" "${tune_args[*]}" <<'EOF'
import json, os, sys
out, steps, end, every, lr, beam, tensors, sparsities, device, model, test, title, tune = sys.argv[1:14]
def load(name):
    path = os.path.join(out, name + ".json")
    return json.load(open(path)) if os.path.exists(path) else None
rows = []
for s in sparsities.split():
    s = int(s)
    row = {"sparsity": s}
    for kind in ("oneshot", "gradual"):
        r = load("dense" if s == 0 else f"{kind}-{s}")
        if r and r["bleu"] is not None:
            row[kind] = r["bleu"]
            row[kind + "_bytes"] = r["model_bytes"]
    seconds = os.path.join(out, f"ckpt-{s}", "seconds")
    if os.path.exists(seconds):
        row["train_seconds"] = int(open(seconds).read())
    rows.append(row)
rows.sort(key=lambda r: r["sparsity"])
dense = load("dense")
summary = {"model": model, "test": test,
           "lines": dense["lines"] if dense else None, "beam": int(beam),
           "signature": dense["signature"] if dense else None,
           "fine_tune": {"steps": int(steps), "prune_end": int(end), "prune_every": int(every),
                         "lr": float(lr), "tensors": tensors, "device": device,
                         "train_options": tune},
           "rows": rows}
json.dump(summary, open(os.path.join(out, "curve.json"), "w"), indent=1)
lines = [f"{'sparsity':>8} {'one-shot':>9} {'gradual':>8} {'bytes':>10} {'train s':>8}"]
for r in rows:
    lines.append(f"{r['sparsity']:>7}% {r.get('oneshot', float('nan')):9.2f} "
                 f"{r.get('gradual', float('nan')):8.2f} {r.get('gradual_bytes', 0):10d} "
                 f"{r.get('train_seconds', 0):8d}")
open(os.path.join(out, "curve.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
try:
    import matplotlib
except ImportError:
    sys.exit(0)
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 4))
for kind, label, mark in (("gradual", f"gradual pruning + {steps} fine-tuning steps", "o-"),
                          ("oneshot", "one-shot (prune.py, no training)", "s--")):
    pts = [(r["sparsity"], r[kind]) for r in rows if kind in r]
    if len(pts) > 1:  # the one-shot baseline's 0% alone is the dense point
        ax.plot([p[0] for p in pts], [p[1] for p in pts], mark, label=label)
ax.set_xlabel("sparsity of the pruned matrices (%)")
ax.set_ylabel(f"BLEU ({test}, {summary['lines']} lines, beam {beam})")
ax.set_title(f"{title}: BLEU against sparsity (C engine, fp16)")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(os.path.join(out, "curve.png"), dpi=110)
EOF
