#!/usr/bin/env python3
"""summarize.py: joins the JSON lines of the benches (bench_*.cu and
bench_torch.py) into docs-ready markdown tables with ratios (ours vs each
baseline) and marks the targets:
  softmax+top-K: >= 10x faster than PyTorch for rows <= 120, and
                 >= 50% of the bandwidth floor for rows >= 512;
  N-hot:         >= 5x faster than cuBLAS, cuSPARSE and embedding_bag, N <= 10;
  reduce/bcast:  >= 90% of the measured copy bandwidth.
Usage: summarize.py FILE.jsonl... > summary.md. The last lines ("TARGET ...")
say per target whether it is met, how many cases met it out of how many, and
the worst case. A case whose baseline is missing (e.g. no torch JSON) counts
as not met, is named in the TARGET line and on stderr, and makes the exit
status 1; so does a target with no data at all.
"""
import json
import sys


def load(paths):
    rows = []
    for p in paths:
        try:
            with open(p) as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("{"):
                        try:
                            rows.append(json.loads(line))
                        except json.JSONDecodeError:
                            pass
        except OSError as e:
            print(f"<!-- {p}: {e} -->")
    return rows


def fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def ratio(base, ours):
    return None if base is None or not ours else base / ours


def mark(ok):
    return "-" if ok is None else ("met" if ok else "**missed**")


class Target:
    def __init__(self, name, unit):
        self.name, self.unit = name, unit
        self.met, self.total, self.worst, self.worst_case = 0, 0, None, ""
        self.missing = []  # cases whose baseline data is absent

    def add(self, ok, figure, case):
        self.total += 1
        self.met += bool(ok)
        if self.worst is None or figure < self.worst:
            self.worst, self.worst_case = figure, case

    def lack(self, case, what):
        self.total += 1
        self.missing.append(f"{case}: no {what}")

    def ok(self):
        return self.total > 0 and not self.missing

    def line(self):
        if not self.total:
            return f"TARGET {self.name}: NO DATA (0 cases)"
        status = "met" if self.met == self.total else "MISSED"
        text = f"TARGET {self.name}: {status}, {self.met} of {self.total} cases met"
        if self.worst is not None:
            text += f", worst {self.worst:.2f}{self.unit} ({self.worst_case})"
        if self.missing:
            text += (f"; BASELINE DATA MISSING for {len(self.missing)} cases "
                     f"(first: {self.missing[0]})")
        return text


