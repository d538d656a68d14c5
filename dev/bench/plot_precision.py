#!/usr/bin/env python3
"""plot_precision.py: target tokens/s against batch size, a line per precision
and model, from dev/bench/precision.sh's speed JSONs (dev/eval/speed output).

  dev/bench/plot_precision.py OUT.png speed-MODEL-PRECISION.json ...

The model and precision of each file come from its name (speed-<model>-<p>.json)."""
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = {"fp32": "o-", "tf32x2": "s-", "bf16": "^-", "fp16": "v-"}
    gpu = ""
    for path in sys.argv[2:]:
        m = re.match(r"speed-(.+)-(fp32|tf32x2|bf16|fp16)\.json$", os.path.basename(path))
        if not m:
            sys.exit(f"{path}: not speed-<model>-<precision>.json")
        model, precision = m.groups()
        with open(path) as f:
            data = json.load(f)
        gpu = data["meta"].get("gpu", gpu)
        rows = sorted((r["batch_size"], r["tgt_tok_per_s"]) for r in data["records"]
                      if "tgt_tok_per_s" in r)
        ax.plot([b for b, _ in rows], [t / 1e3 for _, t in rows], styles[precision],
                label=f"{model}, {precision}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size (sentences), beam 5")
    ax.set_ylabel("target tokens/s (thousands)")
    ax.set_title(f"translate throughput by GEMM precision ({gpu})")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=120)


if __name__ == "__main__":
    main()
