"""OpenNMT-py RNN checkpoints -> model.bin (python/export/onmt_convert.py), against OpenNMT-py.

Trains three tiny OpenNMT-py 3.x RNN models on a made-up German-to-English
word task (seeded, CPU, a few hundred steps each), converts each and checks
that the engine's translations at beam 1 (translate --device cpu -b 1) are
token for token those of OpenNMT-py's own translator (onmt_translate at beam
1, argmax: -random_sampling_topk 1), and at beam 5 with --search-rules onmt
(OpenNMT-py's beam search) those of onmt_translate at its defaults on at
least 99% of the lines (the v1 rules' figure printed beside it):

  A  brnn, 2 layers, general attention, input feeding, separate embeddings
     (the source's 16 wide, the target's 20), cased source words without a
     case feature (the engine looks them up as written);
  B  rnn (one direction), 1 layer, dot attention, input_feed 0, a case
     feature merged by concat (20 + 4), the generator tied to the target
     embedding (share_decoder_embeddings);
  C  brnn, 1 layer, general attention, input feeding, a case feature merged
     by sum, one vocabulary and one embedding for both sides
     (share_vocab, share_embeddings).

The text is words without punctuation (the target's lowercase), so the
engine's tokenization is whitespace splitting; the source is cased at random.
OpenNMT-py gets the tokens of pynmt.tokenizer (the engine's tokenizer): as
written for A, lowercased keys with "￨class" for B and C; the engine gets the
cased text itself, once as raw text and once as tokens (--input-format raw
and tokens), and gives tokens (--output-format tokens). Both decoders run
without unknown-word replacement (OpenNMT-py 3.5.1's greedy search fails with
-replace_unk on RNN models) and with a length limit no hypothesis reaches
unless it never ends (the engine forces EOS at its limit, OpenNMT-py cuts).

Then one check per refused configuration, on edited copies of A's
checkpoint (options, parameters, vocabularies) and on pickles holding
globals the loader must not build.

Skips (77) when OpenNMT-py (onmt.bin.train) cannot be imported. OpenNMT-py
3.5.1 pins torch 2.1-2.2 and imports, for transforms these models never use,
spacy, fasttext, rapidfuzz, pyahocorasick, regex and sacrebleu, and
torch.nn.functional.scaled_dot_product_attention (torch >= 2.0); where one
of those is missing (Debian's torch 1.13 with OpenNMT-py installed with
--no-deps, docs/onmt.md), the runner below stands in an empty module that
fails if it is ever called. Environment: NMT_TRANSLATE (the translate
program; without it only the refusal checks run and the test says so),
PYTHONPATH containing python/.
"""

import copy
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

RUNNER = r'''
import importlib, sys, types

class _Missing(types.ModuleType):
    """An optional dependency of a transform these models never use."""
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        def missing(*a, **k):
            raise ImportError(self.__name__ + " is not installed")
        return missing

for name in ("spacy", "fasttext", "rapidfuzz", "rapidfuzz.fuzz", "rapidfuzz.process",
             "ahocorasick", "regex", "sacrebleu"):
    try:
        importlib.import_module(name)
    except ImportError:
        sys.modules[name] = _Missing(name)
        if "." in name:
            setattr(sys.modules[name.split(".")[0]], name.split(".")[1], sys.modules[name])
import torch.nn.functional as F
if not hasattr(F, "scaled_dot_product_attention"):
    def _sdpa(*a, **k):
        raise NotImplementedError("scaled_dot_product_attention needs torch >= 2.0")
    F.scaled_dot_product_attention = _sdpa
tool = sys.argv.pop(1)
sys.argv[0] = "onmt_" + tool
sys.exit(importlib.import_module("onmt.bin." + tool).main())
'''

DICT = {"der": "the", "die": "the", "das": "the", "hund": "dog", "katze": "cat", "mann": "man",
        "frau": "woman", "kind": "child", "haus": "house", "ball": "ball", "sieht": "sees",
        "hat": "has", "spielt": "plays", "isst": "eats", "rot": "red", "blau": "blue",
        "gross": "big", "klein": "small", "ein": "a", "eine": "a"}

