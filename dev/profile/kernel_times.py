#!/usr/bin/env python3
"""kernel_times.py: per-kernel time table from `ncu --csv --metrics
gpu__time_duration.sum` output (one or more CSV files). Prints, per file, the
kernels sorted by total time: launches, total us, mean us, share of the sum.
ncu serializes kernels, so the sum is GPU busy time without launch gaps;
compare it with the wall time of the same work to see the gaps."""
import csv
import sys
from collections import defaultdict


def short(name):
    name = name.split("(")[0]
    return name if len(name) <= 60 else name[:57] + "..."


def table(path):
    totals = defaultdict(float)
    counts = defaultdict(int)
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "ns")
        us = value / 1000.0 if unit in ("ns", "nsecond") else value
        if unit in ("ms", "msecond"):
            us = value * 1000.0
        k = short(row["Kernel Name"])
        totals[k] += us
        counts[k] += 1
    s = sum(totals.values())
    print(f"## {path}: {sum(counts.values())} launches, {s:.1f} us kernel time")
    print(f"| kernel | launches | total us | mean us | share |")
    print(f"|---|---|---|---|---|")
    for k in sorted(totals, key=totals.get, reverse=True):
        print(f"| {k} | {counts[k]} | {totals[k]:.1f} | {totals[k] / counts[k]:.2f} | "
              f"{100 * totals[k] / s:.1f}% |")
    print()


if __name__ == "__main__":
    for p in sys.argv[1:]:
        table(p)
