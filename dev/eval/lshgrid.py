"""LSH vocabulary shrinking: a grid of settings, each scored for quality and timed.

For each beam, the full softmax is run first (the baseline), then every
setting: LSH ({K,u,W} x T x t, candidate list shared per batch by default),
the TOP baseline (only the special ids and the T most frequent target words)
and, on the first few LSH settings, the other ways of sharing the candidate
list (--shares: batch, sentence, row).

Each (beam, setting) has:
  - one quality run over the whole --src at --batch-size with --stats FILE:
    sacreBLEU (cased, 13a, as dev/eval/bleu), the mean candidate words per
    live hypothesis-step ("vocab/row"), recall (the fraction of live
    hypothesis-steps whose full-softmax top-B words all lie in the candidate
    list) and the output-layer time (the engine's own timer, in the --stats
    run);
  - speed runs with --timing (the engine's wall time inside its translate
    calls; no recall work): the first --speed-lines non-empty source lines
    at each --speed-batch, the median of --repeats runs (model load, device
    set-up and the LSH index build are not in it).

Against the full softmax at the same beam: BLEU loss = full BLEU - BLEU;
output-layer speedup = full output_layer_ms / output_layer_ms (both from the
stats runs, same input); speedup = full decode seconds / decode seconds (the
speed runs); "vs TOP" = BLEU - the TOP curve's BLEU at the same speedup
(linear between TOP points, the full softmax at speedup 1 included; empty
outside the curve's range).

Order and time budget: the full-softmax baselines first, then the LSH, TOP
and sharing lists interleaved in proportion (each list in the order given),
each setting at every beam in turn. With --time-budget S, a (setting, beam)
is not started when the elapsed time plus the mean duration of the finished
ones at that beam would pass S; it is recorded as skipped. The JSON and the
markdown are rewritten after every setting, so a run cut short keeps what it
measured.

Assumed engine interface (build/translate): --beam, --batch-size, --device,
--no-progress, --lsh K,u,W,T,t, --lsh-share batch|sentence|row, --lsh-seed N,
--top-words T, --stats FILE (a JSON object with device, lines, sentences,
decode_seconds, steps, row_steps, output_layer_ms, vocab_mode, lsh,
candidates_per_row, recall, recall_rows).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import time
# The report half (also what tests/dev/test_lsh_grid.py reaches through this module).
from lshreport import (COLUMN_HELP, COLUMNS, MODES, SHARES, best_under_loss,  # noqa: F401
                       derive, fmt, interpolate, markdown_table, pareto,
                       plot_panels, ratio, render_markdown, table_rows)



DEFAULTS = {
    "grid": "16,3,500;8,3,500;16,2,250;8,2,100",
    "tops": "500,1000,2000",
    "thresholds": "1,2,4",
    "top_baseline": "500,1000,2000,5000,10000",
    "shares": "batch",
    "share_settings": 2,
    "beams": "5,12",
    "repeats": 3,
    "speed_lines": 300,
    "speed_batch": "1",
}
QUICK = {
    "grid": "16,3,500",
    "tops": "500",
    "thresholds": "1,2",
    "top_baseline": "500,2000",
    "shares": "batch",
    "share_settings": 1,
    "repeats": 1,
    "speed_lines": 100,
}


from lshsettings import (Setting, parse_int_list, parse_grid, parse_grid_thresholds,
                         parse_shares, interleave, build_settings,
                         build_schedule)  # noqa: F401



# --- engine runs -------------------------------------------------------------

def read_text_lines(path: str) -> list[str]:
    """pynmt.data.read_lines (plain, .gz, .xz); a copy of its two rules when
    pynmt.data cannot be imported (it imports torch)."""
    try:
        from pynmt.data import read_lines
    except ImportError:
        import gzip
        import lzma
        opener = gzip.open if path.endswith(".gz") else lzma.open if path.endswith(".xz") else open
        with opener(path, "rt", encoding="utf-8", newline="\n") as f:
            return [line.rstrip("\n").removesuffix("\r") for line in f]
    return read_lines(path)


def engine_command(translate, model, setting: Setting, beam, batch, device, seed=1,
                   extra=(), stats=None) -> list[str]:
    cmd = [translate, "-m", model, "--beam", str(beam), "--batch-size", str(batch),
           "--device", device, "--no-progress"] + setting.engine_options(seed)
    if stats:
        cmd += ["--stats", stats]
    return cmd + list(extra)


class EngineError(RuntimeError):
    pass


def run_engine(cmd, text, log_path=None, timeout=None):
    """Runs cmd with text on stdin: (wall seconds, output lines). Exit 0 or 1
    (1: some lines refused, each still has an output line) is success. stderr
    goes to log_path (appended)."""
    err = open(log_path, "a", encoding="utf-8") if log_path else subprocess.DEVNULL
    try:
        if log_path:
            err.write(f"$ {shlex.join(cmd)}\n")
            err.flush()
        t = time.perf_counter()
        proc = subprocess.run(cmd, input=text, stdout=subprocess.PIPE, stderr=err, text=True,
                              encoding="utf-8", timeout=timeout)
        seconds = time.perf_counter() - t
    except subprocess.TimeoutExpired:
        raise EngineError(f"timed out after {timeout}s: {shlex.join(cmd)}") from None
    except OSError as e:
        raise EngineError(f"{shlex.join(cmd)}: {e}") from None
    finally:
        if log_path:
            err.close()
    if proc.returncode not in (0, 1):
        last = ""
        if log_path:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                lines = [x.strip() for x in f if x.strip() and not x.startswith("$ ")]
            last = lines[-1] if lines else ""
        raise EngineError(f"exit {proc.returncode}" + (f": {last}" if last else "")
                          + f"\ncommand: {shlex.join(cmd)}")
    lines = proc.stdout.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return seconds, lines


def score_bleu(hyps: list[str], refs: list[str], tokenize="13a", lowercase=False):
    """sacreBLEU corpus score with dev/eval/bleu's settings (cased, 13a):
    (score, full string, signature)."""
    import sacrebleu
    metric = sacrebleu.metrics.BLEU(tokenize=tokenize, lowercase=lowercase)
    score = metric.corpus_score(hyps, [refs])
    return score.score, str(score), str(metric.get_signature())


# --- records ------------------------------------------------------------------

def record_from_stats(rec: dict, stats: dict) -> dict:
    """Copies the stats fields the table uses onto the record."""
    rec["stats"] = stats
    rec["vocab_per_row"] = stats.get("candidates_per_row")
    rec["recall"] = stats.get("recall")
    rec["recall_rows"] = stats.get("recall_rows")
    rec["output_layer_ms"] = stats.get("output_layer_ms")
    rec["steps"] = stats.get("steps")
    rec["row_steps"] = stats.get("row_steps")
    rec["device"] = stats.get("device")
    return rec


def new_record(setting: Setting, beam: int) -> dict:
    return {"name": f"b{beam}.{setting.name}", "beam": beam, "mode": setting.mode,
            "k": setting.k, "u": setting.u, "w": setting.w, "top": setting.top,
            "threshold": setting.threshold, "share": setting.share, "status": "pending",
            "error": None, "bleu": None, "vocab_per_row": None, "recall": None,
            "recall_rows": None, "output_layer_ms": None, "speed": [], "decode_seconds": None}


# --- the driver --------------------------------------------------------------

def resolve(args, parser):
    """Fills options left unset from --quick's preset, else the defaults."""
    for key, value in DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, QUICK.get(key, value) if args.quick else value)
    try:
        args.beam_list = parse_int_list(args.beams, "beams")
        args.grid_list = parse_grid(args.grid)
        args.grid_thresholds = parse_grid_thresholds(args.grid)
        args.top_list = parse_int_list(args.tops, "tops")
        args.threshold_list = parse_int_list(args.thresholds, "thresholds")
        args.top_baseline_list = (parse_int_list(args.top_baseline, "top-baseline")
                                  if args.top_baseline.strip() not in ("", "none", "0") else [])
        args.share_list = parse_shares(args.shares)
        args.speed_batches = (parse_int_list(args.speed_batch, "speed-batch")
                              if args.speed_lines > 0 else [])
    except ValueError as e:
        parser.error(str(e))
    return args


