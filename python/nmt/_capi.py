"""The C API of libnmt through ctypes: the structs of include/nmt.h (and
core/nmt_status.h) field for field, the function prototypes, and finding and
loading the shared library.

The structs must match the C declarations exactly (order, types, array
sizes): tests/python/test_nmt_binding.py compiles a C program against the
built nmt.h and compares every sizeof and offsetof with these."""

import ctypes
import ctypes.util
import os
import threading

# ---- enums (C enums are int-sized here: plain ints in the structs) ------------

STATUS_OK = 0
STATUS_ERROR_IO = -1
STATUS_ERROR_FORMAT = -2
STATUS_ERROR_INPUT = -3
STATUS_ERROR_ARGUMENT = -4
STATUS_ERROR_MEMORY = -5
STATUS_ERROR_CUDA = -6
STATUS_ERROR_UNSUPPORTED = -7
STATUS_ERROR_INTERNAL = -8
STATUS_BUSY = -9
STATUS_CANCELLED = -10
STATUS_DEADLINE = -11
STATUS_CLOSED = -12

DEVICE_AUTO, DEVICE_CPU, DEVICE_CUDA = 0, 1, 2
SHRINK_NONE, SHRINK_LSH, SHRINK_TOP = 0, 1, 2
LSH_SHARE_BATCH, LSH_SHARE_SENTENCE, LSH_SHARE_ROW = 0, 1, 2
LSH_LISTS_HITS, LSH_LISTS_DIRECT, LSH_LISTS_AUTO = 0, 1, 2
PRECISION_FP32, PRECISION_TF32X2, PRECISION_BF16, PRECISION_FP16, PRECISION_AUTO = 0, 1, 2, 3, 4
SPARSE_AUTO, SPARSE_ON, SPARSE_OFF = 0, 1, 2
PIPELINE_OUTPUT_NONE, PIPELINE_OUTPUT_TEXT, PIPELINE_OUTPUT_SCORES = 0, 1, 2

# The C names of the enum constants above, for the layout test.
ENUM_CONSTANTS = {
    "NMT_STATUS_OK": STATUS_OK, "NMT_STATUS_ERROR_IO": STATUS_ERROR_IO,
    "NMT_STATUS_ERROR_FORMAT": STATUS_ERROR_FORMAT, "NMT_STATUS_ERROR_INPUT": STATUS_ERROR_INPUT,
    "NMT_STATUS_ERROR_ARGUMENT": STATUS_ERROR_ARGUMENT,
    "NMT_STATUS_ERROR_MEMORY": STATUS_ERROR_MEMORY, "NMT_STATUS_ERROR_CUDA": STATUS_ERROR_CUDA,
    "NMT_STATUS_ERROR_UNSUPPORTED": STATUS_ERROR_UNSUPPORTED,
    "NMT_STATUS_ERROR_INTERNAL": STATUS_ERROR_INTERNAL, "NMT_STATUS_BUSY": STATUS_BUSY,
    "NMT_STATUS_CANCELLED": STATUS_CANCELLED, "NMT_STATUS_DEADLINE": STATUS_DEADLINE,
    "NMT_STATUS_CLOSED": STATUS_CLOSED,
    "NMT_DEVICE_AUTO": DEVICE_AUTO, "NMT_DEVICE_CPU": DEVICE_CPU, "NMT_DEVICE_CUDA": DEVICE_CUDA,
    "NMT_SHRINK_NONE": SHRINK_NONE, "NMT_SHRINK_LSH": SHRINK_LSH, "NMT_SHRINK_TOP": SHRINK_TOP,
    "NMT_LSH_SHARE_BATCH": LSH_SHARE_BATCH, "NMT_LSH_SHARE_SENTENCE": LSH_SHARE_SENTENCE,
    "NMT_LSH_SHARE_ROW": LSH_SHARE_ROW,
    "NMT_LSH_LISTS_HITS": LSH_LISTS_HITS, "NMT_LSH_LISTS_DIRECT": LSH_LISTS_DIRECT,
    "NMT_LSH_LISTS_AUTO": LSH_LISTS_AUTO,
    "NMT_PRECISION_FP32": PRECISION_FP32, "NMT_PRECISION_TF32X2": PRECISION_TF32X2,
    "NMT_PRECISION_BF16": PRECISION_BF16, "NMT_PRECISION_FP16": PRECISION_FP16,
    "NMT_PRECISION_AUTO": PRECISION_AUTO,
    "NMT_SPARSE_AUTO": SPARSE_AUTO, "NMT_SPARSE_ON": SPARSE_ON, "NMT_SPARSE_OFF": SPARSE_OFF,
    "NMT_PIPELINE_OUTPUT_NONE": PIPELINE_OUTPUT_NONE,
    "NMT_PIPELINE_OUTPUT_TEXT": PIPELINE_OUTPUT_TEXT,
    "NMT_PIPELINE_OUTPUT_SCORES": PIPELINE_OUTPUT_SCORES,
}

