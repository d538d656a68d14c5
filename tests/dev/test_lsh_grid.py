"""dev/eval/lsh-grid and dev/eval/plot-lsh without the engine.

Checks the grid-spec parsing and its errors, the run order (baselines first,
lists interleaved), the engine command lines, the BLEU-loss / speedup /
vs-TOP arithmetic on hand-made stats, the markdown table, the plot script's
grouping (lshgrid.plot_panels; matplotlib is never imported), and,
when sacreBLEU is importable, a whole grid run against a fake translate
program (a Python script that copies its input and writes a --stats file).
"""

import json
import os
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EVAL = os.path.join(HERE, "..", "..", "dev", "eval")  # lshgrid.py, lshreport.py, the scripts
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")  # pynmt
sys.path[:0] = [EVAL, PYTHON_DIR]

import lshgrid as g  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def raises(fn, *a):
    try:
        fn(*a)
    except ValueError:
        return True
    return False


def close(a, b, eps=1e-9):
    return a is not None and b is not None and abs(a - b) <= eps


# --- parsing ---------------------------------------------------------------
check(g.parse_grid("8,3,500; 16,3,500;8,3,500") == [(8, 3, 500), (16, 3, 500)], "grid parse, dedup")
check(raises(g.parse_grid, "8,3"), "grid: two fields refused")
check(raises(g.parse_grid, "8,x,500"), "grid: non-integer refused")
check(raises(g.parse_grid, "1,3,500"), "grid: K < 2 refused")
check(raises(g.parse_grid, "16,8,100"), "grid: 16^8 = 2^32 refused")
check(g.parse_grid("16,7,100") == [(16, 7, 100)], "grid: 16^7 = 2^28 fits")
check(g.parse_grid("10,9,100") == [(10, 9, 100)], "grid: 10^9 < 2^31 fits")
check(raises(g.parse_grid, ""), "grid: empty refused")
check(g.parse_grid("8,3,500,4/8;16,3,200") == [(8, 3, 500), (16, 3, 200)], "grid: own thresholds")
check(g.parse_grid_thresholds("8,3,500,4/8;16,3,200") == {(8, 3, 500): [4, 8]},
      "grid thresholds: only the entries that name them")
check(raises(g.parse_grid_thresholds, "8,3,500,x"), "grid thresholds: non-integer refused")
check(raises(g.parse_grid, "8,3,500,4,8"), "grid: five fields refused")
check(g.parse_int_list("500, 1000,500", "tops") == [500, 1000], "int list, dedup")
check(raises(g.parse_int_list, "0", "tops"), "int list: below minimum refused")
check(g.parse_shares("batch,row") == ["batch", "row"], "shares parse")
check(raises(g.parse_shares, "batch,beam"), "shares: unknown refused")

# --- settings and order ------------------------------------------------------
check(g.interleave([[1, 2, 3, 4], ["a", "b"]]) == [1, "a", 2, 3, "b", 4], "interleave in proportion")
settings = g.build_settings([(8, 3, 500), (16, 3, 500)], [1000, 2000], [1, 2, 600],
                            [1000, 5000], ["batch", "row", "sentence"], 1)
lsh = [s for s in settings if s.mode == "lsh" and s.share == "batch"]
check(len(lsh) == 8, f"2 KuW x 2 T x 2 t (t=600 > W dropped): {len(lsh)}")
check([s.top for s in settings if s.mode == "top"] == [1000, 5000], "TOP list in order")
others = [s for s in settings if s.mode == "lsh" and s.share != "batch"]
check([(s.k, s.top, s.threshold, s.share) for s in others] == [(8, 1000, 1, "row"), (8, 1000, 1, "sentence")],
      f"other shares on the first LSH setting only: {others}")
check(settings[0] == g.Setting("lsh", 8, 3, 500, 1000, 1, "batch"), "first LSH setting first")
own = g.build_settings([(8, 3, 500), (16, 3, 500)], [1000], [1, 2], [], ["sentence"], 0,
                       {(16, 3, 500): [4, 8]})
check([(s.k, s.threshold) for s in own] == [(8, 1), (8, 2), (16, 4), (16, 8)],
      f"own thresholds replace the common ones: {own}")
sched = g.build_schedule(settings, [5, 12])
check([(s.mode, b) for s, b in sched[:2]] == [("full", 5), ("full", 12)], "baselines first")
check(len(sched) == 2 * (len(settings) + 1), "every setting at every beam")
check(sched[2][0] == sched[3][0] and sched[2][1] == 5 and sched[3][1] == 12, "a setting's beams adjacent")
check(g.Setting("lsh", 16, 3, 500, 1000, 2, "row").name == "lsh16-3-500.T1000.t2.row", "lsh name")
check(g.Setting("top", top=500).name == "top500" and g.Setting("full").name == "full", "names")

