#!/usr/bin/env bash
# sparse.sh BUILD SRC OUT LABEL=MODEL...: whole-decode speed of pruned models
# with the CUDA engine's SpMM (docs/sparse.md, "End to end"), side by side in
# one run. For each LABEL=MODEL (a dense model, e.g. dense=models/multi30k-
# de-en.bin, and files with sparse matrices from dev/eval/prune-curve.sh), each
# precision in PRECISIONS and each --sparse mode in MODES (a dense model runs
# once a precision, as "dense"), dev/eval/speed times `translate` over the
# first LINES lines of SRC: target tokens/s at each batch of BATCHES (the
# engine's in-process time) and the batch-1 latency over LATENCY_LINES
# lines. The configurations run in turn, ROUNDS times over (one run each a
# round, so a drift of the machine's speed spreads over all of them), and
# each figure is the median of its rounds. Writes
# OUT/speed-LABEL-PRECISION-MODE-rROUND.json, and OUT/sparse-speed.json (one
# record a configuration, medians) for dev/bench/plot_sparse.py.
#
# Environment: PRECISIONS ("fp32 fp16"), MODES ("off auto on"), BATCHES (64),
# LINES (3000), ROUNDS (3), LATENCY_LINES (100), BEAM (5).
set -euo pipefail
build=${1:?usage: $0 BUILD SRC OUT LABEL=MODEL...}
src=${2:?source file}
out=${3:?output folder}
shift 3
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
gzip -cdf "$src" | head -n "${LINES:-3000}" > "$out/src.txt"
configs=()   # label|model|precision|mode
for spec in "$@"; do
    label=${spec%%=*}
    model=${spec#*=}
    modes=${MODES:-off auto on}
    # A dense file has nothing to multiply sparse (--sparse on is refused).
    "$build/translate" -m "$model" --device cuda --sparse on --quiet < /dev/null \
        > /dev/null 2>&1 || modes=dense
    for p in ${PRECISIONS:-fp32 fp16}; do
        for mode in $modes; do configs+=("$label|$model|$p|$mode"); done
    done
done
for round in $(seq "${ROUNDS:-3}"); do
    for c in "${configs[@]}"; do
        IFS='|' read -r label model p mode <<< "$c"
        opts=("--engine-option=--precision=$p")
        [ "$mode" = dense ] || opts+=("--engine-option=--sparse=$mode")
        name="$label-$p-$mode-r$round"
        python3 "$here/dev/eval/speed" -m "$model" --src "$out/src.txt" --beams "${BEAM:-5}" \
            --batch-sizes "${BATCHES:-64}" --repeat 1 --latency-lines "${LATENCY_LINES:-100}" \
            --device cuda --translate "$build/translate" "${opts[@]}" \
            --json "$out/speed-$name.json" > "$out/speed-$name.txt" 2>&1
        echo "$name: $(grep -E '^engine' "$out/speed-$name.txt" | tr -s ' ' | tr '\n' ';')"
    done
done
python3 - "$out" <<'PY'
import collections, glob, json, os, statistics, sys
out = sys.argv[1]
runs = collections.defaultdict(list)
for path in sorted(glob.glob(os.path.join(out, "speed-*-r*.json"))):
    name = os.path.basename(path)[len("speed-"):-len(".json")]
    label, precision, mode, _ = name.rsplit("-", 3)
    runs[(label, precision, mode)].append(json.load(open(path)))
rows = []
for (label, precision, mode), docs in sorted(runs.items()):
    row = {"label": label, "precision": precision, "sparse": mode, "rounds": len(docs),
           "gpu": docs[0]["meta"].get("gpu")}
    values = collections.defaultdict(list)
    for d in docs:
        for r in d["records"]:
            if r.get("kind") == "latency":
                values["latency_p50_ms"].append(r["p50_ms"])
            else:
                values[f"tok_per_s_b{r['batch_size']}"].append(r["tgt_tok_per_s"])
    for key, v in values.items():
        row[key] = statistics.median(v)
        row[key + "_runs"] = v
    rows.append(row)
json.dump(rows, open(os.path.join(out, "sparse-speed.json"), "w"), indent=1)
for r in rows:
    print(f"{r['label']:>6} {r['precision']} {r['sparse']:>5}: "
          + " ".join(f"{k} {v:,.2f}" for k, v in r.items() if k.startswith(("tok_", "lat"))
                     and not k.endswith("_runs")))
PY