BASE = {
    "overwrite": True, "decoder_type": "rnn", "rnn_type": "LSTM", "bridge": False,
    "train_steps": 300, "save_checkpoint_steps": 100, "valid_steps": 100000,
    "batch_size": 32, "batch_type": "sents", "optim": "adam", "learning_rate": 0.02,
    "seed": 1, "world_size": 1, "gpu_ranks": [], "report_every": 100, "dropout": 0.0,
    "num_workers": 0, "bucket_size": 2048, "prefetch_factor": 2,
}
MODELS = {
    "A": dict(encoder_type="brnn", layers=2, src_word_vec_size=16, tgt_word_vec_size=20,
              hidden_size=32,
              global_attention="general", input_feed=1),
    "B": dict(encoder_type="rnn", layers=1, src_word_vec_size=20, tgt_word_vec_size=24,
              hidden_size=24, global_attention="dot", input_feed=0, n_src_feats=1,
              feat_merge="concat", feat_vec_size=4, feat_vec_exponent=-1,
              share_decoder_embeddings=True),
    "C": dict(encoder_type="brnn", layers=1, word_vec_size=16, hidden_size=32,
              global_attention="general", input_feed=1, n_src_feats=1, feat_merge="sum",
              share_vocab=True, share_embeddings=True),
}


def yaml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)


def make_corpus(tmp):
    """Parallel lines; the source cased at random (every case class occurs)."""
    r = random.Random(11)
    words = sorted(DICT)

    def casing(w):
        k = r.random()
        if k < 0.6:
            return w
        if k < 0.8:
            return w.capitalize()
        if k < 0.93:
            return w.upper()
        return w[0] + w[1:].capitalize()  # "hUnd": OTHER

    out = {}
    for name, n in (("train", 400), ("test", 60)):
        src, tgt = [], []
        for _ in range(n):
            s = [r.choice(words) for _ in range(r.randint(2, 6))]
            src.append(" ".join(casing(w) for w in s))
            tgt.append(" ".join(DICT[w] for w in s))
        out[name] = (src, tgt)
    return out


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def onmt_source(lines, with_case):
    """What OpenNMT-py reads (onmt_convert.onmt_source_line)."""
    from export.onmt_convert import onmt_source_line
    return [onmt_source_line(line, with_case) for line in lines]


def onmt(tool, args, cwd, log):
    with open(log, "a") as f:
        f.write(f"$ onmt_{tool} {' '.join(args)}\n")
        f.flush()
        r = subprocess.run([sys.executable, os.path.join(cwd, "run_onmt.py"), tool] + args,
                           cwd=cwd, stdout=f, stderr=subprocess.STDOUT, timeout=300)
    if r.returncode != 0:
        with open(log) as f:
            sys.stdout.write(f.read()[-4000:])
        raise RuntimeError(f"onmt_{tool} exited {r.returncode}")


