"""Model and Translator: nmt_model and nmt_translator."""

import collections
import concurrent.futures
import ctypes
import dataclasses
import os
import threading

from . import _capi, _options
from ._results import (TranslatorStats, copy_result, copy_struct, encode_line, raise_error)

# The search options a translate_batch call may change (a translator each).
SEARCH_OPTIONS = ("beam_size", "n_best", "alpha", "max_len_a", "max_len_b")
# fill_options' keywords that set the nmt_options field of their name, and
# those that set an nmt_shrink_options field; each is checked against its
# row of translate's option table (_options.value).
FIELDS = SEARCH_OPTIONS + (
    "batch_size", "max_line_bytes", "max_src_tokens", "unk_replace", "cuda_graphs", "warmup",
    "precision", "check_every", "input_tokens", "output_tokens", "max_batch_tokens",
    "search_rules", "sparse", "attention_weights", "batch_invariant", "cpu_kernels", "threads",
    "cpu_isa")
SHRINK_FIELDS = {"top_words": "top", "lsh_share": "share", "lsh_seed": "seed",
                 "lsh_lists": "lists"}
# Cached translators for per-call search options, per Translator.
_CACHE_SIZE = 4


_background = threading.local()


def _mark_background():
    _background.flag = True


class Model:
    """A loaded model file (nmt_model_load): immutable, shared by any number
    of translators and services, freed when the last of them and this object
    are gone (or at close(), deferred until then).

    library: the libnmt to use (a path); default: $NMT_LIBRARY, the one
    recorded at install, ctypes.util.find_library("nmt"), then the
    repository's build/libnmt.so."""

    def __init__(self, path, library=None):
        self._lib = _capi.load_library(library)
        self.path = os.fspath(path)
        self._ptr = None
        self._users = 0
        self._closing = False
        self._lock = threading.Lock()
        handle = ctypes.c_void_p()
        err = _capi.nmt_error()
        if self._lib.nmt_model_load(_capi.c_path(self.path, "model"), ctypes.byref(handle),
                                    ctypes.byref(err)) != _capi.STATUS_OK:
            raise_error(err)
        self._ptr = handle.value

    def describe(self):
        """The library's one-line description (sizes, vocabularies)."""
        return self._lib.nmt_model_describe(self._handle()).decode("utf-8", "replace")

    def _handle(self):
        if self._ptr is None or self._closing:
            raise ValueError("the model is closed")
        return self._ptr

    def _acquire(self):
        """A translator or service starts using the C model."""
        with self._lock:
            ptr = self._handle()
            self._users += 1
            return ptr

    def _release(self):
        with self._lock:
            self._users -= 1
            self._free_if_unused()

    def _free_if_unused(self):
        if self._closing and self._users == 0 and self._ptr is not None:
            self._lib.nmt_model_free(self._ptr)
            self._ptr = None

    def close(self):
        """Frees the model once no translator or service uses it any more."""
        with self._lock:
            self._closing = True
            self._free_if_unused()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_ptr", None) is not None and getattr(self, "_lock", None) is not None:
            self.close()

    def __repr__(self):
        return "nmt.Model(%r)" % self.path


def as_model(model_or_path, library):
    if isinstance(model_or_path, Model):
        return model_or_path
    return Model(model_or_path, library=library)


def parse_device(device, device_index):
    """("auto"|"cpu"|"cuda"|"cuda:N", index) -> (nmt_device, device_index);
    the names are translate --device's."""
    name = str(device).lower()
    if name.startswith("cuda:"):
        name, index = "cuda", name[5:]
        if not index.isdigit():
            raise ValueError("device %r: cuda:N with N a device ordinal" % device)
        device_index = _options.value("device_index", index)
    devices = _options.choices("device")
    if name not in devices:
        raise ValueError("device %r: one of %s, or cuda:N" % (device, ", ".join(devices)))
    return devices[name], device_index


def _ints(value, n, what):
    if isinstance(value, str):
        value = value.split(",")
    try:
        values = [_capi.c_int(v, what) for v in value]
    except (TypeError, ValueError):
        raise ValueError("%s %r: %d integers" % (what, value, n)) from None
    if len(values) != n:
        raise ValueError("%s %r: %d integers" % (what, value, n))
    return values


