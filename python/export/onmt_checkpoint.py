"""onmt_checkpoint.py: reads an OpenNMT-py .pt checkpoint without torch and
without running anything it holds (python/export/onmt_convert.py uses it).

torch.load(weights_only=True) refuses the argparse.Namespace every
OpenNMT-py checkpoint carries, and Debian's torch 1.13 ignores a custom
unpickler when weights_only is off; so the zip archive is read here and its
pickle is unpickled by an allow-list (OrderedDict, Namespace, set, frozenset,
storages and tensors), tensors becoming bounds-checked numpy arrays. Anything
else is refused (Refused), and nothing in the file is executed."""
from __future__ import annotations

import io
import pickle
import zipfile

import numpy as np

# Globals the loader builds, besides torch's storage types (STORAGE_DTYPES) and its
# tensor and parameter rebuilders, which it replaces with numpy equivalents.
ALLOWED_GLOBALS = {
    ("collections", "OrderedDict"),
    ("argparse", "Namespace"),
    ("builtins", "set"), ("__builtin__", "set"),
    ("builtins", "frozenset"), ("__builtin__", "frozenset"),
}
STORAGE_DTYPES = {
    "FloatStorage": "<f4", "HalfStorage": "<f2", "BFloat16Storage": "bf16",
    "DoubleStorage": "<f8", "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2",
    "CharStorage": "i1", "ByteStorage": "u1", "BoolStorage": "?",
}


class Refused(Exception):
    """The checkpoint holds something the engine cannot represent exactly."""


# ---- loading ---------------------------------------------------------------------------

class _StorageType:
    def __init__(self, name):
        self.name = name


def _rebuild_tensor(storage, offset, size, stride, *_):
    """torch._utils._rebuild_tensor_v2 on a numpy storage, bounds-checked."""
    size, stride = tuple(int(x) for x in size), tuple(int(x) for x in stride)
    if (not isinstance(storage, np.ndarray) or len(size) != len(stride) or offset < 0
            or any(d < 0 for d in size) or any(s < 0 for s in stride)):
        raise pickle.UnpicklingError("malformed tensor")
    if 0 in size:
        return np.zeros(size, storage.dtype)
    last = offset + sum((d - 1) * s for d, s in zip(size, stride))
    if last >= storage.size:
        raise pickle.UnpicklingError(f"tensor reaches element {last} of a storage of "
                                     f"{storage.size}")
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape=size,
                                           strides=[s * storage.itemsize for s in stride])
    return np.array(view)


def _rebuild_parameter(data, *_):
    return data


class _RestrictedUnpickler(pickle.Unpickler):
    """Builds only ALLOWED_GLOBALS, storages (numpy, from the zip) and tensors (numpy)."""

    def __init__(self, file, archive, prefix):
        super().__init__(file, encoding="utf-8")
        self.archive, self.prefix, self.storages = archive, prefix, {}

    def find_class(self, module, name):
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(name)
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if (module, name) == ("torch._utils", "_rebuild_parameter"):
            return _rebuild_parameter
        if (module, name) in ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"refusing to load the global {module}.{name}: only an OpenNMT-py 3.x "
            "checkpoint's tensors, dicts, lists, sets and options (argparse.Namespace) "
            "are read (OpenNMT-py 2.x checkpoints hold torchtext objects: load and save "
            "them with OpenNMT-py 3.x first)")

    def persistent_load(self, pid):
        if (not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage"
                or not isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r:.80}")
        _, stype, key, _location, numel = pid
        key = str(key)
        if key not in self.storages:
            try:
                raw = self.archive.read(f"{self.prefix}/data/{key}")
            except KeyError:
                raise pickle.UnpicklingError(f"storage {key} is missing") from None
            code = STORAGE_DTYPES[stype.name]
            if code == "bf16":  # widened exactly: bfloat16 is the top half of a float32
                a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
            else:
                a = np.frombuffer(raw, code)
            if a.size != numel:
                raise pickle.UnpicklingError(f"storage {key}: {a.size} elements, "
                                             f"{numel} announced")
            self.storages[key] = a.astype(np.float32) if a.dtype.kind == "f" else a.copy()
        return self.storages[key]


def load_checkpoint(path: str) -> dict:
    """Reads a torch.save zip file, building nothing outside the allow-list.

    Tensors come back as numpy arrays (floats as float32: fp16 and bf16 widen
    exactly). torch is not needed: torch.load(weights_only=True) refuses the
    argparse.Namespace every OpenNMT-py checkpoint holds, and torch 1.13's
    torch.load ignores a restricted pickle_module unless weights_only is set."""
    with open(path, "rb") as fh:  # a missing file is an OSError, not "not a zip file"
        is_zip = zipfile.is_zipfile(fh)
    if not is_zip:
        raise Refused("not a torch.save zip file (OpenNMT-py 3.x writes one; the legacy "
                      "format of torch < 1.6 is not read)")
    with zipfile.ZipFile(path) as archive:
        pkls = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith("/data.pkl")]
        if len(pkls) != 1:
            raise Refused("not a torch.save zip file (no single */data.pkl)")
        prefix = pkls[0].split("/")[0]
        order = f"{prefix}/byteorder"
        if order in archive.namelist() and archive.read(order) != b"little":
            raise Refused(f"byte order {archive.read(order)!r}: only little-endian files")
        with archive.open(pkls[0]) as f:
            ckpt = _RestrictedUnpickler(io.BytesIO(f.read()), archive, prefix).load()
    if not isinstance(ckpt, dict):
        raise Refused(f"not an OpenNMT-py checkpoint (a {type(ckpt).__name__}, not a dict)")
    missing = [k for k in ("model", "generator", "vocab", "opt") if k not in ckpt]
    if missing:
        raise Refused(f"not an OpenNMT-py 3.x checkpoint: no {', '.join(missing)} "
                      f"(keys: {', '.join(map(str, ckpt))})")
    if not ckpt["model"]:
        raise Refused(f"save_format {_opt(ckpt['opt'], 'save_format', '?')}: the checkpoint "
                      "holds no weights (train with -save_format pytorch)")
    return ckpt


# ---- checks of the training options -------------------------------------------------------
