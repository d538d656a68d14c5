"""Gradual magnitude pruning for train.py.

Zhu & Gupta 2017, "To prune, or not to prune: exploring the efficacy of
pruning for model compression": from step t0 the sparsity of every chosen
matrix rises every dt steps along the cubic schedule

    s_t = s_f + (s_i - s_f) (1 - (t - t0) / (n dt))^3,   t0 <= t <= t0 + n dt,

with s_i = 0 here, and stays at s_f afterwards. At each pruning step the
round(s_t x size) entries smallest in magnitude of each matrix (magnitude per
matrix, ties broken by position as python/export/prune.py does) get a zero in
the matrix's mask; the masks are multiplied into the weights then and after
every optimizer step, so a pruned weight stays zero (Adam's moments would
otherwise move it again). Masks only ever lose entries: a pruned weight is
zero, so it stays among the smallest.

The matrices are named as model.bin names them (pynmt.network): the LSTM
weights encoder.L.{fwd,bwd}.{w_ih,w_hh} and decoder.L.{w_ih,w_hh}, attention.w_a,
attention.w_c and output.w; never embeddings or biases. Only the decoder's,
the attention's and the output's may be stored sparse in the file (section
SPRS, pynmt.modelfile_sparse.sparse_allowed); a pruned encoder matrix is
written dense with its zeros.
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pynmt.modelfile_sparse import sparse_allowed  # noqa: E402


def is_prunable(name: str) -> bool:
    """LSTM, attention and output matrices: not embeddings, not biases."""
    return (name.endswith((".w_ih", ".w_hh")) and name.startswith(("encoder.", "decoder."))
            or name in ("attention.w_a", "attention.w_c", "output.w"))


def choose_tensors(net, spec: str) -> list[str]:
    """The matrices `spec` names: 'all' (every prunable one), 'sparse' (those the
    file may store sparse) or a comma-separated list of file tensor names."""
    names = [n for n, _ in net._name_map() if is_prunable(n)]
    if spec == "all":
        return names
    if spec == "sparse":
        return [n for n in names if sparse_allowed(n)]
    chosen = [s.strip() for s in spec.split(",") if s.strip()]
    for n in chosen:
        if n not in names:
            raise ValueError(f"--prune-tensors: '{n}' is not a prunable matrix "
                             f"(choose from: {', '.join(names)}, or all, sparse)")
    return chosen


def cubic_sparsity(step: int, final: float, start: int, end: int, initial: float = 0.0) -> float:
    """Zhu & Gupta's s_t: `initial` up to `start`, `final` from `end` on (n dt = end - start)."""
    if step <= start:
        return initial if end > start else final
    if step >= end:
        return final
    return final + (initial - final) * (1.0 - (step - start) / (end - start)) ** 3


def magnitude_mask(weight: torch.Tensor, sparsity: float) -> torch.Tensor:
    """Boolean mask (True = kept) zeroing the round(sparsity x size) smallest |w|."""
    flat = weight.detach().reshape(-1)
    k = int(round(sparsity * flat.numel()))
    keep = torch.ones(flat.numel(), dtype=torch.bool, device=flat.device)
    if k > 0:
        order = torch.sort(flat.abs().float().cpu(), stable=True).indices[:k]
        keep[order.to(flat.device)] = False
    return keep.reshape(weight.shape)


class GradualPruner:
    """Masks for the chosen matrices of an NMTNetwork, on the cubic schedule."""

    def __init__(self, net, sparsity: float, start: int, end: int, every: int,
                 tensors: str = "all"):
        if not 0.0 <= sparsity < 1.0:
            raise ValueError(f"--prune-sparsity {sparsity}: must lie in [0, 1)")
        if end < start or every < 1:
            raise ValueError(f"--prune-start {start}, --prune-end {end}, --prune-every {every}: "
                             "need end >= start and every >= 1")
        self.sparsity, self.start, self.end, self.every = sparsity, start, end, every
        params = dict(net._name_map())
        self.names = choose_tensors(net, tensors)
        self.params = {n: params[n] for n in self.names}
        self.masks = {n: torch.ones_like(p, dtype=torch.bool) for n, p in self.params.items()}
        self.current = 0.0  # the sparsity the masks hold now

    def due(self, step: int) -> bool:
        """Prune at start, every `every` steps after it, and at end (exactly s_f)."""
        if step < self.start or step > self.end:
            return False
        return (step - self.start) % self.every == 0 or step == self.end

    @torch.no_grad()
    def update(self, step: int) -> bool:
        """At a pruning step, recomputes the masks for s_step; True when it did."""
        if not self.due(step):
            return False
        target = cubic_sparsity(step, self.sparsity, self.start, self.end)
        if target <= self.current:
            return False
        for n, p in self.params.items():
            p.mul_(self.masks[n])  # masked weights are zero, so they stay pruned
            self.masks[n] = magnitude_mask(p, target)
        self.current = target
        self.apply()
        return True

    @torch.no_grad()
    def apply(self) -> None:
        """Zeros the pruned weights (after every optimizer step)."""
        for n, p in self.params.items():
            p.mul_(self.masks[n])

    def stats(self) -> dict[str, tuple[int, int]]:
        """{name: (zeros in the weight, entries)}."""
        return {n: (int((p == 0).sum()), p.numel()) for n, p in self.params.items()}

    def state_dict(self) -> dict:
        return {"sparsity": self.sparsity, "start": self.start, "end": self.end,
                "every": self.every, "current": self.current, "tensors": list(self.names),
                "masks": {n: m.cpu() for n, m in self.masks.items()}}

    def load_state_dict(self, state: dict) -> None:
        if list(state["tensors"]) != self.names:
            raise ValueError(f"checkpoint prunes {state['tensors']}, this run {self.names}")
        self.current = float(state["current"])
        for n in self.names:
            self.masks[n] = state["masks"][n].to(self.masks[n].device)
        self.apply()


def sparse_names(pruning_state: dict | None) -> list[str]:
    """The pruned matrices a model file may store sparse (for the exporter)."""
    if not pruning_state:
        return []
    return [n for n in pruning_state["tensors"] if sparse_allowed(n)]
