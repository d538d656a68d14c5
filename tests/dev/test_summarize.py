"""dev/bench/summarize.py's tables from hand-made JSON lines, without a GPU.

Checks the GEMM tables (bench_gemm_algos): cuBLASLt's first choice against
the fastest algorithm offered and cublasGemmEx, one row a shape; the rows
whose bits change with the row count, the most over row counts from 3 and,
apart, at 1-2 rows, one row a site, type and policy. And that a run with no
kernel-bench data says so: exit status 1, the missing targets on stderr.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARIZE = os.path.join(HERE, "..", "..", "dev", "bench", "summarize.py")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def algos(site, m, algo, us):
    return {"bench": "gemm_algos", "site": site, "type": "fp16", "m": m, "n": 4800, "k": 512,
            "algo": algo, "us": us}


def invariance(site, typ, policy, m, bad):
    return {"bench": "gemm_invariance", "site": site, "type": typ, "n": 2048, "k": 1024,
            "policy": policy, "m": m, "rows_differing": bad, "us": 1.0}


def run(records):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
        f.write("not json: ignored\n")
        path = f.name
    try:
        p = subprocess.run([sys.executable, SUMMARIZE, path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    return p


def table_rows(text, heading):
    """The markdown rows (cells stripped) of the table under heading."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    if start is None:
        return []
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows[1:]  # without the header row


def main():
    records = [
        algos("output", 320, "gemmex", 10.0),
        algos("output", 320, 0, 8.0),
        algos("output", 320, 1, 6.4),
        algos("output", 320, 2, 9.0),
        algos("output", 5120, "lt_first", 60.0),  # a bias shape's baseline: algorithm 0 again
        algos("output", 5120, 0, 60.0),
        algos("output", 5120, 1, 61.0),
        invariance("layer0", "fp16", "lt", 1, 1),
        invariance("layer0", "fp16", "lt", 2, 0),
        invariance("layer0", "fp16", "lt", 3, 0),
        invariance("layer0", "fp16", "lt", 320, 0),
        invariance("layer0", "fp32", "lt", 2, 2),
        invariance("layer0", "fp32", "lt", 16, 16),
        invariance("layer0", "fp32", "lt", 320, 320),
        invariance("layer0", "fp32", "lt", 5120, 0),
    ]
    p = run(records)
    out = p.stdout
    rows = table_rows(out, "## 16-bit GEMMs")
    check(len(rows) == 2, f"two shapes in the algorithms table, got {rows}")
    by_m = {r[2]: r for r in rows}
    small = by_m.get("320 x 4800 x 512")
    check(small == ["output", "fp16", "320 x 4800 x 512", "10.00", "8.00", "6.40", "1.25"],
          f"320 rows: GemmEx 10, first 8, fastest 6.4, first/fastest 1.25; got {small}")
    big = by_m.get("5120 x 4800 x 512")
    check(big == ["output", "fp16", "5120 x 4800 x 512", "-", "60.00", "60.00", "1.00"],
          f"5,120 rows: no GemmEx, the lt_first baseline not counted; got {big}")

    rows = table_rows(out, "## GEMM rows against the row count")
    got = {(r[1], r[3]): (r[4], r[5]) for r in rows}
    check(got.get(("fp16", "lt")) == ("0", "1"),
          f"fp16: 0 rows from 3 rows on, 1 at 1-2 rows; got {got.get(('fp16', 'lt'))}")
    check(got.get(("fp32", "lt")) == ("320", "2"),
          f"fp32: the most from 3 rows on (320), 2 at 1-2 rows; got {got.get(('fp32', 'lt'))}")

    # No kernel-bench data: the targets say so and the status is 1.
    check(p.returncode == 1, f"exit status {p.returncode} without the kernel benches' data")
    check("no softmax_topk JSON lines found" in p.stderr,
          f"the missing softmax_topk data named on stderr: {p.stderr[:300]}")

    for f in failures:
        print("FAIL:", f)
    print(f"test_summarize: {'passed' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
