"""Batched beam search with the model-v1 semantics, in PyTorch.

This is the reference the C/CUDA engine is checked against
(docs/model-v1.md, "Beam search"), written as a fair baseline in
the style of OpenNMT-py's translator: sentences and their hypotheses are rows
of one batch, every tensor stays on the device, Python loops over time steps
only, and a sentence that is done is dropped from the batch.

Semantics, per sentence (beam B, length penalty alpha):
  * step 1 expands only BOS (score 0); later steps every alive hypothesis;
  * candidates score_k + log p(w), log p from a full fp32 log-softmax, with
    PAD and BOS then set to -inf; at the step reaching the maximum length
    floor(a*S + b) (>= 1) every word but EOS is -inf;
  * the 2B best candidates, ties broken by lower hypothesis index then lower
    word id (exactly: a top-k, then a stable full sort for any sentence whose
    2B-th score is tied with a candidate left outside);
  * EOS candidates among the first B finish with score / len^alpha (len counts
    the EOS); the first B non-EOS candidates are the next alive hypotheses;
  * done at B finished or after the max-length step; n-best by normalized
    score, equal scores in finishing order (earlier step, then better rank),
    as decoder/beam_search.c does.
UNK replacement uses the argmax of the attention weights at the step that
produced the UNK (the first maximum on ties).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .network import BOS, EOS, PAD, NMTNetwork


@dataclass
class Hypothesis:
    tokens: list[int]          # target ids, EOS excluded
    attn_argmax: list[int]     # source position attended most, per token
    score: float               # log_prob / len^alpha, len counting EOS
    log_prob: float


@dataclass
class SearchConfig:
    beam: int = 5
    n_best: int = 1
    alpha: float = 1.0
    max_len_a: float = 2.0
    max_len_b: int = 10


def max_length(config: SearchConfig, src_len: int) -> int:
    """floor(a*S + b), at least 1; a is a C float in the engine, so round it so."""
    a = float(np.float32(config.max_len_a))
    v = math.floor(a * src_len + config.max_len_b)
    return max(1, v)


def _top_candidates(cand: torch.Tensor, k: int):
    """The k best per row, best first, ties by lower flat index (hyp-major order).

    torch.topk does not promise any order among equal values, so its result is
    re-sorted stably by index, and any row whose k-th value also occurs outside
    the chosen set falls back to a full stable sort (rare: exact float ties).
    """
    k = min(k, cand.shape[1])
    vals, idx = cand.topk(k, dim=1)
    order = idx.argsort(dim=1)
    idx = idx.gather(1, order)
    vals = vals.gather(1, order)
    order = torch.sort(vals, dim=1, descending=True, stable=True).indices
    vals, idx = vals.gather(1, order), idx.gather(1, order)
    kth = vals[:, -1:]
    tied_outside = (cand >= kth).sum(dim=1) > k
    if bool(tied_outside.any()):
        rows = tied_outside.nonzero().squeeze(1)
        full_vals, full_idx = torch.sort(cand[rows], dim=1, descending=True, stable=True)
        vals[rows] = full_vals[:, :k]
        idx[rows] = full_idx[:, :k]
    return vals, idx


@torch.no_grad()
def beam_search(net: NMTNetwork, words: list[list[int]], cases: list[list[int]],
                config: SearchConfig) -> list[list[Hypothesis]]:
    """Translates one batch of non-empty sources; returns n-best lists in input order."""
    n = len(words)
    if n == 0:
        return []
    if any(len(w) == 0 for w in words):
        raise ValueError("beam_search: empty source (callers map empty lines to empty output)")
    device = next(net.parameters()).device
    B, V = config.beam, net.tgt_vocab
    if B < 1 or 2 * B > V:
        raise ValueError(f"beam {B}: must be in 1..{V // 2} (2B candidates of a {V}-word vocabulary)")
    lengths = [len(w) for w in words]
    S = max(lengths)
    word_t = torch.full((n, S), PAD, dtype=torch.long)
    case_t = torch.zeros((n, S), dtype=torch.long)
    for i, (w, c) in enumerate(zip(words, cases)):
        word_t[i, :len(w)] = torch.tensor(w)
        case_t[i, :len(c)] = torch.tensor(c)
    memory, mem_proj, mask, state = net.encode(word_t.to(device), case_t.to(device),
                                              torch.tensor(lengths))
    max_lens = [max_length(config, s) for s in lengths]
    max_len_dev = torch.tensor(max_lens, device=device)

    active = torch.arange(n, device=device)       # original index of each active sentence
    active_list = list(range(n))
    K = 1                                         # alive hypotheses per active sentence
    rows_mem, rows_proj, rows_mask = memory, mem_proj, mask
    scores = torch.zeros(n, device=device)
    prev = torch.full((n,), BOS, dtype=torch.long, device=device)
    feed = memory.new_zeros(n, net.hidden_size)
    hist_tok = torch.zeros((n, 0), dtype=torch.long, device=device)
    hist_att = torch.zeros((n, 0), dtype=torch.long, device=device)
    finished: list[list[tuple[float, float, list[int], list[int]]]] = [[] for _ in range(n)]
    eos_only = torch.full((V,), float("-inf"), device=device)  # added at the max-length step
    eos_only[EOS] = 0.0

    for t in range(1, max(max_lens) + 1):
        f, state, attn = net.decode_step(net.tgt_embedding(prev), feed, state,
                                         rows_mem, rows_proj, rows_mask)
        logp = torch.log_softmax(net.output(f).float(), dim=-1)
        logp[:, PAD] = float("-inf")
        logp[:, BOS] = float("-inf")
        at_max = max_len_dev.index_select(0, active) == t           # [n_act]
        row_at_max = at_max.repeat_interleave(K)
        logp = torch.where(row_at_max[:, None], logp + eos_only, logp)
        att_arg = attn.argmax(dim=1)                                 # [rows]

        n_act = active.shape[0]
        cand = (scores[:, None] + logp).view(n_act, K * V)
        top_vals, top_idx = _top_candidates(cand, 2 * B)
        hyp = top_idx // V
        word = top_idx % V
        is_eos = word == EOS
        fin = is_eos.clone()
        fin[:, B:] = False

        # Finished hypotheses: a few host transfers per step, as OpenNMT-py does.
        fin_pos = fin.nonzero()                                      # row-major
        if fin_pos.shape[0]:
            fin_rows = fin_pos[:, 0] * K + hyp[fin]
            tok_rows = hist_tok.index_select(0, fin_rows).tolist()
            att_rows = torch.cat([hist_att.index_select(0, fin_rows),
                                  att_arg.index_select(0, fin_rows)[:, None]], dim=1).tolist()
            fin_scores = top_vals[fin].tolist()
            for s, toks, atts, lp in zip(fin_pos[:, 0].tolist(), tok_rows, att_rows, fin_scores):
                finished[active_list[s]].append((lp / (t ** config.alpha), lp, toks, atts))
        at_max_list = at_max.tolist()
        done = [len(finished[active_list[s]]) >= B or at_max_list[s] for s in range(n_act)]
        keep_local = [s for s in range(n_act) if not done[s]]
        if not keep_local:
            break

        keep = torch.tensor(keep_local, device=device)
        non_eos = (~is_eos).index_select(0, keep)
        alive = non_eos & (torch.cumsum(non_eos.long(), dim=1) <= B)
        pos = alive.nonzero()[:, 1].view(len(keep_local), B)         # row-major: rank order
        hyp_sel = hyp.index_select(0, keep).gather(1, pos)
        word_sel = word.index_select(0, keep).gather(1, pos)
        src_rows = (keep[:, None] * K + hyp_sel).reshape(-1)

        scores = top_vals.index_select(0, keep).gather(1, pos).reshape(-1)
        prev = word_sel.reshape(-1)
        feed = f.index_select(0, src_rows)
        state = [(h.index_select(0, src_rows), c.index_select(0, src_rows)) for h, c in state]
        hist_tok = torch.cat([hist_tok.index_select(0, src_rows), prev[:, None]], dim=1)
        hist_att = torch.cat([hist_att.index_select(0, src_rows),
                              att_arg.index_select(0, src_rows)[:, None]], dim=1)
        if len(keep_local) != n_act or K != B:
            active = active.index_select(0, keep)
            active_list = [active_list[s] for s in keep_local]
            row_sent = active.repeat_interleave(B)
            rows_mem = memory.index_select(0, row_sent)
            rows_proj = mem_proj.index_select(0, row_sent)
            rows_mask = mask.index_select(0, row_sent)
            K = B

    results = []
    for i in range(n):
        # Python's sort is stable: equal normalized scores keep finishing order.
        best = sorted(finished[i], key=lambda x: -x[0])[:config.n_best]
        results.append([Hypothesis(toks, atts[:len(toks)], norm, lp)
                        for norm, lp, toks, atts in best])
    return results
