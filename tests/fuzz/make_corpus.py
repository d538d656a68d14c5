"""Writes the fuzz seed corpus (tests/fuzz/corpus/): small valid model files
in every storage form, a few hundred bytes to 2 KB each, one with
tokenizer=sentencepiece carrying tests/data/sentencepiece-tiny.model, and one
whose decoder, attention and output matrices are sparse (section SPRS).

    PYTHONPATH=python python3 tests/fuzz/make_corpus.py tests/fuzz/corpus
"""
import os
import sys

import numpy as np

from pynmt import modelfile, modelfile_sparse

SRC = ["<pad>", "<unk>", "haus", "\uffed."]
TGT = ["<pad>", "<unk>", "<s>", "</s>", "house", "\uffed."]


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    shapes = {
        "tiny": dict(emb_size=2, hidden_size=2, enc_layers=1, dec_layers=1,
                     features="word,case", dec_init="encoder"),
        "zeros": dict(emb_size=3, hidden_size=4, enc_layers=2, dec_layers=1,
                      features="word", dec_init="zeros"),
    }
    rng = np.random.default_rng(2024)
    for name, hp in shapes.items():
        hp = dict(hp, src_words=len(SRC), tgt_vocab=len(TGT))
        tensors = {n: rng.uniform(-1, 1, s).astype(np.float32)
                   for n, s in modelfile.expected_tensors(hp)}
        for dtype in ("f32", "f16"):
            for compress in (False, True):
                if name == "zeros" and dtype == "f16" and not compress:
                    continue
                path = os.path.join(out_dir, f"{name}-{dtype}{'-z' if compress else ''}.bin")
                modelfile.write_model(path, hp, SRC, TGT, tensors, dtype=dtype, compress=compress)
    # Section SPMP: the vocabularies are the SentencePiece model's pieces.
    spm, pieces = modelfile.load_sentencepiece(os.path.join(os.path.dirname(__file__), "..",
                                                            "data", "sentencepiece-tiny.model"))
    hp = dict(shapes["zeros"], src_words=len(pieces), tgt_vocab=len(pieces))
    tensors = {n: rng.uniform(-1, 1, s).astype(np.float32)
               for n, s in modelfile.expected_tensors(hp)}
    modelfile.write_model(os.path.join(out_dir, "spm-f16-z.bin"), hp, pieces, pieces, tensors,
                          dtype="f16", compress=True, sentencepiece=spm)
    # Section SPRS: the tiny model with half of each matrix that may be sparse
    # zeroed (empty rows included), stored as CSR; DATA raw so mutations reach
    # the offsets and column indices directly.
    hp = dict(shapes["tiny"], src_words=len(SRC), tgt_vocab=len(TGT))
    tensors = {n: rng.uniform(-1, 1, s).astype(np.float32)
               for n, s in modelfile.expected_tensors(hp)}
    sparse = [n for n in tensors if modelfile_sparse.sparse_allowed(n)]
    for n in sparse:
        tensors[n][np.abs(tensors[n]) < 0.5] = 0.0
        tensors[n][0] = 0.0
    modelfile.write_model(os.path.join(out_dir, "sparse-f32.bin"), hp, SRC, TGT, tensors,
                          sparse=sparse)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus"))