def make_parser():
    doc = __doc__.split("\n\n")
    p = argparse.ArgumentParser(
        prog="lsh-grid", description=doc[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(doc[1:]) + "\n\nExample:\n  dev/eval/lsh-grid -m model.bin "
        "--src test.it.gz --ref test.en.gz --beams 5,12 --grid '16,3,500;8,3,500' --tops 1000,2000 "
        "--thresholds 1,2 --time-budget 240 --work out/lsh --json out/lsh/grid.json")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    g = p.add_argument_group("input")
    g.add_argument("--translate", default=os.path.join(repo, "build", "translate"),
                   help="the translate binary (default build/translate)")
    g.add_argument("-m", "--model", required=True, help="model.bin")
    g.add_argument("--src", required=True, help="source (plain, .gz, .xz)")
    g.add_argument("--ref", required=True, help="references (plain, .gz, .xz), raw and cased")
    g.add_argument("--label", help="name of the model in tables and plots (default: file name)")
    g.add_argument("--quality-lines", type=int, default=0,
                   help="quality runs on the first N lines only (0: all, the default)")
    g = p.add_argument_group("grid")
    g.add_argument("--quick", action="store_true",
                   help=f"small preset for unset options: {json.dumps(QUICK)}")
    g.add_argument("--beams", help=f"comma list (default {DEFAULTS['beams']})")
    g.add_argument("--grid", help="WTA settings 'K,u,W;K,u,W;...', in priority order; "
                   "'K,u,W,t1/t2' gives that entry its own thresholds "
                   f"(default '{DEFAULTS['grid']}')")
    g.add_argument("--tops", help=f"T values (merged frequent words) for LSH (default {DEFAULTS['tops']})")
    g.add_argument("--thresholds", help=f"t values for LSH (default {DEFAULTS['thresholds']})")
    g.add_argument("--top-baseline", help="T values of the TOP baseline, 'none' for none "
                   f"(default {DEFAULTS['top_baseline']})")
    g.add_argument("--shares", help="candidate-list sharing, comma list of batch,sentence,row: the "
                   f"first for every LSH setting, the others on the first --share-settings "
                   f"(default {DEFAULTS['shares']})")
    g.add_argument("--share-settings", type=int,
                   help=f"LSH settings the other shares run on (default {DEFAULTS['share_settings']})")
    g.add_argument("--lsh-seed", type=int, default=1, help="engine --lsh-seed (default 1)")
    g = p.add_argument_group("runs")
    g.add_argument("--device", default="auto", help="engine --device: auto, cuda, cpu (default auto)")
    g.add_argument("--batch-size", type=int, default=64, help="batch size of the quality runs (default 64)")
    g.add_argument("--speed-batch", help="batch size(s) of the speed runs, comma list; the first is "
                   f"the 'speedup' column and the plots' (default {DEFAULTS['speed_batch']})")
    g.add_argument("--speed-lines", type=int,
                   help=f"speed runs on the first N non-empty lines; 0: no speed runs "
                   f"(default {DEFAULTS['speed_lines']})")
    g.add_argument("--repeats", type=int, help=f"speed runs per setting, median kept (default {DEFAULTS['repeats']})")
    g.add_argument("--engine-option", action="append", default=[],
                   help="extra engine option (repeatable, e.g. --engine-option=--alpha=0.6)")
    g.add_argument("--precision", default="fp32",
                   help="engine --precision (default fp32, the grids of docs/lsh.md; translate's "
                        "own default, auto, is fp16 for an fp16 model file)")
    g.add_argument("--time-budget", type=float, default=0,
                   help="seconds; do not start a (setting, beam) expected to end past it (0: none)")
    g.add_argument("--run-timeout", type=float, default=0,
                   help="seconds one engine process may run (0: no limit)")
    g.add_argument("--dry-run", action="store_true", help="print the schedule and commands, run nothing")
    g = p.add_argument_group("output")
    g.add_argument("--work", default="out/lsh-grid", help="folder for hyps/, stats/, logs/ (default out/lsh-grid)")
    g.add_argument("--json", help="results JSON (default WORK/grid.json)")
    g.add_argument("--markdown", help="results table (default WORK/grid.md)")
    g.add_argument("--max-loss", type=float, default=0.4, help="BLEU loss target for the summary (0.4)")
    g.add_argument("--target-output-speedup", type=float, default=3.0, help="summary target (3.0)")
    g.add_argument("--target-speedup", type=float, default=1.5, help="summary target (1.5)")
    return p


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_one(args, setting, beam, src_text, refs, speed_text, paths, doc):
    """Quality and speed runs of one (setting, beam): a record."""
    rec = new_record(setting, beam)
    name = rec["name"]
    stats_path = os.path.join(paths["stats"], name + ".json")
    log_path = os.path.join(paths["logs"], name + ".log")
    hyp_path = os.path.join(paths["hyps"], name + ".txt")
    for stale in (stats_path, log_path):
        if os.path.exists(stale):
            os.remove(stale)
    timeout = args.run_timeout or None
    cmd = engine_command(args.translate, args.model, setting, beam, args.batch_size, args.device,
                         args.lsh_seed, args.engine_option, stats=stats_path)
    rec["command"] = shlex.join(cmd)
    try:
        seconds, hyps = run_engine(cmd, src_text, log_path, timeout)
        rec["quality_seconds"] = seconds
        if len(hyps) != len(refs):
            raise EngineError(f"{len(hyps)} output lines for {len(refs)} input lines")
        with open(hyp_path, "w", encoding="utf-8") as f:
            f.write("".join(h + "\n" for h in hyps))
        rec["bleu"], rec["bleu_score"], signature = score_bleu(hyps, refs)
        doc["meta"]["signature"] = signature
        if os.path.exists(stats_path):
            with open(stats_path, encoding="utf-8") as f:
                record_from_stats(rec, json.load(f))
        else:
            rec["stats"] = None
            log(f"  warning: no stats file {stats_path}")
        if rec.get("device") and not doc["meta"].get("device"):
            doc["meta"]["device"] = rec["device"]
        for batch in args.speed_batches:
            scmd = engine_command(args.translate, args.model, setting, beam, batch, args.device,
                                  args.lsh_seed, args.engine_option)
            # The engine's own clock (--timing: wall time inside nmt_translate_batch)
            # leaves out process start, model load and the LSH index build,
            # whose spread would swamp short decodes; no startup runs needed.
            timing_path = os.path.join(paths["stats"], name + f".timing{batch}.json")
            tcmd = scmd + ["--timing", timing_path]
            runs = []
            for _ in range(args.repeats):
                run_engine(tcmd, speed_text, log_path, timeout)
                with open(timing_path, encoding="utf-8") as f:
                    runs.append(float(json.load(f)["decode_seconds"]))
            rec["speed"].append(speed_entry(batch, args.speed_lines_used, runs,
                                            shlex.join(tcmd)))
        rec["decode_seconds"] = rec["speed"][0]["seconds"] if rec["speed"] else None
        rec["status"] = "ok"
    except (EngineError, OSError, ValueError) as e:
        rec["status"] = "failed"
        rec["error"] = str(e)
        log(f"  FAILED: {e}")
    return rec


def speed_entry(batch, lines, runs, command=None):
    """One speed measurement: the median of the runs' decode seconds (the
    engine's --timing clock); None when no run measured a positive time."""
    decode = statistics.median(runs) if runs else 0.0
    return {"batch": batch, "lines": lines, "runs": runs,
            "seconds": decode if decode > 0 else None, "command": command}


def progress_line(rec):
    if rec["status"] != "ok":
        return rec["status"]
    parts = [f"BLEU {fmt(rec.get('bleu'), '.2f')}"]
    if rec.get("bleu_loss") is not None and rec["mode"] != "full":
        parts[-1] += f" (loss {rec['bleu_loss']:+.2f})"
    parts.append(f"vocab/row {fmt(rec.get('vocab_per_row'), '.0f')}")
    parts.append(f"recall {fmt(rec.get('recall'), '.4f')}")
    parts.append(f"out-layer {fmt(rec.get('output_layer_ms'), '.1f')} ms"
                 + (f" ({rec['output_layer_speedup']:.2f}x)"
                    if rec.get("output_layer_speedup") is not None and rec["mode"] != "full" else ""))
    if rec.get("decode_seconds") is not None:
        parts.append(f"decode {rec['decode_seconds']:.3f}s"
                     + (f" ({rec['speedup']:.2f}x)"
                        if rec.get("speedup") is not None and rec["mode"] != "full" else ""))
    return ", ".join(parts)


def write_outputs(doc, args):
    derive(doc["records"])
    tmp = args.json + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, args.json)
    with open(args.markdown, "w", encoding="utf-8") as f:
        f.write(render_markdown(doc))


