#!/usr/bin/env bash
# ensemble.sh: a 2-model ensemble against its members (docs/decoding.md,
# "Ensembles"): dev/eval/speed's throughput of A, B and A + B (-m A -m B) at
# one batch size (default 64), beam 5, the median of 3 runs each, and the
# ensemble's decode time over A's (the target is <= 2.1x); then the test set
# translated by each at that batch for BLEU (sacreBLEU, when installed) and
# the lines the ensemble shares with each member.
#
#   dev/bench/ensemble.sh BUILD_DIR MODEL_A MODEL_B SRC TEST_SRC TEST_REF OUT_DIR [BATCH]
#
# DEVICE (env, default cuda); PYTHON (env, default python3: with torch, which
# dev/eval/speed's tokenizer imports); EXTRA_OPTIONS (env): more translate
# options for every run (e.g. "--precision fp32"). Writes OUT_DIR/speed-{a,b,ab}.json,
# OUT_DIR/test-{a,b,ab}.txt and OUT_DIR/ensemble.json; prints a table.
set -euo pipefail
build=$1 model_a=$2 model_b=$3 src=$4 test_src=$5 test_ref=$6 out=$7
batch=${8:-64}
device=${DEVICE:-cuda}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
gzip -cdf "$test_src" > "$out/test-src.txt"  # translate reads plain text; a .gz or plain file
read -r -a extra <<< "${EXTRA_OPTIONS:-}"
engine_extra=()
for o in "${extra[@]}"; do engine_extra+=("--engine-option=$o"); done
for name in a b ab; do
    case $name in
        a) first=$model_a models=(-m "$model_a") more=() ;;
        b) first=$model_b models=(-m "$model_b") more=() ;;
        ab) first=$model_a models=(-m "$model_a" -m "$model_b") more=("--engine-option=--model=$model_b") ;;
    esac
    "${PYTHON:-python3}" "$here/dev/eval/speed" -m "$first" --src "$src" --beams 5 --batch-sizes "$batch" \
        --repeat 3 --latency-lines 0 --device "$device" --translate "$build/translate" \
        "${more[@]}" "${engine_extra[@]}" --json "$out/speed-$name.json" > "$out/speed-$name.txt"
    "$build/translate" "${models[@]}" --device "$device" --beam 5 --batch-size "$batch" --quiet \
        "${extra[@]}" -i "$out/test-src.txt" -o "$out/test-$name.txt"
    # BLEU where sacreBLEU is installed (dev/eval/bleu scores a file)
    "${PYTHON:-python3}" "$here/dev/eval/bleu" --hyp "$out/test-$name.txt" --ref "$test_ref" \
        --json "$out/bleu-$name.json" > /dev/null 2>&1 || rm -f "$out/bleu-$name.json"
done
python3 - "$out" "$batch" <<'PY'
import json, os, sys
out, batch = sys.argv[1], int(sys.argv[2])
def bleu(name):
    path = os.path.join(out, f"bleu-{name}.json")
    return json.load(open(path))["bleu"] if os.path.exists(path) else None
def lines(name):
    with open(os.path.join(out, f"test-{name}.txt"), encoding="utf-8") as f:
        return f.read().splitlines()
def speed(name):
    with open(os.path.join(out, f"speed-{name}.json")) as f:
        return next(r for r in json.load(f)["records"] if r.get("impl") == "engine")
hyps = {name: lines(name) for name in ("a", "b", "ab")}
base = speed("a")["seconds"]
records = []
print(f"| models | batch | sentences/s | seconds | x A's time | BLEU | lines = A | lines = B |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for name, label in (("a", "A"), ("b", "B"), ("ab", "A + B")):
    r = speed(name)
    rec = {"models": label, "batch_size": batch, "sents_per_s": r["sent_per_s"],
           "seconds": r["seconds"], "time_over_a": r["seconds"] / base, "bleu": bleu(name),
           "same_as_a": sum(x == y for x, y in zip(hyps[name], hyps["a"])),
           "same_as_b": sum(x == y for x, y in zip(hyps[name], hyps["b"])),
           "lines": len(hyps[name])}
    records.append(rec)
    print(f"| {label} | {batch} | {rec['sents_per_s']:,.0f} | {rec['seconds']:.4f} | "
          f"{rec['time_over_a']:.2f} | "
          f"{'%.2f' % rec['bleu'] if rec['bleu'] is not None else '-'} | "
          f"{rec['same_as_a']}/{rec['lines']} | {rec['same_as_b']}/{rec['lines']} |")
with open(os.path.join(out, "ensemble.json"), "w") as f:
    json.dump(records, f, indent=1)
PY
