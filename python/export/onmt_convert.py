#!/usr/bin/env python3
"""Converts an OpenNMT-py 3.x RNN checkpoint (.pt) to model.bin (docs/onmt.md).

    python3 python/export/onmt_convert.py MODEL.pt -o model.bin [--fp16] [--compress]
        [--tokenizer pretokenized|engine | --sentencepiece SPM.model]
        [--case-values L,C,U,O] [--allow-unreachable-source]

What converts, exactly (the engine computes what OpenNMT-py computes, up to
float rounding): encoder_type rnn or brnn, rnn_type LSTM, decoder_type rnn
with input_feed 1 or 0, global_attention general or dot (softmax), bridge off,
no source feature or one (the case class, merged by sum or concat), shared or
separate embeddings, tied or separate generator. Everything else is refused
naming the option ("global_attention mlp: ..."); nothing is approximated.

Some configurations are carried by zero blocks that keep the arithmetic exact
(an added zero never changes a sum, and an LSTM unit whose weights and biases
are all zero stays at h = c = 0 from a zero start):
  * input_feed 0: the input-feed columns of decoder layer 0 are zero;
  * encoder_type rnn (one direction of H units): the file's hidden size is 2H,
    the backward direction and the extra decoder units are all zero, so the
    engine does about twice the work of the model;
  * source and target embedding sizes that differ: both are zero-padded to the
    larger; feat_merge concat: word rows fill the first columns and case rows
    the last ones, so their sum is the concatenation.

OpenNMT-py's attention computes score_j = (linear_in h) . m_j, so the file's
attention.w_a (score_j = h . (w_a m_j)) is linear_in's transpose; dot
attention is w_a = identity. Vocabularies are reordered so that the engine's
special ids hold (OpenNMT-py's <blank> becomes <pad>): rows of the embeddings,
the generator and its bias follow. The file says tokenizer=pretokenized unless
--tokenizer engine: like onmt_translate, the engine then takes and gives
tokens. --sentencepiece SPM.model (for a model trained on text split by that
SentencePiece model; no source feature) embeds it: tokenizer=sentencepiece,
the engine splits raw text and joins the output itself. Without a source
feature the engine looks words up as written (a cased vocabulary); with the
case feature it looks up the lowercased word, so a source vocabulary with
upper-case entries is refused there.

Loading needs no torch: the .pt file (torch.save's zip) is read by an
unpickler that builds only the globals in ALLOWED_GLOBALS (OrderedDict,
argparse.Namespace for the training options, set, frozenset), torch's storage
types (read from the zip as numpy arrays) and tensors (numpy views of them,
bounds-checked). Anything else, e.g. an OpenNMT-py 2.x checkpoint with
torchtext fields or any other pickle, is refused before it is built.
torch.load(weights_only=True) cannot read these files (it refuses the
argparse.Namespace), and torch 1.13's torch.load ignores a restricted
pickle_module unless weights_only is set, hence this reader.
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import sys
import zipfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pynmt import modelfile  # noqa: E402
from pynmt import tokenizer as tok  # noqa: E402

# OpenNMT-py's DefaultTokens.
ONMT_UNK, ONMT_PAD, ONMT_BOS, ONMT_EOS = "<unk>", "<blank>", "<s>", "</s>"
ONMT_VOCAB_FILLER = re.compile(r"^averyunlikelytoken[0-9]+$")  # vocab_size_multiple padding
ENGINE_SRC_SPECIALS = ("<pad>", "<unk>")
ENGINE_TGT_SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
CASE_NAMES = ("LOWER", "CAPITALIZED", "UPPER", "OTHER")
CASE_VALUE_SETS = (("0", "1", "2", "3"), ("L", "C", "U", "M"))
MAX_LAYERS = 8

try:  # the loader: python/export/onmt_checkpoint.py (as a package module or beside a script)
    from .onmt_checkpoint import Refused, load_checkpoint  # noqa: F401
except ImportError:
    from onmt_checkpoint import Refused, load_checkpoint  # noqa: E402,F401

def onmt_source_line(line: str, with_case: bool = True) -> str:
    """A raw line as OpenNMT-py reads it for the engine's tokenizer: the tokens
    as written, or with the case feature (features=word,case) their lowercased
    keys and "\uffe8class", the class one of the values 0-3 (CASE_NAMES)."""
    return " ".join(f"{t.key}\uffe8{t.case_class}" if with_case else t.text
                    for t in tok.tokenize(line))


def _opt(opt, name, default=None):
    if isinstance(opt, dict):
        return opt.get(name, default)
    return getattr(opt, name, default)


def check_options(opt) -> None:
    """Refuses every option value the engine cannot represent, naming the option."""
    def refuse(msg):
        raise Refused(msg)

    for name in ("model_task", "data_task"):
        v = _opt(opt, name, "seq2seq")
        if v not in (None, "seq2seq"):
            refuse(f"{name} {v}: only seq2seq (an encoder-decoder) converts")
    v = _opt(opt, "model_type", "text")
    if v not in (None, "text"):
        refuse(f"model_type {v}: only text")
    enc = _opt(opt, "encoder_type", "rnn")
    if enc not in ("rnn", "brnn"):
        refuse(f"encoder_type {enc}: only rnn and brnn (the engine's encoder is an LSTM)")
    dec = _opt(opt, "decoder_type", "rnn")
    if dec != "rnn":
        refuse(f"decoder_type {dec}: only rnn (the engine's decoder is an LSTM with attention)")
    rnn = _opt(opt, "rnn_type", "LSTM")
    if rnn != "LSTM":
        refuse(f"rnn_type {rnn}: only LSTM")
    att = _opt(opt, "global_attention", "general")
    if att == "mlp":
        refuse("global_attention mlp: the engine scores attention bilinearly, score_j = "
               "h . (W_a m_j) (general, or dot with W_a = I); OpenNMT-py's mlp attention "
               "v . tanh(W_q h + W_c m_j) (Bahdanau) has no equivalent, and its linear_out "
               "has a bias and no tanh")
    if att not in ("general", "dot"):
        refuse(f"global_attention {att}: only general and dot (the engine's decoder "
               "always attends and applies tanh(W_c [c; h]))")
    fn = _opt(opt, "global_attention_function", "softmax")
    if fn != "softmax":
        refuse(f"global_attention_function {fn}: only softmax")
    fn = _opt(opt, "generator_function", "softmax")
    if fn != "softmax":
        refuse(f"generator_function {fn}: only softmax")
    for name, why in (("copy_attn", "the copy generator (pointer mixture) is not in the engine"),
                      ("coverage_attn", "coverage attention is not in the engine"),
                      ("bridge", "the bridge (Linear + ReLU over the encoder's final states) is "
                                 "not in the engine, whose decoder starts from the encoder's "
                                 "final states as they are"),
                      ("position_encoding", "RNN embeddings with position encodings are not "
                                            "in the engine"),
                      ("lora_embedding", "LoRA weights are not merged by this converter")):
        if _opt(opt, name, False):
            refuse(f"{name}: {why}")
    v = _opt(opt, "context_gate", None)
    if v:
        refuse(f"context_gate {v}: context gates are not in the engine")
    for name in ("quant_layers", "lora_layers"):
        v = _opt(opt, name, None)
        if v:
            refuse(f"{name} {v}: only plain (unquantized, LoRA-free) weights convert")
    enc_layers = _opt(opt, "enc_layers", None)
    dec_layers = _opt(opt, "dec_layers", None)
    if enc_layers is not None and dec_layers is not None and enc_layers != dec_layers:
        refuse(f"enc_layers {enc_layers} != dec_layers {dec_layers}: OpenNMT-py starts each "
               "decoder layer from the same encoder layer's final state; the engine does so "
               "only with as many layers on both sides")
    for name, v in (("enc_layers", enc_layers), ("dec_layers", dec_layers)):
        if v is not None and not 1 <= v <= MAX_LAYERS:
            refuse(f"{name} {v}: the engine has 1 to {MAX_LAYERS} layers")
    eh, dh = _opt(opt, "enc_hid_size", None), _opt(opt, "dec_hid_size", None)
    if eh is not None and dh is not None and eh != dh:
        refuse(f"enc_hid_size {eh} != dec_hid_size {dh}: the decoder starts from the "
               "encoder's final states, which needs equal sizes")
    n_feats = _opt(opt, "n_src_feats", 0) or 0
    if n_feats > 1:
        refuse(f"n_src_feats {n_feats}: the engine has one source feature, the case class")
    if n_feats == 1:
        merge = _opt(opt, "feat_merge", "concat")
        if merge not in ("sum", "concat"):
            refuse(f"feat_merge {merge}: only sum and concat (the engine sums the rows of one "
                   "table; mlp adds a Linear + ReLU)")
    v = _opt(opt, "decoder_start_token", ONMT_BOS)
    if v not in (None, ONMT_BOS):
        refuse(f"decoder_start_token {v}: the engine starts decoding with {ONMT_BOS}")


# ---- vocabularies --------------------------------------------------------------------------

def _check_entries(entries, what):
    """The engine's vocabulary rules (text/vocab.c): refused here, naming the entry."""
    seen = {}
    for i, e in enumerate(entries):
        if not isinstance(e, str) or not e:
            raise Refused(f"{what}: entry {i} {e!r} is empty or not a string")
        bad = [c for c in e if c in tok._WHITE_SPACE or c == "\0"]
        if bad:
            raise Refused(f"{what}: entry {i} {e!r} contains U+{ord(bad[0]):04X} "
                          "(white space and NUL cannot be vocabulary entries)")
        if e in seen:
            raise Refused(f"{what}: entry {i} {e!r} duplicates entry {seen[e]}")
        seen[e] = i


