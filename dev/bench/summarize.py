#!/usr/bin/env python3
"""summarize.py: joins the JSON lines of the benches (bench_*.cu and
bench_torch.py) into docs-ready markdown tables with ratios (ours vs each
baseline) and marks the targets:
  softmax+top-K: >= 10x faster than PyTorch for rows <= 120, and
                 >= 50% of the bandwidth floor for rows >= 512;
  N-hot:         >= 5x faster than cuBLAS, cuSPARSE and embedding_bag, N <= 10;
  reduce/bcast:  >= 90% of the measured copy bandwidth.
The 16-bit GEMMs (bench_gemm_algos.cu) have tables and no target: the
engine's plan against the fastest algorithm offered, and the rows whose bits
change with the row count, by policy.
LSH vocabulary shrinking (bench_lsh.cu) has tables and no target: full vs
LSH per (H, V, rows) with the paper's Table 4 split, the break-even
vocabulary per candidate fraction, warp vs naive lookup, and one list for
the batch vs per sentence vs per row.
Usage: summarize.py FILE.jsonl... > summary.md. The last lines ("TARGET ...")
say per target whether it is met, how many cases met it out of how many, and
the worst case. A case whose baseline is missing (e.g. no torch JSON) counts
as not met, is named in the TARGET line and on stderr, and makes the exit
status 1; so does a target with no data at all.
"""
import json
import math
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


def break_even(points):
    """The vocabulary above which LSH pays at every measured V, from
    (V, full_us / lsh_us) points: the last crossing of 1 from below,
    interpolated linearly in log V; "<= V_min" when it pays everywhere,
    "> V_max" when it does not pay at the largest V."""
    pts = sorted(p for p in points if p[1] is not None)
    if not pts:
        return "-"
    if pts[-1][1] < 1:
        return f"> {pts[-1][0]}"
    below = [i for i, (_, x) in enumerate(pts) if x < 1]
    if not below:
        return f"<= {pts[0][0]}"
    i = below[-1]
    (v0, s0), (v1, s1) = pts[i], pts[i + 1]
    t = (1 - s0) / (s1 - s0) if s1 != s0 else 0.0
    return f"{math.exp(math.log(v0) + t * (math.log(v1) - math.log(v0))):.0f}"


