#!/usr/bin/env python3
"""Exports a training checkpoint (python/train/train.py) to model.bin.

The checkpoint's weights are mapped to the file's tensor names by
pynmt.network (the one place that knows the correspondence) and written in
the canonical order of pynmt.modelfile.expected_tensors, fp32 by default,
fp16 with --fp16 (the engine widens at load), deflated with --compress.
--sentencepiece MODEL embeds a SentencePiece .model (the one the training
text was split with) and says tokenizer=sentencepiece: the engine then splits
raw text into its pieces and joins the output pieces with it
(docs/model-format.md, section SPMP). After writing, the file is read back
and compared, so a bad export fails here rather than in the engine.

A checkpoint trained with pruning (train.py --prune-sparsity) records which
matrices it pruned; those the format lets be sparse (decoder LSTM, attention,
output) are written to section SPRS as CSR (docs/sparse.md) unless --dense.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pynmt import modelfile  # noqa: E402
from pynmt.network import NMTNetwork, load_checkpoint  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
from pruning import sparse_names  # noqa: E402


def network_from_checkpoint(path: str) -> tuple[NMTNetwork, dict]:
    ckpt = load_checkpoint(path)
    net = NMTNetwork.from_hparams(ckpt["hparams"])
    net.load_state_dict(ckpt["model"])
    return net.eval(), ckpt


def export(net: NMTNetwork, src_vocab: list[str], tgt_vocab: list[str], out: str,
           fp16: bool = False, compress: bool = False,
           sentencepiece: bytes | None = None, sparse=()) -> dict[str, np.ndarray]:
    """Writes model.bin; returns the tensors written (fp32, before any narrowing).
    sentencepiece: a .model file's bytes, embedded (tokenizer=sentencepiece);
    sparse: names of matrices written to section SPRS."""
    hparams = net.hparams()
    if sentencepiece is not None:
        hparams["tokenizer"] = "sentencepiece"  # refused with a case feature
    tensors = net.to_file_tensors()
    modelfile.check_tensors(hparams, tensors)
    ordered = {name: tensors[name] for name, _ in modelfile.expected_tensors(hparams)}
    # Read back: the file must give exactly what was meant (fp16: the rounded values).
    modelfile.write_model_checked(out, hparams, src_vocab, tgt_vocab, ordered, fp16, compress,
                                  sentencepiece, sparse)
    return ordered


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", help="best.pt or last.pt from train.py")
    p.add_argument("-o", "--output", required=True, help="model.bin to write")
    p.add_argument("--fp16", action="store_true", help="store tensors as IEEE binary16")
    p.add_argument("--compress", action="store_true", help="deflate the tensor data")
    p.add_argument("--sentencepiece", metavar="MODEL",
                   help="embed this SentencePiece .model: the engine splits raw text into its "
                        "pieces and joins the output pieces with it (tokenizer=sentencepiece)")
    p.add_argument("--dense", action="store_true",
                   help="write pruned matrices dense (default: sparse where the format allows)")
    a = p.parse_args(argv)
    spm = None
    net, ckpt = network_from_checkpoint(a.checkpoint)
    if a.sentencepiece:
        try:
            spm, pieces = modelfile.load_sentencepiece(a.sentencepiece)
        except (OSError, ValueError) as e:
            print(f"--sentencepiece: {e}", file=sys.stderr)
            return 1
        for side, vocab, n in (("source", ckpt["src_vocab"], 2), ("target", ckpt["tgt_vocab"], 4)):
            strangers = modelfile.sentencepiece_strangers(pieces, vocab, n)
            if strangers:
                print(f"WARNING: {len(strangers)} {side} entries are not pieces of "
                      f"{a.sentencepiece}, e.g. {strangers[:5]}", file=sys.stderr)
    sparse = [] if a.dense else sparse_names(ckpt.get("pruning"))
    tensors = export(net, ckpt["src_vocab"], ckpt["tgt_vocab"], a.output, a.fp16, a.compress,
                     spm, sparse)
    n = sum(t.size for t in tensors.values())
    print(f"{a.output}: {os.path.getsize(a.output):,} bytes ({os.path.getsize(a.output) / 1e6:.1f} MB), "
          f"{len(tensors)} tensors, {n / 1e6:.2f}M parameters, {'fp16' if a.fp16 else 'fp32'}"
          f"{', deflated' if a.compress else ''}"
          f"{f', {len(sparse)} sparse matrices' if sparse else ''}; epoch {ckpt.get('epoch')}, "
          f"valid BLEU {ckpt.get('best_bleu', float('nan')):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
