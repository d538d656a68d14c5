"""An engine model file (brnn, LSTM, general attention, input feeding, the
case feature) rebuilt as an OpenNMT-py 3.5.1 checkpoint, so that
onmt_translate can translate with the same network (the reverse of
python/export/onmt_convert.py; docs/onmt.md, "At full size").

    PYTHONPATH=python:dev/eval /usr/bin/python3 dev/eval/onmt_from_model.py \
        models/multi30k-de-en.bin -o /tmp/multi30k.pt

Needs torch and OpenNMT-py 3.5.1 (docs/onmt.md says how to install it next to
Debian's torch; its optional imports are stood in as by the test's runner).
OpenNMT-py's specials come first in its vocabularies (<unk>, <blank>, <s>,
</s>); the source feature's values are the case classes 0-3 (LOWER,
CAPITALIZED, UPPER, OTHER), merged by sum, so onmt_translate reads
"key￨class" tokens (python/export/onmt_convert.py's onmt_source_line)."""

import argparse
import importlib
import os
import sys
import types

import numpy as np

ONMT_SPECIALS = ["<unk>", "<blank>", "<s>", "</s>"]


def _stand_ins():
    """Empty modules for OpenNMT-py's optional imports (transforms not used)."""
    class Missing(types.ModuleType):
        def __getattr__(self, attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            raise ImportError(self.__name__ + " is not installed")
    for name in ("spacy", "fasttext", "rapidfuzz", "rapidfuzz.fuzz", "rapidfuzz.process",
                 "ahocorasick", "regex", "sacrebleu"):
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = Missing(name)
            if "." in name:
                setattr(sys.modules[name.split(".")[0]], name.split(".")[1], sys.modules[name])
    import torch.nn.functional as F
    if not hasattr(F, "scaled_dot_product_attention"):
        F.scaled_dot_product_attention = None


def rebuild(path):
    """Returns the checkpoint dict for the model file at path."""
    _stand_ins()
    import pyonmttok
    import torch
    from onmt import opts
    from onmt.inputters.inputter import vocabs_to_dict
    from onmt.model_builder import build_base_model
    from onmt.utils.parse import ArgumentParser
    from pynmt import modelfile

    hp, src_vocab, tgt_vocab, t = modelfile.read_model(path)[:4]
    if hp.get("features") != "word,case" or hp.get("dec_init") != "encoder":
        raise SystemExit(f"{path}: only features=word,case, dec_init=encoder models")
    E, H, L = hp["emb_size"], hp["hidden_size"], hp["enc_layers"]
    n_words = hp["src_words"]

    # The source needs no <s> and </s> (OpenNMT-py adds none to it).
    src_onmt = ONMT_SPECIALS[:2] + src_vocab[2:]      # engine: <pad>, <unk>, words
    tgt_onmt = ONMT_SPECIALS + tgt_vocab[4:]          # engine: <pad>, <unk>, <s>, </s>, words
    feat_onmt = ONMT_SPECIALS + ["0", "1", "2", "3"]  # the case classes
    src_rows = [1, 0] + list(range(2, n_words))
    tgt_rows = [1, 0, 2, 3] + list(range(4, len(tgt_vocab)))

    def rows(table, index):
        out = np.zeros((len(index), table.shape[1]), np.float32)
        for i, r in enumerate(index):
            if r is not None:
                out[i] = table[r]
        return out

    parser = ArgumentParser()
    opts.model_opts(parser)
    opts._add_train_general_opts(parser)
    opts._add_features_opts(parser)
    opt = parser.parse_args([
        "-encoder_type", "brnn", "-decoder_type", "rnn", "-rnn_type", "LSTM",
        "-layers", str(L), "-hidden_size", str(H), "-word_vec_size", str(E),
        "-global_attention", "general", "-input_feed", "1", "-n_src_feats", "1",
        "-feat_merge", "sum"])
    ArgumentParser.update_model_opts(opt)
    ArgumentParser.validate_model_opts(opt)
    vocabs = {"src": pyonmttok.build_vocab_from_tokens(src_onmt),
              "tgt": pyonmttok.build_vocab_from_tokens(tgt_onmt),
              "src_feats": [pyonmttok.build_vocab_from_tokens(feat_onmt)],
              "data_task": "seq2seq", "decoder_start_token": "<s>"}
    model = build_base_model(opt, vocabs)
    state = model.state_dict()

    def put(key, value):
        value = torch.from_numpy(np.ascontiguousarray(value, np.float32))
        if key not in state or state[key].shape != value.shape:
            raise SystemExit(f"{key}: {tuple(value.shape)}, model has "
                             f"{tuple(state[key].shape) if key in state else 'none'}")
        state[key] = value

    emb = "encoder.embeddings.make_embedding.emb_luts."
    put(emb + "0.weight", rows(t["src_embedding"][:n_words], src_rows))
    put(emb + "1.weight", rows(t["src_embedding"][n_words:], [None] * 4 + [0, 1, 2, 3]))
    put("decoder.embeddings.make_embedding.emb_luts.0.weight", rows(t["tgt_embedding"], tgt_rows))
    for l in range(L):
        for direction, suffix in (("fwd", ""), ("bwd", "_reverse")):
            p = f"encoder.{l}.{direction}."
            put(f"encoder.rnn.weight_ih_l{l}{suffix}", t[p + "w_ih"])
            put(f"encoder.rnn.weight_hh_l{l}{suffix}", t[p + "w_hh"])
            put(f"encoder.rnn.bias_ih_l{l}{suffix}", t[p + "b_ih"])
            put(f"encoder.rnn.bias_hh_l{l}{suffix}", t[p + "b_hh"])
    for l in range(hp["dec_layers"]):
        for k in ("w_ih", "w_hh", "b_ih", "b_hh"):
            onmt_k = {"w_ih": "weight_ih", "w_hh": "weight_hh", "b_ih": "bias_ih",
                      "b_hh": "bias_hh"}[k]
            put(f"decoder.rnn.layers.{l}.{onmt_k}", t[f"decoder.{l}.{k}"])
    put("decoder.attn.linear_in.weight", t["attention.w_a"].T)
    put("decoder.attn.linear_out.weight", t["attention.w_c"])
    put("generator.weight", rows(t["output.w"], tgt_rows))
    put("generator.bias", rows(t["output.b"][:, None], tgt_rows)[:, 0])
    return {"model": {k: v for k, v in state.items() if "generator" not in k},
            "generator": {k[len("generator."):]: v for k, v in state.items()
                          if k.startswith("generator.")},
            "vocab": vocabs_to_dict(vocabs), "opt": opt, "optim": None}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    import torch
    torch.save(rebuild(args.model), args.output)
    print(f"{args.output}: {os.path.getsize(args.output):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
