"""Section SPRS of the model file (docs/model-format.md, "SPRS: sparse
matrices"): matrices stored in CSR form (row offsets, column indices, values),
for pynmt.modelfile. numpy only; the bytes are the C writer's
(format/model_file_write.c) and the checks the C reader's
(format/model_file_sparse.c), which remains the authority.
"""

import struct

import numpy as np

TAG = "SPRS"
VERSION = 1
ALIGN = 64
MAX_DIM = 0x7FFFFFFF
MAX_NNZ = 0x7FFFFFFF
MAX_TENSORS = 4096
ENTRY_FIXED = 34  # dtype, reserved, rows, cols, nnz, offset


def _round_up(x):
    return (x + ALIGN - 1) // ALIGN * ALIGN


def sparse_allowed(name):
    """The matrices a file may store sparse: decoder LSTM weights, attention, output."""
    return ((name.startswith("decoder.") and name.endswith((".w_ih", ".w_hh")))
            or name in ("attention.w_a", "attention.w_c", "output.w"))


def build(tensors, code, np_dtype):
    """The section's bytes for {name: 2-D float32 array}, in dict order: the
    CSR of each array's nonzero values."""
    if not 1 <= len(tensors) <= MAX_TENSORS:
        raise ValueError(f"{len(tensors)} sparse tensors (1 to {MAX_TENSORS})")
    table = bytearray(struct.pack("<II", VERSION, len(tensors)))
    for name in tensors:
        table += bytes(2 + len(name.encode("ascii")) + ENTRY_FIXED)
    out, pos = bytearray(table), 8
    for name, array in tensors.items():
        a = np.ascontiguousarray(np.asarray(array, dtype=np.float32))
        if a.ndim != 2:
            raise ValueError(f"tensor '{name}': only matrices can be stored sparse")
        rows, cols = a.shape
        nz = a != 0
        nnz = int(nz.sum())
        if nnz > MAX_NNZ:
            raise ValueError(f"tensor '{name}': {nnz} nonzeros, over the limit")
        offsets = np.zeros(rows + 1, dtype="<u4")
        offsets[1:] = np.cumsum(nz.sum(axis=1))
        _, col_idx = np.nonzero(nz)  # row-major: columns increase within a row
        values = a[nz].astype(np_dtype)
        start = _round_up(len(out))
        out += bytes(start - len(out))
        out += offsets.tobytes() + col_idx.astype("<u4").tobytes() + values.tobytes()
        nb = name.encode("ascii")
        entry = struct.pack("<H", len(nb)) + nb + struct.pack("<BBQQQQ", code, 0, rows, cols,
                                                             nnz, start)
        out[pos:pos + len(entry)] = entry
        pos += len(entry)
    return bytes(out)


def parse(content, dtypes, where):
    """{name: dense float32 array} from the section's bytes; ValueError naming
    the tensor and the broken rule."""
    where = f"{where}: section SPRS"
    if len(content) < 8:
        raise ValueError(f"{where}: shorter than its 8-byte header")
    version, count = struct.unpack_from("<II", content, 0)
    if version != VERSION:
        raise ValueError(f"{where}: version {version} is not supported")
    if not 1 <= count <= MAX_TENSORS or count * (3 + ENTRY_FIXED) > len(content) - 8:
        raise ValueError(f"{where}: matrix count {count} impossible")
    entries, pos = [], 8
    try:
        for _ in range(count):
            (nlen,) = struct.unpack_from("<H", content, pos)
            name = content[pos + 2:pos + 2 + nlen].decode("ascii")
            if not 1 <= nlen <= 255 or len(name) != nlen or not all(
                    c.isalnum() or c in "._" for c in name):
                raise ValueError("bad name")
            pos += 2 + nlen
            entries.append((name,) + struct.unpack_from("<BBQQQQ", content, pos))
            pos += ENTRY_FIXED
    except (struct.error, UnicodeDecodeError) as e:
        raise ValueError(f"{where}: truncated or bad entry") from e
    out, prev_end = {}, pos
    for name, code, reserved, rows, cols, nnz, offset in entries:
        what = f"{where}: tensor '{name}'"
        if name in out:
            raise ValueError(f"{where}: tensor '{name}' appears twice")
        if code not in dtypes or reserved:
            raise ValueError(f"{what}: dtype {code} / reserved byte {reserved}")
        if not (1 <= rows <= MAX_DIM and 1 <= cols <= MAX_DIM) or nnz > min(rows * cols, MAX_NNZ):
            raise ValueError(f"{what}: shape [{rows}, {cols}] or nnz {nnz} out of range")
        size = 4 * (rows + 1) + 4 * nnz + dtypes[code].itemsize * nnz
        if offset != _round_up(prev_end) or offset + size > len(content):
            raise ValueError(f"{what}: arrays misplaced or past the section end")
        if any(content[prev_end:offset]):
            raise ValueError(f"{what}: non-zero padding")
        offsets = np.frombuffer(content, "<u4", rows + 1, offset).astype(np.int64)
        col_idx = np.frombuffer(content, "<u4", nnz, offset + 4 * (rows + 1)).astype(np.int64)
        values = np.frombuffer(content, dtypes[code], nnz, offset + 4 * (rows + 1 + nnz))
        if offsets[0] != 0 or offsets[-1] != nnz or np.any(np.diff(offsets) < 0):
            raise ValueError(f"{what}: row offsets must start at 0, never decrease, end at nnz")
        row_of = np.repeat(np.arange(rows), np.diff(offsets))
        if nnz and (col_idx.max() >= cols or np.any(
                (np.diff(col_idx) <= 0) & (row_of[1:] == row_of[:-1]))):
            raise ValueError(f"{what}: columns out of range or not strictly increasing in a row")
        dense = np.zeros((rows, cols), dtype=np.float32)
        dense[row_of, col_idx] = values.astype(np.float32)
        out[name] = dense
        prev_end = offset + size
    if prev_end != len(content):
        raise ValueError(f"{where}: bytes after the last matrix")
    return out
