"""dev/eval/onmt_speed.py on the CPU (the GPU is where its numbers are taken,
docs/performance.md "Against the baselines"): on 5 lines of the shipped
model at two batch sizes, one record per batch size with the lines counted,
a positive time per run, and OpenNMT-py's output a line per input line whose
tokens are the rate's. Exit 77 when torch or OpenNMT-py is not importable.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
LINES = ["Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.",
         "Ein Boston Terrier läuft über saftig-grünes Gras vor einem weißen Zaun.",
         "",
         "Leute Reparieren das Dach eines Hauses.",
         "Zwei Hunde spielen im Schnee.",
         "Eine Frau liest ein Buch."]


def main():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(ROOT, "python"), os.path.join(ROOT, "dev", "eval"),
         os.environ.get("PYTHONPATH", "")]))
    probe = subprocess.run([sys.executable, "-c", "import torch, onmt_from_model as o; "
                            "o._stand_ins(); import onmt.bin.translate, pyonmttok"],
                           env=env, capture_output=True, text=True)
    if probe.returncode != 0:
        print("skipped: torch or OpenNMT-py is not importable: "
              + (probe.stderr.strip().splitlines() or ["?"])[-1])
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src.de")
        with open(src, "w", encoding="utf-8") as f:
            f.write("\n".join(LINES) + "\n")
        out = os.path.join(tmp, "onmt.json")
        r = subprocess.run([sys.executable, os.path.join(ROOT, "dev", "eval", "onmt_speed.py"),
                            "-m", os.path.join(ROOT, "models", "multi30k-de-en.bin"),
                            "--src", src, "--batch-sizes", "2,8", "--precisions", "fp32",
                            "--repeat", "1", "--device", "cpu", "--work", tmp, "--json", out],
                           env=env, capture_output=True, text=True, timeout=600)
        print(r.stdout + r.stderr[-2000:])
        if r.returncode != 0:
            print(f"FAIL: onmt_speed.py exited {r.returncode}")
            return 1
        records = json.load(open(out))["records"]
        failures = []
        want = [line for line in LINES if line.strip()]  # empty lines are not timed
        if [rec["batch_size"] for rec in records] != [2, 8]:
            failures.append(f"records for batch sizes {[rec['batch_size'] for rec in records]}")
        for rec in records:
            if rec["sentences"] != len(want) or len(rec["runs"]) != 1 or not rec["runs"][0] > 0:
                failures.append(f"record {rec}")
            hyps = open(os.path.join(tmp, f"out.fp32.{rec['batch_size']}.txt"),
                        encoding="utf-8").read().splitlines()
            tokens = sum(len(h.split()) for h in hyps)
            if len(hyps) != len(want) or tokens != rec["tgt_tokens"] or tokens == 0:
                failures.append(f"batch {rec['batch_size']}: {len(hyps)} lines, {tokens} tokens")
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