cmd = g.engine_command("tr", "m.bin", g.Setting("lsh", 16, 3, 500, 1000, 2, "sentence"), 12, 64,
                       "cuda", seed=7, extra=["--alpha", "0.6"], stats="s.json")
check(cmd == ["tr", "-m", "m.bin", "--beam", "12", "--batch-size", "64", "--device", "cuda",
              "--no-progress", "--lsh", "16,3,500,1000,2", "--lsh-share", "sentence", "--lsh-seed", "7",
              "--stats", "s.json", "--alpha", "0.6"], f"lsh command: {cmd}")
cmd = g.engine_command("tr", "m.bin", g.Setting("top", top=2000), 5, 1, "cpu")
check(cmd[-2:] == ["--top-words", "2000"] and "--stats" not in cmd, f"top command: {cmd}")
check("--lsh" not in g.engine_command("tr", "m", g.Setting("full"), 5, 1, "cpu"), "full: no options")


# --- arithmetic --------------------------------------------------------------
def rec(setting, beam, bleu, out_ms, secs, vocab, recall):
    r = g.new_record(setting, beam)
    g.record_from_stats(r, {"device": "cuda", "lines": 10, "sentences": 10, "decode_seconds": 1.0,
                            "steps": 100, "row_steps": 1000, "output_layer_ms": out_ms,
                            "vocab_mode": setting.mode, "lsh": None, "candidates_per_row": vocab,
                            "recall": recall, "recall_rows": 1000})
    r["bleu"] = bleu
    r["speed"] = [{"batch": 1, "seconds": secs}]
    r["status"] = "ok"
    return r


S = g.Setting
records = [
    rec(S("full"), 12, 30.0, 120.0, 10.0, 32000, None),
    rec(S("lsh", 16, 3, 500, 1000, 2, "batch"), 12, 29.8, 30.0, 5.0, 2500.0, 0.98),
    rec(S("lsh", 16, 3, 500, 1000, 1, "batch"), 12, 29.9, 40.0, 6.25, 3500.0, 0.99),
    rec(S("top", top=1000), 12, 25.0, 20.0, 4.0, 1004.0, 0.7),
    rec(S("top", top=5000), 12, 29.0, 50.0, 8.0, 5004.0, 0.9),
    rec(S("lsh", 8, 3, 500, 500, 4, "batch"), 12, 20.0, 10.0, 2.0, 900.0, 0.5),   # faster than any TOP
    rec(S("full"), 5, 31.0, None, 4.0, 32000, None),
    rec(S("lsh", 16, 3, 500, 1000, 2, "batch"), 5, 31.5, None, 2.0, 2000.0, 0.99),
]
skipped = g.new_record(S("lsh", 8, 3, 500, 2000, 1, "batch"), 12)
skipped["status"] = "skipped"
skipped["error"] = "time budget: 250s elapsed + ~20s expected"
records.append(skipped)
g.derive(records)
full12, lsh_a, lsh_b, top1, top5, lsh_fast, full5, lsh5, skip = records
check(close(full12["bleu_loss"], 0.0) and close(full12["speedup"], 1.0), "full: loss 0, speedup 1")
check(close(lsh_a["bleu_loss"], 0.2), f"loss 30.0 - 29.8: {lsh_a['bleu_loss']}")
check(close(lsh_a["output_layer_speedup"], 4.0), "output-layer speedup 120 / 30")
check(close(lsh_a["speedup"], 2.0) and close(lsh_a["speedups"]["1"], 2.0), "speedup 10 / 5")
check(close(lsh5["bleu_loss"], -0.5), "a BLEU gain is a negative loss")
check(lsh5["output_layer_speedup"] is None, "no output-layer time: no speedup")
check(skip["bleu_loss"] is None and skip["speedup"] is None, "skipped: nothing derived")
e = g.speed_entry(1, 300, [2.0, 2.1, 1.9])
check(close(e["seconds"], 2.0), "speed: the median of the runs")
check(g.speed_entry(1, 300, [0.0])["seconds"] is None, "speed: no positive time gives None")
# TOP curve at beam 12: (1.0, 30.0), (1.25, 29.0), (2.5, 25.0).
check(close(g.interpolate([(1.0, 30.0), (2.5, 25.0), (1.25, 29.0)], 2.0), 29.0 - 4.0 * 0.75 / 1.25),
      "interpolation between TOP points")