def train_and_compare(name, corpus, tmp, translate_bin):
    from export import onmt_convert
    spec = MODELS[name]
    d = os.path.join(tmp, name)
    os.makedirs(d)
    with open(os.path.join(d, "run_onmt.py"), "w") as f:
        f.write(RUNNER)
    with_case = spec.get("n_src_feats", 0) > 0
    train_src, train_tgt = corpus["train"]
    test_src, _ = corpus["test"]
    write_lines(os.path.join(d, "train.src"), onmt_source(train_src, with_case))
    write_lines(os.path.join(d, "train.tgt"), train_tgt)
    write_lines(os.path.join(d, "test.onmt"), onmt_source(test_src, with_case))
    write_lines(os.path.join(d, "test.txt"), test_src)
    cfg = dict(BASE, **spec)
    cfg.update(save_data="run", src_vocab="run/vocab.src", tgt_vocab="run/vocab.tgt",
               save_model="run/model")
    with open(os.path.join(d, "config.yaml"), "w") as f:
        for k, v in cfg.items():
            f.write(f"{k}: {yaml_value(v)}\n")
        f.write("data:\n  corpus_1:\n    path_src: train.src\n    path_tgt: train.tgt\n")
        if with_case:  # OpenNMT-py 3.5.1 wants it with features (no subwords here: identity)
            f.write("    transforms: [inferfeats]\n")
    log = os.path.join(d, "onmt.log")
    t0 = time.time()
    onmt("build_vocab", ["-config", "config.yaml", "-n_sample", "-1"], d, log)
    onmt("train", ["-config", "config.yaml"], d, log)
    ckpt = os.path.join(d, "run", "model_step_300.pt")
    onmt("translate", ["-model", ckpt, "-src", "test.onmt", "-output", "onmt.out",
                       "-beam_size", "1", "-random_sampling_topk", "1", "-max_length", "100",
                       "-max_length_ratio", "0", "-batch_size", "16", "-gpu", "-1"]
         + (["-n_src_feats", "1"] if with_case else []), d, log)
    t_onmt = time.time() - t0
    model_bin = os.path.join(d, "model.bin")
    rc = onmt_convert.main([ckpt, "-o", model_bin])
    if rc != 0:
        print(f"FAIL {name}: onmt_convert exited {rc}")
        return 1
    with open(os.path.join(d, "onmt.out"), encoding="utf-8") as f:
        want = [line.split() for line in f.read().splitlines()]
    failures = 0
    for fmt in ("raw", "tokens"):
        r = subprocess.run([translate_bin, "-m", model_bin, "--device", "cpu", "-b", "1",
                            "--quiet", "--no-unk-replace", "--max-len-a", "0", "--max-len-b", "101",
                            "--input-format", fmt, "--output-format", "tokens",
                            "-i", os.path.join(d, "test.txt")],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            print(f"FAIL {name}: translate --input-format {fmt} exited {r.returncode}: "
                  f"{r.stderr[-2000:]}")
            failures += 1
            continue
        got = [line.split() for line in r.stdout.splitlines()]
        same = sum(1 for a, b in zip(got, want) if a == b)
        distinct = len({" ".join(x) for x in want})
        print(f"{name}: {spec['encoder_type']} {spec['layers']} layer(s), "
              f"{spec['global_attention']} attention, input_feed {spec['input_feed']}, "
              f"features {'case/' + spec['feat_merge'] if with_case else 'none (cased words)'}, "
              f"--input-format {fmt}: {same}/{len(want)} lines identical ({distinct} distinct "
              f"OpenNMT-py outputs; OpenNMT-py {t_onmt:.1f} s)")
        if len(got) != len(want) or same != len(want):
            for i, (a, b) in enumerate(zip(got, want)):
                if a != b:
                    print(f"  line {i + 1}: {test_src[i]!r}\n    engine:    {' '.join(a)}\n"
                          f"    OpenNMT-py: {' '.join(b)}")
                    break
            print(f"FAIL {name}: the engine and OpenNMT-py disagree "
                  f"({len(got)} and {len(want)} lines)")
            failures += 1
    if len({" ".join(x) for x in want}) < len(want) // 2:
        print(f"FAIL {name}: OpenNMT-py's outputs are too uniform to compare")
        failures += 1
    # Beam search is compared on the step-100 checkpoint too: less sure of
    # itself, its beams differ more from its greedy output, and v1's rules
    # from OpenNMT-py's.
    early = os.path.join(d, "run", "model_step_100.pt")
    early_bin = os.path.join(d, "model_step_100.bin")
    if onmt_convert.main([early, "-o", early_bin]) != 0:
        print(f"FAIL {name}: onmt_convert exited nonzero on the step-100 checkpoint")
        return failures + 1
    for c, b in ((ckpt, model_bin), (early, early_bin)):
        failures += compare_beam(f"{name} step {c.split('_')[-1][:-3]}", d, c, b, with_case,
                                 translate_bin, log)
    return failures


def compare_beam(name, d, ckpt, model_bin, with_case, translate_bin, log, beam=5):
    """Beam 5 as a migrating user runs it: onmt_translate with its defaults
    (length limit, batching, no -replace_unk) against translate
    --search-rules onmt --no-unk-replace, which must agree on >= 99% of the
    lines (docs/decoding.md, "Search rules"); the v1 rules' figure is printed
    beside it."""
    onmt("translate", ["-model", ckpt, "-src", "test.onmt", "-output", "onmt_beam.out",
                       "-beam_size", str(beam), "-gpu", "-1"]
         + (["-n_src_feats", "1"] if with_case else []), d, log)
    with open(os.path.join(d, "onmt_beam.out"), encoding="utf-8") as f:
        want = [line.split() for line in f.read().splitlines()]
    figures = {}
    for rules in ("onmt", "v1"):
        r = subprocess.run([translate_bin, "-m", model_bin, "--device", "cpu", "-b", str(beam),
                            "--search-rules", rules, "--quiet", "--no-unk-replace",
                            "--output-format", "tokens", "-i", os.path.join(d, "test.txt")],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            print(f"FAIL {name}: translate -b {beam} --search-rules {rules} exited "
                  f"{r.returncode}: {r.stderr[-2000:]}")
            return 1
        got = [line.split() for line in r.stdout.splitlines()]
        same = sum(1 for a, b in zip(got, want) if a == b) if len(got) == len(want) else 0
        figures[rules] = (same, got)
    same, got = figures["onmt"]
    print(f"{name}: beam {beam}: --search-rules onmt {same}/{len(want)} lines identical to "
          f"onmt_translate ({100.0 * same / len(want):.1f}%), v1 {figures['v1'][0]}/{len(want)} "
          f"({100.0 * figures['v1'][0] / len(want):.1f}%)")
    if same < 0.99 * len(want):
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                print(f"  line {i + 1}:\n    engine:    {' '.join(a)}\n"
                      f"    OpenNMT-py: {' '.join(b)}")
                break
        print(f"FAIL {name}: beam {beam} with --search-rules onmt agrees on fewer than 99% "
              f"of the lines")
        return 1
    return 0


# ---- refusals ----------------------------------------------------------------------------

def refusal_checks(ckpt_path):
    import argparse
    import torch
    from export import onmt_convert as oc
    base = oc.load_checkpoint(ckpt_path)
    failures = 0

    def edited(opts=None, model=None, vocab=None, drop=()):
        c = copy.deepcopy(base)
        c["opt"] = argparse.Namespace(**dict(vars(base["opt"]), **(opts or {})))
        for k in drop:
            del c["model"][k]
        c["model"].update(model or {})
        c["vocab"].update(vocab or {})
        return c

    H = base["opt"].hidden_size
    EMB0 = "encoder.embeddings.make_embedding.emb_luts.0.weight"
    cases = [
        ("encoder_type transformer", edited({"encoder_type": "transformer"}),
         "encoder_type transformer: only rnn and brnn"),
        ("encoder_type cnn", edited({"encoder_type": "cnn"}), "encoder_type cnn"),
        ("decoder_type transformer", edited({"decoder_type": "transformer"}),
         "decoder_type transformer"),
        ("rnn_type GRU", edited({"rnn_type": "GRU"}), "rnn_type GRU: only LSTM"),
        ("rnn_type SRU", edited({"rnn_type": "SRU"}), "rnn_type SRU"),
        ("global_attention mlp", edited({"global_attention": "mlp"}), "global_attention mlp"),
        ("global_attention none", edited({"global_attention": "none"}),
         "global_attention none"),
        ("global_attention_function sparsemax",
         edited({"global_attention_function": "sparsemax"}),
         "global_attention_function sparsemax"),
        ("generator_function sparsemax", edited({"generator_function": "sparsemax"}),
         "generator_function sparsemax"),
        ("bridge", edited({"bridge": True}), "bridge"),
        ("copy_attn", edited({"copy_attn": True}), "copy_attn"),
        ("coverage_attn", edited({"coverage_attn": True}), "coverage_attn"),
        ("context_gate", edited({"context_gate": "both"}), "context_gate both"),
        ("position_encoding", edited({"position_encoding": True}), "position_encoding"),
        ("n_src_feats 2", edited({"n_src_feats": 2}), "n_src_feats 2"),
        ("feat_merge mlp", edited({"n_src_feats": 1, "feat_merge": "mlp"}), "feat_merge mlp"),
        ("enc_layers != dec_layers", edited({"enc_layers": 3, "dec_layers": 2}),
         "enc_layers 3 != dec_layers 2"),
        ("layers > 8", edited({"enc_layers": 9, "dec_layers": 9}), "enc_layers 9"),
        ("enc_hid_size != dec_hid_size", edited({"enc_hid_size": 2 * H, "dec_hid_size": H}),
         "enc_hid_size"),
        ("model_task lm", edited({"model_task": "lm"}), "model_task lm"),
        ("decoder_start_token", edited({"decoder_start_token": "</s>"}),
         "decoder_start_token </s>"),
        ("quant_layers", edited({"quant_layers": ["w_1"]}), "quant_layers"),
        ("lora_layers", edited({"lora_layers": ["linear_values"]}), "lora_layers"),
        ("input_feed lie", edited({"input_feed": 0}), "input_feed 0"),
        ("unknown parameter", edited(model={"decoder.attn.linear_cover.weight": torch.zeros(H, 1)}),
         "decoder.attn.linear_cover.weight"),
        ("missing parameter", edited(drop=["decoder.attn.linear_in.weight"]),
         "decoder.attn.linear_in.weight"),
        ("target entry with white space",
         edited(vocab={"tgt": [w + "\u00a0x" if i == 9 else w
                               for i, w in enumerate(base["vocab"]["tgt"])]}),
         "U+00A0"),
        ("<pad> as an ordinary target entry",
         edited(vocab={"tgt": ["<pad>" if i == 9 else w
                               for i, w in enumerate(base["vocab"]["tgt"])]}),
         "'<pad>' would clash"),
        ("no </s> in the target vocabulary",
         edited(vocab={"tgt": ["x</s>" if w == "</s>" else w for w in base["vocab"]["tgt"]]}),
         "no </s>"),
    ]
    for what, ckpt, words in cases:
        try:
            oc.convert(ckpt)
        except oc.Refused as e:
            if words not in str(e):
                print(f"FAIL refusal {what}: message lacks {words!r}: {e}")
                failures += 1
            continue
        print(f"FAIL refusal {what}: converted")
        failures += 1

    # With the case feature: its values must be case classes, and the source
    # vocabulary must be lowercase (the engine looks words up lowercased).
    specials = ("<unk>", "<blank>", "<s>", "</s>")
    plain = [w if w in specials else f"w{i}" for i, w in enumerate(base["vocab"]["src"])]
    feat = edited({"n_src_feats": 1, "feat_merge": "sum"},
                  model={"encoder.embeddings.make_embedding.emb_luts.1.weight":
                         torch.zeros(8, base["model"][EMB0].shape[1])},
                  vocab={"src": plain,
                         "src_feats": [list(specials) + ["L", "C", "U", "N"]]})
    cased = copy.deepcopy(feat)
    cased["vocab"]["src"] = [w.upper() if i == 7 else w for i, w in enumerate(plain)]
    cased["vocab"]["src_feats"] = [list(specials) + ["0", "1", "2", "3"]]
    for what, ckpt, kwargs, words in (
            ("pyonmttok's N", feat, {}, "value 'N'"),
            ("unmapped value", feat, {"case_values": ("a", "b", "c", "d")}, "value 'L'"),
            ("cased source vocabulary with the case feature", cased, {}, "upper-case letters")):
        try:
            oc.convert(ckpt, **kwargs)
            print(f"FAIL refusal {what}: converted")
            failures += 1
        except oc.Refused as e:
            if words not in str(e):
                print(f"FAIL refusal {what}: message lacks {words!r}: {e}")
                failures += 1
    ok = copy.deepcopy(feat)
    ok["vocab"]["src_feats"] = [["<unk>", "<blank>", "<s>", "</s>", "L", "C", "U", "M"]]
    oc.convert(ok)  # accepted: L, C, U, M are LOWER, CAPITALIZED, UPPER, OTHER
    notes = oc.convert(cased, allow_unreachable_source=True)[4]  # accepted, with a warning
    if not any("WARNING" in n and "upper-case" in n for n in notes):
        print(f"FAIL --allow-unreachable-source: no warning in {notes}")
        failures += 1
    # Without the case feature, cased words are looked up as written: accepted.
    words = edited(vocab={"src": [w.capitalize() if i == 7 else w
                                  for i, w in enumerate(plain)]})
    src = oc.convert(words)[1]
    if "W7" not in src:
        print("FAIL a cased word of a model without the case feature was not kept")
        failures += 1

    # The loader builds no global outside its allow-list.
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "ran")
        for what, obj in (("os.system", _Evil(marker)),
                          ("a class of another program", _Foreign())):
            path = os.path.join(tmp, "evil.pt")
            torch.save({"model": {"w": torch.zeros(2)}, "generator": {}, "vocab": {},
                        "opt": obj}, path)
            try:
                oc.load_checkpoint(path)
                print(f"FAIL loader: {what} loaded")
                failures += 1
            except pickle.UnpicklingError as e:
                if "refusing to load the global" not in str(e):
                    print(f"FAIL loader: {what}: unexpected message {e}")
                    failures += 1
            if os.path.exists(marker):
                print(f"FAIL loader: {what} ran code")
                failures += 1
        # A plain state-dict file (no options) is refused as not a checkpoint.
        path = os.path.join(tmp, "plain.pt")
        torch.save({"model": {k: torch.from_numpy(v) for k, v in base["model"].items()}}, path)
        try:
            oc.load_checkpoint(path)
            print("FAIL loader: a checkpoint without opt/vocab/generator loaded")
            failures += 1
        except oc.Refused as e:
            if "not an OpenNMT-py 3.x checkpoint" not in str(e):
                print(f"FAIL loader: unexpected message {e}")
                failures += 1
    n = len(cases) + 3 + 2 + 3
    print(f"refusals: {n - failures}/{n} refused as expected")
    return failures


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _Foreign:
    pass


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: torch is not importable")
        return 77
    probe = subprocess.run([sys.executable, "-c", RUNNER.replace(
        'tool = sys.argv.pop(1)', 'import onmt.bin.train, onmt.bin.translate, '
        'onmt.bin.build_vocab; sys.exit(0)\ntool = None')], capture_output=True, text=True)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        print(f"skipped: OpenNMT-py is not importable ({last}); "
              "docs/onmt.md says how to install it")
        return 77
    failures = 0
    translate_bin = os.environ.get("NMT_TRANSLATE")
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = make_corpus(tmp)
        if translate_bin:
            for name in MODELS:
                try:
                    failures += train_and_compare(name, corpus, tmp, translate_bin)
                except Exception as e:  # noqa: BLE001
                    print(f"FAIL {name}: {type(e).__name__}: {e}")
                    failures += 1
            ckpt = os.path.join(tmp, "A", "run", "model_step_300.pt")
        else:
            print("note: NMT_TRANSLATE is not set: no comparison with OpenNMT-py, "
                  "refusals on a briefly trained model only")
            ckpt = None
        if ckpt is None or not os.path.exists(ckpt):
            ckpt = _short_model(corpus, tmp)
        failures += refusal_checks(ckpt)
    print(f"{time.time() - t0:.1f} s")
    print("FAIL" if failures else "OK")
    return 1 if failures else 0


def _short_model(corpus, tmp):
    d = os.path.join(tmp, "short")
    os.makedirs(d)
    with open(os.path.join(d, "run_onmt.py"), "w") as f:
        f.write(RUNNER)
    src, tgt = corpus["train"]
    write_lines(os.path.join(d, "train.src"), [s.lower() for s in src])
    write_lines(os.path.join(d, "train.tgt"), tgt)
    cfg = dict(BASE, **MODELS["A"])
    cfg.update(train_steps=2, save_checkpoint_steps=2, save_data="run",
               src_vocab="run/vocab.src", tgt_vocab="run/vocab.tgt", save_model="run/model")
    with open(os.path.join(d, "config.yaml"), "w") as f:
        for k, v in cfg.items():
            f.write(f"{k}: {yaml_value(v)}\n")
        f.write("data:\n  corpus_1:\n    path_src: train.src\n    path_tgt: train.tgt\n")
    log = os.path.join(d, "onmt.log")
    onmt("build_vocab", ["-config", "config.yaml", "-n_sample", "-1"], d, log)
    onmt("train", ["-config", "config.yaml"], d, log)
    return os.path.join(d, "run", "model_step_2.pt")


if __name__ == "__main__":
    sys.exit(main())
