#!/usr/bin/env python3
"""Reference translator: model-v1 beam search in PyTorch over a model.bin.

The weights come from the model file (not a training checkpoint), so this
checks the file and the engine at once: same file, same tokenizer, same
search semantics (pynmt.search), computed independently of the C code. It is
also the speed baseline: batched over sentences and hypotheses in the style
of OpenNMT-py, on the CPU or a GPU (--device), fp32, or under bf16 autocast
(--amp bf16: PyTorch's mixed precision, matrix products in bf16 and
log-softmax in fp32, as a PyTorch user would speed it up).

Reads stdin, writes one line per input line, in order (an empty or refused
line gives an empty line); the output formats are the C translate tool's.
Importable: load(), translate_lines().
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from pynmt.search import SearchConfig  # noqa: E402
from pynmt.translator import Output, Translator  # noqa: E402


def load(model_path: str, device: str = "cpu", threads: int = 0) -> Translator:
    """A Translator over model.bin on `device` (cpu, cuda, cuda:N)."""
    if threads > 0:
        torch.set_num_threads(threads)
    return Translator.from_model_file(model_path, device)


def translate_lines(translator: Translator, lines: list[str], beam: int = 5, n_best: int = 1,
                    alpha: float = 1.0, max_len_a: float = 2.0, max_len_b: int = 10,
                    batch_size: int = 32, unk_replace: bool = True,
                    max_src_tokens: int = 256, amp: str = "none") -> list[list[Output]]:
    """n-best Outputs per input line (an empty line: one empty Output of score 0;
    a refused line: an empty list). amp: "none" (fp32) or "bf16" (autocast)."""
    if amp not in ("none", "bf16"):
        raise ValueError(f"amp {amp!r}: none or bf16")
    config = SearchConfig(beam=beam, n_best=n_best, alpha=alpha, max_len_a=max_len_a,
                          max_len_b=max_len_b)
    autocast = (torch.autocast(device_type=translator.device.type, dtype=torch.bfloat16)
                if amp == "bf16" else contextlib.nullcontext())
    with autocast:
        return translator.translate(lines, config, batch_size=batch_size,
                                    unk_replace=unk_replace, max_src_tokens=max_src_tokens)


def format_output(line_number: int, outs: list[Output], n_best: int, scores: bool) -> str:
    """The C tool's formats: TEXT, SCORE<TAB>TEXT, or LINE<TAB>RANK<TAB>SCORE<TAB>TEXT rows."""
    if n_best > 1:
        if not outs:
            return f"{line_number}\t1\t-inf\t\n"
        return "".join(f"{line_number}\t{k + 1}\t{o.score:.6f}\t{o.text}\n" for k, o in enumerate(outs))
    if scores:
        return (f"{outs[0].score:.6f}\t{outs[0].text}\n" if outs else "-inf\t\n")
    return (outs[0].text if outs else "") + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("-m", "--model", required=True, help="model.bin")
    p.add_argument("-b", "--beam", type=int, default=5)
    p.add_argument("-n", "--n-best", type=int, default=1)
    p.add_argument("--alpha", type=float, default=1.0, help="length penalty score / len^alpha")
    p.add_argument("--max-len-a", type=float, default=2.0)
    p.add_argument("--max-len-b", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32, help="sentences decoded together")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    p.add_argument("--scores", action="store_true", help="print SCORE<TAB>TEXT")
    p.add_argument("--no-unk-replace", action="store_true")
    p.add_argument("--max-src-tokens", type=int, default=256, help="refuse longer lines")
    p.add_argument("--amp", choices=["none", "bf16"], default="none",
                   help="bf16: matrix products under torch.autocast (bf16)")
    p.add_argument("--time", action="store_true", help="report timing on stderr")
    a = p.parse_args(argv)
    if not 1 <= a.n_best <= a.beam:
        p.error("--n-best must be in 1..beam")
    if a.device == "auto":
        a.device = "cuda" if torch.cuda.is_available() else "cpu"

    translator = load(a.model, a.device, a.threads)
    lines = [line.rstrip("\n").removesuffix("\r") for line in
             open(sys.stdin.fileno(), encoding="utf-8", errors="strict", newline="\n")]
    t = time.time()
    results = translate_lines(translator, lines, a.beam, a.n_best, a.alpha, a.max_len_a,
                              a.max_len_b, a.batch_size, not a.no_unk_replace, a.max_src_tokens,
                              a.amp)
    if a.device.startswith("cuda"):
        torch.cuda.synchronize()
    elapsed = time.time() - t
    out = sys.stdout
    for i, outs in enumerate(results):
        out.write(format_output(i + 1, outs, a.n_best, a.scores))
    out.flush()
    if a.time:
        print(f"reference: {len(lines)} lines in {elapsed:.2f}s ({len(lines) / max(elapsed, 1e-9):.1f} "
              f"lines/s) on {a.device}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