def _reorder(entries, specials_onmt, specials_engine, what):
    """Moves OpenNMT-py's special tokens to the engine's fixed ids.

    Returns (engine entries, index list into the OpenNMT-py rows: -1 = new zero row)."""
    index = []
    for s_onmt, s_engine in zip(specials_onmt, specials_engine):
        if s_onmt in entries:
            index.append(entries.index(s_onmt))
        elif s_onmt == ONMT_PAD:
            index.append(-1)  # never looked up: the engine never embeds or predicts padding
        else:
            raise Refused(f"{what}: no {s_onmt} (OpenNMT-py's special tokens are needed)")
    taken = set(index)
    index += [i for i in range(len(entries)) if i not in taken]
    out = list(specials_engine) + [entries[i] for i in index[len(specials_engine):]]
    clash = [e for e in specials_engine if out.count(e) > 1]
    if clash:  # (other duplicates are named by _check_entries)
        raise Refused(f"{what}: the ordinary entry {clash[0]!r} would clash with the engine's "
                      "special token of that name")
    return out, index


def _rows(table, index):
    out = np.zeros((len(index),) + table.shape[1:], dtype=np.float32)
    for r, i in enumerate(index):
        if i >= 0:
            out[r] = table[i]
    return out


def _source_lookups(entries, exempt, cased_feature):
    """Source entries the engine cannot look up as OpenNMT-py does.

    Returns (cased, split): with the case feature the engine looks a word up
    lowercased, so an entry with upper-case letters is never found (cased);
    without it, words are looked up as written. Entries that the engine's own
    tokenizer never gives as one token (split) are found only in pre-tokenized
    input (docs/tokenization.md 6a)."""
    cased, split = [], []
    for e in entries:
        if e in exempt or ONMT_VOCAB_FILLER.match(e) or e == tok.JOINER_ESCAPE:
            continue
        body = e[len(tok.JOINER):] if e.startswith(tok.JOINER) else e
        if cased_feature and "".join(tok.lower_char(c) for c in body) != body:
            cased.append(e)
        toks = tok.tokenize(body) if body else []
        if len(toks) != 1 or toks[0].text != body:
            split.append(e)
    return cased, split