def lsh_section(rows):
    """Markdown for bench_lsh's JSON lines (parts index, layer, lookup, sharing)."""
    part = {}
    for r in rows:
        part.setdefault(r.get("part"), []).append(r)
    print("## LSH vocabulary shrinking (output layer, one decoder step)\n")
    layer = part.get("layer", [])
    if layer:
        cases, fracs = {}, set()
        for r in layer:
            key = (r.get("H"), r.get("V"), r.get("rows"))
            d = cases.setdefault(key, {"fraction": {}})
            if r.get("mode") == "fraction":
                d["fraction"][r.get("f")] = r
                fracs.add(r.get("f"))
            else:
                d[r.get("mode")] = r
        fracs = sorted(f for f in fracs if f is not None)
        idx = next((d["index"] for d in cases.values() if "index" in d), {})
        print("LSH us = the whole step: hash (WTA codes) + lookup (hits, warp) + compact "
              "(candidate list, by difference) + logits (gather + GEMM over the one list "
              "shared by all rows) + softmax (softmax + top-k over the candidates). "
              f"Index {{K,u,W}} = {{{idx.get('K')},{idx.get('u')},{idx.get('W')}}}, "
              f"threshold {idx.get('threshold')}, {idx.get('n_always')} always-words; on random "
              "Gaussian W_out its lists are not realistic, so the f columns run the same step "
              "(hashing included) over fixed lists of f x V words. x = full / LSH.\n")
        head = ("| H | V | rows | k | full us | index cand % | LSH us | x | hash | lookup "
                "| compact | logits | softmax |")
        head += "".join(f" f={f:g} us (x) |" for f in fracs)
        print(head)
        print("|" + "---|" * (13 + len(fracs)))
        for key in sorted(cases, key=lambda k: tuple(x if x is not None else -1 for x in k)):
            d = cases[key]
            full, ix = d.get("full", {}), d.get("index", {})
            full_us = full.get("median_us")
            cells = [str(key[0]), str(key[1]), str(key[2]), str(full.get("k", ix.get("k", "-"))),
                     fmt(full_us), fmt(ix["fraction"] * 100 if "fraction" in ix else None),
                     fmt(ix.get("median_us")), fmt(ratio(full_us, ix.get("median_us")), ".2f") + "x"]
            cells += [fmt(ix.get(f"{s}_us")) for s in ("hash", "lookup", "compact", "logits", "softmax")]
            for f in fracs:
                fr = d["fraction"].get(f, {})
                cells.append(f"{fmt(fr.get('median_us'))} ({fmt(ratio(full_us, fr.get('median_us')), '.2f')}x)")
            print("| " + " | ".join(cells) + " |")
        print()

        print("Break-even V: the vocabulary above which LSH beats the full layer at every "
              "measured V (the last crossing of full / LSH = 1, interpolated in log V); "
              "\"> V\": LSH loses at the largest V measured, \"<= V\": it wins at the smallest.\n")
        print("| H | rows | index |" + "".join(f" f={f:g} |" for f in fracs))
        print("|---|---|---|" + "---|" * len(fracs))
        by_hr = {}
        for (h, v, r), d in cases.items():
            by_hr.setdefault((h, r), []).append((v, d))
        for (h, r) in sorted(by_hr, key=lambda k: tuple(x if x is not None else -1 for x in k)):
            vs = by_hr[(h, r)]

            def speed(d, row):
                return ratio(d.get("full", {}).get("median_us"), row.get("median_us"))
            cells = [break_even([(v, speed(d, d.get("index", {}))) for v, d in vs if v])]
            for f in fracs:
                cells.append(break_even([(v, speed(d, d["fraction"].get(f, {}))) for v, d in vs if v]))
            print(f"| {h} | {r} | " + " | ".join(cells) + " |")
        print()

    lookup = part.get("lookup", [])
    if lookup:
        print("Lookup (hits): the warp walks each lane's bucket in turn (Fig. 4b) vs each thread "
              "walks its own (Fig. 4a); the paper reports 3.4x. Buckets: mean length, the mean a "
              "lookup lands in (sum len^2 / sum len), the largest.\n")
        print("Lists: codes to one list for all rows, hits + candidates (the faster lookup) "
              "vs the direct builder with no hit matrix (lsh_direct.cu).\n")
        print("| H | V | {K,u,W} | rows | buckets mean / lookup / max | warp us | naive us | naive / warp "
              "| lists: two steps us | direct us | two steps / direct |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(lookup, key=lambda r: (r.get("V", 0), r.get("K", 0), r.get("u", 0), r.get("rows", 0))):
            print(f"| {r.get('H')} | {r.get('V')} | {{{r.get('K')},{r.get('u')},{r.get('W')}}} | {r.get('rows')} "
                  f"| {fmt(r.get('mean_bucket'))} / {fmt(r.get('lookup_bucket'))} / {r.get('max_bucket')} "
                  f"| {fmt(r.get('warp_us'))} | {fmt(r.get('naive_us'))} "
                  f"| {fmt(ratio(r.get('naive_us'), r.get('warp_us')), '.2f')}x "
                  f"| {fmt(r.get('two_step_us'))} | {fmt(r.get('direct_us'))} "
                  f"| {fmt(ratio(r.get('two_step_us'), r.get('direct_us')), '.2f')}x |")
        print()

    sharing = part.get("sharing", [])
    if sharing:
        ov = sharing[0].get("overlap")
        print("Shared vs per-sentence vs per-row lists: every row needs f x V words (the "
              f"always-words, a pool shared by its sentence's rows ({fmt(ov, '.0%') if ov is not None else '-'} "
              "of the rest), its own random words); the sentence list is the union of its rows', "
              "the shared list the union of all. total = the faster logits kernel + softmax; "
              "floor = gathered rows (sum of list lengths x H x 4 bytes) / copy bandwidth.\n")
        print("| H | V | rows | f | grouping | lists | mean words | GEMM us | SDDMM us | softmax us "
              "| total us | logits % of floor | full us | full / total |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        order = {"shared": 0, "sentence": 1, "row": 2}
        for r in sorted(sharing, key=lambda r: (r.get("H", 0), r.get("V", 0), r.get("rows", 0), r.get("f", 0),
                                                 order.get(r.get("grouping"), 3))):
            logits = [x for x in (r.get("gemm_us"), r.get("sddmm_us")) if x]
            best = min(logits) if logits else None
            floor = r.get("floor_us")
            rows_text = f"{r.get('rows')} ({r.get('sentences')} x {r.get('beam')})"
            print(f"| {r.get('H')} | {r.get('V')} | {rows_text} | {fmt(r.get('f'), 'g')} | {r.get('grouping')} "
                  f"| {r.get('groups')} | {fmt(r.get('mean_count'), '.0f')} | {fmt(r.get('gemm_us'))} "
                  f"| {fmt(r.get('sddmm_us'))} | {fmt(r.get('softmax_us'))} | {fmt(r.get('median_us'))} "
                  f"| {fmt(floor / best * 100 if floor and best else None, '.0f')} | {fmt(r.get('full_us'))} "
                  f"| {fmt(ratio(r.get('full_us'), r.get('median_us')), '.2f')}x |")
        print()

    index = part.get("index", [])
    if index:
        print("Indexes built (host, nmt_lsh_index_build):\n")
        print("| H | V | {K,u,W} | build s | MB | table bits | buckets mean / lookup / max |")
        print("|---|---|---|---|---|---|---|")
        for r in index:
            print(f"| {r.get('H')} | {r.get('V')} | {{{r.get('K')},{r.get('u')},{r.get('W')}}} "
                  f"| {fmt(r.get('build_s'), '.2f')} | {fmt((r.get('bytes') or 0) / 1e6)} | {r.get('table_bits')} "
                  f"| {fmt(r.get('mean_bucket'))} / {fmt(r.get('lookup_bucket'))} / {r.get('max_bucket')} |")
        print()


def skinny_section(rows):
    """bench_skinny: a batch-1 step's GEMMs by variant, against cuBLAS's."""
    print("## Few-row GEMMs (bench_skinny)\n")
    print("| what | rows | variant | us | vs cublas | floor us |")
    print("|---|---|---|---|---|---|")
    base = {(r["what"], r["rows"], r.get("copies", 1)): r["us"] for r in rows
            if r["variant"] == "cublas"}
    for r in rows:
        b = base.get((r["what"], r["rows"], r.get("copies", 1)))
        what = r["what"] + (f" ({r['copies']} copies)" if r.get("copies", 1) > 1 else "")
        print(f"| {what} | {r['rows']} | {r['variant']} | {r['us']:.2f} "
              f"| {fmt(ratio(b, r['us']))}x | {r['floor_us']:.2f} |")
    print()


def attention_section(rows):
    """bench_attention: the attention variants by name, against the block one."""
    print("## Attention (bench_attention)\n")
    print("| rows | hidden | positions | variant | us | vs block | floor us |")
    print("|---|---|---|---|---|---|---|")
    base = {(r["rows"], r["hidden"], r["src"]): r["median_us"] for r in rows
            if r["impl"] == "block"}
    for r in rows:
        b = base.get((r["rows"], r["hidden"], r["src"]))
        print(f"| {r['rows']} | {r['hidden']} | {r['src']} | {r['impl']} | {r['median_us']:.2f} "
              f"| {fmt(ratio(b, r['median_us']))}x | {r['floor_us']:.2f} |")
    print()


def gemm_section(algos, invariance):
    """bench_gemm_algos: cuBLASLt's first choice (what the engine runs, for
    the row class) against the fastest algorithm offered and cublasGemmEx,
    and which rows change bits with the row count."""
    if algos:
        print("## 16-bit GEMMs: cuBLASLt's first choice against the fastest offered "
              "(bench_gemm_algos)\n")
        print("| site | type | m x n x k | cublasGemmEx us | first choice us | fastest us "
              "| first / fastest |")
        print("|---|---|---|---|---|---|---|")
        shapes = {}
        for r in algos:
            key = (r["site"], r["type"], r["m"], r["n"], r["k"])
            e = shapes.setdefault(key, {"gemmex": None, "first": None, "best": None})
            if r["algo"] == "gemmex":
                e["gemmex"] = r["us"]
            elif r["algo"] in ("lt_first", "engine"):
                continue  # algorithm 0 again
            else:
                if r["algo"] == 0:
                    e["first"] = r["us"]
                if e["best"] is None or r["us"] < e["best"]:
                    e["best"] = r["us"]
        for (site, typ, m, n, k), e in shapes.items():
            print(f"| {site} | {typ} | {m} x {n} x {k} | {fmt(e['gemmex'], '.2f')} "
                  f"| {fmt(e['first'], '.2f')} | {fmt(e['best'], '.2f')} "
                  f"| {fmt(ratio(e['first'], e['best']), '.2f')} |")
        print()
    if invariance:
        print("## GEMM rows against the row count (bench_gemm_algos --invariance)\n")
        print("Rows whose bits differ from the same rows computed at the largest row "
              "count, the most over the row counts measured.\n")
        print("| site | type | n x k | policy | from 3 rows | at 1-2 rows |")
        print("|---|---|---|---|---|---|")
        groups = {}
        for r in invariance:
            key = (r["site"], r["type"], r["n"], r["k"], r["policy"])
            g = groups.setdefault(key, [0, 0])
            slot = 0 if r["m"] >= 3 else 1
            g[slot] = max(g[slot], r["rows_differing"])
        for (site, typ, n, k, policy), (big, small) in groups.items():
            print(f"| {site} | {typ} | {n} x {k} | {policy} | {big} | {small} |")
        print()


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

    lsh = by.get("lsh", [])
    if lsh:
        lsh_section(lsh)

    skinny = by.get("skinny", [])
    if skinny:
        skinny_section(skinny)

    attention = by.get("attention", [])
    if attention:
        attention_section(attention)

    if by.get("gemm_algos") or by.get("gemm_invariance"):
        gemm_section(by.get("gemm_algos", []), by.get("gemm_invariance", []))

    expected = {"softmax_topk": "softmax_topk", "nhot": "nhot", "reduce": "reduce/broadcast",
                "lsh": "LSH"}
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