_enum = ctypes.c_int

# ---- structs --------------------------------------------------------------------


class nmt_error(ctypes.Structure):
    _fields_ = [("status", _enum), ("message", ctypes.c_char * 512)]


class nmt_shrink_options(ctypes.Structure):
    _fields_ = [
        ("mode", _enum),
        ("k", ctypes.c_int), ("u", ctypes.c_int), ("w", ctypes.c_int),
        ("top", ctypes.c_int),
        ("threshold", ctypes.c_int),
        ("share", _enum),
        ("seed", ctypes.c_uint),
        ("lists", _enum),
    ]


class nmt_options(ctypes.Structure):
    _fields_ = [
        ("beam_size", ctypes.c_int),
        ("n_best", ctypes.c_int),
        ("alpha", ctypes.c_float),
        ("max_len_a", ctypes.c_float),
        ("max_len_b", ctypes.c_int),
        ("batch_size", ctypes.c_int),
        ("max_line_bytes", ctypes.c_int),
        ("max_src_tokens", ctypes.c_int),
        ("unk_replace", ctypes.c_int),
        ("device", _enum),
        ("device_index", ctypes.c_int),
        ("shrink", nmt_shrink_options),
        ("collect_stats", ctypes.c_int),
        ("cuda_graphs", ctypes.c_int),
        ("warmup", ctypes.c_int),
        ("precision", _enum),
        ("check_every", ctypes.c_int),
        ("input_tokens", ctypes.c_int),
        ("output_tokens", ctypes.c_int),
        ("max_batch_tokens", ctypes.c_int),
        ("search_rules", _enum),
        ("max_memory", ctypes.c_int64),
        ("sparse", _enum),
        ("attention_weights", ctypes.c_int),
        ("batch_invariant", ctypes.c_int),
        ("cpu_kernels", _enum),
        ("threads", ctypes.c_int),
        ("return_alternatives", ctypes.c_int),
        ("cpu_isa", _enum),
        ("sampling_topk", ctypes.c_int),
        ("sampling_topp", ctypes.c_float),
        ("sampling_temperature", ctypes.c_float),
        ("seed", ctypes.c_uint64),
        ("min_length", ctypes.c_int),
        ("no_repeat_ngram_size", ctypes.c_int),
        ("repetition_penalty", ctypes.c_float),
        ("ban_unk", ctypes.c_int),
        ("suppress", ctypes.c_char_p),  # read at create: the caller keeps it alive until then
        ("coverage_penalty", _enum),
        ("coverage_beta", ctypes.c_float),
        ("fused_output", ctypes.c_int),
    ]


class nmt_hypothesis(ctypes.Structure):
    _fields_ = [
        ("text", ctypes.c_char_p),  # owned by the result: read, never assigned
        ("score", ctypes.c_float),
        ("log_prob", ctypes.c_float),
        ("n_tokens", ctypes.c_int),
        ("alignment", ctypes.POINTER(ctypes.c_int)),  # [n_tokens], owned by the result
        ("token_scores", ctypes.POINTER(ctypes.c_float)),  # [n_tokens + 1]
        ("attention", ctypes.POINTER(ctypes.c_float)),  # [n_tokens x n_src] or NULL
        ("tokens", ctypes.POINTER(ctypes.c_char_p)),  # [n_tokens] or NULL
    ]


