#!/usr/bin/env python3
"""One-shot magnitude pruning of a model file: prune.py MODEL OUT --sparsity S.

In each chosen matrix (by default every one the format lets be sparse: the
decoder LSTM weights, attention.w_a, attention.w_c, output.w) the fraction S
of entries smallest in magnitude becomes zero (exactly round(S x size) of
them, ties broken by position), and the matrix is written to section SPRS as
the CSR of what is left (docs/model-format.md, "SPRS: sparse matrices"); every
other tensor, the vocabularies and any SentencePiece model are copied. The
output is read back and compared before the command succeeds.

This prunes a trained model once, with no retraining, so quality drops with
S: measure BLEU before relying on a pruned model. Gradual pruning during
training (Zhu & Gupta's schedule, as Gale et al. train their sparse models)
is the trainer's: python/train/train.py --prune-sparsity (docs/sparse.md,
"Pruning in the trainer").
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pynmt import modelfile  # noqa: E402
from pynmt.modelfile_sparse import sparse_allowed  # noqa: E402


def prune_magnitude(a: np.ndarray, sparsity: float) -> np.ndarray:
    """A copy of `a` with its round(sparsity x size) smallest |values| zeroed."""
    flat = np.array(a, dtype=np.float32).reshape(-1)
    k = int(round(sparsity * flat.size))
    if k > 0:
        flat[np.argsort(np.abs(flat), kind="stable")[:k]] = 0.0
    return flat.reshape(a.shape)


def prune(model: str, out: str, sparsity: float, names: list[str] | None = None,
          fp16: bool = False, compress: bool = False) -> dict[str, tuple[int, int]]:
    """Writes OUT; returns {name: (nonzeros, entries)} of the sparse matrices."""
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity {sparsity}: must lie in [0, 1)")
    hp, src, tgt, tensors, spm = modelfile.read_model_sections(model)
    allowed = [n for n, _ in modelfile.expected_tensors(hp) if sparse_allowed(n)]
    chosen = allowed if not names else list(names)
    for n in chosen:
        if n not in allowed:
            raise ValueError(f"tensor '{n}' cannot be stored sparse (choose from: "
                             f"{', '.join(allowed)})")
    ordered = {}
    for n, _ in modelfile.expected_tensors(hp):
        ordered[n] = prune_magnitude(tensors[n], sparsity) if n in chosen else tensors[n]
    modelfile.write_model(out, hp, src, tgt, ordered, dtype="f16" if fp16 else "f32",
                          compress=compress, sentencepiece=spm, sparse=chosen)
    _, sv, tv, back, spm_back = modelfile.read_model_sections(out)
    for n, a in ordered.items():
        want = a.astype(np.float16).astype(np.float32) if fp16 else a
        if not np.array_equal(back[n], want) or sv != src or tv != tgt or spm_back != spm:
            raise RuntimeError(f"{out}: '{n}' differs after reading back")
    return {n: (int(np.count_nonzero(ordered[n])), int(ordered[n].size)) for n in chosen}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("out")
    p.add_argument("--sparsity", type=float, required=True,
                   help="fraction of each chosen matrix set to zero, e.g. 0.8")
    p.add_argument("--tensors", nargs="+", metavar="NAME",
                   help="matrices to prune (default: every one that may be sparse)")
    p.add_argument("--fp16", action="store_true", help="store values as fp16")
    p.add_argument("--compress", action="store_true", help="deflate DATA (SPRS stays raw)")
    args = p.parse_args(argv)
    try:
        stats = prune(args.model, args.out, args.sparsity, args.tensors, args.fp16, args.compress)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"prune.py: {e}", file=sys.stderr)
        return 1
    nnz = sum(s[0] for s in stats.values())
    total = sum(s[1] for s in stats.values())
    for n, (k, size) in stats.items():
        print(f"{n}: {k} of {size} nonzero", file=sys.stderr)
    print(f"wrote {args.out}: {len(stats)} sparse matrices, {nnz} of {total} entries nonzero "
          f"({100.0 * (1 - nnz / max(total, 1)):.1f}% zeros)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
