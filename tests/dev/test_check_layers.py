"""test_check_layers.py: dev/check-layers.py passes on the tree as it is and
fails, naming the file, on a planted upward include (kernels/ including a
decoder/ header), a same-floor include (text/ including a kernels/ header), a
lower floor including the public header, and the engine including a private
header of the network (model/cuda/cuda_model_impl.h) or of the GPU search."""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("NMT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SRC, "dev", "check-layers.py")
FOLDERS = ["core", "kernels", "text", "format", "shrink", "model", "decoder", "engine", "include"]


def run(root):
    out = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
    return out.returncode, out.stdout


def plant(root, rel, line):
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(line + "\n" + text)


def main():
    rc, out = run(SRC)
    assert rc == 0, f"the tree itself fails: {out}"
    cases = [("kernels/cpu/nhot.c", '#include "search.h"', "up a floor"),
             ("text/utf8.c", '#include "linear.h"', "same floor"),
             ("model/source_batch.c", '#include "nmt.h"', "only engine/ may"),
             ("engine/cpu_backend.c", '#include "cuda_model_impl.h"', "private to model/cuda/"),
             ("engine/translator.c", '#include "cuda_search_impl.h"', "private to decoder/cuda/")]
    for rel, line, expect in cases:
        with tempfile.TemporaryDirectory() as tmp:
            for folder in FOLDERS:
                shutil.copytree(os.path.join(SRC, folder), os.path.join(tmp, folder))
            plant(tmp, rel, line)
            rc, out = run(tmp)
            assert rc == 1, f"{rel} with {line}: rc {rc}, {out}"
            assert rel in out and expect in out, f"{rel} with {line}: {out}"
    print("test_check_layers: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
