#!/usr/bin/env python3
"""bench_python: the Python package's translate_batch against the C library,
side by side in one run (docs/perf/service.md, "Python").

    dev/bench/bench_python.py BUILD_DIR MODEL SOURCE [--batch 64] [--beam 5]
        [--passes 5] [--rounds 3] [--device cuda]

Both sides translate SOURCE in calls of --batch lines, one translator each,
the same options: the C side is BUILD_DIR/bench_passes (nmt_translate_batch
in a loop), the Python side nmt.Translator.translate_batch with the results
turned into Python objects (what a caller gets). Each round runs both, each
--passes times over the file; the first pass of a side is its warm-up and
is dropped. Prints one JSON line: the median pass time of each side over
all rounds, sentences/s, and python/C (the time ratio, 1.05 = 5% slower).
The Python package is loaded from python/ next to this script, with
NMT_LIBRARY=BUILD_DIR/libnmt.so.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def c_passes(build, model, source, batch, beam, passes, device):
    out = subprocess.run([os.path.join(build, "bench_passes"), model, source, str(batch),
                          str(beam), str(passes), device], check=True, capture_output=True,
                         text=True).stdout
    totals = [float(m.group(1)) for m in re.finditer(r"total ([0-9.]+) ms", out)]
    if len(totals) != passes:
        raise SystemExit("bench_passes printed %d pass totals, want %d:\n%s"
                         % (len(totals), passes, out))
    return totals[1:]


def python_passes(translator, lines, batch, passes):
    totals = []
    for _ in range(passes):
        start = time.perf_counter()
        for first in range(0, len(lines), batch):
            results = translator.translate_batch(lines[first:first + batch])
            for r in results:
                if r.ok:
                    r.hypotheses[0].text  # noqa: B018 (what a caller reads)
        totals.append(1e3 * (time.perf_counter() - start))
    return totals[1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("model")
    ap.add_argument("source")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    os.environ.setdefault("NMT_LIBRARY", os.path.join(a.build, "libnmt.so"))
    import nmt  # after NMT_LIBRARY

    with open(a.source, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    translator = nmt.Translator(a.model, device=a.device, batch_size=a.batch,
                                beam_size=a.beam)
    c_ms, py_ms = [], []
    for _ in range(a.rounds):
        c_ms += c_passes(a.build, a.model, a.source, a.batch, a.beam, a.passes, a.device)
        py_ms += python_passes(translator, lines, a.batch, a.passes)
    translator.close()
    c_med, py_med = statistics.median(c_ms), statistics.median(py_ms)
    print(json.dumps({
        "bench": "python", "lines": len(lines), "batch": a.batch, "beam": a.beam,
        "device": a.device, "passes_timed": len(c_ms),
        "c_ms": round(c_med, 2), "python_ms": round(py_med, 2),
        "c_sents_per_s": round(1e3 * len(lines) / c_med, 1),
        "python_sents_per_s": round(1e3 * len(lines) / py_med, 1),
        "python_over_c": round(py_med / c_med, 4)}))


if __name__ == "__main__":
    main()