check(g.interpolate([(1.0, 30.0), (2.5, 25.0)], 3.0) is None, "no extrapolation")
check(close(lsh_a["bleu_vs_top"], 29.8 - (29.0 - 4.0 * 0.75 / 1.25)), f"vs TOP: {lsh_a['bleu_vs_top']}")
check(close(lsh_b["bleu_vs_top"], 29.9 - (29.0 + (25.0 - 29.0) * (1.6 - 1.25) / 1.25)), "vs TOP, 1.6x")
check(lsh_fast["bleu_vs_top"] is None, "vs TOP outside the TOP curve: none")
check(lsh5["bleu_vs_top"] is None, "no TOP at beam 5: none")
check(g.best_under_loss(records, 12, 0.4) is lsh_a, "fastest within loss 0.4")
check(g.best_under_loss(records, 12, 0.1) is lsh_b, "fastest within loss 0.1")
check(g.pareto([(1, 30), (2, 29), (1.5, 28), (3, 20), (2, 29)]) == [0, 1, 3, 4], "pareto front")

# --- rendering ---------------------------------------------------------------
header, rows = g.table_rows(records, [1])
check(header[:15] == ["beam", "mode", "K", "u", "W", "T", "t", "share", "vocab/row", "recall",
                      "BLEU", "loss", "vs TOP", "out-layer ms", "out-layer speedup"], f"header {header}")
check(header[15:] == ["decode s", "speedup", "status"], f"speed columns {header[15:]}")
check([r[0] for r in rows] == ["5", "5"] + ["12"] * 7, "sorted by beam")
check(rows[2][1] == "full" and rows[-1][1] == "top" and rows[-2][1] == "top", "full, lsh, top order")
a = next(r for r in rows if r[0] == "12" and r[5] == "1000" and r[6] == "2")
check(a[8:17] == ["2500", "0.9800", "29.80", "+0.20", a[12], "30.0", "4.00", "5.000", "2.00"], f"row {a}")
s = next(r for r in rows if r[-1].startswith("skipped"))
check(s[10] == "-" and "time budget" in s[-1], f"skipped row {s}")
header2, _ = g.table_rows(records, [1, 64])
check("decode s (b1)" in header2 and "speedup (b64)" in header2, "per-batch speed columns")
table = g.markdown_table(header, rows)
check(table.splitlines()[1].startswith("| ---: | --- |"), "alignment row")
check(all(line.count("|") == len(header) + 1 for line in table.splitlines()), "every row has all cells")
doc = {"meta": {"label": "fake", "speed_batches": [1], "skipped": [skip["name"]], "done": 8, "total": 9,
                "targets": {"max_loss": 0.4, "output_speedup": 3.0, "speedup": 1.5}}, "records": records}
md = g.render_markdown(doc)
check("## Summary" in md and "not met" not in md.split("beam 12")[1].split("\n")[0], "beam 12 targets met")
check("full softmax BLEU 30.00" in md, "summary full BLEU")
check("b12.lsh8-3-500.T2000.t1.batch" in md, "skipped listed")

# --- plot grouping -----------------------------------------------------------
panels = g.plot_panels([doc])
check([(p["label"], p["beam"]) for p in panels] == [("fake", 5), ("fake", 12)], "one panel per beam")
p12 = panels[1]
check(p12["full"] == (1.0, 30.0), "full point at speedup 1")
check(p12["top"] == [(1.25, 29.0, 5000), (2.5, 25.0, 1000)], f"TOP curve by speedup: {p12['top']}")
check(sorted(p12["lsh"]) == ["16,3,500", "8,3,500"], "LSH grouped by K,u,W")
check(p12["lsh"]["16,3,500"] == [(1.6, 29.9, 1000, 1, "batch"), (2.0, 29.8, 1000, 2, "batch")],
      f"LSH points: {p12['lsh']['16,3,500']}")
po = g.plot_panels([doc], x="output_layer_speedup")
check(po[0]["lsh"] == {} and po[1]["lsh"]["16,3,500"][0][0] == 3.0, "x = output-layer speedup")
check("matplotlib" not in sys.modules, "lshgrid does not import matplotlib")

# plot-lsh imports without matplotlib at module level
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
loader = importlib.machinery.SourceFileLoader("plot_lsh", os.path.join(EVAL, "plot-lsh"))
spec = importlib.util.spec_from_loader("plot_lsh", loader)
plot_lsh = importlib.util.module_from_spec(spec)
loader.exec_module(plot_lsh)
check("matplotlib" not in sys.modules, "plot-lsh imports matplotlib only when plotting")
check(plot_lsh.plot_panels is g.plot_panels, "plot-lsh groups with lshgrid.plot_panels")

