"""Text files and vocabulary lookups shared by the trainer and the decoders.

Kept apart from the tokenizer so that the engine's rules (tokenizer.py) and
the model's conventions (ids, N-hot source features) each live in one place.
"""

from __future__ import annotations

import gzip
import lzma
from typing import Iterable

from .network import UNK
from .tokenizer import Token

SRC_SPECIALS = ["<pad>", "<unk>"]
TGT_SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


def open_text(path: str):
    """Opens .gz, .xz or plain UTF-8 text for reading."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    if path.endswith(".xz"):
        return lzma.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, "r", encoding="utf-8", newline="\n")


def read_lines(path: str) -> list[str]:
    """All lines without their line ends ("\\n" or "\\r\\n", as the engine strips)."""
    with open_text(path) as f:
        return [line.rstrip("\n").removesuffix("\r") for line in f]


def index_of(vocab: Iterable[str]) -> dict[str, int]:
    return {tok: i for i, tok in enumerate(vocab)}


def source_features(tokens: list[Token], src_index: dict[str, int]) -> tuple[list[int], list[int]]:
    """Word ids (lowercased keys, UNK when unseen) and case classes of a source line."""
    return ([src_index.get(t.key, UNK) for t in tokens], [t.case_class for t in tokens])


def target_ids(tokens: list[Token], tgt_index: dict[str, int]) -> list[int]:
    """Target ids of the cased text forms (UNK when unseen); no BOS/EOS."""
    return [tgt_index.get(t.text, UNK) for t in tokens]