def main(argv=None) -> int:
    parser = make_parser()
    args = resolve(parser.parse_args(argv), parser)
    args.engine_option = ["--precision=" + args.precision] + args.engine_option
    settings = build_settings(args.grid_list, args.top_list, args.threshold_list,
                              args.top_baseline_list, args.share_list, args.share_settings,
                              args.grid_thresholds)
    schedule = build_schedule(settings, args.beam_list)
    args.json = args.json or os.path.join(args.work, "grid.json")
    args.markdown = args.markdown or os.path.join(args.work, "grid.md")
    example = [shlex.join(engine_command(args.translate, args.model, Setting("full"), b,
                                         args.batch_size, args.device, args.lsh_seed,
                                         args.engine_option, stats="STATS.json"))
               + " < SRC > HYP" for b in args.beam_list]
    if args.dry_run:
        for i, (s, beam) in enumerate(schedule, 1):
            cmd = engine_command(args.translate, args.model, s, beam, args.batch_size, args.device,
                                 args.lsh_seed, args.engine_option, stats="STATS.json")
            print(f"{i:3d} beam {beam:3d} {s.describe():50s} {shlex.join(cmd)}")
        return 0

    try:
        import sacrebleu  # noqa: F401  (scoring; fail before any run)
    except ImportError:
        parser.error("sacreBLEU is not importable: pip install sacrebleu")
    src = read_text_lines(args.src)
    refs = read_text_lines(args.ref)
    if len(src) != len(refs):
        parser.error(f"{len(src)} source lines, {len(refs)} reference lines")
    if args.quality_lines:
        src, refs = src[:args.quality_lines], refs[:args.quality_lines]
    src_text = "".join(line + "\n" for line in src)
    speed_src = [line for line in src if line.strip()][:args.speed_lines]
    args.speed_lines_used = len(speed_src)
    speed_text = "".join(line + "\n" for line in speed_src)
    paths = {k: os.path.join(args.work, k) for k in ("hyps", "stats", "logs")}
    for p in list(paths.values()) + [os.path.dirname(os.path.abspath(args.json)),
                                     os.path.dirname(os.path.abspath(args.markdown))]:
        os.makedirs(p, exist_ok=True)

    gpu = None
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        pass
    started = time.time()
    doc = {"meta": {
        "tool": "dev/eval/lsh-grid", "label": args.label or os.path.basename(args.model),
        "model": args.model, "src": args.src, "ref": args.ref, "lines": len(src),
        "translate": args.translate, "device_option": args.device, "device": None, "gpu": gpu,
        "host": socket.gethostname(), "engine_options": args.engine_option,
        "batch_size": args.batch_size, "beams": args.beam_list, "grid": args.grid,
        "tops": args.top_list, "thresholds": args.threshold_list,
        "top_baseline": args.top_baseline_list, "shares": args.share_list,
        "share_settings": args.share_settings, "lsh_seed": args.lsh_seed,
        "speed_batches": args.speed_batches, "speed_lines": args.speed_lines_used,
        "repeats": args.repeats, "time_budget": args.time_budget or None,
        "targets": {"max_loss": args.max_loss, "output_speedup": args.target_output_speedup,
                    "speedup": args.target_speedup},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "signature": None, "total": len(schedule), "done": 0, "failed": 0, "skipped": [],
        "complete": False, "elapsed_seconds": 0.0, "example_commands": example,
        "argv": sys.argv if argv is None else ["lsh-grid"] + list(argv)},
        "records": []}
    log(f"lsh-grid: {len(schedule)} runs ({len(settings)} settings + full softmax, beams "
        f"{args.beam_list}); {len(src)} quality lines, {len(speed_src)} speed lines; "
        f"budget {str(args.time_budget) + 's' if args.time_budget else 'none'}; output {args.json}")
    durations: dict[int, list[float]] = {}
    for i, (setting, beam) in enumerate(schedule, 1):
        if i == len(args.beam_list) + 1 and not any(r["status"] == "ok" for r in doc["records"]):
            log("lsh-grid: the full softmax failed at every beam: stopping")
            break
        elapsed = time.time() - started
        past = durations.get(beam, [])
        expected = statistics.fmean(past) if past else 0.0
        if (args.time_budget and setting.mode != "full"
                and elapsed + expected > args.time_budget):
            rec = new_record(setting, beam)
            rec["status"] = "skipped"
            rec["error"] = f"time budget: {elapsed:.0f}s elapsed + ~{expected:.0f}s expected"
            doc["meta"]["skipped"].append(rec["name"])
            doc["records"].append(rec)
            log(f"[{i}/{len(schedule)} {elapsed:.0f}s] beam {beam} {setting.describe()}: skipped "
                f"(~{expected:.0f}s expected, budget {args.time_budget:.0f}s)")
            continue
        log(f"[{i}/{len(schedule)} {elapsed:.0f}s] beam {beam} {setting.describe()}")
        t = time.time()
        rec = run_one(args, setting, beam, src_text, refs, speed_text, paths, doc)
        rec["seconds"] = time.time() - t
        durations.setdefault(beam, []).append(rec["seconds"])
        doc["records"].append(rec)
        doc["meta"]["done"] += rec["status"] == "ok"
        doc["meta"]["failed"] += rec["status"] == "failed"
        doc["meta"]["elapsed_seconds"] = time.time() - started
        write_outputs(doc, args)
        log(f"  {progress_line(rec)}  [{rec['seconds']:.1f}s]")
    doc["meta"]["elapsed_seconds"] = time.time() - started
    doc["meta"]["complete"] = not doc["meta"]["skipped"] and not doc["meta"]["failed"]
    write_outputs(doc, args)
    header, rows = table_rows([r for r in doc["records"] if r["status"] != "skipped"],
                              args.speed_batches)
    print(markdown_table(header, rows))
    log(f"lsh-grid: {doc['meta']['done']} done, {doc['meta']['failed']} failed, "
        f"{len(doc['meta']['skipped'])} skipped in {doc['meta']['elapsed_seconds']:.0f}s; "
        f"{args.json}, {args.markdown}")
    full_ok = all(any(r["mode"] == "full" and r["beam"] == b and r["status"] == "ok"
                      for r in doc["records"]) for b in args.beam_list)
    return 0 if full_ok else 1