def fill_options(lib, o, device="auto", device_index=None, lsh=None, collect_stats=None,
                 **options):
    """Fills an nmt_options: the library's defaults (nmt_options_init), then
    every option that is not None: FIELDS and SHRINK_FIELDS checked against
    translate's option table (_options.value), lsh=(K,u,W,T,t) and
    collect_stats as C ints (the library checks them)."""
    unknown = set(options) - set(FIELDS) - set(SHRINK_FIELDS)
    if unknown:
        raise TypeError("unknown option(s): %s" % ", ".join(sorted(unknown)))
    lib.nmt_options_init(ctypes.byref(o))
    o.device, o.device_index = parse_device(
        device, o.device_index if device_index is None else _options.value("device_index",
                                                                            device_index))
    for name, value in options.items():
        if value is None:
            continue
        if name in FIELDS:
            setattr(o, name, _options.value(name, value))
        else:
            c_type = ctypes.c_uint if name == "lsh_seed" else ctypes.c_int
            setattr(o.shrink, SHRINK_FIELDS[name], _options.value(name, value, c_type))
    if collect_stats is not None:
        o.collect_stats = _capi.c_int(collect_stats, "collect_stats")
    top_words = options.get("top_words")
    if lsh is not None and top_words is not None:
        raise ValueError("lsh and top_words exclude each other")
    if lsh is not None:
        k, u, w, top, threshold = _ints(lsh, 5, "lsh (K,u,W,T,t)")
        o.shrink.mode = _capi.SHRINK_LSH
        o.shrink.k, o.shrink.u, o.shrink.w, o.shrink.top, o.shrink.threshold = (
            k, u, w, top, threshold)
    if top_words is not None:
        o.shrink.mode = _capi.SHRINK_TOP
    return o


def device_name(device):
    return _options.choice_names("device").get(device, str(device))


