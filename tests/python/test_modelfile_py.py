"""python/pynmt/modelfile.py against the C library, both ways.

1. Python reads the C test model (NMT_TEST_MODEL) and its tensor CRCs equal
   model-info's; re-writing it from Python gives the same bytes.
2. Python writes models (fp32, fp16, compressed, dec_init=zeros) that
   model-info loads, with equal CRCs and the same storage type.
3. Python's reader refuses a corrupted file.
Exit 77 (skipped) when numpy is missing or the binaries are not built.
"""
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

import checks
from checks import check, model_info_crcs



def compare(model_info, path, tensors, dtype, what):
    c_side = model_info_crcs(model_info, path)
    py_side = modelfile.tensor_crcs(tensors)
    check(list(c_side) == list(py_side), f"{what}: tensor names/order differ")
    for name, crc in py_side.items():
        got = c_side.get(name)
        check(got is not None and got[2] == crc, f"{what}: {name}: crc {got} vs {crc:08x}")
        check(got is not None and got[1] == tensors[name].shape, f"{what}: {name}: shape")
        check(got is not None and got[0] == dtype, f"{what}: {name}: dtype {got and got[0]}")


def main():
    binary_dir = os.environ.get("NMT_BINARY_DIR", "")
    test_model = os.environ.get("NMT_TEST_MODEL", "")
    model_info = os.path.join(binary_dir, "model-info")
    if not (os.path.exists(model_info) and os.path.exists(test_model)):
        print("skipped: model-info or the test model is not built")
        return 77

    # 1. The C model through Python.
    hp, src, tgt, tensors = modelfile.read_model(test_model)
    check(hp["hidden_size"] == 32 and hp["features"] == "word,case", f"hparams {hp}")
    check(src[:2] == ["<pad>", "<unk>"] and tgt[:4] == ["<pad>", "<unk>", "<s>", "</s>"], "specials")
    modelfile.check_tensors(hp, tensors)
    compare(model_info, test_model, tensors, "f32", "C test model")

    with tempfile.TemporaryDirectory() as tmp:
        again = os.path.join(tmp, "again.bin")
        modelfile.write_model(again, hp, src, tgt, tensors)
        with open(again, "rb") as a, open(test_model, "rb") as b:
            check(a.read() == b.read(), "Python re-write of the C test model is not byte-identical")

        # 2. Python-written models through C.
        rng = np.random.default_rng(7)
        small = {"emb_size": 6, "hidden_size": 8, "enc_layers": 2, "dec_layers": 1,
                 "features": "word", "dec_init": "zeros"}
        svoc = ["<pad>", "<unk>", "haus", "\u00e4pfel", "\uffed."]
        tvoc = ["<pad>", "<unk>", "<s>", "</s>", "house", "apples", "\uffed."]
        small["src_words"], small["tgt_vocab"] = len(svoc), len(tvoc)
        made = {name: rng.uniform(-1, 1, shape).astype(np.float32)
                for name, shape in modelfile.expected_tensors(small)}
        made["output.b"][0] = 1e-6  # a value fp16 stores as a subnormal
        cases = [("f32", False, hp, src, tgt, tensors), ("f16", False, hp, src, tgt, tensors),
                 ("f32", True, hp, src, tgt, tensors), ("f16", True, small, svoc, tvoc, made),
                 ("f32", False, small, svoc, tvoc, made)]
        for i, (dtype, compress, h, s, t, ts) in enumerate(cases):
            what = f"case {i} ({dtype}, compress={compress})"
            path = os.path.join(tmp, f"case{i}.bin")
            modelfile.write_model(path, h, s, t, ts, dtype=dtype, compress=compress)
            h2, s2, t2, back = modelfile.read_model(path)
            check(s2 == s and t2 == t, f"{what}: vocabularies")
            for k in ("emb_size", "hidden_size", "enc_layers", "dec_layers", "dec_init"):
                check(h2[k] == h[k], f"{what}: hparam {k}")
            for name in ts:
                want = ts[name].astype(np.float16).astype(np.float32) if dtype == "f16" else ts[name]
                check(np.array_equal(back[name], want), f"{what}: {name} values")
            compare(model_info, path, back, dtype, what)

        # 3. Corruption is refused by Python (and by C).
        path = os.path.join(tmp, "case0.bin")
        blob = bytearray(open(path, "rb").read())
        blob[len(blob) // 2] ^= 0x40
        bad = os.path.join(tmp, "bad.bin")
        open(bad, "wb").write(blob)
        try:
            modelfile.read_model(bad)
            check(False, "Python read a corrupted file")
        except ValueError as e:
            check("CRC" in str(e), f"unexpected message {e}")
        out = subprocess.run([model_info, bad], capture_output=True, text=True)
        check(out.returncode == 1 and "CRC mismatch" in out.stderr, f"C on corrupt: {out.stderr}")

    print(f"test_modelfile_py: {'FAILED' if checks.failures else 'passed'}")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
