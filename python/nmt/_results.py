"""Statuses, exceptions and the Python values copied out of the C results."""

import dataclasses
import enum

from . import _capi


class Status(enum.IntEnum):
    """nmt_status (core/nmt_status.h)."""
    OK = _capi.STATUS_OK
    ERROR_IO = _capi.STATUS_ERROR_IO
    ERROR_FORMAT = _capi.STATUS_ERROR_FORMAT
    ERROR_INPUT = _capi.STATUS_ERROR_INPUT
    ERROR_ARGUMENT = _capi.STATUS_ERROR_ARGUMENT
    ERROR_MEMORY = _capi.STATUS_ERROR_MEMORY
    ERROR_CUDA = _capi.STATUS_ERROR_CUDA
    ERROR_UNSUPPORTED = _capi.STATUS_ERROR_UNSUPPORTED
    ERROR_INTERNAL = _capi.STATUS_ERROR_INTERNAL
    BUSY = _capi.STATUS_BUSY
    CANCELLED = _capi.STATUS_CANCELLED
    DEADLINE = _capi.STATUS_DEADLINE
    CLOSED = _capi.STATUS_CLOSED


def status_of(value):
    try:
        return Status(value)
    except ValueError:  # a newer library's status: keep the number
        return value


class Error(Exception):
    """A failed call of the library: .status (a Status) and .message (the
    library's message, naming the file, field or option)."""

    def __init__(self, status, message):
        self.status = status_of(status)
        self.message = message
        super().__init__(message)


class ArgumentError(Error, ValueError):
    """NMT_STATUS_ERROR_ARGUMENT: an option out of range."""


class Busy(Error):
    """NMT_STATUS_BUSY: the service's queue is full; retry later."""


class Closed(Error):
    """NMT_STATUS_CLOSED: the service is shut down (or closed)."""


_ERRORS = {Status.ERROR_ARGUMENT: ArgumentError, Status.BUSY: Busy, Status.CLOSED: Closed}


def error_from(status, message):
    return _ERRORS.get(status, Error)(status, message)


def raise_error(err):
    """Raises the exception for a filled nmt_error."""
    raise error_from(err.status, err.message.decode("utf-8", "replace"))


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """One translation of a line: text, score (log_prob / length^alpha, the
    length counting EOS), log_prob (EOS included), n_tokens (EOS excluded),
    alignment (for each target token, the source token, 0-based as
    tokenized, it attended most), token_scores (the log-probability of each
    target token, then the EOS's: n_tokens + 1 floats summing to log_prob).
    With attention_weights=True also attention (one row a target token: its
    soft attention over the source tokens, Result.src_tokens) and tokens
    (the target tokens the text is made of); else both ()."""
    text: str
    score: float
    log_prob: float
    n_tokens: int
    alignment: tuple = ()
    token_scores: tuple = ()
    attention: tuple = ()
    tokens: tuple = ()


class Result:
    """One input line's outcome: .hypotheses (best first; empty unless ok),
    .status (Status.OK or why the line was refused or not translated) and
    .message; with attention_weights=True, .src_tokens (the source tokens as
    tokenized, the columns of each hypothesis's attention; else ()). A
    sequence of its hypotheses: result[0].text is the best."""
    __slots__ = ("hypotheses", "status", "message", "src_tokens")

    def __init__(self, hypotheses, status=Status.OK, message="", src_tokens=()):
        self.hypotheses = hypotheses
        self.status = status_of(status)
        self.message = message
        self.src_tokens = src_tokens

    @property
    def ok(self):
        return self.status == Status.OK

    @property
    def text(self):
        """The best hypothesis' text ("" when not ok)."""
        return self.hypotheses[0].text if self.hypotheses else ""

    def raise_for_status(self):
        """Raises nmt.Error when not ok, else returns self."""
        if not self.ok:
            raise error_from(self.status, self.message)
        return self

    def __len__(self):
        return len(self.hypotheses)

    def __getitem__(self, i):
        return self.hypotheses[i]

    def __iter__(self):
        return iter(self.hypotheses)

    def __eq__(self, other):
        if not isinstance(other, Result):
            return NotImplemented
        return (self.status, self.message, self.hypotheses) == (
            other.status, other.message, other.hypotheses)

    def __repr__(self):
        if self.ok:
            return "Result(%r)" % (self.hypotheses,)
        return "Result(status=%s, message=%r)" % (getattr(self.status, "name", self.status),
                                                  self.message)


