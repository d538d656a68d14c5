"""Export round trip: a tiny random network -> model.bin -> Python reader and C loader.

Checks that (a) pynmt.modelfile.read_model gives back exactly the exported
tensors (after fp16 rounding for --fp16) and the vocabularies, (b) the C
loader holds the same values: model-info --tensor-crcs against
modelfile.tensor_crcs, for fp32, fp16 and deflated files, and (c) the
network rebuilt from the file computes the same logits as the original.
No training. Exit 77 (skipped) when torch is not importable.

Environment: NMT_BINARY_DIR (for model-info; without it only (a) and (c)
run and the test says so), PYTHONPATH containing python/.
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

try:
    import torch
except ImportError:
    print("skipped: torch is not importable")
    sys.exit(77)

import numpy as np  # noqa: E402

from export.export import export  # noqa: E402
from pynmt import modelfile  # noqa: E402
from pynmt.network import NMTNetwork  # noqa: E402


def c_crcs(binary_dir, path):
    out = subprocess.run([os.path.join(binary_dir, "model-info"), "--tensor-crcs", path],
                         check=True, capture_output=True, text=True).stdout
    crcs = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1] in ("f32", "f16"):
            crcs[parts[0]] = (parts[1], parts[2], int(parts[3], 16))
    return crcs


def main():
    failures = 0
    torch.manual_seed(7)
    src_vocab = ["<pad>", "<unk>"] + [f"w{i}" for i in range(37)] + ["\uffed.", "über"]
    tgt_vocab = ["<pad>", "<unk>", "<s>", "</s>"] + [f"T{i}" for i in range(29)] + ["\uffed,"]
    binary_dir = os.environ.get("NMT_BINARY_DIR")
    for layers, dec_init in ((1, "encoder"), (2, "encoder"), (2, "zeros")):
        net = NMTNetwork(len(src_vocab), len(tgt_vocab), emb_size=12, hidden_size=10,
                         enc_layers=layers, dec_layers=layers, dropout=0.0, dec_init=dec_init)
        net.init_uniform(0.5, seed=layers)
        net.eval()
        for fp16, compress in ((False, False), (True, False), (True, True), (False, True)):
            what = f"layers={layers} dec_init={dec_init} fp16={fp16} compress={compress}"
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "model.bin")
                written = export(net, src_vocab, tgt_vocab, path, fp16=fp16, compress=compress)
                hp, sv, tv, back = modelfile.read_model(path)
                want = {k: (v.astype(np.float16).astype(np.float32) if fp16 else v)
                        for k, v in written.items()}
                # (a) the Python reader
                if sv != src_vocab or tv != tgt_vocab or set(back) != set(want) or any(
                        not np.array_equal(back[k], want[k]) for k in want):
                    print(f"FAIL {what}: read_model differs from the export")
                    failures += 1
                # (b) the C loader
                if binary_dir:
                    got = c_crcs(binary_dir, path)
                    py = modelfile.tensor_crcs(want)
                    dtype = "f16" if fp16 else "f32"
                    for name, crc in py.items():
                        c = got.get(name)
                        dims = "x".join(str(d) for d in want[name].shape)
                        if c is None or c[2] != crc or c[0] != dtype or c[1] != dims:
                            print(f"FAIL {what}: {name}: C {c}, Python ({dtype}, {dims}, {crc:08x})")
                            failures += 1
                    if set(got) != set(py):
                        print(f"FAIL {what}: C tensors {sorted(set(got) ^ set(py))} differ")
                        failures += 1
                # (c) the rebuilt network computes the same function
                net2 = NMTNetwork.from_hparams(hp)
                net2.from_file_tensors(back)
                net2.eval()
                words = torch.tensor([[5, 9, 1, 40], [3, 2, 0, 0]])
                cases = torch.tensor([[1, 0, 2, 3], [0, 0, 0, 0]])
                lengths = torch.tensor([4, 2])
                tgt_in = torch.tensor([[2, 7, 8], [2, 33, 1]])
                with torch.no_grad():
                    a = net(words, cases, lengths, tgt_in)
                    b = net2(words, cases, lengths, tgt_in)
                tol = 5e-2 if fp16 else 1e-6
                err = float((a - b).abs().max())
                if err > tol:
                    print(f"FAIL {what}: logits differ by {err:.3g} (tolerance {tol})")
                    failures += 1
    if not binary_dir:
        print("note: NMT_BINARY_DIR not set: the C loader comparison did not run")
    print("export round trip: " + ("ok" if failures == 0 else f"{failures} failures"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
