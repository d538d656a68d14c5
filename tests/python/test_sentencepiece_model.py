"""A model file that says tokenizer=sentencepiece, written from Python
(docs/model-format.md, section SPMP): pynmt.modelfile embeds
tests/data/sentencepiece-tiny.model and reads it back byte for byte, refuses
what the C reader refuses (the key without the model, the model without the
key, the case feature), lists a .model's pieces without the sentencepiece
module and refuses bytes that are not one; the engine loads the Python file
and translates raw text as it translates the text's pieces given as tokens.
In a build without SentencePiece, translate must refuse the file (exit 3)
saying what to install. The exporters' --sentencepiece refuses a file that
is not a SentencePiece model and --tokenizer with it, before any checkpoint
is read (their conversions need torch / OpenNMT-py: the export tests).
Exit 77 (skipped) when numpy is missing or translate is not built."""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("skipped: numpy is not installed for", sys.executable)
    sys.exit(77)

from pynmt import modelfile

SOURCE = os.environ.get("NMT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SPM = os.path.join(SOURCE, "tests", "data", "sentencepiece-tiny.model")
TRANSLATE = os.environ.get("NMT_TRANSLATE", "")
LINE = "the dog runs in the park"
LINE_PIECES = "▁the ▁dog ▁run s ▁in ▁the ▁park"  # spm_encode --model SPM <<< LINE


def refused(call, needle):
    try:
        call()
    except ValueError as e:
        assert needle in str(e), (needle, str(e))
        return
    raise AssertionError(f"not refused: expected {needle!r}")


def translate(model, line, *options):
    return subprocess.run([TRANSLATE, "-m", model, "--device", "cpu", "-b", "3", "--quiet",
                           *options], input=line + "\n", capture_output=True, text=True,
                          timeout=300)


def main():
    if not os.path.exists(TRANSLATE):
        print("skipped: translate is not built")
        return 77
    blob, pieces = modelfile.load_sentencepiece(SPM)
    assert len(pieces) == 64 and pieces[:5] == ["<pad>", "<unk>", "<s>", "</s>", "he"], pieces[:5]
    assert set(LINE_PIECES.split()) <= set(pieces)
    assert modelfile.sentencepiece_strangers(pieces, ["<pad>", "<unk>", "▁the", "Haus"], 2) == \
        ["Haus"]
    refused(lambda: modelfile.sentencepiece_pieces(blob[:len(blob) // 2]), "not a SentencePiece model")
    refused(lambda: modelfile.sentencepiece_pieces(b"\x0a\x05hello not a model"),
            "not a SentencePiece model")

    hp = {"emb_size": 8, "hidden_size": 16, "enc_layers": 1, "dec_layers": 1,
          "features": "word", "dec_init": "encoder"}
    full = dict(hp, src_words=64, tgt_vocab=64)
    rng = np.random.default_rng(7)
    tensors = {name: rng.uniform(-1.5, 1.5, shape).astype(np.float32)
               for name, shape in modelfile.expected_tensors(full)}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "spm.bin")
        modelfile.write_model_checked(path, hp, pieces, pieces, tensors, sentencepiece=blob)
        assert modelfile.read_model(path)[0]["tokenizer"] == "sentencepiece"
        assert modelfile.read_sentencepiece(path) == blob
        data = open(path, "rb").read()
        # Section SPMP: version 1, the model's size, the model, 64-byte aligned.
        at = data.index(b"\x01\x00\x00\x00" + len(blob).to_bytes(4, "little") + blob)
        assert at % 64 == 0 and data.index(b"SPMP") == 32 + 3 * 32, at
        # What the reader refuses, the writer refuses.
        refused(lambda: modelfile.write_model(path + "2", dict(hp, tokenizer="sentencepiece"),
                                              pieces, pieces, tensors),
                "go together")
        refused(lambda: modelfile.write_model(path + "2", dict(hp, tokenizer="engine"), pieces,
                                              pieces, tensors, sentencepiece=blob),
                "go together")
        cased = dict(hp, features="word,case")
        cased_tensors = {n: rng.uniform(-1, 1, s).astype(np.float32)
                         for n, s in modelfile.expected_tensors(dict(cased, src_words=64,
                                                                     tgt_vocab=64))}
        refused(lambda: modelfile.write_model(path + "2", cased, pieces, pieces, cased_tensors,
                                              sentencepiece=blob),
                "tokenizer=sentencepiece needs features=word")

        raw = translate(path, LINE)
        if raw.returncode == 3 and "no SentencePiece support" in raw.stderr:
            assert "libsentencepiece-dev" in raw.stderr, raw.stderr
            print("test_sentencepiece_model: translate built without SentencePiece refuses "
                  "the file as it should")
        else:
            assert raw.returncode == 0, raw.stderr
            as_tokens = translate(path, LINE_PIECES, "--input-format", "tokens")
            assert as_tokens.returncode == 0 and as_tokens.stdout == raw.stdout, \
                (raw.stdout, as_tokens.stdout)
            out_pieces = translate(path, LINE, "--output-format", "tokens").stdout.split()
            assert out_pieces and set(out_pieces) <= set(pieces), out_pieces
            assert "▁" not in raw.stdout, raw.stdout

        # The exporters check --sentencepiece before reading a checkpoint.
        junk = os.path.join(tmp, "junk.model")
        with open(junk, "wb") as f:
            f.write(b"not a model at all")
        convert = os.path.join(SOURCE, "python", "export", "onmt_convert.py")
        for extra, needle in (([], "not a SentencePiece model"),
                              (["--tokenizer", "engine"], "leave out --tokenizer")):
            run = subprocess.run([sys.executable, convert, os.path.join(tmp, "none.pt"), "-o",
                                  os.path.join(tmp, "out.bin"), "--sentencepiece",
                                  junk if not extra else SPM, *extra],
                                 capture_output=True, text=True, timeout=60)
            assert run.returncode == 2 and needle in run.stderr, (run.returncode, run.stderr)
    print("test_sentencepiece_model: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
