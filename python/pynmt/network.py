"""The model-v1 network in PyTorch (docs/model-v1.md).

Luong et al. 2015, "Effective Approaches to Attention-based Neural Machine
Translation": a bidirectional LSTM encoder (H/2 per direction), a stacked
LSTMCell decoder with input feeding and "general" global attention, laid out
like OpenNMT-py's default RNN model so that its checkpoints stay convertible.

The same module serves three users, which is why it exposes its pieces:
  * training (forward: teacher forcing over whole target sequences),
  * search (encode once, then decode_step per time step over hypotheses),
  * the exporter and the reference decoder, through to_file_tensors /
    from_file_tensors, which map parameters to the names of model.bin.

The source embedding is N-hot: a token's vector is the sum of the rows of its
word id and of its case class (rows src_words .. src_words+3) of ONE table,
exactly as the engine computes it with a sparse-times-dense product.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

PAD, UNK, BOS, EOS = 0, 1, 2, 3
N_CASE_CLASSES = 4
MODEL_NAME = "lstm-attn-v1"


class NMTNetwork(nn.Module):
    """brnn encoder + input-fed LSTM decoder + general attention (model v1)."""

    def __init__(self, src_words: int, tgt_vocab: int, emb_size: int = 256,
                 hidden_size: int = 512, enc_layers: int = 2, dec_layers: int = 2,
                 dropout: float = 0.3, dec_init: str = "encoder"):
        super().__init__()
        if hidden_size % 2:
            raise ValueError("hidden_size must be even (H/2 per encoder direction)")
        if dec_init not in ("encoder", "zeros"):
            raise ValueError("dec_init must be 'encoder' or 'zeros'")
        if dec_init == "encoder" and enc_layers != dec_layers:
            raise ValueError("dec_init=encoder needs enc_layers == dec_layers")
        self.src_words, self.tgt_vocab = src_words, tgt_vocab
        self.emb_size, self.hidden_size = emb_size, hidden_size
        self.enc_layers, self.dec_layers = enc_layers, dec_layers
        self.dec_init = dec_init
        E, H = emb_size, hidden_size
        self.src_embedding = nn.Embedding(src_words + N_CASE_CLASSES, E)
        self.tgt_embedding = nn.Embedding(tgt_vocab, E)
        self.encoder = nn.LSTM(E, H // 2, num_layers=enc_layers, bidirectional=True,
                               batch_first=True, dropout=dropout if enc_layers > 1 else 0.0)
        self.decoder = nn.ModuleList(
            nn.LSTMCell(E + H if l == 0 else H, H) for l in range(dec_layers))
        self.attn_w_a = nn.Linear(H, H, bias=False)      # score_j = h . (w_a m_j)
        self.attn_w_c = nn.Linear(2 * H, H, bias=False)  # f = tanh(w_c [c; h])
        self.output = nn.Linear(H, tgt_vocab)
        self.dropout = nn.Dropout(dropout)

    # ---- hyper-parameters as the file stores them --------------------------------
    def hparams(self) -> dict:
        return {"model": MODEL_NAME, "emb_size": self.emb_size, "hidden_size": self.hidden_size,
                "enc_layers": self.enc_layers, "dec_layers": self.dec_layers,
                "src_words": self.src_words, "tgt_vocab": self.tgt_vocab,
                "features": "word,case", "dec_init": self.dec_init}

    @classmethod
    def from_hparams(cls, hp: dict, dropout: float = 0.0) -> "NMTNetwork":
        if hp.get("model", MODEL_NAME) != MODEL_NAME:
            raise ValueError(f"unsupported model {hp.get('model')!r}")
        feats = hp.get("features", "word,case")
        if isinstance(feats, (list, tuple)):
            feats = ",".join(feats)
        if feats != "word,case":
            raise ValueError(f"unsupported features {feats!r} (this network has word,case)")
        return cls(int(hp["src_words"]), int(hp["tgt_vocab"]), int(hp["emb_size"]),
                   int(hp["hidden_size"]), int(hp["enc_layers"]), int(hp["dec_layers"]),
                   dropout=dropout, dec_init=str(hp.get("dec_init", "encoder")))

    def init_uniform(self, scale: float = 0.1, seed: int | None = None) -> None:
        """OpenNMT-py's RNN default (param_init 0.1): works well for LSTMs of this size."""
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.rand(p.shape, generator=gen) * 2 * scale - scale)

    # ---- encoder -----------------------------------------------------------------
    def embed_source(self, words: torch.Tensor, cases: torch.Tensor) -> torch.Tensor:
        """N-hot: word row + case-class row of the one shared table."""
        return self.src_embedding(words) + self.src_embedding(cases + self.src_words)

    def encode(self, words, cases, lengths):
        """words, cases: [B, S] long; lengths: [B] long (CPU or device).

        Returns memory [B, S, H] (m_j = [fwd_j; bwd_j] of the top layer, zeros at
        padding), mem_proj [B, S, H] (w_a m_j, constant over decoder steps),
        mask [B, S] bool (True on real tokens) and the decoder's initial state:
        a list of (h, c) per decoder layer.
        """
        B, S = words.shape
        emb = self.dropout(self.embed_source(words, cases))
        packed = pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h_n, c_n) = self.encoder(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=S)
        mem_proj = self.attn_w_a(memory)
        mask = torch.arange(S, device=words.device)[None, :] < lengths.to(words.device)[:, None]
        H = self.hidden_size
        if self.dec_init == "encoder":
            # h_n: [layers*2, B, H/2], ordered layer0 fwd, layer0 bwd, layer1 fwd, ...
            # With packing, fwd final = after x_S, bwd final = after x_1.
            state = [(torch.cat([h_n[2 * l], h_n[2 * l + 1]], dim=1),
                      torch.cat([c_n[2 * l], c_n[2 * l + 1]], dim=1))
                     for l in range(self.dec_layers)]
        else:
            z = memory.new_zeros(B, H)
            state = [(z, z) for _ in range(self.dec_layers)]
        return memory, mem_proj, mask, state

    # ---- decoder -----------------------------------------------------------------
    def decode_step(self, prev_emb, input_feed, state, memory, mem_proj, mask):
        """One decoder step for R rows (sentences or hypotheses).

        prev_emb [R, E] (already dropped out in training), input_feed [R, H],
        state: list of (h, c) [R, H]; memory, mem_proj [R, S, H]; mask [R, S].
        Returns f_t [R, H] (dropped out: it is also the next input feed, as in
        OpenNMT-py), the new state and the attention weights [R, S].
        """
        x = torch.cat([prev_emb, input_feed], dim=1)
        new_state = []
        for l, cell in enumerate(self.decoder):
            h, c = cell(x, state[l])
            new_state.append((h, c))
            x = self.dropout(h) if l + 1 < self.dec_layers else h
        h_top = x
        scores = torch.bmm(mem_proj, h_top.unsqueeze(2)).squeeze(2)  # [R, S]
        scores = scores.masked_fill(~mask, float("-inf"))
        attn = torch.softmax(scores, dim=1)
        context = torch.bmm(attn.unsqueeze(1), memory).squeeze(1)  # [R, H]
        f = torch.tanh(self.attn_w_c(torch.cat([context, h_top], dim=1)))
        return self.dropout(f), new_state, attn

    def forward(self, words, cases, lengths, tgt_in):
        """Teacher forcing. tgt_in [B, T] starts with BOS. Returns logits [B, T, V]."""
        memory, mem_proj, mask, state = self.encode(words, cases, lengths)
        emb = self.dropout(self.tgt_embedding(tgt_in))
        feed = memory.new_zeros(words.shape[0], self.hidden_size)
        outputs = []
        for t in range(tgt_in.shape[1]):
            feed, state, _ = self.decode_step(emb[:, t], feed, state, memory, mem_proj, mask)
            outputs.append(feed)
        # One big GEMM for the projection rather than T small ones.
        return self.output(torch.stack(outputs, dim=1))

    # ---- file tensors ----------------------------------------------------------------
    def _name_map(self) -> list[tuple[str, torch.Tensor]]:
        """(file tensor name, parameter) in the order the file lists them."""
        pairs = [("src_embedding", self.src_embedding.weight),
                 ("tgt_embedding", self.tgt_embedding.weight)]
        for l in range(self.enc_layers):
            for direction, suffix in (("fwd", ""), ("bwd", "_reverse")):
                for kind in ("w_ih", "w_hh", "b_ih", "b_hh"):
                    torch_name = {"w_ih": "weight_ih", "w_hh": "weight_hh",
                                  "b_ih": "bias_ih", "b_hh": "bias_hh"}[kind]
                    pairs.append((f"encoder.{l}.{direction}.{kind}",
                                  getattr(self.encoder, f"{torch_name}_l{l}{suffix}")))
        for l, cell in enumerate(self.decoder):
            pairs += [(f"decoder.{l}.w_ih", cell.weight_ih), (f"decoder.{l}.w_hh", cell.weight_hh),
                      (f"decoder.{l}.b_ih", cell.bias_ih), (f"decoder.{l}.b_hh", cell.bias_hh)]
        pairs += [("attention.w_a", self.attn_w_a.weight), ("attention.w_c", self.attn_w_c.weight),
                  ("output.w", self.output.weight), ("output.b", self.output.bias)]
        return pairs

    def to_file_tensors(self) -> dict[str, np.ndarray]:
        """Parameters under model.bin names, as contiguous float32 numpy arrays."""
        return {name: np.ascontiguousarray(p.detach().float().cpu().numpy())
                for name, p in self._name_map()}

    def from_file_tensors(self, tensors: dict[str, np.ndarray]) -> None:
        """Loads model.bin tensors; refuses missing, extra or mis-shaped ones."""
        pairs = self._name_map()
        expected = {name for name, _ in pairs}
        extra = set(tensors) - expected
        missing = expected - set(tensors)
        if missing or extra:
            raise ValueError(f"tensor names differ: missing {sorted(missing)}, extra {sorted(extra)}")
        with torch.no_grad():
            for name, p in pairs:
                value = torch.as_tensor(np.asarray(tensors[name], dtype=np.float32))
                if tuple(value.shape) != tuple(p.shape):
                    raise ValueError(f"{name}: shape {tuple(value.shape)}, expected {tuple(p.shape)}")
                p.copy_(value)
        if isinstance(self.encoder, nn.LSTM):
            self.encoder.flatten_parameters()


def load_checkpoint(path: str) -> dict:
    """torch.load of a train.py checkpoint (plain containers, tensors, RNG state).

    weights_only=False: PyTorch >= 2.6 defaults to True, which refuses the
    Python RNG state; the file is our own trainer's output."""
    return torch.load(path, map_location="cpu", weights_only=False)


def count_parameters(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())