def main(argv):
    data = load(argv[1:])
    by = {}
    for r in data:
        by.setdefault(r.get("bench"), []).append(r)
    targets = []

    copies = by.get("copy", [])
    if copies:
        print("## Copy bandwidth\n")
        for c in copies:
            print(f"- {c.get('impl', 'cuda')}: {c.get('gbps', 0):.0f} GB/s {c.get('device', '')}")
        print()

    st = by.get("softmax_topk", [])
    if st:
        t_small = Target("softmax_topk rows<=120 vs torch >= 10x", "x")
        t_large = Target("softmax_topk rows>=512 >= 50% of floor", " of floor")
        key = lambda r: (r["V"], r["rows"], r["K"])
        impls = {}
        for r in st:
            impls.setdefault(key(r), {})[r["impl"]] = r
        print("## Softmax + top-K\n")
        print("| V | rows | K | ours us | % of floor | CUB us | vs CUB | torch us | vs torch | target |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for k in sorted(impls):
            d = impls[k]
            ours = d.get("ours", {}).get("median_us")
            floor = d.get("ours", {}).get("floor_us") or d.get("torch", {}).get("floor_us")
            cub = d.get("cub_two_pass", {}).get("median_us")
            torch = d.get("torch", {}).get("median_us")
            frac = floor / ours if floor and ours else None
            ok = None
            case = f"V={k[0]} rows={k[1]} K={k[2]}"
            if k[1] <= 120:
                if not ours:
                    t_small.lack(case, "ours")
                elif not torch:
                    t_small.lack(case, "torch")
                else:
                    ok = torch / ours >= 10
                    t_small.add(ok, torch / ours, case)
            elif k[1] >= 512:
                if frac is None:
                    t_large.lack(case, "ours")
                else:
                    ok = frac >= 0.5
                    t_large.add(ok, frac, case)
            print(f"| {k[0]} | {k[1]} | {k[2]} | {fmt(ours, '.2f')} | {fmt(frac * 100 if frac else None, '.0f')} "
                  f"| {fmt(cub, '.2f')} | {fmt(ratio(cub, ours))}x | {fmt(torch, '.2f')} "
                  f"| {fmt(ratio(torch, ours))}x | {mark(ok)} |")
        print()
        targets += [t_small, t_large]

    nh = by.get("nhot", [])
    if nh:
        t = Target("nhot N<=10 >= 5x vs cuBLAS, cuSPARSE, embedding_bag", "x")
        impls = {}
        for r in nh:
            impls.setdefault(r["N"], {})[r["impl"]] = r
        print("## N-hot lookup (100 rows, 10240 x 512 table)\n")
        print("| N | ours us | floor us | cuBLAS us | vs cuBLAS | cuSPARSE us | vs cuSPARSE | embedding_bag us | vs torch | target |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for n in sorted(impls):
            d = impls[n]
            ours = d.get("ours", {}).get("median_us")
            floor = d.get("ours", {}).get("floor_us")
            b = d.get("cublas_dense", {}).get("median_us")
            s = d.get("cusparse_spmm", {}).get("median_us")
            e = d.get("torch_embedding_bag", {}).get("median_us")
            rs = [x for x in (ratio(b, ours), ratio(s, ours), ratio(e, ours)) if x is not None]
            ok = None
            if n <= 10:
                names = {"cuBLAS": b, "cuSPARSE": s, "embedding_bag": e}
                absent = [name for name, v in names.items() if v is None]
                if not ours or absent:
                    t.lack(f"N={n}", ", ".join(absent) if ours else "ours")
                else:
                    ok = min(rs) >= 5
                    t.add(ok, min(rs), f"N={n}")
            print(f"| {n} | {fmt(ours, '.2f')} | {fmt(floor, '.2f')} | {fmt(b, '.2f')} | {fmt(ratio(b, ours))}x "
                  f"| {fmt(s, '.2f')} | {fmt(ratio(s, ours))}x | {fmt(e, '.2f')} | {fmt(ratio(e, ours))}x | {mark(ok)} |")
        print()
        targets.append(t)

    rd = by.get("reduce", [])
    if rd:
        t = Target("reduce/broadcast >= 90% of copy bandwidth", " of copy")
        impls = {}
        for r in rd:
            impls.setdefault((r["op"], r["case"], r["dims"], r["mask"]), {})[r["impl"]] = r
        print("## Reduce and broadcast (fraction of copy bandwidth)\n")
        print("| op | case | dims | mask | ours us | ours GB/s | % of copy | torch us | vs torch | target |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for k in sorted(impls):
            d = impls[k]
            o = d.get("ours", {})
            tt = d.get("torch", {}).get("median_us")
            frac = o.get("frac_of_copy")
            ok = None
            if frac is not None:
                ok = frac >= 0.9
                t.add(ok, frac, k[1])
            else:
                t.lack(k[1], "ours")
            print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {fmt(o.get('median_us'), '.1f')} | {fmt(o.get('gbps'), '.0f')} "
                  f"| {fmt(frac * 100 if frac is not None else None, '.0f')} | {fmt(tt, '.1f')} "
                  f"| {fmt(ratio(tt, o.get('median_us')))}x | {mark(ok)} |")
        print()
        targets.append(t)

    expected = {"softmax_topk": "softmax_topk", "nhot": "nhot", "reduce": "reduce/broadcast"}
    for bench, label in expected.items():
        if not by.get(bench):
            missing = Target(f"{label} (no {bench} JSON lines found)", "")
            targets.append(missing)
    print("## Targets\n")
    status = 0
    for t in targets:
        print("    " + t.line())
        if not t.ok():
            status = 1
            print(f"summarize.py: {t.line()}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
