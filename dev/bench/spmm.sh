#!/usr/bin/env bash
# spmm.sh: the sparse-product sweep (bench_spmm) and its plot (docs/sparse.md).
#
#   dev/bench/spmm.sh BUILD_DIR [OUT_DIR]
#
# Runs BUILD_DIR/bench_spmm once per shape (W n x k) with the default methods
# (ours with AUTO's kernel, fp32 and fp16 values; cuSPARSE CSR fp32; cuBLAS
# sgemm, TF32 and bf16 on W dense) over the row counts and sparsities below,
# one process a shape so each stays within a device call's time limit.
# Writes to OUT_DIR (default $OUT, else /tmp):
#   spmm.jsonl  the JSON lines (bench_spmm's header says what each field is)
#   spmm.txt    bench_spmm's tables (stderr)
#   spmm.md     a markdown table: times and speed-ups, for docs/sparse.md
#   spmm.png    speed-up over dense fp32 sgemm against sparsity, one panel a
#               shape and row count: ours fp32 and fp16 and cuSPARSE as lines,
#               the TF32 and bf16 GEMMs flat (they do not depend on sparsity)
# Env: SPMM_SHAPES (space-separated NxK; default the decoder at H = 1024,
# E = 512, V = 32000), SPMM_ROWS, SPMM_SPARSITY (comma lists),
# NMT_BENCH_REPEATS and NMT_BENCH_BATCH (bench_util.h; defaults 20 and 20).
# Exits 1 when bench_spmm found a result of ours outside the tolerance.
set -euo pipefail
build=${1:?usage: dev/bench/spmm.sh BUILD_DIR [OUT_DIR]}
out=${2:-${OUT:-/tmp}}
shapes=${SPMM_SHAPES:-4096x2560 4096x2048 1024x2048 32000x1024}
rows=${SPMM_ROWS:-5,20,80,320,1280,5120}
sparsity=${SPMM_SPARSITY:-0.5,0.7,0.8,0.9,0.95,0.98}
mkdir -p "$out"
: >"$out/spmm.jsonl"
: >"$out/spmm.txt"
status=0
for shape in $shapes; do
    echo "== bench_spmm --shapes $shape --rows $rows --sparsity $sparsity" | tee -a "$out/spmm.txt"
    start=$SECONDS
    "$build/bench_spmm" --shapes "$shape" --rows "$rows" --sparsity "$sparsity" \
        >>"$out/spmm.jsonl" 2>>"$out/spmm.txt" || status=1
    echo "   $shape: $((SECONDS - start)) s" | tee -a "$out/spmm.txt"
done

python3 - "$out/spmm.jsonl" "$out/spmm.md" "$out/spmm.png" <<'PY'
import collections, json, sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"bench":"spmm"')]
copy = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"bench":"copy"')]
# times[(n, k, rows)][sparsity or None][(method, values)] = us
times = collections.defaultdict(lambda: collections.defaultdict(dict))
for r in rows:
    times[(r["n"], r["k"], r["rows"])][r["sparsity"]][(r["method"], r["values"])] = r
dense_keys = [("sgemm", "fp32"), ("tf32", "tf32"), ("bf16", "bf16")]
sparse_keys = [("auto", "fp32"), ("auto", "fp16"), ("cusparse", "fp32")]

with open(sys.argv[2], "w") as md:
    if copy:
        md.write(f"Device: {copy[0]['device']}, copy bandwidth {copy[0]['gbps']:.0f} GB/s.\n\n")
    md.write("| W | rows | zeros | ours fp32 us | ours fp16 us | cuSPARSE us | sgemm us | "
             "TF32 us | bf16 us | fp32 floor us | ours fp32 vs cuSPARSE | vs sgemm | vs TF32 "
             "| vs bf16 | ours fp16 vs bf16 |\n")
    md.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for (n, k, m), by_s in sorted(times.items()):
        dense = by_s.get(None, {})
        for s in sorted(x for x in by_s if x is not None):
            t = by_s[s]
            us = lambda key, src=t: src[key]["median_us"] if key in src else float("nan")
            o32, o16, csp = (us(key) for key in sparse_keys)
            sg, tf, bf = (us(key, dense) for key in dense_keys)
            floor = t[("auto", "fp32")]["floor_us"] if ("auto", "fp32") in t else float("nan")
            md.write(f"| {n}x{k} | {m} | {100 * s:.0f}% | {o32:.2f} | {o16:.2f} | {csp:.2f} | "
                     f"{sg:.2f} | {tf:.2f} | {bf:.2f} | {floor:.2f} | {csp / o32:.2f}x | "
                     f"{sg / o32:.2f}x | {tf / o32:.2f}x | {bf / o32:.2f}x | {bf / o16:.2f}x |\n")
print(f"wrote {sys.argv[2]}")

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker
except ImportError:
    sys.exit("spmm.sh: no matplotlib: the table is written, the plot is not")
shapes = sorted({(n, k) for (n, k, _) in times})
counts = sorted({m for (_, _, m) in times})
fig, axes = plt.subplots(len(shapes), len(counts), squeeze=False, sharex=True,
                         figsize=(3.2 * len(counts), 2.8 * len(shapes)))
styles = {("auto", "fp32"): ("ours fp32", "C0", "o-"), ("auto", "fp16"): ("ours fp16", "C1", "s-"),
          ("cusparse", "fp32"): ("cuSPARSE fp32", "C2", "^-")}
flat = {("tf32", "tf32"): ("cuBLAS TF32", "C3"), ("bf16", "bf16"): ("cuBLAS bf16", "C4")}
for a, (n, k) in enumerate(shapes):
    for b, m in enumerate(counts):
        ax = axes[a][b]
        by_s = times.get((n, k, m), {})
        dense = by_s.get(None, {})
        base = dense.get(("sgemm", "fp32"), {}).get("median_us")
        if base:
            spars = sorted(x for x in by_s if x is not None)
            for key, (label, color, style) in styles.items():
                pts = [(100 * s, base / by_s[s][key]["median_us"]) for s in spars if key in by_s[s]]
                if pts:
                    ax.plot(*zip(*pts), style, color=color, label=label, markersize=3)
            ax.axhline(1.0, color="gray", linestyle="--", label="cuBLAS sgemm fp32")
            for key, (label, color) in flat.items():
                if key in dense:
                    ax.axhline(base / dense[key]["median_us"], color=color, linestyle=":",
                               label=label)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(f"W {n}x{k}, {m} rows", fontsize=8)
        ax.tick_params(labelsize=7)
        if b == 0:
            ax.set_ylabel("speed-up over sgemm", fontsize=8)
        if a == len(shapes) - 1:
            ax.set_xlabel("zeros in W (%)", fontsize=8)
handles, labels = axes[0][0].get_legend_handles_labels()
ncol = 6 if len(counts) >= 3 else 3
fig.legend(handles, labels, loc="upper center", ncol=ncol, fontsize=8)
fig.tight_layout(rect=(0, 0, 1, 1 - (0.3 * (6 // ncol) + 0.2) / fig.get_figheight()))
fig.savefig(sys.argv[3], dpi=120)
print(f"wrote {sys.argv[3]}")
PY
exit $status