class nmt_result(ctypes.Structure):
    _fields_ = [
        ("status", _enum),
        ("message", ctypes.c_char * 256),
        ("n_hypotheses", ctypes.c_int),
        ("hypotheses", ctypes.POINTER(nmt_hypothesis)),
        ("n_src", ctypes.c_int),
        ("src_tokens", ctypes.POINTER(ctypes.c_char_p)),  # [n_src] or NULL
    ]


class nmt_stats(ctypes.Structure):
    _fields_ = [
        ("sentences", ctypes.c_int64),
        ("steps", ctypes.c_int64),
        ("decode_seconds", ctypes.c_double),
        ("output_layer_ms", ctypes.c_double),
        ("row_steps", ctypes.c_int64),
        ("recall_hits", ctypes.c_int64),
        ("candidate_words", ctypes.c_int64),
        ("graph_runs", ctypes.c_int64),
        ("eager_runs", ctypes.c_int64),
        ("batch_size", ctypes.c_int64),
        ("split_batches", ctypes.c_int64),
        ("device_memory_bytes", ctypes.c_int64),
        ("device_memory_used", ctypes.c_int64),
        ("sparse_matrices", ctypes.c_int64),
        ("precision", ctypes.c_int64),
        ("startup_context_seconds", ctypes.c_double),
        ("startup_upload_seconds", ctypes.c_double),
        ("startup_warmup_seconds", ctypes.c_double),
    ]


class nmt_service_options(ctypes.Structure):
    _fields_ = [
        ("translator", nmt_options),
        ("n_devices", ctypes.c_int),
        ("devices", ctypes.POINTER(ctypes.c_int)),
        ("cpu_workers", ctypes.c_int),
        ("queue_capacity", ctypes.c_int),
        ("max_delay_us", ctypes.c_int),
        ("max_batch_tokens", ctypes.c_int),
        ("continuous", ctypes.c_int),
        ("join_every", ctypes.c_int),
        ("workers_per_device", ctypes.c_int),
    ]


class nmt_request_options(ctypes.Structure):
    _fields_ = [
        ("beam_size", ctypes.c_int),
        ("n_best", ctypes.c_int),
        ("alpha", ctypes.c_float),
        ("max_len_a", ctypes.c_float),
        ("max_len_b", ctypes.c_int),
        ("shrink", ctypes.c_int),
        ("deadline_ms", ctypes.c_double),
        ("target_prefix", ctypes.c_char_p),  # the caller's bytes, copied at submit
        ("return_alternatives", ctypes.c_int),
        ("target", ctypes.c_char_p),
        ("sampling_topk", ctypes.c_int),
        ("sampling_topp", ctypes.c_float),
        ("sampling_temperature", ctypes.c_float),
        ("seed", ctypes.c_int64),
        ("line_key", ctypes.c_uint64),
        ("min_length", ctypes.c_int),
        ("no_repeat_ngram_size", ctypes.c_int),
        ("repetition_penalty", ctypes.c_float),
        ("ban_unk", ctypes.c_int),
        ("suppress", ctypes.c_char_p),  # read at submit
        ("coverage_penalty", ctypes.c_int),
        ("coverage_beta", ctypes.c_float),
    ]


class nmt_service_stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in (
        "queued", "running", "submitted", "completed", "failed", "cancelled", "expired",
        "rejected", "batches", "batch_sentences", "device_memory_used", "device_memory_total")]


class nmt_pipeline_options(ctypes.Structure):
    _fields_ = [
        ("window_lines", ctypes.c_int),
        ("host_threads", ctypes.c_int),
        ("translators", ctypes.c_int),
        ("dry_run", ctypes.c_int),
        ("output", _enum),
        ("format", ctypes.c_void_p),  # a C function; the binding leaves it NULL
        ("format_self", ctypes.c_void_p),
        ("targets", _enum),  # nmt_targets
        ("target_name", ctypes.c_char_p),
    ]


