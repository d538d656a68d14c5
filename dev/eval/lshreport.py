"""Reporting for dev/eval/lsh-grid and dev/eval/plot-lsh: the arithmetic
against the full softmax (loss, speedups, the TOP curve), the markdown tables
and the plot panels. Pure functions of the records (dicts) in the grid JSON;
no engine runs, no matplotlib."""

from __future__ import annotations

import math
import os

SHARES = ("batch", "sentence", "row")
MODES = ("full", "lsh", "top")


# --- arithmetic --------------------------------------------------------------

def ratio(num, den):
    if num is None or den is None or den <= 0 or num < 0:
        return None
    return num / den


def interpolate(curve: list[tuple[float, float]], x: float):
    """y at x on the piecewise-linear curve through (x, y) points (sorted by x
    here); None outside [min x, max x]."""
    pts = sorted((px, py) for px, py in curve if px is not None and py is not None)
    if not pts or x is None or x < pts[0][0] or x > pts[-1][0]:
        return None
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pts[0][1]  # a single point at exactly x


def derive(records: list[dict]) -> list[dict]:
    """Adds, in place, each record's comparison with the full softmax at its
    beam: bleu_loss, output_layer_speedup, speedups {batch: x}, speedup (the
    first speed batch), bleu_vs_top. Returns records."""
    full = {r["beam"]: r for r in records if r["mode"] == "full" and r.get("status") == "ok"}
    for r in records:
        r["bleu_vs_top"] = None
        f = full.get(r["beam"])
        ok = r.get("status") == "ok" and f is not None
        r["bleu_loss"] = (f["bleu"] - r["bleu"]) if ok and r.get("bleu") is not None else None
        r["output_layer_speedup"] = (ratio(f.get("output_layer_ms"), r.get("output_layer_ms"))
                                     if ok else None)
        speedups = {}
        for s in r.get("speed") or []:
            fs = next((x for x in (f or {}).get("speed") or [] if x["batch"] == s["batch"]), None)
            speedups[str(s["batch"])] = (ratio(fs["seconds"], s["seconds"])
                                         if ok and fs and s.get("seconds") else None)
        r["speedups"] = speedups
        r["speedup"] = next(iter(speedups.values()), None)
    for beam, f in full.items():
        curve = [(1.0, f["bleu"])] + [(r["speedup"], r["bleu"]) for r in records
                                      if r["beam"] == beam and r["mode"] == "top"
                                      and r.get("status") == "ok"]
        for r in records:
            if r["beam"] == beam and r["mode"] == "lsh":
                top_bleu = interpolate(curve, r.get("speedup"))
                r["bleu_vs_top"] = (r["bleu"] - top_bleu
                                    if top_bleu is not None and r.get("bleu") is not None else None)
    return records


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both x and y (higher is better)."""
    keep = []
    for i, (x, y) in enumerate(points):
        if x is None or y is None:
            continue
        if not any(ox is not None and oy is not None and ox >= x and oy >= y and (ox, oy) != (x, y)
                   for ox, oy in points):
            keep.append(i)
    return keep


# --- rendering ---------------------------------------------------------------

def fmt(value, spec="", none="-"):
    if value is None:
        return none
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return none
    return format(value, spec)


COLUMNS = ["beam", "mode", "K", "u", "W", "T", "t", "share", "vocab/row", "recall", "BLEU",
           "loss", "vs TOP", "out-layer ms", "out-layer speedup"]


def table_rows(records: list[dict], speed_batches: list[int]) -> tuple[list[str], list[list[str]]]:
    """Header and cells of the results table, records sorted by beam, mode
    (full, lsh, top), K, u, W, T, t, share."""
    header = list(COLUMNS)
    for b in speed_batches:
        suffix = f" (b{b})" if len(speed_batches) > 1 else ""
        header += [f"decode s{suffix}", f"speedup{suffix}"]
    header.append("status")
    order = {m: i for i, m in enumerate(MODES)}

    def key(r):
        return (r["beam"], order.get(r["mode"], 9), r.get("k") or 0, r.get("u") or 0,
                r.get("w") or 0, r.get("top") or 0, r.get("threshold") or 0,
                SHARES.index(r["share"]) if r.get("share") in SHARES else 0)

    rows = []
    for r in sorted(records, key=key):
        cells = [str(r["beam"]), r["mode"], fmt(r.get("k")), fmt(r.get("u")), fmt(r.get("w")),
                 fmt(r.get("top")), fmt(r.get("threshold")), fmt(r.get("share")),
                 fmt(r.get("vocab_per_row"), ".0f"), fmt(r.get("recall"), ".4f"),
                 fmt(r.get("bleu"), ".2f"), fmt(r.get("bleu_loss"), "+.2f"),
                 fmt(r.get("bleu_vs_top"), "+.2f"), fmt(r.get("output_layer_ms"), ".1f"),
                 fmt(r.get("output_layer_speedup"), ".2f")]
        speed = {s["batch"]: s for s in r.get("speed") or []}
        for b in speed_batches:
            s = speed.get(b)
            cells += [fmt(s.get("seconds") if s else None, ".3f"),
                      fmt((r.get("speedups") or {}).get(str(b)), ".2f")]
        status = r.get("status", "")
        if status != "ok" and r.get("error"):
            status += ": " + r["error"].splitlines()[0][:60].replace("|", "/")
        cells.append(status)
        rows.append(cells)
    return header, rows


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    left = {"mode", "share", "status"}
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(" --- " if h in left else " ---: " for h in header) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def best_under_loss(records, beam, max_loss):
    """The LSH record at beam with the highest speedup among those with
    BLEU loss <= max_loss (None if none)."""
    ok = [r for r in records if r["beam"] == beam and r["mode"] == "lsh"
          and r.get("bleu_loss") is not None and r["bleu_loss"] <= max_loss + 1e-9
          and r.get("speedup") is not None]
    return max(ok, key=lambda r: r["speedup"], default=None)


def render_markdown(doc: dict) -> str:
    meta, records = doc["meta"], doc["records"]
    speed_batches = meta.get("speed_batches") or [1]
    out = [f"# LSH grid: {meta.get('label', '')}", ""]
    out.append(f"- model: `{meta.get('model')}`; source `{meta.get('src')}` ({meta.get('lines')} "
               f"lines, quality runs at batch {meta.get('batch_size')}); reference `{meta.get('ref')}`")
    out.append(f"- device: {meta.get('device') or '-'} ({meta.get('gpu') or meta.get('host')}); "
               f"engine `{meta.get('translate')}`; extra options {meta.get('engine_options') or 'none'}")
    out.append(f"- speed: first {meta.get('speed_lines')} non-empty lines at batch "
               f"{', '.join(map(str, speed_batches))}, median of {meta.get('repeats')} runs, "
               f"decode time from the engine's own clock (--timing: inside its translate "
               f"calls, so model load and index build are not in it)")
    out.append(f"- BLEU: sacreBLEU `{meta.get('signature') or '-'}`")
    status = "complete" if meta.get("complete") else "INCOMPLETE"
    out.append(f"- {meta.get('done', 0)} of {meta.get('total', 0)} runs done, "
               f"{len(meta.get('skipped') or [])} skipped, {meta.get('failed', 0)} failed, "
               f"{meta.get('elapsed_seconds', 0):.0f}s (budget {meta.get('time_budget') or 'none'}); {status}")
    out.append("")
    t = meta.get("targets") or {}
    beams = sorted({r["beam"] for r in records})
    if beams:
        out += ["## Summary", ""]
        for beam in beams:
            full = next((r for r in records if r["beam"] == beam and r["mode"] == "full"), None)
            line = f"- beam {beam}: full softmax BLEU {fmt(full and full.get('bleu'), '.2f')}"
            if full and full.get("speed"):
                line += f", decode {fmt(full['speed'][0].get('seconds'), '.3f')}s"
            if full and full.get("output_layer_ms") is not None:
                line += f", output layer {full['output_layer_ms']:.1f} ms"
            best = best_under_loss(records, beam, t.get("max_loss", 0.4))
            if best:
                met = ((best.get("output_layer_speedup") or 0) >= t.get("output_speedup", 3.0)
                       and (best.get("speedup") or 0) >= t.get("speedup", 1.5))
                line += (f". Fastest LSH with BLEU loss <= {t.get('max_loss', 0.4)}: "
                         f"{best['k']},{best['u']},{best['w']} T={best['top']} t={best['threshold']} "
                         f"({best['share']}): speedup {fmt(best.get('speedup'), '.2f')}x, "
                         f"output layer {fmt(best.get('output_layer_speedup'), '.2f')}x, "
                         f"loss {fmt(best.get('bleu_loss'), '+.2f')}, vocab/row "
                         f"{fmt(best.get('vocab_per_row'), '.0f')}, recall {fmt(best.get('recall'), '.4f')}"
                         f" (targets output layer >= {t.get('output_speedup', 3.0)}x and decode >= "
                         f"{t.get('speedup', 1.5)}x: {'met' if met else 'not met'})")
            else:
                line += f". No LSH setting within BLEU loss {t.get('max_loss', 0.4)}"
            vs = [r["bleu_vs_top"] for r in records if r["beam"] == beam and r["mode"] == "lsh"
                  and r.get("bleu_vs_top") is not None]
            if vs:
                line += (f". LSH vs TOP at equal speed: {sum(v > 0 for v in vs)} of {len(vs)} "
                         f"comparable settings better (min {min(vs):+.2f}, max {max(vs):+.2f})")
            out.append(line + ".")
        out.append("")
    header, rows = table_rows([r for r in records if r.get("status") != "skipped"], speed_batches)
    out += ["## Results", "", markdown_table(header, rows), ""]
    keys = {}
    for r in records:
        if r["mode"] == "lsh":
            keys.setdefault((r["beam"], r["k"], r["u"], r["w"], r["top"], r["threshold"]), []).append(r)
    shared = [r for group in keys.values()
              if len({x["share"] for x in group if x.get("status") != "skipped"}) > 1
              for r in group if r.get("status") != "skipped"]
    if shared:
        header, rows = table_rows(shared, speed_batches)
        out += ["## Sharing the candidate list: batch vs sentence vs row (SDDMM)", "",
                markdown_table(header, rows), ""]
    skipped = meta.get("skipped") or []
    if skipped:
        out += ["## Skipped (time budget)", "", ", ".join(skipped), ""]
    out += ["## Columns", "", COLUMN_HELP, ""]
    if meta.get("example_commands"):
        out += ["## Commands (full softmax; the settings add their options)", "", "```"]
        out += meta["example_commands"] + ["```", ""]
    return "\n".join(out)


COLUMN_HELP = """\
- beam; mode: full (full softmax), lsh, top (only the special ids and the T most frequent words);
  K, u, W: the WTA hash; T: most frequent words merged (lsh) or kept (top); t: the hit threshold;
  share: one candidate list per batch, per sentence, or per hypothesis (row: SDDMM, no union).
