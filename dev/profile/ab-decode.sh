#!/usr/bin/env bash
# ab-decode.sh: two builds of the engine side by side on the device, on the
# same lines, runs interleaved (A, B, A, B, ...) so that clock drift hits both.
# For each setting and beam: the median decode seconds of REPEATS runs of
# each (--timing: the engine's clock, model load not in it), their ratio A/B,
# the output layer's GPU time of one --stats run each, and whether the two
# translations are identical. Prints a markdown table (also $OUT/ab.md).
# Env: A, B (translate binaries), MODEL, SRC (gzip source), LINES (600),
# BATCH (64), BEAMS ("5 12"), REPEATS (5), SETTINGS (';'-separated option
# strings; an empty one is the full softmax).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$root/dev/carry-env.sh"
use_carried_deps "$root"
a="${A:?A: the first translate binary}" b="${B:?B: the second translate binary}"
model="${MODEL:?MODEL: the model file}" src="${SRC:?SRC: gzip source text}"
lines="${LINES:-600}" batch="${BATCH:-64}" beams="${BEAMS:-5 12}" repeats="${REPEATS:-5}"
settings="${SETTINGS-;--top-words 10000;--lsh 8,3,500,2000,6 --lsh-share sentence}"
dest="${OUT:-out}"
mkdir -p "$dest"
work="$(mktemp -d)"
zcat "$src" | head -"$lines" >"$work/src"

run() { # binary beam opts tag (opts end with --timing or --stats and a file)
    # shellcheck disable=SC2086
    "$1" -m "$model" --device cuda --beam "$2" --batch-size "$batch" --no-progress $3 \
        <"$work/src" >"$work/$4.out" 2>"$work/$4.err" ||
        { echo "failed: $1 --beam $2 $3" >&2; tail -3 "$work/$4.err" >&2; }
}

{
    echo "| setting | beam | A decode s | B decode s | A/B | A out-layer ms | B out-layer ms | same output |"
    echo "|---|---:|---:|---:|---:|---:|---:|---|"
} >"$dest/ab.md"
IFS=';' read -r -a list <<<"$settings"
for beam in $beams; do
    n=0
    for opts in "${list[@]}"; do
        n=$((n + 1))
        for rep in $(seq "$repeats"); do
            run "$a" "$beam" "$opts --timing $work/a$beam-$n-$rep.json" "a$beam-$n-$rep"
            run "$b" "$beam" "$opts --timing $work/b$beam-$n-$rep.json" "b$beam-$n-$rep"
        done
        run "$a" "$beam" "$opts --stats $work/sa$beam-$n.json" "sa$beam-$n"
        run "$b" "$beam" "$opts --stats $work/sb$beam-$n.json" "sb$beam-$n"
        same=no
        cmp -s "$work/sa$beam-$n.out" "$work/sb$beam-$n.out" && same=yes
        python3 - "${opts:-full softmax}" "$beam" "$same" "$work" "$beam-$n" >>"$dest/ab.md" <<'EOF'
import glob, json, statistics, sys
opts, beam, same, work, key = sys.argv[1:]
def med(side):
    runs = [json.load(open(p)) for p in glob.glob(f"{work}/{side}{key}-*.json")]
    return statistics.median(r["decode_seconds"] for r in runs) if runs else float("nan")
def layer(side):
    try:
        return json.load(open(f"{work}/s{side}{key}.json")).get("output_layer_ms")
    except (OSError, ValueError):
        return None
a, b = med("a"), med("b")
la, lb = layer("a"), layer("b")
f = lambda v: "-" if v is None else f"{v:.1f}"
print(f"| `{opts}` | {beam} | {a:.4f} | {b:.4f} | {a / b:.3f} | {f(la)} | {f(lb)} | {same} |")
EOF
    done
done
cat "$dest/ab.md"