class nmt_pipeline_window(ctypes.Structure):
    _fields_ = [
        ("first_line", ctypes.c_int64),
        ("n_lines", ctypes.c_int),
        ("results", ctypes.POINTER(nmt_result)),
        ("text", ctypes.c_void_p),  # text_bytes bytes, not NUL-terminated
        ("text_bytes", ctypes.c_size_t),
        ("translator", ctypes.c_int),
        ("status", _enum),
        ("error", nmt_error),
    ]


class nmt_pipeline_stats(ctypes.Structure):
    _fields_ = [
        ("lines_read", ctypes.c_int64),
        ("windows", ctypes.c_int64),
        ("decode_seconds", ctypes.c_double),
        ("translators", ctypes.c_int64),
        ("translators_failed", ctypes.c_int64),
        ("host_threads", ctypes.c_int64),
        ("input_ended", ctypes.c_int64),
    ]


def c_integer(ctype, value, what):
    """int(value) for a C field of type ctype; OverflowError outside its
    range, which ctypes would wrap silently (2**32 + 3 into a c_int is 3)."""
    n = int(value)
    bits = 8 * ctypes.sizeof(ctype)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ctype(-1).value < 0 else \
        (0, (1 << bits) - 1)
    if not lo <= n <= hi:
        raise OverflowError("%s = %d: out of the range of a C %s (%d..%d)" % (
            what, n, ctype.__name__[2:], lo, hi))
    return n


def c_int(value, what):
    """value as a C int, checked (c_integer); what names it in the error."""
    return c_integer(ctypes.c_int, value, what)


def c_uint(value, what):
    return c_integer(ctypes.c_uint, value, what)


def c_uint64(value, what):
    return c_integer(ctypes.c_uint64, value, what)


def c_path(path, what="path"):
    """A file path as the C string the library takes; ValueError for one
    with a NUL byte, which C would cut there (and open another file)."""
    data = os.fsencode(path)
    if b"\0" in data:
        raise ValueError("%s %r: contains a NUL byte" % (what, path))
    return data


# Every struct above with its C name, for the layout test.
STRUCTS = [nmt_error, nmt_shrink_options, nmt_options, nmt_hypothesis, nmt_result, nmt_stats,
           nmt_service_options, nmt_request_options, nmt_service_stats, nmt_pipeline_options,
           nmt_pipeline_window, nmt_pipeline_stats]

# void (*nmt_request_callback)(nmt_request *, const nmt_result *, void *user)
REQUEST_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(nmt_result),
                                    ctypes.c_void_p)

# ---- prototypes -------------------------------------------------------------------

