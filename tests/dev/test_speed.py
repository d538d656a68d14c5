"""dev/eval/speed's records (not its timings), on the CPU with the test model:
every engine record counts the lines and the target tokens of what translate
wrote, has a positive time, and names the precision the engine reported in
its --timing file (fp32 on the CPU, whatever --precision asked: the CPU
engine is fp32), so that a speed row says what arithmetic it measured.
Batch 0 is translate without --batch-size.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SPEED = os.path.join(HERE, "..", "..", "dev", "eval", "speed")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    translate = os.environ.get("NMT_TRANSLATE")
    model = os.environ.get("NMT_TEST_MODEL")
    if not translate or not model or not os.path.exists(translate):
        print("test_speed: NMT_TRANSLATE / NMT_TEST_MODEL not set: skipped")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src.txt")
        with open(src, "w", encoding="utf-8") as f:
            f.write("ein mann spielt\nzwei hunde im park\nHaus\nein kind läuft .\n"
                    "eine frau\nder ball ist rot\n")
        out = os.path.join(tmp, "speed.json")
        for extra in ([], ["--engine-option=--precision=fp16"]):
            proc = subprocess.run(
                [sys.executable, SPEED, "-m", model, "--src", src, "--device", "cpu",
                 "--translate", translate, "--beams", "2", "--batch-sizes", "0,4",
                 "--repeat", "1", "--latency-lines", "0", "--json", out] + extra,
                capture_output=True, text=True, timeout=300)
            what = " ".join(extra) or "defaults"
            check(proc.returncode == 0, f"{what}: exit {proc.returncode}: {proc.stderr[-500:]}")
            if proc.returncode != 0:
                continue
            with open(out, encoding="utf-8") as f:
                records = json.load(f)["records"]
            engine = [r for r in records if r["impl"] == "engine"]
            check(sorted(r["batch_size"] for r in engine) == [0, 4],
                  f"{what}: batch sizes {[r['batch_size'] for r in engine]}")
            for r in engine:
                check(r.get("precision") == "fp32",
                      f"{what}: batch {r['batch_size']}: precision {r.get('precision')}")
                check(r["sentences"] == 6 and r["tgt_tokens"] > 0 and r["seconds"] > 0,
                      f"{what}: batch {r['batch_size']}: {r['sentences']} sentences, "
                      f"{r['tgt_tokens']} tokens, {r['seconds']} s")
            check(" prec " in proc.stdout and " fp32 " in proc.stdout,
                  f"{what}: no precision column in the table:\n{proc.stdout}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print("test_speed:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