def _case_rows(feat_vocab, case_values):
    """Index of the feature row for each engine case class (LOWER, CAPITALIZED, UPPER, OTHER)."""
    specials = {ONMT_UNK, ONMT_PAD, ONMT_BOS, ONMT_EOS}
    values = [v for v in feat_vocab if v not in specials and not ONMT_VOCAB_FILLER.match(v)]
    if case_values is None:
        # The convention the values follow: the one that covers most of them.
        case_values = max(CASE_VALUE_SETS, key=lambda c: len(set(values) & set(c)))
        if not set(values) & set(case_values):
            raise Refused(
                f"source feature 0: values {values[:8]} are not case classes; the engine's "
                "one source feature is its case class (LOWER, CAPITALIZED, UPPER, OTHER: "
                "docs/tokenization.md), written 0,1,2,3 or L,C,U,M; name yours with "
                "--case-values")
    unknown = [v for v in values if v not in case_values]
    if unknown:
        raise Refused(f"source feature 0: value {unknown[0]!r} is none of the case classes "
                      f"{','.join(case_values)} (LOWER, CAPITALIZED, UPPER, OTHER): the engine "
                      "could never give it (pyonmttok's N, no letters, is LOWER in the engine)")
    rows = []
    for value in case_values:
        if value in feat_vocab:
            rows.append(feat_vocab.index(value))
        elif ONMT_UNK in feat_vocab:
            rows.append(feat_vocab.index(ONMT_UNK))  # what OpenNMT-py uses for an unseen value
        else:
            raise Refused(f"source feature 0: neither {value!r} nor {ONMT_UNK} in its vocabulary")
    return rows, case_values