_P = ctypes.POINTER
_vp = ctypes.c_void_p
_PROTOTYPES = {
    # name: (restype, argtypes)
    "nmt_status_string": (ctypes.c_char_p, [_enum]),
    "nmt_options_init": (None, [_P(nmt_options)]),
    "nmt_model_load": (_enum, [ctypes.c_char_p, _P(_vp), _P(nmt_error)]),
    "nmt_model_free": (None, [_vp]),
    "nmt_model_describe": (ctypes.c_char_p, [_vp]),
    "nmt_cuda_available": (ctypes.c_int, []),
    "nmt_translator_create": (_enum, [_vp, _P(nmt_options), _P(_vp), _P(nmt_error)]),
    "nmt_translator_create_ensemble": (_enum, [_P(_vp), _P(ctypes.c_float), ctypes.c_int,
                                              _P(nmt_options), _P(_vp), _P(nmt_error)]),
    "nmt_translator_free": (None, [_vp]),
    "nmt_translator_device": (_enum, [_vp]),
    "nmt_translate_batch": (_enum, [_vp, _P(ctypes.c_char_p), ctypes.c_int, _P(nmt_result),
                                    _P(nmt_error)]),
    "nmt_translate_batch_prefix": (_enum, [_vp, _P(ctypes.c_char_p), _P(ctypes.c_char_p),
                                           ctypes.c_int, _P(nmt_result), _P(nmt_error)]),
    "nmt_score_batch": (_enum, [_vp, _P(ctypes.c_char_p), _P(ctypes.c_char_p), ctypes.c_int,
                                _P(nmt_result), _P(nmt_error)]),
    "nmt_result_clear": (None, [_P(nmt_result)]),
    "nmt_translator_prepare": (_enum, [_vp, _P(ctypes.c_char_p), ctypes.c_int, _P(_vp),
                                       _P(nmt_error)]),
    "nmt_translator_prepare_prefix": (_enum, [_vp, _P(ctypes.c_char_p), _P(ctypes.c_char_p),
                                              ctypes.c_int, _P(_vp), _P(nmt_error)]),
    "nmt_prepared_set_line_keys": (_enum, [_vp, _P(ctypes.c_uint64), _P(nmt_error)]),
    "nmt_translate_prepared": (_enum, [_vp, _vp, _P(nmt_result), _P(nmt_error)]),
    "nmt_prepared_free": (None, [_vp]),
    "nmt_translator_stats": (_enum, [_vp, _P(nmt_stats), _P(nmt_error)]),
    "nmt_service_options_init": (None, [_P(nmt_service_options)]),
    "nmt_request_options_init": (None, [_P(nmt_request_options)]),
    "nmt_service_create": (_enum, [_vp, _P(nmt_service_options), _P(_vp), _P(nmt_error)]),
    "nmt_service_create_ensemble": (_enum, [_P(_vp), _P(ctypes.c_float), ctypes.c_int,
                                           _P(nmt_service_options), _P(_vp), _P(nmt_error)]),
    "nmt_service_submit": (_enum, [_vp, ctypes.c_char_p, _P(nmt_request_options),
                                   REQUEST_CALLBACK, _vp, _P(_vp), _P(nmt_error)]),
    "nmt_request_wait": (ctypes.c_int, [_vp, ctypes.c_double]),
    "nmt_request_done": (ctypes.c_int, [_vp]),
    "nmt_request_result": (_P(nmt_result), [_vp]),
    "nmt_request_cancel": (None, [_vp]),
    "nmt_request_free": (None, [_vp]),
    "nmt_service_stats_get": (None, [_vp, _P(nmt_service_stats)]),
    "nmt_service_shutdown": (None, [_vp, ctypes.c_int, _P(ctypes.c_int64),
                                    _P(ctypes.c_int64)]),
    "nmt_service_free": (None, [_vp]),
    "nmt_struct_size": (ctypes.c_size_t, [ctypes.c_char_p]),
    "nmt_pipeline_options_init": (None, [_P(nmt_pipeline_options)]),
    "nmt_pipeline_create": (_enum, [_vp, _P(nmt_options), _P(nmt_pipeline_options), _P(_vp),
                                    _P(nmt_error)]),
    "nmt_pipeline_free": (None, [_vp]),
    "nmt_pipeline_add_translator": (_enum, [_vp, _vp, _P(nmt_error)]),
    "nmt_pipeline_read_fd": (_enum, [_vp, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                                     ctypes.c_int64, _P(nmt_error)]),
    "nmt_pipeline_push": (ctypes.c_int, [_vp, _P(ctypes.c_char_p), ctypes.c_int, ctypes.c_int,
                                         _P(nmt_error)]),
    "nmt_pipeline_end": (None, [_vp]),
    "nmt_pipeline_next": (_enum, [_vp, ctypes.c_int, _P(_P(nmt_pipeline_window)),
                                  _P(nmt_error)]),
    "nmt_pipeline_release": (None, [_vp, _P(nmt_pipeline_window)]),
    "nmt_pipeline_stats_get": (None, [_vp, _P(nmt_pipeline_stats)]),
    "nmt_pipeline_translator_failed": (ctypes.c_int, [_vp, ctypes.c_int, _P(nmt_error)]),
}

