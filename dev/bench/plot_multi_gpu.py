#!/usr/bin/env python3
"""plot_multi_gpu.py: translate's throughput against GPU count, from
dev/bench/multi_gpu.sh's multi_gpu.jsonl (its summary records: medians).

  dev/bench/plot_multi_gpu.py multi_gpu.jsonl OUT.png

Lines: in one process (--devices) and through mpirun (--mpi, a rank a GPU),
each by wall time (the whole process) and by the translation itself
(translate --progress's rate; under mpirun rank 0's rate times the ranks,
an estimate, dashed); the one-GPU rate times N as a dotted line."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        records = [json.loads(line) for line in f if line.strip()]
    summary = [r for r in records if r.get("record") == "summary"]
    meta = next((r for r in records if r.get("record") == "meta"), {})
    if not summary:
        sys.exit(f"{sys.argv[1]}: no summary records")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = [("devices", "wall_lines_per_s", "o-", "one process (--devices), wall"),
              ("devices", "pipeline_lines_per_s", "s-", "one process, translation only"),
              ("mpi", "wall_lines_per_s", "^-", "mpirun (--mpi), wall"),
              ("mpi", "pipeline_lines_per_s", "v--", "mpirun, rank 0 x ranks (est.)")]
    counts = sorted({r["gpus"] for r in summary})
    for mode, key, style, label in series:
        rows = sorted((r["gpus"], r[key]) for r in summary
                      if (r["mode"] == mode or (mode == "mpi" and r["mode"] == "devices"
                                                and r["gpus"] == 1))
                      and r.get(key))
        if mode == "mpi" and len(rows) < 2:
            continue
        ax.plot([g for g, _ in rows], [v / 1e3 for _, v in rows], style, label=label)
    one = next((r for r in summary if r["mode"] == "devices" and r["gpus"] == 1), None)
    if one and one.get("pipeline_lines_per_s"):
        ax.plot(counts, [one["pipeline_lines_per_s"] * g / 1e3 for g in counts], ":",
                color="grey", label="1 GPU x N")
    for r in summary:
        if r["gpus"] > 1 and r.get("pipeline_speedup"):
            ax.annotate(f"{r['pipeline_speedup']:.2f}x", (r["gpus"], r["pipeline_lines_per_s"] / 1e3),
                        textcoords="offset points", xytext=(6, -10 if r["mode"] == "mpi" else 4),
                        fontsize=8)
    ax.set_xticks(counts)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("lines/s (thousands), beam 5")
    title = "translate on several GPUs of one host"
    if meta:
        title += (f"\n{meta['gpu']}, {meta['lines']:,} lines, beam {meta['beam']}, "
                  f"batch {meta['batch_size']}, {meta['precision']}, commit {meta['commit']}")
    ax.set_title(title, fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
