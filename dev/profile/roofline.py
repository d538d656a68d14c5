#!/usr/bin/env python3
"""roofline.py: one decoder step's kernels against the GPU's peaks, from the
CSV that dev/profile/roofline.sh has ncu write. Per kernel name: launches a
step, microseconds a step, DRAM and L2 bytes a step and ncu's fraction of
each peak, tensor-pipe activity, and the bound (the largest fraction). The
step's GEMM FLOPs come from the model's shapes (--rows, --emb, --hidden,
--vocab; the default is the shipped model) and give the floor line.

  roofline.py --rows N FILE.csv [--tensor-peak FLOP/S]
"""
import argparse
import csv
from collections import defaultdict


def short(name):
    name = name.split("(")[0].split("<")[0]
    return name if len(name) <= 48 else name[:45] + "..."


def read(path):
    kernels = defaultdict(dict)  # launch id -> metric -> value
    names = {}
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for row in csv.DictReader(lines):
        key = row["ID"]
        names[key] = short(row["Kernel Name"])
        value = row["Metric Value"].replace(",", "")
        try:
            v = float(value)
        except ValueError:
            continue
        unit = row.get("Metric Unit", "")
        if row["Metric Name"] == "gpu__time_duration.sum":
            v *= {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0,
                  "ms": 1e3, "msecond": 1e3}.get(unit, 1.0)  # -> us
        elif unit in ("Kbyte", "KB"):
            v *= 1e3
        elif unit in ("Mbyte", "MB"):
            v *= 1e6
        elif unit in ("Gbyte", "GB"):
            v *= 1e9
        kernels[key][row["Metric Name"]] = v
    return kernels, names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--emb", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=4778)
    ap.add_argument("--tensor-peak", type=float, default=800e12,
                    help="dense 16-bit FLOP/s (H200, measured: 769-798e12)")
    a = ap.parse_args()
    kernels, names = read(a.csv)
    agg = defaultdict(lambda: defaultdict(float))
    for key, m in kernels.items():
        g = agg[names[key]]
        g["launches"] += 1
        t = m.get("gpu__time_duration.sum", 0.0)
        g["us"] += t
        for k in ("dram__bytes.sum", "lts__t_bytes.sum"):
            g[k] += m.get(k, 0.0)
        for k, v in m.items():  # time-weighted fractions of peak
            if "pct_of_peak" in k:
                g[k] += v * t
    steps = sum(g["launches"] for n, g in agg.items() if "beam_step" in n)
    steps = steps or max(g["launches"] for g in agg.values())
    H, E, V, rows = a.hidden, a.emb, a.vocab, a.rows
    flop_row = 2 * (4 * H * (E + 2 * H) + 4 * H * 2 * H + H * 2 * H + V * H)
    flop = flop_row * rows
    total = sum(g["us"] for g in agg.values()) / steps
    print(f"## {a.csv}: {rows} rows, {steps} steps, {total:.1f} us of kernels a step\n")
    print("| kernel | launches/step | us/step | DRAM MB | DRAM % peak | L2 MB | L2 % peak "
          "| tensor % | SM % | bound |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for name, g in sorted(agg.items(), key=lambda kv: -kv[1]["us"]):
        t = g["us"] or 1e-9
        pct = {k: g[k] / t for k in g if "pct_of_peak" in k}
        dram = pct.get("dram__bytes.sum.pct_of_peak_sustained_elapsed", 0.0)
        l2 = pct.get("lts__t_bytes.sum.pct_of_peak_sustained_elapsed", 0.0)
        tensor = max(pct.get("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed", 0.0),
                     pct.get("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed", 0.0))
        sm = pct.get("sm__throughput.avg.pct_of_peak_sustained_elapsed", 0.0)
        bound = max((dram, "DRAM"), (l2, "L2"), (tensor, "tensor"), (sm, "SM"))
        print(f"| {name} | {g['launches'] / steps:.1f} | {g['us'] / steps:.2f} "
              f"| {g['dram__bytes.sum'] / steps / 1e6:.2f} | {dram:.0f} "
              f"| {g['lts__t_bytes.sum'] / steps / 1e6:.2f} | {l2:.0f} | {tensor:.0f} | {sm:.0f} "
              f"| {bound[1]} {bound[0]:.0f}% |")
    floor = flop / a.tensor_peak * 1e6
    print(f"\nGEMM FLOPs a step: {flop / 1e9:.2f} G ({flop_row / 1e6:.2f} M a row); "
          f"at {a.tensor_peak / 1e12:.0f} TFLOP/s the floor is {floor:.1f} us; "
          f"the kernels take {total:.1f} us: {total / floor:.2f}x the floor. The decoder's "
          f"16-bit weights are {flop_row / 1e6:.1f} MB, read once a step at least.\n")


if __name__ == "__main__":
    main()
