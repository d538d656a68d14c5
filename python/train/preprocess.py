#!/usr/bin/env python3
"""Training data for model v1: tokenize, build vocabularies, map to ids.

Tokenization is the engine's own (pynmt.tokenizer), so the model sees at
training time exactly the tokens the C engine will feed it. The source side
keeps lowercased keys plus a case class (N-hot features: fewer, better
trained word rows); the target side keeps cased text forms, since the output
must be cased. Vocabularies are ordered by frequency, ties by the token's
code points, so the same data always gives the same ids.

Used as a module by train.py; run alone it prints vocabulary statistics and
the model size they imply, which is how to pick cut-offs for a size budget.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from dataclasses import dataclass

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pynmt.data import (SRC_SPECIALS, TGT_SPECIALS, index_of, read_lines,  # noqa: E402
                        source_features, target_ids)
from pynmt.tokenizer import Token, tokenize  # noqa: E402


@dataclass
class Split:
    """One split, tokenized and mapped: parallel lists, one entry per kept pair."""
    src_words: list[list[int]]
    src_cases: list[list[int]]
    tgt_ids: list[list[int]]
    src_lines: list[str]     # raw source text (for decoding)
    tgt_lines: list[str]     # raw target text (sacreBLEU references)


@dataclass
class Prepared:
    src_vocab: list[str]
    tgt_vocab: list[str]
    train: Split
    valid: Split
    n_dropped: int


def build_vocab(counts: Counter, specials: list[str], min_freq: int, max_size: int) -> list[str]:
    """specials + tokens seen >= min_freq times, most frequent first, at most max_size in all."""
    kept = sorted((t for t, c in counts.items() if c >= min_freq and t not in specials),
                  key=lambda t: (-counts[t], t))
    if max_size > 0:
        kept = kept[:max(0, max_size - len(specials))]
    return specials + kept


def tokenize_lines(lines: list[str]) -> list[list[Token]]:
    return [tokenize(line) for line in lines]


def make_split(src_lines, tgt_lines, src_toks, tgt_toks, src_index, tgt_index,
               max_src_len=0, max_tgt_len=0) -> tuple[Split, int]:
    """Maps to ids; drops empty pairs and (when limits are > 0) over-long ones."""
    split = Split([], [], [], [], [])
    dropped = 0
    for sl, tl, st, tt in zip(src_lines, tgt_lines, src_toks, tgt_toks):
        if not st or not tt or (max_src_len and len(st) > max_src_len) or \
                (max_tgt_len and len(tt) > max_tgt_len):
            dropped += 1
            continue
        words, cases = source_features(st, src_index)
        split.src_words.append(words)
        split.src_cases.append(cases)
        split.tgt_ids.append(target_ids(tt, tgt_index))
        split.src_lines.append(sl)
        split.tgt_lines.append(tl)
    return split, dropped


def prepare(data_dir: str, src_lang: str, tgt_lang: str, train_prefix="train", valid_prefix="val",
            src_min_freq=2, tgt_min_freq=2, src_max_vocab=0, tgt_max_vocab=0,
            max_src_len=100, max_tgt_len=100, limit=0, log=print,
            src_vocab=None, tgt_vocab=None) -> Prepared:
    """Reads {prefix}.{lang}[.gz|.xz] from data_dir and returns vocabularies and id lists.

    Given vocabularies (a resumed checkpoint's) are used as they are."""
    def find(prefix, lang):
        for ext in (".gz", ".xz", ""):
            path = os.path.join(data_dir, f"{prefix}.{lang}{ext}")
            if os.path.exists(path):
                return path
        raise FileNotFoundError(f"{data_dir}: no {prefix}.{lang}[.gz|.xz]")

    tr_src, tr_tgt = read_lines(find(train_prefix, src_lang)), read_lines(find(train_prefix, tgt_lang))
    va_src, va_tgt = read_lines(find(valid_prefix, src_lang)), read_lines(find(valid_prefix, tgt_lang))
    if len(tr_src) != len(tr_tgt) or len(va_src) != len(va_tgt):
        raise ValueError("source and target files differ in line count")
    if limit > 0:
        tr_src, tr_tgt = tr_src[:limit], tr_tgt[:limit]
    tr_st, tr_tt = tokenize_lines(tr_src), tokenize_lines(tr_tgt)
    va_st, va_tt = tokenize_lines(va_src), tokenize_lines(va_tgt)

    # Vocabularies count only the pairs training keeps.
    keep = [bool(s) and bool(t) and (not max_src_len or len(s) <= max_src_len) and
            (not max_tgt_len or len(t) <= max_tgt_len) for s, t in zip(tr_st, tr_tt)]
    src_counts = Counter(tok.key for s, k in zip(tr_st, keep) if k for tok in s)
    tgt_counts = Counter(tok.text for t, k in zip(tr_tt, keep) if k for tok in t)
    src_vocab = src_vocab or build_vocab(src_counts, SRC_SPECIALS, src_min_freq, src_max_vocab)
    tgt_vocab = tgt_vocab or build_vocab(tgt_counts, TGT_SPECIALS, tgt_min_freq, tgt_max_vocab)
    src_index, tgt_index = index_of(src_vocab), index_of(tgt_vocab)

    train, dropped = make_split(tr_src, tr_tgt, tr_st, tr_tt, src_index, tgt_index,
                                max_src_len, max_tgt_len)
    valid, _ = make_split(va_src, va_tgt, va_st, va_tt, src_index, tgt_index)

    def coverage(counts, index):
        total = sum(counts.values())
        return 100.0 * sum(c for t, c in counts.items() if t in index) / max(1, total)

    log(f"data: {len(train.src_words)} training pairs ({dropped} dropped: empty or over "
        f"{max_src_len}/{max_tgt_len} tokens), {len(valid.src_words)} validation pairs")
    log(f"vocab: source {len(src_vocab)} words (min freq {src_min_freq}, "
        f"{coverage(src_counts, src_index):.2f}% of training tokens), target {len(tgt_vocab)} "
        f"(min freq {tgt_min_freq}, {coverage(tgt_counts, tgt_index):.2f}%)")
    return Prepared(src_vocab, tgt_vocab, train, valid, dropped)


def load_or_prepare(path: str, prepare, log=print) -> Prepared:
    """The Prepared data cached in path (pickle, xz): tokenizing 300k pairs in
    Python takes minutes, so a GPU run can start from a cache made beforehand.
    The cache records nothing about the options: keep one file per setting."""
    import lzma
    import pickle
    if os.path.exists(path):
        with lzma.open(path, "rb") as f:
            data = pickle.load(f)
        log(f"data: loaded {path}: {len(data.train.src_words)} training pairs, "
            f"vocab source {len(data.src_vocab)}, target {len(data.tgt_vocab)}")
        return data
    data = prepare()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with lzma.open(path + ".tmp", "wb", preset=6) as f:
        pickle.dump(data, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(path + ".tmp", path)
    log(f"data: cached in {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    return data


def model_parameters(src_words: int, tgt_vocab: int, E: int, H: int, enc_layers: int,
                     dec_layers: int) -> int:
    """Parameter count of model v1 (the tensors of model.bin)."""
    h2 = H // 2
    n = (src_words + 4) * E + tgt_vocab * E
    for l in range(enc_layers):
        n += 2 * (4 * h2 * ((E if l == 0 else H) + h2) + 2 * 4 * h2)
    for l in range(dec_layers):
        n += 4 * H * ((E + H if l == 0 else H) + H) + 2 * 4 * H
    return n + H * H + 2 * H * H + tgt_vocab * H + tgt_vocab


def add_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default=".carry/data/multi30k", help="folder of {split}.{lang}.gz")
    p.add_argument("--src-lang", default="de")
    p.add_argument("--tgt-lang", default="en")
    p.add_argument("--train-prefix", default="train")
    p.add_argument("--valid-prefix", default="val")
    p.add_argument("--src-min-freq", type=int, default=2)
    p.add_argument("--tgt-min-freq", type=int, default=3)
    p.add_argument("--src-max-vocab", type=int, default=0, help="0: no cap (specials included)")
    p.add_argument("--tgt-max-vocab", type=int, default=0, help="0: no cap (specials included)")
    p.add_argument("--max-src-len", type=int, default=100, help="drop longer training pairs")
    p.add_argument("--max-tgt-len", type=int, default=100, help="drop longer training pairs")
    p.add_argument("--limit", type=int, default=0, help="use only the first N training pairs")
    p.add_argument("--prepared", help="cache of the tokenized data (.pkl.xz): loaded when it "
                   "exists, else written; the data options must match the ones it was made with")


def prepare_from_args(a: argparse.Namespace, log=print, src_vocab=None,
                      tgt_vocab=None) -> Prepared:
    """prepare() with the options of add_data_args, through the --prepared cache when given."""
    def run():
        return prepare(a.data, a.src_lang, a.tgt_lang, a.train_prefix, a.valid_prefix,
                       a.src_min_freq, a.tgt_min_freq, a.src_max_vocab, a.tgt_max_vocab,
                       a.max_src_len, a.max_tgt_len, a.limit, log=log, src_vocab=src_vocab,
                       tgt_vocab=tgt_vocab)
    return load_or_prepare(a.prepared, run, log) if a.prepared else run()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_args(p)
    p.add_argument("--emb-size", type=int, default=256)
    p.add_argument("--hidden-size", type=int, default=512)
    p.add_argument("--layers", type=int, default=2)
    a = p.parse_args()
    # Through the module, not __main__: a cache pickles its classes by module
    # name, and train.py loads them as preprocess.*.
    import preprocess as module
    d = module.prepare_from_args(a)
    n = model_parameters(len(d.src_vocab), len(d.tgt_vocab), a.emb_size, a.hidden_size,
                         a.layers, a.layers)
    print(f"model: {n / 1e6:.2f}M parameters, {4 * n / 1e6:.1f} MB fp32, {2 * n / 1e6:.1f} MB fp16")


if __name__ == "__main__":
    main()
