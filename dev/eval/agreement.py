#!/usr/bin/env python3
"""Agreement of two translators' `--scores` outputs (SCORE<TAB>TEXT per line).

Reports the fraction of identical lines and, for each differing line, both
hypotheses and scores, so a difference can be explained (e.g. two hypotheses
whose scores tie within float rounding). Exit status 0 when the identical
fraction reaches --min (default 0.99)."""
import argparse
import sys


def read(path):
    with open(path, encoding="utf-8") as f:
        rows = []
        for line in f:
            score, _, text = line.rstrip("\n").partition("\t")
            rows.append((float(score), text))
        return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--min", type=float, default=0.99, help="required identical fraction")
    ap.add_argument("--show", type=int, default=10, help="differing lines to print")
    args = ap.parse_args()
    a, b = read(args.a), read(args.b)
    if len(a) != len(b):
        sys.exit(f"line counts differ: {len(a)} vs {len(b)}")
    same = sum(x[1] == y[1] for x, y in zip(a, b))
    score_diffs = [abs(x[0] - y[0]) for x, y in zip(a, b) if x[1] == y[1]]
    print(f"{args.a} vs {args.b}: {same}/{len(a)} identical ({100.0 * same / max(1, len(a)):.2f}%), "
          f"max score difference on identical lines {max(score_diffs, default=0):.2g}")
    shown = 0
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x[1] != y[1] and shown < args.show:
            print(f"line {i}: score difference {abs(x[0] - y[0]):.3g}\n  A {x[0]:.6f}\t{x[1]}\n  B {y[0]:.6f}\t{y[1]}")
            shown += 1
    return 0 if same >= args.min * len(a) else 1


if __name__ == "__main__":
    sys.exit(main())
