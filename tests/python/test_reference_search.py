"""The batched reference search (pynmt.search) against a plain one-sentence,
one-hypothesis-at-a-time transcription of the rules in model-v1.md.

The batched version drops finished sentences, reorders rows, picks the 2B
best with a top-k plus tie repair: all places where a bug changes results
only in some batches. The naive version here is written straight from the
text (lists, a full sort by (-score, hyp, word)), so agreement over beams,
n-best, length penalties, max-length cut-offs and batch sizes is good
evidence that the reference the engine is checked against is right.
Also checks the tie rule of _top_candidates on hand-made scores.
Exit 77 when torch is not importable.
"""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

try:
    import torch
except ImportError:
    print("skipped: torch is not importable")
    sys.exit(77)

from pynmt.network import BOS, EOS, PAD, NMTNetwork  # noqa: E402
from pynmt.search import SearchConfig, _top_candidates, beam_search, max_length  # noqa: E402


@torch.no_grad()
def naive_search(net, words, cases, cfg):
    memory, proj, mask, state = net.encode(torch.tensor([words]), torch.tensor([cases]),
                                           torch.tensor([len(words)]))
    B, L = cfg.beam, max_length(cfg, len(words))
    alive = [(0.0, [], [], state, memory.new_zeros(1, net.hidden_size), BOS)]
    finished = []
    for t in range(1, L + 1):
        cands, expanded = [], []
        for k, (score, toks, atts, st, feed, prev) in enumerate(alive):
            f, st2, attn = net.decode_step(net.tgt_embedding(torch.tensor([prev])), feed, st,
                                           memory, proj, mask)
            logp = torch.log_softmax(net.output(f).float(), dim=-1)[0]
            expanded.append((st2, f, int(attn[0].argmax())))
            for w in range(net.tgt_vocab):
                lp = float("-inf") if w in (PAD, BOS) or (t == L and w != EOS) else logp[w]
                # float32 accumulation, as the batched search does
                cands.append((float(torch.tensor(score, dtype=torch.float32) + lp), k, w))
        cands.sort(key=lambda c: (-c[0], c[1], c[2]))
        best = cands[:2 * B]
        next_alive = []
        for rank, (s, k, w) in enumerate(best):
            score, toks, atts, _, _, _ = alive[k]
            st2, f, arg = expanded[k]
            if w == EOS:
                if rank < B:
                    finished.append((s / t ** cfg.alpha, s, toks, atts))
            elif len(next_alive) < B:
                next_alive.append((s, toks + [w], atts + [arg], st2, f, w))
        if len(finished) >= B or t == L:
            break
        alive = next_alive
    finished.sort(key=lambda x: -x[0])
    return finished[:cfg.n_best]


def check_ties():
    # Two rows; row 0 has ties across the k boundary, row 1 ties inside.
    cand = torch.tensor([[1.0, 3.0, 2.0, 3.0, 2.0, 2.0, 0.0],
                         [5.0, 5.0, 4.0, 4.0, 1.0, 0.0, -1.0]])
    vals, idx = _top_candidates(cand, 4)
    want = [[1, 3, 2, 4], [0, 1, 2, 3]]
    if idx.tolist() != want:
        print(f"FAIL ties: got {idx.tolist()}, want {want}")
        return 1
    return 0


def main():
    failures = check_ties()
    torch.manual_seed(3)
    V, n_src = 23, 30
    gen = torch.Generator().manual_seed(11)
    sources = []
    for i in range(13):
        n = 1 + int(torch.randint(0, 9, (1,), generator=gen))
        sources.append(([int(x) for x in torch.randint(1, n_src, (n,), generator=gen)],
                        [int(x) for x in torch.randint(0, 4, (n,), generator=gen)]))
    compared = 0
    # eos_bias makes EOS compete near the B-th rank, where the finishing rules bite.
    for layers, scale, eos_bias in ((1, 0.6, 0.0), (2, 0.4, 0.0), (2, 0.5, 0.8)):
        net = NMTNetwork(n_src, V, emb_size=8, hidden_size=12, enc_layers=layers,
                         dec_layers=layers, dropout=0.0)
        net.init_uniform(scale, seed=layers)
        with torch.no_grad():
            net.output.bias[EOS] += eos_bias
        net.eval()
        for beam, n_best, alpha, a, b in ((1, 1, 1.0, 2.0, 10), (3, 3, 1.0, 2.0, 10),
                                          (5, 2, 0.6, 1.0, 2), (4, 4, 0.0, 0.0, 3),
                                          (2, 1, 1.0, 0.5, 0)):
            cfg = SearchConfig(beam=beam, n_best=n_best, alpha=alpha, max_len_a=a, max_len_b=b)
            want = [naive_search(net, w, c, cfg) for w, c in sources]
            for batch in (1, 4, 13):
                got = []
                for s in range(0, len(sources), batch):
                    chunk = sources[s:s + batch]
                    got += beam_search(net, [w for w, _ in chunk], [c for _, c in chunk], cfg)
                for i, (g, w) in enumerate(zip(got, want)):
                    compared += 1
                    ok = len(g) == len(w) and all(
                        h.tokens == x[2] and h.attn_argmax == x[3] and
                        math.isclose(h.score, x[0], rel_tol=1e-4, abs_tol=1e-4) and
                        math.isclose(h.log_prob, x[1], rel_tol=1e-4, abs_tol=1e-4)
                        for h, x in zip(g, w))
                    if not ok:
                        failures += 1
                        print(f"FAIL layers={layers} {cfg} batch={batch} sentence {i}:")
                        print("  batched:", [(h.tokens, round(h.score, 5)) for h in g])
                        print("  naive:  ", [(x[2], round(x[0], 5)) for x in w])
    print(f"reference search: {compared} n-best lists compared, "
          + ("ok" if failures == 0 else f"{failures} failures"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
