#!/usr/bin/env bash
# precision.sh: the CUDA GEMM precisions side by side (docs/performance.md,
# "Precision"): for each of fp32, tf32x2, bf16 and fp16, dev/eval/speed's
# throughput over SRC (beam 5, medians of 3 runs at each batch size) and
# batch-1 latency, then the test set translated at batch 64 for BLEU
# (sacreBLEU, when installed) and line agreement with fp32.
#
#   dev/bench/precision.sh BUILD_DIR MODEL SRC TEST_SRC TEST_REF OUT_DIR [BATCHES] [LABEL]
#
# BATCHES: comma-separated (default 64,256,1024); EXTRA_OPTIONS (env): more
# translate options for every run (e.g. "--lsh 8,3,500,2000,6"); LATENCY_LINES
# (env, default 150; 0 skips latency); PRECISIONS (env, default "fp32 tf32x2
# bf16 fp16"; fp32 is the agreement baseline). tf32x2 needs weights exact
# in TF32 (an fp16 model file): it is skipped, with the reason, otherwise.
# Writes OUT_DIR/speed-<label>-<precision>.json, OUT_DIR/test-<label>-<precision>.txt
# and OUT_DIR/precision-<label>.json (one record a precision); prints a table.
# dev/bench/plot_precision.py draws tokens/s against batch size from the
# speed JSONs.
set -euo pipefail
build=$1 model=$2 src=$3 test_src=$4 test_ref=$5 out=$6
batches=${7:-64,256,1024}
label=${8:-$(basename "$model" .bin)}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
gzip -cdf "$test_src" > "$out/test-src.txt"  # translate reads plain text; a .gz or plain file
read -r -a extra <<< "${EXTRA_OPTIONS:-}"
engine_extra=()
for o in "${extra[@]}"; do engine_extra+=("--engine-option=$o"); done
for p in ${PRECISIONS:-fp32 tf32x2 bf16 fp16}; do
    if ! "$build/translate" -m "$model" --device cuda --precision "$p" --quiet "${extra[@]}" \
            < /dev/null > /dev/null 2> "$out/check-$label-$p.err"; then
        echo "$label $p: skipped: $(tail -1 "$out/check-$label-$p.err")"
        continue
    fi
    python3 "$here/dev/eval/speed" -m "$model" --src "$src" --beams 5 --batch-sizes "$batches" \
        --repeat 3 --latency-lines "${LATENCY_LINES:-150}" --device cuda \
        --translate "$build/translate" --engine-option="--precision=$p" "${engine_extra[@]}" \
        --json "$out/speed-$label-$p.json" > "$out/speed-$label-$p.txt"
    "$build/translate" -m "$model" --device cuda --precision "$p" --beam 5 --batch-size 64 \
        --quiet "${extra[@]}" -i "$out/test-src.txt" -o "$out/test-$label-$p.txt"
done
python3 - "$out" "$label" "$test_ref" <<'PY'
import gzip, json, os, sys
out, label, ref_path = sys.argv[1:4]
opener = gzip.open if ref_path.endswith(".gz") else open
with opener(ref_path, "rt", encoding="utf-8") as f:
    refs = f.read().splitlines()
try:
    import sacrebleu
except ImportError:
    sacrebleu = None
def lines(p):
    with open(os.path.join(out, f"test-{label}-{p}.txt"), encoding="utf-8") as f:
        return f.read().splitlines()
base = lines("fp32")
records = []
print(f"| {label} | batch | sentences/s | target tok/s | latency p50 ms | BLEU | lines = fp32 |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for p in ("fp32", "tf32x2", "bf16", "fp16"):
    speed = os.path.join(out, f"speed-{label}-{p}.json")
    if not os.path.exists(speed):
        continue
    with open(speed) as f:
        rows = json.load(f)["records"]
    hyp = lines(p)
    bleu = sacrebleu.corpus_bleu(hyp, [refs]).score if sacrebleu else None
    same = sum(a == b for a, b in zip(base, hyp))
    lat = next((r for r in rows if "p50_ms" in r), None)
    for r in rows:
        if "tgt_tok_per_s" not in r:
            continue
        tps = r["tgt_tok_per_s"]
        rec = {"model": label, "precision": p, "batch_size": r["batch_size"],
               "sents_per_s": r["sent_per_s"], "tok_per_s": tps,
               "latency_p50_ms": lat.get("p50_ms") if lat else None,
               "bleu": bleu, "same_as_fp32": same, "lines": len(hyp)}
        records.append(rec)
        p50 = "%.2f" % rec["latency_p50_ms"] if rec["latency_p50_ms"] is not None else "-"
        print(f"| {p} | {rec['batch_size']} | {rec['sents_per_s'] or 0:,.0f} | {tps:,.0f} | "
              f"{p50} | "
              f"{'%.2f' % bleu if bleu is not None else '-'} | {same}/{len(hyp)} |")
with open(os.path.join(out, f"precision-{label}.json"), "w") as f:
    json.dump(records, f, indent=1)
PY
