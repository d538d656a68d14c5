#!/usr/bin/env bash
# sparse.sh BUILD SRC OUT LABEL=MODEL...: whole-decode speed of pruned models
# with the CUDA engine's SpMM (docs/sparse.md, "End to end"), side by side in
# one run. For each LABEL=MODEL (a dense model, e.g. dense=models/multi30k-
# de-en.bin, and files with sparse matrices from dev/eval/prune-curve.sh), each
# precision in PRECISIONS and each --sparse mode in MODES (a dense model runs
# once a precision, as "dense"), dev/eval/speed times `translate` over the
# first LINES lines of SRC: target tokens/s at each batch of BATCHES (median of
# REPEAT runs, the engine's in-process time) and the batch-1 latency over
# LATENCY_LINES lines. Writes OUT/speed-LABEL-PRECISION-MODE.json, and
# OUT/sparse-speed.json (one record a run) for dev/bench/plot_sparse.py.
#
# Environment: PRECISIONS ("fp32 fp16"), MODES ("off auto on"), BATCHES (64),
# LINES (3000), REPEAT (3), LATENCY_LINES (100), BEAM (5).
set -euo pipefail
build=${1:?usage: $0 BUILD SRC OUT LABEL=MODEL...}
src=${2:?source file}
out=${3:?output folder}
shift 3
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
gzip -cdf "$src" | head -n "${LINES:-3000}" > "$out/src.txt"
for spec in "$@"; do
    label=${spec%%=*}
    model=${spec#*=}
    for p in ${PRECISIONS:-fp32 fp16}; do
        modes=${MODES:-off auto on}
        # A dense file has nothing to multiply sparse (--sparse on is refused).
        "$build/translate" -m "$model" --device cuda --sparse on --quiet < /dev/null \
            > /dev/null 2>&1 || modes=dense
        for mode in $modes; do
            opts=("--engine-option=--precision=$p")
            [ "$mode" = dense ] || opts+=("--engine-option=--sparse=$mode")
            python3 "$here/dev/eval/speed" -m "$model" --src "$out/src.txt" --beams "${BEAM:-5}" \
                --batch-sizes "${BATCHES:-64}" --repeat "${REPEAT:-3}" \
                --latency-lines "${LATENCY_LINES:-100}" --device cuda \
                --translate "$build/translate" "${opts[@]}" \
                --json "$out/speed-$label-$p-$mode.json" > "$out/speed-$label-$p-$mode.txt"
            echo "$label $p $mode: $(grep -E '^engine' "$out/speed-$label-$p-$mode.txt" | tr -s ' ' | tr '\n' ';')"
        done
    done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "speed-*.json"))):
    label, precision, mode = os.path.basename(path)[len("speed-"):-len(".json")].rsplit("-", 2)
    d = json.load(open(path))
    row = {"label": label, "precision": precision, "sparse": mode, "gpu": d["meta"].get("gpu")}
    for r in d["records"]:
        if r.get("kind") == "latency":
            row["latency_p50_ms"] = r["p50_ms"]
        else:
            row[f"tok_per_s_b{r['batch_size']}"] = r["tgt_tok_per_s"]
    rows.append(row)
json.dump(rows, open(os.path.join(out, "sparse-speed.json"), "w"), indent=1)
PY