# The structs whose layout the library reports (nmt_struct_size): checked at
# load, so that a libnmt of another layout is refused, not misread.
CHECKED_STRUCTS = ("nmt_options", "nmt_hypothesis", "nmt_result", "nmt_stats", "nmt_error",
                   "nmt_service_options", "nmt_request_options", "nmt_service_stats",
                   "nmt_shrink_options", "nmt_pipeline_options", "nmt_pipeline_window",
                   "nmt_pipeline_stats")


class LibraryNotFoundError(OSError):
    """libnmt could not be found or loaded; the message lists what was tried."""


# The repository's usual build folder, relative to python/nmt/, when the
# package sits in a source checkout (an installed one finds the library the
# other ways).
_REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD_PATHS = ([os.path.join(_REPO_ROOT, "build", "libnmt.so")]
               if os.path.exists(os.path.join(_REPO_ROOT, "include", "nmt.h")) else [])

try:  # written by python/setup.py when the package is installed
    from ._library import LIBRARY as INSTALLED_LIBRARY
except ImportError:  # a source checkout on PYTHONPATH
    INSTALLED_LIBRARY = None

_loaded = {}
_loaded_lock = threading.Lock()


def _open(path):
    """dlopens path and declares every prototype (AttributeError for a
    library without them: not libnmt, or an older one)."""
    lib = ctypes.CDLL(path)  # CDLL: the GIL is released during every call
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    for name in CHECKED_STRUCTS:
        theirs, ours = lib.nmt_struct_size(name.encode()), ctypes.sizeof(globals()[name])
        if theirs != ours:
            raise AttributeError("%s: %s is %d bytes there, %d in this package (another "
                                 "version of libnmt)" % (path, name, theirs, ours))
    return lib


def locate(library=None, environ=None, find=None, build_paths=None, installed=None):
    """Returns (candidates, tried): the paths or names to dlopen in order,
    and the notes on the sources that gave nothing, for the error message.

    The order: `library` (explicit), $NMT_LIBRARY, the library recorded when
    the package was installed, ctypes.util.find_library("nmt"), then the
    repository's build folder. An explicit library or $NMT_LIBRARY is the
    only candidate when given (no silent fallback)."""
    environ = os.environ if environ is None else environ
    find = ctypes.util.find_library if find is None else find
    build_paths = BUILD_PATHS if build_paths is None else build_paths
    installed = INSTALLED_LIBRARY if installed is None else installed
    if library:
        return [os.fspath(library)], []
    if environ.get("NMT_LIBRARY"):
        return [environ["NMT_LIBRARY"]], ["library= (not given)"]
    tried = ["library= (not given)", "$NMT_LIBRARY (not set)"]
    candidates = []
    if installed and os.path.exists(installed):
        candidates.append(installed)
    elif installed:
        tried.append("%s (recorded at install; no such file)" % installed)
    found = find("nmt")
    if found:
        candidates.append(found)
    else:
        tried.append("ctypes.util.find_library('nmt') (nothing found)")
    for path in build_paths:
        if os.path.exists(path):
            candidates.append(path)
        else:
            tried.append("%s (no such file)" % path)
    return candidates, tried


def load_library(library=None):
    """Loads libnmt (once per path) and returns the ctypes library.

    Raises LibraryNotFoundError naming every place tried."""
    candidates, tried = locate(library)
    with _loaded_lock:
        for candidate in candidates:
            if candidate in _loaded:
                return _loaded[candidate]
            try:
                lib = _open(candidate)
            except (OSError, AttributeError) as e:
                tried.append("%s (%s)" % (candidate, e))
                continue
            _loaded[candidate] = lib
            return lib
    raise LibraryNotFoundError(
        "libnmt not found; tried: " + "; ".join(tried) +
        ". Build it (cmake -S . -B build && make -C build nmt), install it "
        "(cmake --install build), or name it: NMT_LIBRARY=/path/to/libnmt.so or library=...")
