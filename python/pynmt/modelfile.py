"""Reader and writer of the nmt model file format v1 (docs/model-format.md).

numpy only. The writer produces the same bytes as the C writer
(model/model_file_write.c) for the same input when uncompressed; the reader
makes the structural checks of the C reader (magic, CRCs, version, flags,
sizes, canonical placement, tensor table) and raises ValueError naming the
section and field. Tensor names and shapes against the hyper-parameters are
checked by expected_tensors() / check_tensors(); the C loader remains the
authority (it also checks the vocabularies' special tokens and UTF-8).
"""

import struct
import zlib

import numpy as np

from . import modelfile_sparse

MAGIC = b"\x89NMT\r\n\x1a\n"
VERSION = 1
FLAG_DEFLATE = 1
ALIGN = 64
PREAMBLE_SIZE = 32
ENTRY_SIZE = 32
MAX_SECTIONS = 64
MAX_TENSORS = 4096
MAX_DIM = 0x7FFFFFFF
MAX_UNPACKED = 1 << 34
SECTION_ORDER = ("HPAR", "VSRC", "VTGT", "TENS", "DATA")  # the required sections
SPM_TAG = "SPMP"  # the SentencePiece model, written after VTGT with tokenizer=sentencepiece
SPM_VERSION = 1
TOKENIZERS = ("engine", "pretokenized", "sentencepiece")
HPAR_KEYS = ("model", "emb_size", "hidden_size", "enc_layers", "dec_layers",
             "src_words", "tgt_vocab", "features", "dec_init")
OPTIONAL_HPAR_KEYS = {"tokenizer": "engine"}  # key: default (written only when not it)
INT_KEYS = HPAR_KEYS[1:7]
FEATURE_ROWS = {"word": 0, "case": 4}
SRC_SPECIALS = ("<pad>", "<unk>")
TGT_SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")
DTYPES = {0: np.dtype("<f4"), 1: np.dtype("<f2")}


def _round_up(x):
    return (x + ALIGN - 1) // ALIGN * ALIGN


def _features(value):
    if isinstance(value, str):
        return value.split(",")
    return list(value)


def src_rows(hparams):
    """Rows of src_embedding: the words, then each further feature kind's rows."""
    return int(hparams["src_words"]) + sum(FEATURE_ROWS[k] for k in _features(hparams["features"])[1:])


