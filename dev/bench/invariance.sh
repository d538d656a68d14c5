#!/usr/bin/env bash
# invariance.sh: batch invariance of `translate` end to end. One input is
# translated in several batchings at each precision, and every output is
# compared byte for byte with batch 1's. Scores, n-best scores and token
# scores print with %.9g, so a line whose score differs in any bit differs.
#
#   dev/bench/invariance.sh TRANSLATE MODEL INPUT OUTDIR [PRECISIONS]
#
# PRECISIONS: comma list (default fp16,fp32). NMT_INV_EXTRA: extra options
# for every run (e.g. "--n-best 3 --alignment --token-scores");
# NMT_INV_CONFIGS: the batchings, NAME=OPTIONS separated by ';' (default
# below; add "devices=--devices 0,1 --batch-size 64" on a two-GPU host).
# Prints one row a precision and batching: the lines whose text differs
# from batch 1's, the lines that differ at all, the decode seconds
# (--timing); outputs and timings stay in OUTDIR.
set -euo pipefail
translate=$1 model=$2 input=$3 outdir=$4
precisions=${5:-fp16,fp32}
extra=${NMT_INV_EXTRA:-}
configs=${NMT_INV_CONFIGS:-"b7=--batch-size 7;b64=--batch-size 64;b1024=--batch-size 1024;b2048=--batch-size 2048;tokens5000=--batch-type tokens --batch-size 5000;b64-nographs=--batch-size 64 --cuda-graphs off --warmup off --check-every 4 --maxi-batch 100"}
mkdir -p "$outdir"
lines=$(wc -l <"$input")
decode_seconds() { sed -n 's/.*"decode_seconds": \([0-9.]*\).*/\1/p' "$1"; }
# The text of a line: the fields after the score (--scores prints "SCORE<TAB>TEXT").
text_of() { cut -f2- "$1"; }
printf '%-6s %-14s %8s %12s %12s %9s\n' precision batching lines text_differ line_differs seconds
IFS=',' read -r -a precs <<<"$precisions"
IFS=';' read -r -a runs <<<"$configs"
for p in "${precs[@]}"; do
    ref="$outdir/$p-b1.out"
    # shellcheck disable=SC2086
    "$translate" -m "$model" --quiet --precision "$p" --scores $extra --batch-size 1 \
        --timing "$outdir/$p-b1.json" <"$input" >"$ref"
    printf '%-6s %-14s %8d %12s %12s %9s\n' "$p" b1 "$lines" - - "$(decode_seconds "$outdir/$p-b1.json")"
    for run in "${runs[@]}"; do
        name=${run%%=*} opts=${run#*=}
        out="$outdir/$p-$name.out"
        # shellcheck disable=SC2086
        "$translate" -m "$model" --quiet --precision "$p" --scores $extra $opts \
            --timing "$outdir/$p-$name.json" <"$input" >"$out"
        texts=$(paste -d '\n' <(text_of "$ref") <(text_of "$out") | paste - - | awk -F'\t' '{
            n = NF / 2; same = 1; for (i = 1; i <= n; i++) if ($i != $(i + n)) same = 0; if (!same) d++ }
            END { print d + 0 }')
        whole=$(paste -d '\n' "$ref" "$out" | paste - - | awk -F'\t' '{
            n = NF / 2; same = 1; for (i = 1; i <= n; i++) if ($i != $(i + n)) same = 0; if (!same) d++ }
            END { print d + 0 }')
        printf '%-6s %-14s %8d %12d %12d %9s\n' "$p" "$name" "$(wc -l <"$out")" "$texts" "$whole" \
            "$(decode_seconds "$outdir/$p-$name.json")"
    done
done
