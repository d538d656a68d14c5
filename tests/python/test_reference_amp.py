"""The PyTorch reference decoder under bf16 autocast (python/reference/translate.py
--amp bf16, the baseline of docs/performance.md "Against the baselines"), on
the CPU with the shipped model:
- the same number of answers as lines, none refused;
- autocast takes effect: the scores differ from fp32's on some line (bf16
  keeps 8 bits of the mantissa), yet stay within 0.05 of them on lines whose
  text is fp32's, and most texts are fp32's;
- an unknown amp is refused (ValueError), before any work.
Exit 77 when torch is not importable or has no CPU bf16 autocast.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python", "reference"))

try:
    import torch
except ImportError:
    print("skipped: torch is not importable")
    sys.exit(77)
if not hasattr(torch, "autocast"):
    print("skipped: this torch has no torch.autocast")
    sys.exit(77)

import translate as reference  # noqa: E402

LINES = [
    "Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.",
    "Ein Boston Terrier läuft über saftig-grünes Gras vor einem weißen Zaun.",
    "Ein Mädchen in einem Karateanzug bricht einen Stock mit einem Tritt.",
    "Fünf Leute in Winterjacken und mit Helmen stehen im Schnee mit Schneemobilen im Hintergrund.",
    "Leute Reparieren das Dach eines Hauses.",
    "Ein hell gekleideter Mann fotografiert eine Gruppe von Männern in dunklen Anzügen und mit Hüten, die um eine Frau in einem trägerlosen Kleid herum stehen.",
]


def main():
    translator = reference.load(os.path.join(ROOT, "models", "multi30k-de-en.bin"), "cpu", 2)
    try:
        reference.translate_lines(translator, LINES[:1], amp="fp8")
        print("FAIL: amp fp8 was not refused")
        return 1
    except ValueError as e:
        print(f"refused as expected: {e}")
    fp32 = reference.translate_lines(translator, LINES, beam=5, batch_size=4)
    bf16 = reference.translate_lines(translator, LINES, beam=5, batch_size=4, amp="bf16")
    failures = 0
    if len(fp32) != len(LINES) or len(bf16) != len(LINES):
        print(f"FAIL: {len(fp32)} and {len(bf16)} answers for {len(LINES)} lines")
        return 1
    same_text, score_moved = 0, 0
    for i, (a, b) in enumerate(zip(fp32, bf16)):
        if not a or not b:
            print(f"FAIL: line {i} refused (fp32 {len(a)}, bf16 {len(b)} hypotheses)")
            failures += 1
            continue
        print(f"line {i}: fp32 {a[0].score:.5f} {a[0].text!r}\n        bf16 {b[0].score:.5f} {b[0].text!r}")
        if a[0].score != b[0].score:
            score_moved += 1
        if a[0].text == b[0].text:
            same_text += 1
            if abs(a[0].score - b[0].score) > 0.05:
                print(f"FAIL: line {i}: the same text, scores {a[0].score} and {b[0].score}")
                failures += 1
    if score_moved == 0:
        print("FAIL: every bf16 score equals fp32's: autocast did not take effect")
        failures += 1
    if 2 * same_text < len(LINES):
        print(f"FAIL: only {same_text} of {len(LINES)} bf16 texts are fp32's")
        failures += 1
    print(f"{same_text} of {len(LINES)} texts as fp32's, {score_moved} scores moved")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