def expected_tensors(hparams):
    """[(name, shape)] the hyper-parameters call for, in canonical file order."""
    E, H = int(hparams["emb_size"]), int(hparams["hidden_size"])
    V = int(hparams["tgt_vocab"])
    out = [("src_embedding", (src_rows(hparams), E)), ("tgt_embedding", (V, E))]
    for layer in range(int(hparams["enc_layers"])):
        inp = E if layer == 0 else H
        for direction in ("fwd", "bwd"):
            p = f"encoder.{layer}.{direction}."
            out += [(p + "w_ih", (2 * H, inp)), (p + "w_hh", (2 * H, H // 2)),
                    (p + "b_ih", (2 * H,)), (p + "b_hh", (2 * H,))]
    for layer in range(int(hparams["dec_layers"])):
        inp = E + H if layer == 0 else H
        p = f"decoder.{layer}."
        out += [(p + "w_ih", (4 * H, inp)), (p + "w_hh", (4 * H, H)),
                (p + "b_ih", (4 * H,)), (p + "b_hh", (4 * H,))]
    out += [("attention.w_a", (H, H)), ("attention.w_c", (H, 2 * H)),
            ("output.w", (V, H)), ("output.b", (V,))]
    return out


def check_tensors(hparams, tensors):
    """Raises ValueError unless `tensors` holds exactly the expected names and shapes."""
    expected = dict(expected_tensors(hparams))
    for name, shape in expected.items():
        if name not in tensors:
            raise ValueError(f"missing tensor '{name}'")
        got = tuple(np.shape(tensors[name]))
        if len(got) != len(shape):
            raise ValueError(f"tensor '{name}': {len(got)} dimensions, expected {len(shape)}")
        for d, (g, e) in enumerate(zip(got, shape)):
            if g != e:
                raise ValueError(f"tensor '{name}': dims[{d}] = {g}, expected {e}")
    for name in tensors:
        if name not in expected:
            raise ValueError(f"unexpected tensor '{name}'")


def format_hparams(hparams):
    """Canonical HPAR text (the C writer's key order)."""
    hp = dict(hparams)
    hp.setdefault("model", "lstm-attn-v1")
    unknown = set(hp) - set(HPAR_KEYS) - set(OPTIONAL_HPAR_KEYS)
    if unknown:
        raise ValueError(f"unknown hyper-parameters {sorted(unknown)}")
    hp["features"] = ",".join(_features(hp["features"]))
    lines = []
    for key in HPAR_KEYS:
        if key not in hp:
            raise ValueError(f"missing hyper-parameter '{key}'")
        lines.append(f"{key}={int(hp[key]) if key in INT_KEYS else hp[key]}\n")
    for key, default in OPTIONAL_HPAR_KEYS.items():
        if hp.get(key, default) != default:  # the default is not written (older readers)
            lines.append(f"{key}={hp[key]}\n")
    text = "".join(lines)
    parse_hparams(text.encode("ascii"))  # refuse what the reader would refuse
    return text.encode("ascii")


def parse_hparams(data):
    """Parses HPAR bytes like model/model_hparams.c; returns a dict."""
    if data and not data.endswith(b"\n"):
        raise ValueError("section HPAR: the last line does not end with a newline")
    hp, seen = {}, {}
    for number, raw in enumerate(data.split(b"\n")[:-1] if data else [], start=1):
        if any(c < 0x21 or c > 0x7E for c in raw):
            raise ValueError(f"section HPAR: line {number}: only printable ASCII without spaces")
        line = raw.decode("ascii")
        if "=" not in line:
            raise ValueError(f"section HPAR: line {number}: expected key=value")
        key, value = line.split("=", 1)
        if key not in HPAR_KEYS and key not in OPTIONAL_HPAR_KEYS:
            raise ValueError(f"section HPAR: line {number}: unknown key '{key}'")
        if key in seen:
            raise ValueError(f"section HPAR: line {number}: duplicate key '{key}' (first on line {seen[key]})")
        seen[key] = number
        if key in INT_KEYS:
            if not value.isdigit() or len(value) > 9 or (len(value) > 1 and value[0] == "0"):
                raise ValueError(f"section HPAR: line {number}: {key}: '{value}' is not a decimal integer")
            v = int(value)
            lo = {"hidden_size": 2, "src_words": 2, "tgt_vocab": 4}.get(key, 1)
            hi = 8 if key.endswith("layers") else 1 << 20
            if not lo <= v <= hi:
                raise ValueError(f"section HPAR: line {number}: {key} = {v} out of range [{lo}, {hi}]")
            if key == "hidden_size" and v % 2:
                raise ValueError(f"section HPAR: line {number}: hidden_size = {v} must be even")
            hp[key] = v
        else:
            hp[key] = value
    for key in HPAR_KEYS:
        if key not in hp:
            raise ValueError(f"section HPAR: missing key '{key}'")
    if hp["model"] != "lstm-attn-v1":
        raise ValueError(f"section HPAR: line {seen['model']}: model '{hp['model']}' is not supported")
    kinds = hp["features"].split(",")
    if kinds[0] != "word" or len(set(kinds)) != len(kinds) or len(kinds) > 4 \
            or any(k not in FEATURE_ROWS for k in kinds):
        raise ValueError(f"section HPAR: line {seen['features']}: features '{hp['features']}': "
                         "known kinds word, case; the word first; no repeats")
    if hp["dec_init"] not in ("encoder", "zeros"):
        raise ValueError(f"section HPAR: line {seen['dec_init']}: dec_init: expected encoder or zeros")
    if hp["dec_init"] == "encoder" and hp["enc_layers"] != hp["dec_layers"]:
        raise ValueError(f"section HPAR: line {seen['dec_init']}: dec_init = encoder needs "
                         "enc_layers = dec_layers")
    if hp.setdefault("tokenizer", "engine") not in TOKENIZERS:
        raise ValueError(f"section HPAR: line {seen['tokenizer']}: tokenizer: expected engine, "
                         "pretokenized or sentencepiece")
    if hp["tokenizer"] == "sentencepiece" and kinds != ["word"]:
        raise ValueError(f"section HPAR: line {seen['tokenizer']}: tokenizer=sentencepiece needs "
                         "features=word (pieces are looked up as they are, without a case feature)")
    return hp


def _varint(blob, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(blob) or shift > 63:
            raise ValueError("truncated varint")
        byte = blob[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _proto_fields(blob):
    """(field number, wire type, value) of one protobuf message, top level only:
    a varint's value, or the bytes of a length-delimited or fixed-size field."""
    pos = 0
    while pos < len(blob):
        key, pos = _varint(blob, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(blob, pos)
        elif wire in (1, 2, 5):
            if wire == 2:
                size, pos = _varint(blob, pos)
            else:
                size = 8 if wire == 1 else 4
            if pos + size > len(blob):
                raise ValueError(f"field {field} runs past the end")
            value, pos = blob[pos:pos + size], pos + size
        else:
            raise ValueError(f"wire type {wire} of field {field} not expected")
        yield field, wire, value


def sentencepiece_pieces(blob):
    """The pieces of a serialized SentencePiece model (the bytes of its .model
    file: a ModelProto, whose field 1 lists the pieces, each with its text in
    field 1), in id order. Raises ValueError when the bytes are not one: the
    exporters' check before embedding a file the engine would refuse."""
    try:
        pieces = []
        for field, wire, value in _proto_fields(bytes(blob)):
            if field == 1 and wire == 2:
                text = [v for f, w, v in _proto_fields(value) if f == 1 and w == 2]
                if len(text) != 1:
                    raise ValueError(f"piece {len(pieces)} has no text")
                pieces.append(text[0].decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"not a SentencePiece model: {e}") from e
    if not pieces:
        raise ValueError("not a SentencePiece model: no pieces")
    return pieces


def sentencepiece_strangers(pieces, vocab, n_specials):
    """Entries of `vocab` past its special tokens that are not pieces of the
    model: the engine never gives them from raw text (a warning for exporters)."""
    known = set(pieces)
    return [e for e in vocab[n_specials:] if e not in known]


def load_sentencepiece(path):
    """(bytes, pieces) of a SentencePiece .model file; ValueError when it is not one."""
    with open(path, "rb") as f:
        blob = f.read()
    try:
        return blob, sentencepiece_pieces(blob)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from e


def _vocab_bytes(tokens, what):
    out = bytearray()
    for i, tok in enumerate(tokens):
        b = tok.encode("utf-8")
        if not b or b"\n" in b:
            raise ValueError(f"{what}: entry {i} is empty or contains a newline")
        out += b + b"\n"
    return bytes(out)


def write_model(path, hparams, src_vocab, tgt_vocab, tensors, dtype="f32", compress=False,
                sentencepiece=None, sparse=()):
    """Writes a model file. tensors: name -> array, written in dict order
    (use expected_tensors' order for the canonical layout). sentencepiece: the
    bytes of a SentencePiece .model file, written as section SPMP; the file
    then says tokenizer=sentencepiece (the default when it is given).
    sparse: names of matrices written to section SPRS as the CSR of their
    nonzero values instead of dense (modelfile_sparse.sparse_allowed says
    which the loader accepts)."""
    if dtype not in ("f32", "f16"):
        raise ValueError(f"dtype must be 'f32' or 'f16', not {dtype!r}")
    hp = dict(hparams)
    if sentencepiece is not None:
        hp.setdefault("tokenizer", "sentencepiece")
    if (hp.get("tokenizer") == "sentencepiece") != (sentencepiece is not None):
        raise ValueError("tokenizer=sentencepiece and a SentencePiece model go together")
    if sentencepiece is not None and not 1 <= len(sentencepiece) <= (1 << 28) - 8:
        raise ValueError(f"a SentencePiece model of {len(sentencepiece)} bytes")
    hp.setdefault("src_words", len(src_vocab))
    hp.setdefault("tgt_vocab", len(tgt_vocab))
    if int(hp["src_words"]) != len(src_vocab) or int(hp["tgt_vocab"]) != len(tgt_vocab):
        raise ValueError("vocabulary sizes disagree with src_words / tgt_vocab")
    hpar = format_hparams(hp)
    vsrc = _vocab_bytes(src_vocab, "source vocabulary")
    vtgt = _vocab_bytes(tgt_vocab, "target vocabulary")
    code = 0 if dtype == "f32" else 1
    np_dtype = DTYPES[code]
    sparse = set(sparse)
    if sparse - set(tensors):
        raise ValueError(f"sparse tensors {sorted(sparse - set(tensors))} are not among the tensors")
    sparse_tensors = {n: a for n, a in tensors.items() if n in sparse}
    tensors = {n: a for n, a in tensors.items() if n not in sparse}
    if not 1 <= len(tensors) <= MAX_TENSORS:
        raise ValueError(f"{len(tensors)} dense tensors (1 to {MAX_TENSORS})")
    tens = bytearray(struct.pack("<I", len(tensors)))
    data = bytearray()
    for name, array in tensors.items():
        a = np.ascontiguousarray(np.asarray(array, dtype=np.float32)).astype(np_dtype)
        nb = name.encode("ascii")
        if not 1 <= len(nb) <= 255 or not all(chr(c).isalnum() or chr(c) in "._" for c in nb):
            raise ValueError(f"tensor name '{name}' invalid ([A-Za-z0-9_.], 1 to 255 bytes)")
        if not 1 <= a.ndim <= 4 or any(not 1 <= d <= MAX_DIM for d in a.shape):
            raise ValueError(f"tensor '{name}': shape {a.shape} not allowed")
        data += bytes(_round_up(len(data)) - len(data))
        tens += struct.pack("<H", len(nb)) + nb + struct.pack("<BB", code, a.ndim)
        tens += struct.pack(f"<{a.ndim}Q", *a.shape)
        tens += struct.pack("<QQ", len(data), a.nbytes)
        data += a.tobytes()
    unpacked = len(data)
    stored_data = zlib.compress(bytes(data), 9) if compress else bytes(data)
    sections = [("HPAR", hpar), ("VSRC", vsrc), ("VTGT", vtgt)]
    if sentencepiece is not None:
        sections.append((SPM_TAG, struct.pack("<II", SPM_VERSION, len(sentencepiece))
                         + bytes(sentencepiece)))
    sections.append(("TENS", bytes(tens)))
    if sparse_tensors:
        sections.append((modelfile_sparse.TAG, modelfile_sparse.build(sparse_tensors, code, np_dtype)))
    sections.append(("DATA", stored_data))
    head_size = PREAMBLE_SIZE + len(sections) * ENTRY_SIZE + 8
    table, body, pos = bytearray(), bytearray(), head_size
    for tag, content in sections:
        offset = _round_up(pos)
        body += bytes(offset - pos) + content
        table += tag.encode("ascii") + struct.pack("<IQQQ", zlib.crc32(content), offset, len(content),
                                                   unpacked if tag == "DATA" else len(content))
        pos = offset + len(content)
    table += struct.pack("<II", zlib.crc32(bytes(table[:len(sections) * ENTRY_SIZE])), 0)
    pre = MAGIC + struct.pack("<IIQI", VERSION, FLAG_DEFLATE if compress else 0, pos, len(sections))
    pre += struct.pack("<I", zlib.crc32(pre))
    blob = pre + bytes(table) + bytes(body)
    assert len(blob) == pos
    tmp = str(path) + ".tmp"
    with open(tmp, "wb") as f:
        f.write(blob)
    import os
    os.replace(tmp, path)


def _u(fmt, blob, offset):
    return struct.unpack_from(fmt, blob, offset)


def write_model_checked(path, hparams, src_vocab, tgt_vocab, tensors, fp16=False,
                        compress=False, sentencepiece=None, sparse=()):
    """write_model, then reads the file back: the vocabularies, the
    SentencePiece model and every tensor must come back exactly (fp16: the
    values rounded to fp16). RuntimeError otherwise. The exporters' last step
    (python/export). sparse: as write_model's."""
    write_model(path, hparams, src_vocab, tgt_vocab, tensors, dtype="f16" if fp16 else "f32",
                compress=compress, sentencepiece=sentencepiece, sparse=sparse)
    _, sv, tv, back, spm = read_model_sections(path)
    if sv != list(src_vocab) or tv != list(tgt_vocab):
        raise RuntimeError(f"{path}: vocabularies differ after reading back")
    if spm != (None if sentencepiece is None else bytes(sentencepiece)):
        raise RuntimeError(f"{path}: the SentencePiece model differs after reading back")
    for name, a in tensors.items():
        want = a.astype(np.float16).astype(np.float32) if fp16 else a
        if not np.array_equal(back[name], want):
            raise RuntimeError(f"{path}: tensor {name} differs after reading back")


def read_model(path):
    """Returns (hparams dict, src_vocab, tgt_vocab, {name: float32 array})."""
    return read_model_sections(path)[:4]


def read_sentencepiece(path):
    """The SentencePiece model's bytes (section SPMP), or None when the file has none."""
    return read_model_sections(path)[4]


def read_model_sections(path):
    """read_model's four, then the SentencePiece model's bytes or None."""
    with open(path, "rb") as f:
        blob = f.read()
    where = str(path)
    if blob[:8] != MAGIC:
        raise ValueError(f"{where}: not a model file (bad magic)")
    if len(blob) < PREAMBLE_SIZE:
        raise ValueError(f"{where}: truncated preamble")
    version, flags, size, n_sections, crc = _u("<IIQII", blob, 8)
    if zlib.crc32(blob[:28]) != crc:
        raise ValueError(f"{where}: preamble CRC mismatch")
    if version != VERSION:
        raise ValueError(f"{where}: format version {version} is not supported")
    if flags & ~FLAG_DEFLATE:
        raise ValueError(f"{where}: unknown flags {flags:#x}")
    if size != len(blob):
        raise ValueError(f"{where}: file is {len(blob)} bytes but its preamble says {size}")
    if not len(SECTION_ORDER) <= n_sections <= MAX_SECTIONS:
        raise ValueError(f"{where}: {n_sections} sections")
    table_end = PREAMBLE_SIZE + n_sections * ENTRY_SIZE + 8
    if table_end > len(blob):
        raise ValueError(f"{where}: truncated section table")
    table = blob[PREAMBLE_SIZE:PREAMBLE_SIZE + n_sections * ENTRY_SIZE]
    table_crc, reserved = _u("<II", blob, PREAMBLE_SIZE + n_sections * ENTRY_SIZE)
    if zlib.crc32(table) != table_crc or reserved:
        raise ValueError(f"{where}: section table CRC mismatch")
    sections, prev_end = {}, table_end
    for i in range(n_sections):
        raw_tag = table[i * ENTRY_SIZE:i * ENTRY_SIZE + 4]
        if not raw_tag.isalnum() or not raw_tag.isascii():
            raise ValueError(f"{where}: section {i}: bad tag {raw_tag!r}")
        tag = raw_tag.decode("ascii")
        crc, offset, stored, unpacked = _u("<IQQQ", table, i * ENTRY_SIZE + 4)
        if tag in sections:
            raise ValueError(f"{where}: section {tag} appears twice")
        if tag not in SECTION_ORDER + (SPM_TAG, modelfile_sparse.TAG) and tag[0].isupper():
            raise ValueError(f"{where}: unknown critical section {tag}")
        if offset != _round_up(prev_end) or offset + stored > len(blob):
            raise ValueError(f"{where}: section {tag}: bad placement")
        if any(blob[prev_end:offset]):
            raise ValueError(f"{where}: non-zero padding before section {tag}")
        content = blob[offset:offset + stored]
        if zlib.crc32(content) != crc:
            raise ValueError(f"{where}: section {tag}: CRC mismatch")
        if tag != "DATA" and unpacked != stored:
            raise ValueError(f"{where}: section {tag}: only DATA may be compressed")
        sections[tag] = (content, unpacked)
        prev_end = offset + stored
    if prev_end != len(blob):
        raise ValueError(f"{where}: bytes after the last section")
    for tag in SECTION_ORDER:
        if tag not in sections:
            raise ValueError(f"{where}: missing section {tag}")
    hp = parse_hparams(sections["HPAR"][0])
    spm = None
    if (hp["tokenizer"] == "sentencepiece") != (SPM_TAG in sections):
        raise ValueError(f"{where}: section SPMP goes with tokenizer=sentencepiece, and only with it")
    if SPM_TAG in sections:
        content = sections[SPM_TAG][0]
        if len(content) < 8:
            raise ValueError(f"{where}: section SPMP: shorter than its 8-byte header")
        version, size = _u("<II", content, 0)
        if version != SPM_VERSION:
            raise ValueError(f"{where}: section SPMP: version {version} is not supported")
        if size == 0 or size != len(content) - 8:
            raise ValueError(f"{where}: section SPMP: the header says {size} model bytes, the "
                             f"section holds {len(content) - 8}")
        spm = content[8:]
    vocabs = []
    for tag, key in (("VSRC", "src_words"), ("VTGT", "tgt_vocab")):
        text = sections[tag][0]
        if text and not text.endswith(b"\n"):
            raise ValueError(f"{where}: section {tag}: the last token does not end with a newline")
        tokens = [t.decode("utf-8") for t in text.split(b"\n")[:-1]] if text else []
        if len(tokens) != hp[key]:
            raise ValueError(f"{where}: section {tag}: {len(tokens)} tokens, but HPAR says {key} = {hp[key]}")
        vocabs.append(tokens)
    data, unpacked = sections["DATA"]
    if flags & FLAG_DEFLATE:
        if unpacked > MAX_UNPACKED or unpacked // 1032 > len(data) + 64:
            raise ValueError(f"{where}: section DATA: impossible unpacked size {unpacked}")
        d = zlib.decompressobj()
        data = d.decompress(data, unpacked + 1)
        if len(data) != unpacked or not d.eof or d.unused_data or d.unconsumed_tail:
            raise ValueError(f"{where}: section DATA: inflated to {len(data)} bytes, expected {unpacked}")
    tens = sections["TENS"][0]
    if len(tens) < 4:
        raise ValueError(f"{where}: section TENS: too short")
    (count,) = _u("<I", tens, 0)
    if not 1 <= count <= MAX_TENSORS or count * 29 > len(tens) - 4:
        raise ValueError(f"{where}: section TENS: tensor count {count} impossible")
    pos, tensors, extents, end, need = 4, {}, [], 0, 0
    try:
        for _ in range(count):
            (nlen,) = _u("<H", tens, pos)
            name = tens[pos + 2:pos + 2 + nlen].decode("ascii")
            if not 1 <= nlen <= 255 or len(name) != nlen:
                raise ValueError("bad name length")
            pos += 2 + nlen
            code, ndim = _u("<BB", tens, pos)
            pos += 2
            if code not in DTYPES or not 1 <= ndim <= 4:
                raise ValueError(f"tensor '{name}': dtype {code} / ndim {ndim}")
            dims = _u(f"<{ndim}Q", tens, pos)
            offset, nbytes = _u("<QQ", tens, pos + 8 * ndim)
            pos += 8 * ndim + 16
            if any(not 1 <= d <= MAX_DIM for d in dims):
                raise ValueError(f"tensor '{name}': dims {dims} out of range")
            if nbytes != int(np.prod(dims, dtype=object)) * DTYPES[code].itemsize or offset % ALIGN:
                raise ValueError(f"tensor '{name}': size or offset wrong")
            if offset + nbytes > unpacked:
                raise ValueError(f"tensor '{name}': outside DATA")
            if name in tensors:
                raise ValueError(f"tensor '{name}' appears twice")
            a = np.frombuffer(data, dtype=DTYPES[code], count=nbytes // DTYPES[code].itemsize, offset=offset)
            tensors[name] = a.reshape(dims).astype(np.float32)
            extents.append((offset, nbytes, name))
            end = max(end, offset + nbytes)
            need += _round_up(nbytes)
    except struct.error as e:
        raise ValueError(f"{where}: section TENS: truncated entry") from e
    except ValueError as e:
        raise ValueError(f"{where}: section TENS: {e}") from e
    if pos != len(tens):
        raise ValueError(f"{where}: section TENS: bytes after the last tensor")
    extents.sort()
    for (o1, n1, a), (o2, _, b) in zip(extents, extents[1:]):
        if o2 < o1 + n1:
            raise ValueError(f"{where}: section TENS: tensors '{a}' and '{b}' overlap")
    if unpacked != end or unpacked > need:
        raise ValueError(f"{where}: section DATA: {unpacked} bytes, tensors end at {end}")
    if modelfile_sparse.TAG in sections:
        # Sparse matrices come back dense (zeros elsewhere), after the dense ones.
        for name, dense in modelfile_sparse.parse(sections[modelfile_sparse.TAG][0], DTYPES,
                                                  where).items():
            if name in tensors:
                raise ValueError(f"{where}: tensor '{name}' is stored both dense and sparse")
            tensors[name] = dense
    return hp, vocabs[0], vocabs[1], tensors, spm


def tensor_crcs(tensors):
    """{name: CRC-32 of the float32 little-endian bytes}, as model-info --tensor-crcs prints."""
    return {name: zlib.crc32(np.ascontiguousarray(a, dtype="<f4").tobytes()) for name, a in tensors.items()}
