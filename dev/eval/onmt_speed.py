#!/usr/bin/env python3
"""OpenNMT-py's own translator on the engine's model, timed on the same lines.

    PYTHONPATH=python:dev/eval python3 dev/eval/onmt_speed.py -m models/multi30k-de-en.bin \\
        --src train29k.de --batch-sizes 64,1024 --precisions fp32,fp16 --work /tmp/onmt \\
        --json onmt.json

Rebuilds the model file as an OpenNMT-py 3.5.1 checkpoint
(dev/eval/onmt_from_model.py), writes the source as OpenNMT-py reads it (the
engine's tokens as "key￨case-class", python/export/onmt_convert.py's
onmt_source_line), then runs `onmt_translate -gpu 0 -beam_size B -batch_size N
-precision P -n_src_feats 1 -report_time` once per run, in a fresh process,
and keeps the translator's own time (after the model is loaded; its reading
of the already tokenized lines is inside it). It prints that time to 0.1 s
but its tokens per second to 0.1 token, so a run's time is taken as the
output's tokens over that rate (its count is the same tokens), and the
"Total translation time" only where the rate is missing. Throughput
is the median of --repeat runs; target tokens are counted in its output
(space-separated tokens, as dev/eval/speed counts the engine's). Prints a
table, writes JSON records with impl "onmt" (dev/eval/speed's fields).

Needs torch with a GPU and OpenNMT-py 3.5.1, ConfigArgParse and pyonmttok
(docs/onmt.md; on the device they travel as wheels).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TIME_RE = re.compile(r"Total translation time \(s\): ([0-9.]+)")
RATE_RE = re.compile(r"Tokens per second: ([0-9.]+)")


def run_onmt(argv):
    """The child: onmt_translate with argv, optional imports stood in. The
    checkpoint holds its options as an argparse.Namespace, which torch >= 2.6
    refuses to unpickle by default (weights_only); it is our own file."""
    import torch
    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals([argparse.Namespace])
    sys.path.insert(0, HERE)
    import onmt_from_model
    onmt_from_model._stand_ins()
    sys.argv = ["onmt_translate"] + argv
    from onmt.bin import translate
    return translate.main()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", required=True)
    p.add_argument("--src", required=True, help="raw source lines (.gz/.xz ok)")
    p.add_argument("--lines", type=int, default=0, help="the first N lines (0: all)")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--batch-sizes", default="64")
    p.add_argument("--precisions", default="fp32", help="onmt_translate -precision values")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--work", required=True, help="folder for the checkpoint and outputs")
    p.add_argument("--json")
    args = p.parse_args(argv)

    import torch
    import onmt_from_model
    from export.onmt_convert import onmt_source_line
    from pynmt.data import read_lines

    os.makedirs(args.work, exist_ok=True)
    ckpt = os.path.join(args.work, "model.pt")
    torch.save(onmt_from_model.rebuild(args.model), ckpt)
    src = [line for line in read_lines(args.src) if line.strip()]
    if args.lines:
        src = src[:args.lines]
    src_path = os.path.join(args.work, "src.onmt")
    with open(src_path, "w", encoding="utf-8") as f:
        for line in src:
            f.write(onmt_source_line(line) + "\n")

    env = dict(os.environ, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1", PYTHONPATH=os.pathsep.join(
        [HERE, os.path.join(HERE, "..", "..", "python"), os.environ.get("PYTHONPATH", "")]))
    records = []
    for precision in args.precisions.split(","):
        for batch in [int(b) for b in args.batch_sizes.split(",")]:
            out_path = os.path.join(args.work, f"out.{precision}.{batch}.txt")
            runs = []
            for _ in range(args.repeat):
                cmd = [sys.executable, os.path.abspath(__file__), "--run-onmt", "-model", ckpt,
                       "-src", src_path, "-output", out_path,
                       "-gpu", "0" if args.device == "cuda" else "-1",
                       "-beam_size", str(args.beam), "-batch_size", str(batch),
                       "-precision", precision, "-n_src_feats", "1", "-report_time"]
                r = subprocess.run(cmd, capture_output=True, text=True, env=env)
                found = TIME_RE.findall(r.stdout + r.stderr)
                if r.returncode != 0 or not found:
                    sys.stderr.write((r.stdout + r.stderr)[-3000:])
                    raise SystemExit(f"onmt_translate exited {r.returncode} (batch {batch}, "
                                     f"{precision})")
                hyps = open(out_path, encoding="utf-8").read().splitlines()
                if len(hyps) != len(src):
                    raise SystemExit(f"onmt_translate wrote {len(hyps)} lines for {len(src)}")
                tokens = sum(len(h.split()) for h in hyps)
                rate = RATE_RE.findall(r.stdout + r.stderr)
                runs.append(tokens / float(rate[-1]) if rate and float(rate[-1]) > 0
                            else float(found[-1]))
            seconds = statistics.median(runs)
            records.append({"impl": "onmt", "device": args.device, "beam": args.beam,
                            "precision": precision, "batch_size": batch,
                            "sentences": len(src), "seconds": seconds, "runs": runs,
                            "sent_per_s": len(src) / seconds, "tgt_tok_per_s": tokens / seconds,
                            "tgt_tokens": tokens,
                            "method": "onmt_translate -report_time: output tokens / its "
                                      "tokens per second"})
            print(f"onmt {precision:<5} beam {args.beam} batch {batch:>5}: "
                  f"{len(src) / seconds:9.1f} sent/s {tokens / seconds:10.0f} tok/s "
                  f"(runs {', '.join(f'{x:.2f}' for x in runs)} s)", flush=True)
    if args.json:
        meta = {"model": args.model, "src": args.src, "sentences": len(src),
                "repeat": args.repeat}
        if args.device == "cuda":
            meta["gpu"] = torch.cuda.get_device_name(0)
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "records": records}, f, indent=1)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--run-onmt":
        sys.exit(run_onmt(sys.argv[2:]))
    sys.exit(main())