- vocab/row: mean candidate words scored per live hypothesis-step (the stats run).
- recall: fraction of live hypothesis-steps whose full-softmax top-B words all lie in the candidates.
- BLEU: sacreBLEU, cased, 13a, whole source; loss: full-softmax BLEU minus this BLEU (same beam);
  vs TOP: this BLEU minus the TOP curve's at the same speedup (empty outside its range).
- out-layer ms: the engine's output-layer time in the stats run (whole source); out-layer speedup:
  full softmax's / this.
- decode s: whole-decode seconds of the speed runs (the engine's --timing clock); speedup: full softmax's / this."""


# --- plot data (dev/eval/plot-lsh) -----------------------------------------

def plot_panels(docs: list[dict], x: str = "speedup") -> list[dict]:
    """Groups lsh-grid results for plotting, one panel per (model label, beam):
    {"label", "beam", "x", "full": (x, bleu) | None, "top": [(x, bleu, T)] by x,
     "lsh": {"K,u,W": [(x, bleu, T, t, share)]}}; x is "speedup" (whole
    decode) or "output_layer_speedup". Records without x or BLEU are left out."""
    panels = {}
    for doc in docs:
        label = doc["meta"].get("label") or os.path.basename(doc["meta"].get("model", "?"))
        for r in derive(doc["records"]):
            if r.get("status") != "ok" or r.get("bleu") is None:
                continue
            p = panels.setdefault((label, r["beam"]), {"label": label, "beam": r["beam"], "x": x,
                                                       "full": None, "top": [], "lsh": {}})
            if r["mode"] == "full":
                p["full"] = (1.0, r["bleu"])
                continue
            xv = r.get(x)
            if xv is None:
                continue
            if r["mode"] == "top":
                p["top"].append((xv, r["bleu"], r["top"]))
            elif r["mode"] == "lsh":
                p["lsh"].setdefault(f"{r['k']},{r['u']},{r['w']}", []).append(
                    (xv, r["bleu"], r["top"], r["threshold"], r["share"]))
    for p in panels.values():
        p["top"].sort()
        for pts in p["lsh"].values():
            pts.sort()
    return [panels[k] for k in sorted(panels, key=lambda k: (k[0], k[1]))]
