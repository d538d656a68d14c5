"""Text in, text out around pynmt.search: tokenization, batching, UNK replacement.

Batching mirrors the C tool (apps/translate/translate.c, engine/translator.c)
so that speed comparisons are like for like: lines are taken in chunks of
8 x batch_size, each chunk is sorted longest first (stable), and decoded
batch_size sentences at a time. Empty lines give empty output; lines over
max_src_tokens are refused with an empty output, as the engine refuses them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import torch

from .data import index_of, source_features
from .network import UNK, NMTNetwork
from .search import SearchConfig, beam_search
from .tokenizer import detokenize, tokenize


@dataclass
class Output:
    score: float      # normalized score of the best hypothesis (-inf when none)
    text: str
    n_tokens: int = 0


class Translator:
    """A network plus its vocabularies, ready to translate lines of text."""

    def __init__(self, net: NMTNetwork, src_vocab: list[str], tgt_vocab: list[str]):
        self.net = net.eval()
        self.src_index = index_of(src_vocab)
        self.tgt_vocab = tgt_vocab
        self.device = next(net.parameters()).device

    @classmethod
    def from_model_file(cls, path: str, device: str = "cpu") -> "Translator":
        """Loads model.bin (fp16 tensors are widened to fp32 by read_model)."""
        from .modelfile import read_model  # lazily: training does not need it
        hparams, src_vocab, tgt_vocab, tensors = read_model(path)
        net = NMTNetwork.from_hparams(hparams)
        net.from_file_tensors(tensors)
        return cls(net.to(device), src_vocab, tgt_vocab)

    def hypothesis_text(self, tokens: list[int], attn_argmax: list[int], src_texts: list[str],
                        unk_replace: bool) -> str:
        out = []
        for tok, pos in zip(tokens, attn_argmax):
            if tok == UNK and unk_replace:
                out.append(src_texts[pos])
            else:
                out.append(self.tgt_vocab[tok])
        return detokenize(out)

    @torch.no_grad()
    def translate(self, lines: list[str], config: SearchConfig, batch_size: int = 32,
                  unk_replace: bool = True, max_src_tokens: int = 256,
                  warn=lambda msg: print(msg, file=sys.stderr)) -> list[list[Output]]:
        """n-best Outputs per line, in input order (an empty list for a refused line)."""
        results: list[list[Output]] = [[] for _ in lines]
        chunk = 8 * batch_size
        for first in range(0, len(lines), chunk):
            toks = {}
            for i in range(first, min(first + chunk, len(lines))):
                t = tokenize(lines[i])
                if len(t) > max_src_tokens:
                    warn(f"line {i + 1}: {len(t)} tokens, over {max_src_tokens}: refused")
                elif t:
                    toks[i] = t
                else:  # as the engine: one empty hypothesis with score 0
                    results[i] = [Output(0.0, "", 0)]
            order = sorted(toks, key=lambda i: -len(toks[i]))  # stable: ties in input order
            for b in range(0, len(order), batch_size):
                ids = order[b:b + batch_size]
                feats = [source_features(toks[i], self.src_index) for i in ids]
                hyps = beam_search(self.net, [f[0] for f in feats], [f[1] for f in feats], config)
                for i, nbest in zip(ids, hyps):
                    src_texts = [t.text for t in toks[i]]
                    results[i] = [Output(h.score, self.hypothesis_text(h.tokens, h.attn_argmax,
                                                                      src_texts, unk_replace),
                                         len(h.tokens)) for h in nbest]
        return results
