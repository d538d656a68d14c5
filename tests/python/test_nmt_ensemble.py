"""test_nmt_ensemble.py: the Python package's ensembles (Translator and
Service over a list of models or paths with weights=, nmt.Ensemble;
docs/python.md) on the CPU with the test model A and its twin B of another
seed (the same vocabularies).

- [A, A] translates as A alone, and [A, B] with weights [1, 0] too;
- [A, B] with weights [0.3, 0.9] gives translate -m A -m B --weights
  0.3,0.9's lines and scores (to its printed digits), other than either
  member's; the Service over the same ensemble answers the same;
- an nmt.Ensemble of Model objects is the same ensemble; .model shows it;
- translate_iterable (the library's host pipeline) over [A, B], with one
  translator or workers=2 (each an ensemble), gives translate_batch's
  results in order;
- repetition_penalty with an ensemble is refused (nmt.Error naming it);
- weights of another count, a negative weight and a model of another
  vocabulary (a renamed copy is not at hand: the shipped model) are
  refused with the reason.
Skips (77) when libnmt or the test models are not built."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import nmt  # noqa: E402

BINARY_DIR = os.environ.get("NMT_BINARY_DIR", os.path.join(SOURCE_DIR, "build"))
LIBRARY = os.path.join(BINARY_DIR, "libnmt.so")
A = os.environ.get("NMT_TEST_MODEL", os.path.join(BINARY_DIR, "test-model.bin"))
B = os.environ.get("NMT_TEST_MODEL_SEED2", os.path.join(BINARY_DIR, "test-model-seed2.bin"))
TRANSLATE = os.environ.get("NMT_TRANSLATE", os.path.join(BINARY_DIR, "translate"))
SHIPPED = os.path.join(SOURCE_DIR, "models", "multi30k-de-en.bin")
LINES = ["der hund sieht die katze", "ich liest ein buch", "das haus ist sehr groß", "",
         "wir sehen das kind nicht"]
OPTIONS = dict(device="cpu", beam_size=3, n_best=2, max_len_b=8, library=LIBRARY)


def texts(results):
    return [[(h.text, h.score, h.log_prob, h.token_scores, h.alignment) for h in r]
            for r in results]


def translate(model, **kw):
    with nmt.Translator(model, **OPTIONS, **kw) as t:
        return t.translate_batch(LINES)


def cli_lines(*models, weights):
    args = [TRANSLATE, "--device", "cpu", "-b", "3", "--max-len-b", "8", "--scores", "--quiet",
            "--weights", weights]
    for m in models:
        args += ["-m", m]
    out = subprocess.run(args, input="\n".join(LINES) + "\n", capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return [(text, float(score)) for score, text in
            (row.split("\t", 1) for row in out.stdout.split("\n")[:-1])]


def refused(exc_type, text, model, **kw):
    try:
        translate(model, **kw)
    except exc_type as e:
        assert text in str(e), (text, str(e))
        return
    raise AssertionError("accepted: %r %r" % (model, kw))


def main():
    if not all(os.path.exists(p) for p in (LIBRARY, A, B)):
        print("libnmt or the test models not built: skipped")
        return 77
    alone_a = translate(A)
    assert texts(translate([A, A])) == texts(alone_a), "[A, A] differs from A"
    assert texts(translate([A, B], weights=[1, 0])) == texts(alone_a), "[A, B] at (1, 0)"
    got = translate([A, B], weights=[0.3, 0.9])
    want = cli_lines(A, B, weights="0.3,0.9")
    for r, (text, score) in zip(got, want):
        h = r.hypotheses[0]
        assert h.text == text and abs(h.score - score) <= 1e-6 * (1 + abs(score)), (h, text)
    assert texts(got) != texts(alone_a) and texts(got) != texts(translate(B)), \
        "[A, B] translates as a member"
    models = [nmt.Model(A, library=LIBRARY), nmt.Model(B, library=LIBRARY)]
    ensemble = nmt.Ensemble(models, weights=[0.3, 0.9])
    with nmt.Translator(ensemble, **OPTIONS) as t:
        assert t.model is ensemble, t.model
        assert texts(t.translate_batch(LINES)) == texts(got), "nmt.Ensemble differs"
    many = LINES * 4
    with nmt.Translator([A, B], weights=[0.3, 0.9], **OPTIONS) as t:
        want_many = texts(t.translate_batch(many))
        assert texts(t.translate_iterable(many, read_batch_size=3)) == want_many, \
            "translate_iterable over [A, B] differs from translate_batch"
    with nmt.Translator([A, B], weights=[0.3, 0.9], workers=2, **OPTIONS) as t:
        assert texts(t.translate_iterable(many, read_batch_size=3)) == want_many, \
            "translate_iterable with workers=2 over [A, B] differs from translate_batch"
    with nmt.Service([A, B], weights=[0.3, 0.9], workers=2, **OPTIONS) as s:
        answers = [f.result(timeout=120) for f in [s.submit(line) for line in LINES]]
    assert texts(answers) == texts(got), "the service differs from the translator"
    for m in models:
        m.close()

    refused(ValueError, "3 weights for 2 models", [A, B], weights=[1, 2, 3])
    refused(nmt.ArgumentError, "weight 2 is -1", [A, B], weights=[1, -1])
    refused(nmt.Error, "repetition_penalty with an ensemble: not supported", [A, B],
            repetition_penalty=1.5)
    if os.path.exists(SHIPPED):
        refused(nmt.ArgumentError, "model 2's target vocabulary has 4778 tokens, model 1's 32",
                [A, SHIPPED])
    print("test_nmt_ensemble: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
