#!/usr/bin/env python3
"""plot_sparse.py CURVE_JSON SPEED_JSON OUT_PNG: issue #21's end-to-end figure.

Left: BLEU against sparsity (dev/eval/prune-curve.sh's curve.json, gradual
pruning). Right: the whole decode's speed-up against sparsity over the dense
model at the same precision (dev/bench/sparse.sh's sparse-speed.json): batch
64 target tokens/s, and batch-1 latency (dense p50 / sparse p50), for each
precision and --sparse mode. Above 1: the sparse file decodes faster."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    curve_path, speed_path, out = sys.argv[1:4]
    curve = json.load(open(curve_path))
    speed = json.load(open(speed_path))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    pts = sorted((r["sparsity"], r["gradual"]) for r in curve["rows"] if "gradual" in r)
    left.plot([p[0] for p in pts], [p[1] for p in pts], "o-",
              label=f"gradual pruning + {curve['fine_tune']['steps']} steps")
    dense = [r for r in curve["rows"] if r["sparsity"] == 0 and "gradual" in r]
    if dense:
        left.axhline(dense[0]["gradual"] - 0.5, color="grey", ls=":", label="dense - 0.5 BLEU")
    left.set_xlabel("zeros in the pruned matrices (%)")
    left.set_ylabel(f"BLEU, test_2016_flickr ({curve['lines']} lines, beam {curve['beam']})")
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    base = {r["precision"]: r for r in speed if r["label"] == "dense"}
    for precision, colour in (("fp32", "C0"), ("fp16", "C1")):
        for mode, style in (("auto", "-"), ("on", "--")):
            rows = sorted((int(r["label"][1:]), r) for r in speed
                          if r["label"].startswith("s") and r["precision"] == precision
                          and r["sparse"] == mode)
            b = base.get(precision)
            if not rows or not b:
                continue
            xs = [s for s, _ in rows]
            right.plot(xs, [r["tok_per_s_b64"] / b["tok_per_s_b64"] for _, r in rows],
                       "o" + style, color=colour, label=f"{precision} {mode}, batch 64 tok/s")
            right.plot(xs, [b["latency_p50_ms"] / r["latency_p50_ms"] for _, r in rows],
                       "^" + style, color=colour, alpha=0.6,
                       label=f"{precision} {mode}, batch-1 latency")
    right.axhline(1.0, color="grey", lw=0.8)
    right.set_xlabel("zeros in the pruned matrices (%)")
    right.set_ylabel("speed-up over the dense model, same precision")
    right.grid(alpha=0.3)
    right.legend(fontsize=7)
    gpu = speed[0].get("gpu") if speed else ""
    fig.suptitle(f"Multi30k de-en, beam 5: pruned models on the CUDA engine ({gpu})")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