# --- a whole run against a fake engine ------------------------------------------
FAKE = r'''#!/usr/bin/env python3
import json, sys, time
a = sys.argv[1:]
opt = lambda k, d=None: a[a.index(k) + 1] if k in a else d
lines = sys.stdin.read().splitlines()
mode, vocab = "full", 1000.0
if "--lsh" in a:
    k, u, w, T, t = map(int, opt("--lsh").split(","))
    mode, vocab = "lsh", T + 100.0 / t
elif "--top-words" in a:
    mode, vocab = "top", float(opt("--top-words"))
out = []
for line in lines:
    words = line.split()
    if mode == "top" and vocab < 100 and words:
        words = words[:-1]
    out.append(" ".join(words))
t0 = time.time()
time.sleep(0.0002 * vocab * len(lines) / 50)
sys.stdout.write("".join(x + "\n" for x in out))
if opt("--timing"):
    json.dump({"device": "cpu", "lines": len(lines), "sentences": len(lines),
               "decode_seconds": time.time() - t0}, open(opt("--timing"), "w"))
if opt("--stats"):
    json.dump({"device": "cpu", "lines": len(lines), "sentences": len(lines), "decode_seconds": 0.01,
               "steps": 10 * len(lines), "row_steps": 50 * len(lines), "output_layer_ms": vocab / 10,
               "vocab_mode": mode, "lsh": None, "candidates_per_row": vocab,
               "recall": None if mode == "full" else 0.9, "recall_rows": 50 * len(lines)},
              open(opt("--stats"), "w"))
'''
try:
    import sacrebleu  # noqa: F401
    have_sacrebleu = True
except ImportError:
    have_sacrebleu = False
    print("sacreBLEU not importable: the fake-engine run is skipped")
if have_sacrebleu:
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "translate")
        with open(fake, "w") as f:
            f.write(FAKE.replace("/usr/bin/env python3", sys.executable, 1))
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        src = os.path.join(tmp, "src.txt")
        with open(src, "w") as f:
            f.write("".join(f"the cat number {i} sat on the mat today\n" for i in range(40)))
        out = os.path.join(tmp, "grid.json")
        argv = ["--translate", fake, "-m", "fake.bin", "--src", src, "--ref", src, "--beams", "1,2",
                "--grid", "8,3,100", "--tops", "50,200", "--thresholds", "1", "--top-baseline", "20,500",
                "--shares", "batch,row", "--share-settings", "1", "--speed-lines", "10",
                "--repeats", "1", "--work", os.path.join(tmp, "w"), "--json", out]
        run = subprocess.run([sys.executable, os.path.join(EVAL, "lsh-grid")] + argv,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
        check(run.returncode == 0, f"fake run exit {run.returncode}")
        if run.returncode:
            print(run.stderr)
        res = json.load(open(out))
        recs = res["records"]
        check(len(recs) == 2 * 6 and all(r["status"] == "ok" for r in recs), "fake run: all 12 ok")
        full = next(r for r in recs if r["mode"] == "full" and r["beam"] == 1)
        check(close(full["bleu"], 100.0, 1e-6), f"identity output: BLEU 100 ({full['bleu']})")
        t20 = next(r for r in recs if r["mode"] == "top" and r["top"] == 20 and r["beam"] == 1)
        check(t20["bleu_loss"] > 0 and close(t20["output_layer_speedup"], 50.0), "TOP 20: loss, 100/2")
        check(any(r["share"] == "row" for r in recs), "row share run")
        check(res["meta"]["complete"] and "13a" in res["meta"]["signature"], "meta complete, signature")
        check(os.path.exists(os.path.join(tmp, "w", "grid.md")), "markdown written")
        check(os.path.exists(os.path.join(tmp, "w", "hyps", "b2.lsh8-3-100.T50.t1.batch.txt")), "hyps kept")
        # the time budget: everything past the baselines is skipped with a 0.01 s budget
        rc = subprocess.run([sys.executable, os.path.join(EVAL, "lsh-grid")] + argv +
                            ["--time-budget", "0.01", "--json", out], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=PYTHON_DIR)).returncode
        res = json.load(open(out))
        check(rc == 0 and [r["mode"] for r in res["records"] if r["status"] == "ok"] == ["full", "full"]
              and len(res["meta"]["skipped"]) == 10 and not res["meta"]["complete"],
              "time budget: baselines run, the rest skipped and listed")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("ok")