class Translator:
    """A translator (nmt_translator) over a model: whole batches of lines.

    Translator(model_or_path, device="auto", beam_size=5, n_best=1,
    batch_size=32, alpha=1.0, max_len_a=2, max_len_b=10, lsh=None, ...):
    every option of nmt_options (None: the library's default, shown here),
    with lsh=(K,u,W,T,t) or top_words=T for vocabulary shrinking. device
    "cuda:N" picks a GPU. Raises nmt.Error (nmt.ArgumentError for a bad
    option) when the model or the translator cannot be made.

    Calls are serialized (a lock): share one between threads if you like, but
    use one per thread to translate in parallel (the GIL is released while the
    library works)."""

    def __init__(self, model, device="auto", library=None, **options):
        self.model = as_model(model, library)
        self._lib = self.model._lib
        self._options = fill_options(self._lib, _capi.nmt_options(), device, **options)
        self._lock = threading.Lock()
        self._translators = collections.OrderedDict()  # search options -> C translator
        self._executor = None
        self._model_ptr = self.model._acquire()
        try:
            self._default_key = self._key({})
            self._get(self._default_key)
        except BaseException:
            self.model._release()
            self._model_ptr = None
            raise

    # -- the C translators ------------------------------------------------------

    def _key(self, overrides):
        unknown = set(overrides) - set(SEARCH_OPTIONS)
        if unknown:
            raise TypeError("unknown option(s): %s (per call: %s)" % (
                ", ".join(sorted(unknown)), ", ".join(SEARCH_OPTIONS)))
        o = self._options
        return tuple(getattr(o, name) if overrides.get(name) is None else
                     _options.value(name, overrides[name]) for name in SEARCH_OPTIONS)

    def _get(self, key):
        """The C translator for these search options (made on first use; the
        least recently used beyond a few is freed). Under self._lock or in
        __init__."""
        if self._model_ptr is None:
            raise ValueError("the translator is closed")
        ptr = self._translators.get(key)
        if ptr is not None:
            self._translators.move_to_end(key)
            return ptr
        o = _capi.nmt_options.from_buffer_copy(self._options)
        for name, value in zip(SEARCH_OPTIONS, key):
            setattr(o, name, value)
        handle = ctypes.c_void_p()
        err = _capi.nmt_error()
        if self._lib.nmt_translator_create(self._model_ptr, ctypes.byref(o), ctypes.byref(handle),
                                           ctypes.byref(err)) != _capi.STATUS_OK:
            raise_error(err)
        self._translators[key] = handle.value
        while len(self._translators) > _CACHE_SIZE:
            old_key = next(k for k in self._translators if k != self._default_key)
            self._lib.nmt_translator_free(self._translators.pop(old_key))
        return handle.value

    # -- translating ------------------------------------------------------------

    @property
    def device(self):
        """The device the translator runs on: "cpu" or "cuda"."""
        with self._lock:
            return device_name(self._lib.nmt_translator_device(self._get(self._default_key)))

    def translate_batch(self, lines, **options):
        """Translates lines (str or UTF-8 bytes) and returns one nmt.Result per
        line, in order: .hypotheses (nmt.Hypothesis: text, score, log_prob,
        n_tokens; best first, n_best of them) when .ok, else .status and
        .message say why the line was refused (a bad line never fails the
        others). options: beam_size, n_best, alpha, max_len_a, max_len_b for
        this call (another translator, made once and cached). Raises nmt.Error
        when the whole batch failed (device error, out of memory)."""
        lines = list(lines)
        key = self._key(options)
        if not lines:
            return []
        results = [None] * len(lines)
        data = []
        for i, line in enumerate(lines):
            encoded, refused = encode_line(line)
            results[i] = refused
            data.append(encoded if refused is None else b"")
        n = len(lines)
        c_lines = (ctypes.c_char_p * n)(*data)
        c_results = (_capi.nmt_result * n)()
        err = _capi.nmt_error()
        with self._lock:
            ptr = self._get(key)
            status = self._lib.nmt_translate_batch(ptr, c_lines, n, c_results, ctypes.byref(err))
        try:
            if status != _capi.STATUS_OK:
                raise_error(err)
            for i in range(n):
                if results[i] is None:
                    results[i] = copy_result(c_results[i])
        finally:
            for i in range(n):
                self._lib.nmt_result_clear(ctypes.byref(c_results[i]))
        return results

    def translate(self, line, **options):
        """translate_batch([line], **options)[0]."""
        return self.translate_batch([line], **options)[0]

    def translate_batch_async(self, lines, **options):
        """translate_batch in this translator's background thread: returns a
        concurrent.futures.Future of the list of Results. Calls run one at a
        time, in order."""
        lines = list(lines)
        with self._lock:
            if self._model_ptr is None:
                raise ValueError("the translator is closed")
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="nmt-translator",
                    initializer=_mark_background)
            executor = self._executor
        return executor.submit(self.translate_batch, lines, **options)

    def stats(self):
        """nmt.TranslatorStats summed over the calls with the constructor's
        search options (zeros unless made with collect_stats=1 or 2)."""
        st = _capi.nmt_stats()
        err = _capi.nmt_error()
        with self._lock:
            if self._lib.nmt_translator_stats(self._get(self._default_key), ctypes.byref(st),
                                              ctypes.byref(err)) != _capi.STATUS_OK:
                raise_error(err)
        stats = copy_struct(TranslatorStats, st)
        return dataclasses.replace(
            stats, precision=_options.choice_names("precision").get(st.precision,
                                                                     str(st.precision)))

    # -- lifetime ---------------------------------------------------------------

    def close(self):
        """Waits for the background calls, then frees the C translators.
        Idempotent."""
        executor = self._executor
        if executor is not None:
            # Not from its own thread (a last reference dropped there).
            executor.shutdown(wait=not getattr(_background, "flag", False))
        with self._lock:
            if self._model_ptr is None:
                return
            for ptr in self._translators.values():
                self._lib.nmt_translator_free(ptr)
            self._translators.clear()
            self._model_ptr = None
        self.model._release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_model_ptr", None) is not None:
            self.close()

    def __repr__(self):
        return "nmt.Translator(%r, beam_size=%d, n_best=%d)" % (
            self.model, self._options.beam_size, self._options.n_best)
