"""A model file that says tokenizer=pretokenized (docs/model-format.md, HPAR):
the test model re-written from Python with that key loads in the engine, and
translate's defaults take and give tokens there: its output on token input
equals the original model's with --input-format tokens --output-format
tokens. The original file (no key) still writes without it, byte for byte.
Exit 77 (skipped) when numpy is missing or the binaries are not built."""
import os
import subprocess
import sys
import tempfile

try:
    import numpy  # noqa: F401
except ImportError:
    print("skipped: numpy is not installed for", sys.executable)
    sys.exit(77)

from pynmt import modelfile, tokenizer

MODEL = os.environ.get("NMT_TEST_MODEL", "")
TRANSLATE = os.environ.get("NMT_TRANSLATE", "")


def translate(model, lines, *options):
    out = subprocess.run([TRANSLATE, "-m", model, "--device", "cpu", "-b", "2", "--max-len-b",
                          "6", *options], input="\n".join(lines) + "\n", capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def main():
    if not (os.path.exists(MODEL) and os.path.exists(TRANSLATE)):
        print("skipped: the test model or translate is not built")
        return 77
    hp, src, tgt, tensors = modelfile.read_model(MODEL)
    assert hp["tokenizer"] == "engine", hp
    raw = ["Ein Mann läuft im Park.", "zwei HUNDE, drei Katzen!", "ein hund"]
    tokens = [" ".join(t.text for t in tokenizer.tokenize(line)) for line in raw]
    with tempfile.TemporaryDirectory() as tmp:
        same = os.path.join(tmp, "same.bin")
        modelfile.write_model(same, hp, src, tgt, tensors)
        assert open(same, "rb").read() == open(MODEL, "rb").read(), \
            "re-writing the model without the key changed its bytes"
        pre = os.path.join(tmp, "pretokenized.bin")
        modelfile.write_model(pre, dict(hp, tokenizer="pretokenized"), src, tgt, tensors)
        assert modelfile.read_model(pre)[0]["tokenizer"] == "pretokenized"
        want = translate(MODEL, tokens, "--input-format", "tokens", "--output-format", "tokens")
        got = translate(pre, tokens)
        assert got == want, (got, want)
        # Explicit options still win over the file: raw input and text output.
        assert translate(pre, raw, "--input-format", "raw", "--output-format", "text") == \
            translate(MODEL, raw)
    print("test_pretokenized_model: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