# ---- weights -----------------------------------------------------------------------------

def _np(t):
    if hasattr(t, "detach"):  # a torch tensor (a checkpoint edited in memory)
        t = t.detach().float().cpu().numpy()
    return np.ascontiguousarray(t, dtype=np.float32)


def _gates(w, n_src, n_dst):
    """[4 n_src, ...] in gate order i, f, g, o -> [4 n_dst, ...], each gate's rows first."""
    out = np.zeros((4 * n_dst,) + w.shape[1:], dtype=np.float32)
    for g in range(4):
        out[g * n_dst:g * n_dst + n_src] = w[g * n_src:(g + 1) * n_src]
    return out


def _cols(w, width, spans):
    """Places column blocks: spans = [(dst_start, src_start, count)]."""
    out = np.zeros((w.shape[0], width), dtype=np.float32)
    for dst, src, n in spans:
        out[:, dst:dst + n] = w[:, src:src + n]
    return out


def convert(ckpt: dict, case_values=None, allow_unreachable_source=False,
            tokenizer="pretokenized"):
    """Returns (hparams, src_vocab, tgt_vocab, tensors in file order, notes).

    tokenizer: "pretokenized" writes tokenizer=pretokenized (translators then take
    and give tokens by default, as onmt_translate does), "engine" leaves the key out."""
    if tokenizer not in modelfile.TOKENIZERS:
        raise ValueError(f"tokenizer {tokenizer!r}: one of {modelfile.TOKENIZERS}")
    opt = ckpt["opt"]
    check_options(opt)
    notes = []
    model = {k: v for k, v in ckpt["model"].items()}
    gen = {k: v for k, v in ckpt["generator"].items()}
    vocab = ckpt["vocab"]
    if not isinstance(vocab, dict) or "src" not in vocab or "tgt" not in vocab:
        raise Refused("vocab: not OpenNMT-py 3.x's {'src': [...], 'tgt': [...]} lists")
    src_onmt, tgt_onmt = list(vocab["src"]), list(vocab["tgt"])
    feats_onmt = [list(f) for f in vocab.get("src_feats", []) or []]
    n_feats = _opt(opt, "n_src_feats", len(feats_onmt)) or 0
    if tokenizer == "sentencepiece" and (feats_onmt or n_feats):
        raise Refused("--sentencepiece: the model has a source feature; a SentencePiece model's "
                      "pieces are looked up as they are, without one")
    if len(feats_onmt) != n_feats:
        raise Refused(f"n_src_feats {n_feats} but {len(feats_onmt)} feature vocabularies")
    if len(feats_onmt) > 1:
        raise Refused(f"n_src_feats {len(feats_onmt)}: the engine has one source feature, "
                      "the case class")

    used = set()

    def take(d, key, what="model"):
        if key not in d:
            raise Refused(f"{what}: no parameter {key!r} (not an OpenNMT-py 3.x RNN checkpoint?)")
        used.add((what, key))
        return _np(d[key])

    # Embeddings.
    emb = "encoder.embeddings.make_embedding.emb_luts."
    w_src = take(model, emb + "0.weight")
    w_feat = take(model, emb + "1.weight") if feats_onmt else None
    w_tgt = take(model, "decoder.embeddings.make_embedding.emb_luts.0.weight")
    merge = _opt(opt, "feat_merge", "concat") if feats_onmt else None
    e_word = w_src.shape[1]
    if merge == "sum" and w_feat.shape[1] != e_word:
        raise Refused(f"feat_merge sum: feature embedding size {w_feat.shape[1]} != "
                      f"word size {e_word}")
    e_src = e_word + w_feat.shape[1] if merge == "concat" else e_word
    e_tgt = w_tgt.shape[1]
    E = max(e_src, e_tgt)
    if e_src != e_tgt:
        notes.append(f"source embeddings {e_src} wide, target {e_tgt}: both zero-padded to {E}")
    if w_src.shape[0] != len(src_onmt) or w_tgt.shape[0] != len(tgt_onmt):
        raise Refused(f"vocab: {len(src_onmt)} source / {len(tgt_onmt)} target entries, "
                      f"embeddings have {w_src.shape[0]} / {w_tgt.shape[0]} rows")
    if feats_onmt and w_feat.shape[0] != len(feats_onmt[0]):
        raise Refused(f"src_feats: {len(feats_onmt[0])} entries, feature embedding has "
                      f"{w_feat.shape[0]} rows")

    # Encoder.
    brnn = _opt(opt, "encoder_type", "rnn") == "brnn"
    enc_layers = 0
    while f"encoder.rnn.weight_ih_l{enc_layers}" in model:
        enc_layers += 1
    if enc_layers == 0:
        raise Refused("model: no encoder.rnn.weight_ih_l0 (not an RNN encoder)")
    h_dir = take(model, "encoder.rnn.weight_hh_l0").shape[1]  # units per direction

    # Decoder: InputFeedRNNDecoder (StackedLSTM of LSTMCells) or StdRNNDecoder (nn.LSTM).
    input_feed = "decoder.rnn.layers.0.weight_ih" in model
    if bool(_opt(opt, "input_feed", 1)) != input_feed:
        raise Refused(f"input_feed {_opt(opt, 'input_feed', 1)} but the decoder's parameters "
                      f"are those of input_feed {int(input_feed)}")
    dec_key = ((lambda l, k: f"decoder.rnn.layers.{l}.{k}") if input_feed else
               (lambda l, k: f"decoder.rnn.{k}_l{l}"))
    dec_layers = 0
    while dec_key(dec_layers, "weight_ih") in model:
        dec_layers += 1
    if dec_layers == 0:
        raise Refused("model: no decoder LSTM parameters")
    if enc_layers != dec_layers:
        raise Refused(f"enc_layers {enc_layers} != dec_layers {dec_layers}: OpenNMT-py starts "
                      "each decoder layer from the same encoder layer's final state")
    if enc_layers > MAX_LAYERS:
        raise Refused(f"enc_layers {enc_layers}: the engine has at most {MAX_LAYERS}")
    h_dec = take(model, dec_key(0, "weight_hh")).shape[1]
    enc_out = 2 * h_dir if brnn else h_dir
    if enc_out != h_dec:
        raise Refused(f"enc_hid_size {enc_out} != dec_hid_size {h_dec}: the decoder starts "
                      "from the encoder's final states, which needs equal sizes")
    H = h_dec if brnn else 2 * h_dec
    h2 = H // 2
    if not brnn:
        notes.append(f"encoder_type rnn: stored as a bidirectional encoder of hidden size {H} "
                     f"whose backward direction and upper {H - h_dec} decoder units are zero "
                     "(exact; about twice the model's arithmetic)")
    if not input_feed:
        notes.append("input_feed 0: the input-feed columns of decoder layer 0 are zero (exact)")

    tensors = {}
    # Source embedding: [<pad>, <unk>, words...] then the case rows.
    src_vocab, src_index = _reorder(src_onmt, (ONMT_PAD, ONMT_UNK), ENGINE_SRC_SPECIALS,
                                    "source vocabulary")
    _check_entries(src_vocab, "source vocabulary")
    word_rows = _cols(_rows(w_src, src_index), E, [(0, 0, e_word)])
    if feats_onmt:
        rows, case_values = _case_rows(feats_onmt[0], case_values)
        case = _rows(w_feat, rows)
        dst = e_word if merge == "concat" else 0
        case_rows = _cols(case, E, [(dst, 0, case.shape[1])])
        tensors["src_embedding"] = np.concatenate([word_rows, case_rows])
        notes.append(f"source feature 0 ({merge}): case classes "
                     + ", ".join(f"{n}={v}" for n, v in zip(CASE_NAMES, case_values)))
    else:
        tensors["src_embedding"] = word_rows
    tgt_vocab, tgt_index = _reorder(tgt_onmt, (ONMT_PAD, ONMT_UNK, ONMT_BOS, ONMT_EOS),
                                    ENGINE_TGT_SPECIALS, "target vocabulary")
    _check_entries(tgt_vocab, "target vocabulary")
    tensors["tgt_embedding"] = _cols(_rows(w_tgt, tgt_index), E, [(0, 0, e_tgt)])

    exempt = {ONMT_UNK, ONMT_PAD, ONMT_BOS, ONMT_EOS} | set(_opt(opt, "default_specials", []) or [])
    exempt |= set(ENGINE_SRC_SPECIALS)
    cased, split = _source_lookups(src_vocab, exempt, bool(feats_onmt))
    if cased:
        msg = (f"source vocabulary: {len(cased)} entries have upper-case letters, e.g. "
               f"{', '.join(map(repr, cased[:5]))}, but the model has the case feature, with "
               "which the engine looks words up lowercased (docs/model-v1.md): these would "
               "never be found")
        if not allow_unreachable_source:
            raise Refused(msg + " (--allow-unreachable-source converts anyway)")
        notes.append("WARNING: " + msg)
    if split and tokenizer == "engine":
        notes.append(f"{len(split)} source entries are not one token of the engine's own "
                     f"tokenizer, e.g. {', '.join(map(repr, split[:5]))}: they are found in "
                     "pre-tokenized input (translate --input-format tokens; the default with "
                     "tokenizer=pretokenized), not in raw text")
    glued_inside = [e for e in tgt_vocab if tok.JOINER in e[1:]]
    if glued_inside:
        notes.append(f"WARNING: {len(glued_inside)} target entries hold a joiner after their "
                     f"first character, e.g. {', '.join(map(repr, glued_inside[:5]))}: the "
                     "engine's detokenizer only glues a token that starts with the joiner")

    # Encoder layers.
    for l in range(enc_layers):
        for direction, suffix in (("fwd", ""), ("bwd", "_reverse")):
            p = f"encoder.{l}.{direction}."
            if not brnn and direction == "bwd":
                inp = E if l == 0 else H
                tensors[p + "w_ih"] = np.zeros((4 * h2, inp), np.float32)
                tensors[p + "w_hh"] = np.zeros((4 * h2, h2), np.float32)
                tensors[p + "b_ih"] = np.zeros(4 * h2, np.float32)
                tensors[p + "b_hh"] = np.zeros(4 * h2, np.float32)
                continue
            w_ih = take(model, f"encoder.rnn.weight_ih_l{l}{suffix}")
            w_hh = take(model, f"encoder.rnn.weight_hh_l{l}{suffix}")
            if w_hh.shape != (4 * h_dir, h_dir):
                raise Refused(f"encoder.rnn.weight_hh_l{l}{suffix}: shape {w_hh.shape}")
            if l == 0:
                if w_ih.shape[1] != e_src:
                    raise Refused(f"encoder.rnn.weight_ih_l0{suffix}: {w_ih.shape[1]} inputs, "
                                  f"embeddings are {e_src} wide")
                tensors[p + "w_ih"] = _cols(w_ih, E, [(0, 0, e_src)])
            else:
                tensors[p + "w_ih"] = _cols(w_ih, H, [(0, 0, w_ih.shape[1])])
            tensors[p + "w_hh"] = w_hh
            tensors[p + "b_ih"] = take(model, f"encoder.rnn.bias_ih_l{l}{suffix}")
            tensors[p + "b_hh"] = take(model, f"encoder.rnn.bias_hh_l{l}{suffix}")

    # Decoder layers.
    for l in range(dec_layers):
        p = f"decoder.{l}."
        w_ih = take(model, dec_key(l, "weight_ih"))
        w_hh = take(model, dec_key(l, "weight_hh"))
        if w_hh.shape != (4 * h_dec, h_dec):
            raise Refused(f"{dec_key(l, 'weight_hh')}: shape {w_hh.shape}")
        if l == 0:
            want = e_tgt + h_dec if input_feed else e_tgt
            if w_ih.shape[1] != want:
                raise Refused(f"{dec_key(0, 'weight_ih')}: {w_ih.shape[1]} inputs, expected {want}")
            spans = [(0, 0, e_tgt)] + ([(E, e_tgt, h_dec)] if input_feed else [])
            w_ih = _cols(w_ih, E + H, spans)
        else:
            w_ih = _cols(w_ih, H, [(0, 0, h_dec)])
        tensors[p + "w_ih"] = _gates(w_ih, h_dec, H)
        tensors[p + "w_hh"] = _gates(_cols(w_hh, H, [(0, 0, h_dec)]), h_dec, H)
        tensors[p + "b_ih"] = _gates(take(model, dec_key(l, "bias_ih")), h_dec, H)
        tensors[p + "b_hh"] = _gates(take(model, dec_key(l, "bias_hh")), h_dec, H)

    # Attention: score_j = (linear_in h) . m_j = h . (linear_in^T m_j).
    w_a = np.zeros((H, H), np.float32)
    if _opt(opt, "global_attention", "general") == "general":
        w_a[:h_dec, :h_dec] = take(model, "decoder.attn.linear_in.weight").T
    else:
        w_a[:h_dec, :h_dec] = np.eye(h_dec, dtype=np.float32)
    tensors["attention.w_a"] = w_a
    w_out = take(model, "decoder.attn.linear_out.weight")  # [h, 2h] over [c; h]
    w_c = np.zeros((H, 2 * H), np.float32)
    w_c[:h_dec, :h_dec] = w_out[:, :h_dec]
    w_c[:h_dec, H:H + h_dec] = w_out[:, h_dec:]
    tensors["attention.w_c"] = w_c

    # Generator (Linear + LogSoftmax); its weight may be tied to the target embedding.
    if "weight" in gen:
        g_w = take(gen, "weight", "generator")
    elif _opt(opt, "share_decoder_embeddings", False):
        g_w = w_tgt
    else:
        raise Refused("generator: no weight")
    g_b = take(gen, "bias", "generator") if "bias" in gen else np.zeros(len(tgt_onmt), np.float32)
    if g_w.shape != (len(tgt_onmt), h_dec):
        raise Refused(f"generator.weight: shape {g_w.shape}, expected {(len(tgt_onmt), h_dec)}")
    tensors["output.w"] = _cols(_rows(g_w, tgt_index), H, [(0, 0, h_dec)])
    tensors["output.b"] = _rows(g_b[:, None], tgt_index)[:, 0]

    # Every parameter must have been used: an unknown one is an unknown option.
    for what, d in (("model", model), ("generator", gen)):
        for key in d:
            if (what, key) not in used:
                raise Refused(f"{what}: parameter {key!r} has no place in the engine's model "
                              "(an option this converter does not know)")

    hparams = {"model": "lstm-attn-v1", "emb_size": E,
               "hidden_size": H, "enc_layers": enc_layers, "dec_layers": dec_layers,
               "src_words": len(src_vocab), "tgt_vocab": len(tgt_vocab),
               "features": "word,case" if feats_onmt else "word", "dec_init": "encoder"}
    if tokenizer != "engine":
        hparams["tokenizer"] = tokenizer
    for name, a in tensors.items():
        if not np.all(np.isfinite(a)):
            raise Refused(f"{name}: non-finite values")
    modelfile.check_tensors(hparams, tensors)
    ordered = {name: tensors[name] for name, _ in modelfile.expected_tensors(hparams)}
    return hparams, src_vocab, tgt_vocab, ordered, notes


