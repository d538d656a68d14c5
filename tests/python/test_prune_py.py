"""python/export/prune.py and the SPRS section of pynmt.modelfile against the
C library (docs/model-format.md, "SPRS: sparse matrices"):
1. prune.py --sparsity 0.8 on the C test model: every matrix that may be
   sparse has exactly 80% zeros and is stored in SPRS (fp32, and fp16 with
   compressed DATA); model-info loads both with the CRCs Python reads back;
2. the same pruned matrices written dense by Python: `translate --device cpu
   --cpu-kernels reference --sparse on` (CSR is the reference's) on the sparse file prints the same bytes (scores included) as
   on the dense file, and so does --sparse off;
3. --tensors picks matrices, and one that may not be sparse is refused;
   Python's reader refuses damaged SPRS bytes.
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

from pynmt import modelfile, modelfile_sparse

import checks
from checks import check, model_info_crcs

SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", "")
PRUNE = os.path.join(SOURCE_DIR, "python", "export", "prune.py")
LINES = "ein mann spielt im park\nzwei hund\nein rot ball\nfrau im haus\nkind\n"


def crc_values(model_info, path):
    """{tensor name: CRC-32} as the C loader reads the file (dense or sparse)."""
    return {name: crc for name, (_, _, crc) in model_info_crcs(model_info, path).items()}


def translate(binary, model, *args):
    out = subprocess.run([binary, "-m", model, "--device", "cpu", "--cpu-kernels", "reference",
                          "--scores", "--beam", "3", *args], input=LINES.encode(),
                         capture_output=True)
    if out.returncode != 0:
        raise RuntimeError(f"translate {model} {args}: {out.stderr.decode().strip()}")
    return out.stdout


def run_prune(*args):
    return subprocess.run([sys.executable, PRUNE, *args], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


def main():
    binary_dir = os.environ.get("NMT_BINARY_DIR", "")
    test_model = os.environ.get("NMT_TEST_MODEL", "")
    model_info = os.path.join(binary_dir, "model-info")
    translate_bin = os.environ.get("NMT_TRANSLATE", os.path.join(binary_dir, "translate"))
    if not all(os.path.exists(p) for p in (model_info, test_model, translate_bin, PRUNE)):
        print("skipped: model-info, translate or the test model is not built")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        for extra in ([], ["--fp16", "--compress"]):
            out = os.path.join(tmp, "pruned.bin")
            p = run_prune(test_model, out, "--sparsity", "0.8", *extra)
            check(p.returncode == 0, f"prune.py {extra}: {p.stderr}")
            if p.returncode:
                continue
            hp, _, _, tensors, _ = modelfile.read_model_sections(out)
            sparse_names = [n for n, _ in modelfile.expected_tensors(hp)
                            if modelfile_sparse.sparse_allowed(n)]
            check(len(sparse_names) == 2 * hp["dec_layers"] + 3, f"{extra}: sparse names")
            for n in sparse_names:
                zeros = int(np.sum(tensors[n] == 0))
                check(zeros == round(0.8 * tensors[n].size), f"{extra}: {n}: {zeros} zeros")
            c_side = crc_values(model_info, out)
            py_side = modelfile.tensor_crcs(tensors)
            check(c_side == py_side, f"{extra}: model-info CRCs differ from Python's")
            info = subprocess.run([model_info, out], capture_output=True, text=True).stdout
            check(f"+ {len(sparse_names)} sparse" in info, f"{extra}: model-info says '{info}'")

        sparse_path = os.path.join(tmp, "pruned.bin")
        run_prune(test_model, sparse_path, "--sparsity", "0.8")
        hp, src, tgt, tensors, _ = modelfile.read_model_sections(sparse_path)
        ordered = {n: tensors[n] for n, _ in modelfile.expected_tensors(hp)}
        dense_path = os.path.join(tmp, "dense.bin")
        modelfile.write_model(dense_path, hp, src, tgt, ordered)
        check(crc_values(model_info, dense_path) == crc_values(model_info, sparse_path),
              "dense and sparse files differ in their tensors")
        dense_out = translate(translate_bin, dense_path)
        check(dense_out.count(b"\n") == 5, f"dense output: {dense_out!r}")
        check(translate(translate_bin, sparse_path, "--sparse", "on") == dense_out,
              "--sparse on differs from the dense file")
        check(translate(translate_bin, sparse_path, "--sparse", "off") == dense_out,
              "--sparse off differs from the dense file")
        p = subprocess.run([translate_bin, "-m", dense_path, "--device", "cpu", "--sparse", "on"],
                           input=b"kind\n", capture_output=True)
        check(p.returncode != 0 and b"stores no matrix sparse" in p.stderr,
              f"--sparse on with a dense model: {p.returncode} {p.stderr!r}")

        one = os.path.join(tmp, "one.bin")
        p = run_prune(test_model, one, "--sparsity", "0.5", "--tensors", "output.w")
        check(p.returncode == 0, f"--tensors output.w: {p.stderr}")
        info = subprocess.run([model_info, one], capture_output=True, text=True).stdout
        check("+ 1 sparse" in info, f"--tensors output.w: model-info says '{info}'")
        p = run_prune(test_model, one, "--sparsity", "0.5", "--tensors", "src_embedding")
        check(p.returncode == 1 and "cannot be stored sparse" in p.stderr,
              f"--tensors src_embedding: {p.returncode} {p.stderr}")

        # Python's reader: a column out of range and a trailing byte.
        good = modelfile_sparse.build({"output.w": np.eye(3, dtype=np.float32)}, 0,
                                      np.dtype("<f4"))
        check(modelfile_sparse.parse(good, modelfile.DTYPES, "x")["output.w"].tolist()
              == np.eye(3).tolist(), "parse(build(eye))")
        entry = 8 + 2 + len("output.w")
        arrays = int.from_bytes(good[entry + 26:entry + 34], "little")
        for what, bad in (("column 3", good[:arrays + 16] + (3).to_bytes(4, "little")
                           + good[arrays + 20:]),
                          ("trailing byte", good + b"\0")):
            try:
                modelfile_sparse.parse(bad, modelfile.DTYPES, "x")
                check(False, f"Python's reader accepted SPRS with {what}")
            except ValueError:
                pass
    if checks.failures:
        print(f"test_prune_py: {checks.failures} failures")
        return 1
    print("test_prune_py: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