def _strings(pointer, n):
    return tuple((pointer[i] or b"").decode("utf-8", "replace") for i in range(n)) \
        if pointer else ()


def copy_result(r):
    """A Result from an nmt_result (copied: the C memory can go after)."""
    hyps = []
    src_tokens = ()
    if r.status == _capi.STATUS_OK:
        n_src = int(r.n_src)
        src_tokens = _strings(r.src_tokens, n_src)
        for k in range(r.n_hypotheses):
            h = r.hypotheses[k]
            n = int(h.n_tokens)
            alignment = tuple(h.alignment[:n]) if h.alignment else ()
            token_scores = tuple(h.token_scores[:n + 1]) if h.token_scores else ()
            attention = tuple(tuple(h.attention[t * n_src:(t + 1) * n_src]) for t in range(n)) \
                if h.attention else ()
            hyps.append(Hypothesis((h.text or b"").decode("utf-8", "replace"), float(h.score),
                                   float(h.log_prob), n, alignment, token_scores, attention,
                                   _strings(h.tokens, n)))
    return Result(hyps, r.status, r.message.decode("utf-8", "replace"), src_tokens)


def line_error(message):
    """The per-line refusal for a line the library cannot take (as translate
    does for an embedded NUL byte)."""
    return Result([], Status.ERROR_INPUT, message)


def batch_lines(lines):
    """The lines of a *_batch call as a list. One str or bytes is refused: it
    would iterate as characters (or ints), each translated as a line."""
    if isinstance(lines, (str, bytes, bytearray, memoryview)):
        raise TypeError("a batch is a list of lines, not one %s: translate(line) or "
                        "translate_batch([line])" % type(lines).__name__)
    return list(lines)


def encode_line(line):
    """(bytes, None) for the library, or (None, a Result refusing the line)."""
    if isinstance(line, (bytes, bytearray, memoryview)):
        data = bytes(line)
    elif isinstance(line, str):
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError as e:
            return None, line_error("not encodable as UTF-8: %s" % e.reason)
    else:
        raise TypeError("a line is str or bytes, not %s" % type(line).__name__)
    if b"\0" in data:
        return None, line_error("contains a NUL byte")
    return data, None


@dataclasses.dataclass(frozen=True)
class TranslatorStats:
    """nmt_stats: counters of a translator made with collect_stats."""
    sentences: int
    steps: int
    decode_seconds: float
    output_layer_ms: float
    row_steps: int
    recall_hits: int
    candidate_words: int
    graph_runs: int
    eager_runs: int
    batch_size: int = 0            # the batch size in use (max_memory may lower it)
    split_batches: int = 0         # batches split after the device ran out of memory
    device_memory_bytes: int = 0   # CUDA: the most the backend held at once
    device_memory_used: int = 0    # CUDA: the device's use at that peak (cudaMemGetInfo)
    sparse_matrices: int = 0       # matrices multiplied in CSR form (SpMM)
    precision: str = "fp32"        # what the GEMMs ran in ("auto" resolved; the CPU: fp32, int8)
    startup_context_seconds: float = 0.0  # CUDA: creation's phases (0 on the CPU):
    startup_upload_seconds: float = 0.0   # the context, the networks,
    startup_warmup_seconds: float = 0.0   # the warm-up (0 when skipped)


@dataclasses.dataclass(frozen=True)
class ServiceStats:
    """nmt_service_stats: queued and running now, the rest counted since
    the service was created."""
    queued: int
    running: int
    submitted: int
    completed: int
    failed: int
    cancelled: int
    expired: int
    rejected: int
    batches: int
    batch_sentences: int
    device_memory_used: int = 0   # CUDA: bytes in use on the workers' devices
    device_memory_total: int = 0


def copy_struct(cls, s):
    return cls(**{f.name: getattr(s, f.name) for f in dataclasses.fields(cls)})