def write(out, hparams, src_vocab, tgt_vocab, tensors, fp16=False, compress=False,
          sentencepiece=None):
    """Writes model.bin and reads it back (fp16: the rounded values must come back);
    sentencepiece: a .model file's bytes, embedded as section SPMP."""
    if fp16:
        big = [n for n, a in tensors.items() if np.any(np.abs(a) > 65504.0)]
        if big:
            raise Refused(f"--fp16: tensor {big[0]} has values beyond the fp16 range")
    modelfile.write_model_checked(out, hparams, src_vocab, tgt_vocab, tensors, fp16, compress,
                                  sentencepiece)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", help="an OpenNMT-py 3.x RNN checkpoint (MODEL_step_N.pt)")
    p.add_argument("-o", "--output", required=True, help="model.bin to write")
    p.add_argument("--fp16", action="store_true", help="store tensors as IEEE binary16")
    p.add_argument("--compress", action="store_true", help="deflate the tensor data")
    p.add_argument("--case-values", metavar="L,C,U,O",
                   help="the source feature's values for the engine's case classes LOWER, "
                        "CAPITALIZED, UPPER, OTHER (default: 0,1,2,3 or L,C,U,M, whichever "
                        "the feature's vocabulary uses)")
    p.add_argument("--allow-unreachable-source", action="store_true",
                   help="convert even when source entries have upper-case letters while the "
                        "model has the case feature (the engine never finds them): a warning")
    p.add_argument("--tokenizer", choices=("pretokenized", "engine"),
                   help="pretokenized (the default): the model "
                        "takes and gives tokens, as onmt_translate does; engine: raw text "
                        "through the engine's tokenizer (for models trained on its tokens)")
    p.add_argument("--sentencepiece", metavar="SPM.model",
                   help="embed the SentencePiece model the training text was split with: "
                        "the engine takes and gives raw text (tokenizer=sentencepiece)")
    a = p.parse_args(argv)
    if a.sentencepiece and a.tokenizer:
        p.error("--sentencepiece sets tokenizer=sentencepiece: leave out --tokenizer")
    spm = None
    if a.sentencepiece:
        try:
            spm, pieces = modelfile.load_sentencepiece(a.sentencepiece)
        except (OSError, ValueError) as e:
            p.error(f"--sentencepiece: {e}")
    tokenizer = "sentencepiece" if spm else a.tokenizer or "pretokenized"
    case_values = None
    if a.case_values:
        case_values = tuple(a.case_values.split(","))
        if len(case_values) != 4 or len(set(case_values)) != 4 or not all(case_values):
            p.error("--case-values: four different values, comma-separated")
    try:
        ckpt = load_checkpoint(a.checkpoint)
        hp, sv, tv, tensors, notes = convert(ckpt, case_values, a.allow_unreachable_source,
                                             tokenizer)
        for side, vocab, n in (("source", sv, 2), ("target", tv, 4)):
            strangers = modelfile.sentencepiece_strangers(pieces, vocab, n) if spm else []
            if strangers:
                notes.append(f"WARNING: {len(strangers)} {side} entries are not pieces of "
                             f"{a.sentencepiece}, e.g. {strangers[:5]}")
        write(a.output, hp, sv, tv, tensors, a.fp16, a.compress, spm)
    except Refused as e:
        print(f"{a.checkpoint}: refused: {e}", file=sys.stderr)
        return 1
    except (pickle.UnpicklingError, zipfile.BadZipFile, OSError) as e:
        print(f"{a.checkpoint}: {e}", file=sys.stderr)
        return 1
    for note in notes:
        print(f"{a.checkpoint}: {note}", file=sys.stderr)
    n = sum(t.size for t in tensors.values())
    opt = ckpt["opt"]
    print(f"{a.output}: {os.path.getsize(a.output):,} bytes, {len(tensors)} tensors, "
          f"{n / 1e6:.2f}M parameters, {'fp16' if a.fp16 else 'fp32'}"
          f"{', deflated' if a.compress else ''}; {_opt(opt, 'encoder_type')} "
          f"{hp['enc_layers']}x{hp['hidden_size']}, E {hp['emb_size']}, "
          f"{_opt(opt, 'global_attention')} attention, input_feed {_opt(opt, 'input_feed', 1)}, "
          f"features {hp['features']}, tokenizer {hp.get('tokenizer', 'engine')}, "
          f"{hp['src_words']} source words, "
          f"{hp['tgt_vocab']} target tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
