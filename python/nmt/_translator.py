"""Translator: nmt_translator, and the keywords that fill its nmt_options."""

import collections
import concurrent.futures
import ctypes
import dataclasses
import threading

from . import _capi, _options, _pipeline
from ._model import as_ensemble
from ._results import (TranslatorStats, batch_lines, copy_result, copy_struct, encode_line,
                       line_error, raise_error)

# The search options a translate_batch call may change (a translator each):
# the beam's, then sampling's and the logit rules' (RULE_OPTIONS).
RULE_OPTIONS = ("sampling_topk", "sampling_topp", "sampling_temperature", "seed", "min_length",
                "no_repeat_ngram_size", "repetition_penalty", "ban_unk")
SEARCH_OPTIONS = ("beam_size", "n_best", "alpha", "max_len_a", "max_len_b",
                  "return_alternatives") + RULE_OPTIONS
# fill_options' keywords that set the nmt_options field of their name, and
# those that set an nmt_shrink_options field; each is checked against its
# row of translate's option table (_options.value).
FIELDS = SEARCH_OPTIONS + (
    "batch_size", "max_line_bytes", "max_src_tokens", "unk_replace", "cuda_graphs", "warmup",
    "precision", "check_every", "input_tokens", "output_tokens", "max_batch_tokens",
    "search_rules", "sparse", "attention_weights", "batch_invariant", "coverage_penalty",
    "coverage_beta", "cpu_kernels", "threads", "cpu_isa", "fused_output")
# The C types of the fields that are not C ints (_options.value checks them first).
C_TYPES = {"seed": ctypes.c_uint64}
SHRINK_FIELDS = {"top_words": "top", "lsh_share": "share", "lsh_seed": "seed",
                 "lsh_lists": "lists"}
# Cached translators for per-call search options, per Translator.
_CACHE_SIZE = 4


_background = threading.local()


def _mark_background():
    _background.flag = True


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


def suppress_text(sequences):
    """suppress as the library reads it: a str (one sequence a line, target
    tokens separated by spaces) as it is, or a list of sequences, each a str
    of tokens or a list of tokens."""
    if isinstance(sequences, (str, bytes)):
        text = sequences if isinstance(sequences, str) else sequences.decode("utf-8")
    else:
        text = "\n".join(seq if isinstance(seq, str) else " ".join(seq) for seq in sequences)
    data = text.encode("utf-8")
    if b"\0" in data:
        raise ValueError("suppress: contains a NUL byte")
    return data


def sampling_beam(options):
    """A sampling call or translator with no beam_size of its own takes beam 1
    (sampling draws n_best samples with beam 1), as translate's --beam does."""
    topk = options.get("sampling_topk")
    if topk is not None and int(topk) != 1 and options.get("beam_size") is None:
        options = dict(options, beam_size=1)
    return options


def fill_options(lib, o, device="auto", device_index=None, lsh=None, collect_stats=None,
                 suppress=None, **options):
    """Fills an nmt_options: the library's defaults (nmt_options_init), then
    every option that is not None: FIELDS and SHRINK_FIELDS checked against
    translate's option table (_options.value), lsh=(K,u,W,T,t) and
    collect_stats as C ints (the library checks them), suppress
    (suppress_text); a sampling one with no beam_size takes beam 1."""
    options = sampling_beam(options)
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
            setattr(o, name, _options.value(name, value, C_TYPES.get(name, ctypes.c_int)))
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
    if suppress is not None:
        o.suppress = suppress_text(suppress)  # the struct keeps the bytes alive
    return o


def device_name(device):
    return _options.choice_names("device").get(device, str(device))


class Translator:
    """A translator (nmt_translator) over a model: whole batches of lines.

    Translator(model_or_path, device="auto", beam_size=5, n_best=1,
    batch_size=32, alpha=1.0, max_len_a=2, max_len_b=10, lsh=None, ...):
    model_or_path may also be a list of models or paths, an ensemble, with
    weights=[w1, w2, ...] (or an nmt.Ensemble); every option of nmt_options
    (None: the library's default, shown here),
    with lsh=(K,u,W,T,t) or top_words=T for vocabulary shrinking. device
    "cuda:N" picks a GPU. Raises nmt.Error (nmt.ArgumentError for a bad
    option) when the model or the translator cannot be made.

    translate_file and translate_iterable stream through the library's host
    pipeline (docs/scale-out.md) with this translator, or with one translator
    a CUDA device of devices=[0, 1] (or "all"), or workers=N on the CPU: made
    at the first such call, each device starting up in parallel.

    Calls are serialized (a lock): share one between threads if you like, but
    use one per thread to translate in parallel (the GIL is released while the
    library works)."""

    def __init__(self, model, device="auto", library=None, devices=None, workers=None,
                 weights=None, **options):
        self._models = as_ensemble(model, weights, library)
        self.model = self._models.shown()
        self._lib = self._models._lib
        self._options = fill_options(self._lib, _capi.nmt_options(), device, **options)
        self._lock = threading.Lock()
        self._translators = collections.OrderedDict()  # search options -> C translator
        self._executor = None
        self._devices = devices
        self._workers = None if workers is None else _capi.c_int(workers, "workers")
        self._pool = None   # (C translators, labels) of translate_file and _iterable
        self._busy = None   # the streaming call holding the C translators
        self._model_ptr = self._models._acquire()  # (C models, C weights, n)
        try:
            self._default_key = self._key({})
            self._get(self._default_key)
        except BaseException:
            self._models._release()
            self._model_ptr = None
            raise

    # -- the C translators ------------------------------------------------------

    def _key(self, overrides):
        overrides = sampling_beam(overrides)
        unknown = set(overrides) - set(SEARCH_OPTIONS)
        if unknown:
            raise TypeError("unknown option(s): %s (per call: %s)" % (
                ", ".join(sorted(unknown)), ", ".join(SEARCH_OPTIONS)))
        o = self._options
        return tuple(getattr(o, name) if overrides.get(name) is None else
                     _options.value(name, overrides[name], C_TYPES.get(name, ctypes.c_int))
                     for name in SEARCH_OPTIONS)

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
        models, weights, n = self._model_ptr
        if self._lib.nmt_translator_create_ensemble(models, weights, n, ctypes.byref(o),
                                                    ctypes.byref(handle),
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

    def translate_batch(self, lines, target_prefix=None, line_keys=None, **options):
        """Translates lines (str or UTF-8 bytes) and returns one nmt.Result per
        line, in order: .hypotheses (nmt.Hypothesis: text, score, log_prob,
        n_tokens; best first, n_best of them) when .ok, else .status and
        .message say why the line was refused (a bad line never fails the
        others). target_prefix: one prefix per line (str, bytes or None) that
        its translation continues (nmt_translate_batch_prefix). options: any
        of SEARCH_OPTIONS (beam_size, n_best, alpha, max_len_a, max_len_b,
        return_alternatives, the sampling and logit-rule options) for this
        call (another translator, made once and cached). line_keys: sampling
        keys, one a line (default: the lines' indices; a line's samples depend
        on the seed and its key only; with target_prefix each sample continues
        its line's prefix). Raises nmt.Error when the whole batch failed
        (device error, out of memory)."""
        lines = batch_lines(lines)
        targets = None
        if target_prefix is not None:
            targets = batch_lines(target_prefix)
            if len(targets) != len(lines):
                raise ValueError("target_prefix: %d prefixes for %d lines" % (
                    len(targets), len(lines)))
        if line_keys is not None:
            line_keys = [_capi.c_uint64(k, "line_keys") for k in line_keys]
            if len(line_keys) != len(lines):
                raise ValueError("line_keys: %d keys for %d lines" % (len(line_keys),
                                                                      len(lines)))
        return self._run(lines, targets, self._key(options), score=False, line_keys=line_keys)

    def score_batch(self, sources, targets, **options):
        """Scores each source's given translation (forced decoding: OpenNMT-py's
        -tgt, CTranslate2's score_batch) and returns one nmt.Result per pair:
        its one hypothesis has the target's log_prob (its tokens' and the
        EOS's log-probabilities summed), score (length-normalized),
        token_scores and alignment. options: alpha (the normalization), as
        translate_batch's (sampling and the logit rules are refused)."""
        sources = batch_lines(sources)
        targets = batch_lines(targets)
        if len(targets) != len(sources):
            raise ValueError("%d targets for %d sources" % (len(targets), len(sources)))
        return self._run(sources, targets, self._key(options), score=True)

    def _run(self, lines, targets, key, score, line_keys=None):
        if not lines:
            return []
        n = len(lines)
        results = [None] * n
        data, target_data = [], [None] * n
        for i, line in enumerate(lines):
            encoded, refused = encode_line(line)
            if refused is None and targets is not None and targets[i] is not None:
                target_data[i], refused = encode_line(targets[i])
                if refused is not None:
                    refused = line_error("target: " + refused.message)
            results[i] = refused
            data.append(encoded if refused is None else b"")
        c_lines = (ctypes.c_char_p * n)(*data)
        c_targets = (ctypes.c_char_p * n)(*target_data) if targets is not None else None
        c_results = (_capi.nmt_result * n)()
        err = _capi.nmt_error()
        with self._lock:
            self._check_idle()
            ptr = self._get(key)
            if score:
                status = self._lib.nmt_score_batch(ptr, c_lines, c_targets, n, c_results,
                                                   ctypes.byref(err))
            elif line_keys is not None:
                status = self._translate_keyed(ptr, c_lines, c_targets, n, line_keys,
                                               c_results, err)
            elif c_targets is not None:
                status = self._lib.nmt_translate_batch_prefix(ptr, c_lines, c_targets, n,
                                                              c_results, ctypes.byref(err))
            else:
                status = self._lib.nmt_translate_batch(ptr, c_lines, n, c_results,
                                                       ctypes.byref(err))
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

    def _translate_keyed(self, ptr, c_lines, c_targets, n, line_keys, c_results, err):
        """nmt_translate_batch (with c_targets: _prefix) with the lines'
        sampling keys: prepare, keys, translate_prepared."""
        prepared = ctypes.c_void_p()
        if c_targets is not None:
            status = self._lib.nmt_translator_prepare_prefix(
                ptr, c_lines, c_targets, n, ctypes.byref(prepared), ctypes.byref(err))
        else:
            status = self._lib.nmt_translator_prepare(ptr, c_lines, n, ctypes.byref(prepared),
                                                      ctypes.byref(err))
        if status != _capi.STATUS_OK:
            return status
        try:
            keys = (ctypes.c_uint64 * n)(*line_keys)
            status = self._lib.nmt_prepared_set_line_keys(prepared, keys, ctypes.byref(err))
            if status == _capi.STATUS_OK:
                status = self._lib.nmt_translate_prepared(ptr, prepared, c_results,
                                                          ctypes.byref(err))
        finally:
            self._lib.nmt_prepared_free(prepared)
        return status

    def translate(self, line, **options):
        """translate_batch([line], **options)[0]."""
        return self.translate_batch([line], **options)[0]

    def translate_batch_async(self, lines, **options):
        """translate_batch in this translator's background thread: returns a
        concurrent.futures.Future of the list of Results. Calls run one at a
        time, in order."""
        lines = batch_lines(lines)
        with self._lock:
            if self._model_ptr is None:
                raise ValueError("the translator is closed")
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="nmt-translator",
                    initializer=_mark_background)
            executor = self._executor
        return executor.submit(self.translate_batch, lines, **options)

    def _check_idle(self):
        """Under self._lock: the C translators are not streaming."""
        if self._busy:
            raise RuntimeError("the translator is busy with %s" % self._busy)

    # -- streaming through the host pipeline ------------------------------------

    def _pipeline_translators(self):
        """(C translators, labels) for the pipeline, under self._lock: this
        translator's own, or one a device / CPU worker (made once)."""
        if self._pool is not None:
            return self._pool
        if self._devices is None and self._workers in (None, 1):
            ptr = self._get(self._default_key)
            label = "CUDA device %d" % self._options.device_index \
                if self._lib.nmt_translator_device(ptr) == _capi.DEVICE_CUDA else "CPU worker 0"
            self._pool = ([ptr], [label])
            return self._pool
        if self._devices is not None:
            devices = list(range(self._lib.nmt_cuda_available())) if self._devices == "all" \
                else [_capi.c_int(d, "devices") for d in self._devices]
            if not devices:
                raise ValueError("devices %r: no CUDA device" % (self._devices,))
            labels = ["CUDA device %d" % d for d in devices]
        else:
            devices = [None] * self._workers
            labels = ["CPU worker %d" % i for i in range(self._workers)]
        made = [None] * len(devices)

        def make(i):
            o = _capi.nmt_options.from_buffer_copy(self._options)
            if devices[i] is not None:
                o.device, o.device_index = _capi.DEVICE_CUDA, devices[i]
            handle = ctypes.c_void_p()
            err = _capi.nmt_error()
            models, weights, n = self._model_ptr
            if self._lib.nmt_translator_create_ensemble(models, weights, n, ctypes.byref(o),
                                                        ctypes.byref(handle),
                                                        ctypes.byref(err)) != _capi.STATUS_OK:
                return err
            made[i] = handle.value
            return None

        if self._devices is not None:  # devices start up in parallel (the GIL is released)
            with concurrent.futures.ThreadPoolExecutor(max_workers=len(devices)) as pool:
                errors = list(pool.map(make, range(len(devices))))
        else:  # the BLAS keeps one thread count for the process: one after the other
            errors = [make(i) for i in range(len(devices))]
        failed = [e for e in errors if e is not None]
        if failed:
            for ptr in made:
                if ptr:
                    self._lib.nmt_translator_free(ptr)
            raise_error(failed[0])
        self._pool = (made, labels)
        return self._pool

    def _open_pipeline(self, what, read_batch_size, host_threads, dry_run, output):
        """A Pipeline over the pipeline translators; marks the translator busy."""
        with self._lock:
            self._check_idle()
            translators, labels = ([], []) if dry_run else self._pipeline_translators()
            self._busy = what
        try:
            # The pipeline's host side reads the source as the first model does
            # (an ensemble's models read it the same way).
            return _pipeline.Pipeline(self._lib, self._model_ptr[0][0], self._options,
                                      translators, labels, read_batch_size, host_threads,
                                      dry_run, output)
        except BaseException:
            self._done_streaming()
            raise

    def _done_streaming(self):
        with self._lock:
            self._busy = None

    def translate_file(self, input_path, output_path, with_scores=False, read_batch_size=0,
                       host_threads=0, skip_lines=0, limit_lines=None, dry_run=False):
        """Translates the lines of input_path into output_path through the
        library's host pipeline (as the translate program does): one output
        line per input line, in order, "SCORE\tTEXT" with with_scores, an
        empty line for a refused one. read_batch_size: lines sorted and
        batched together (0: 8 x batch_size); host_threads: the pipeline's
        pool that tokenizes and formats (0: the cores); skip_lines,
        limit_lines: the part of the input to translate; dry_run: no
        translation, each line's tokens back through the detokenizer.
        Returns nmt.FileStats. A translator that
        fails gives its windows to the others (a RuntimeWarning names it);
        when none is left, raises nmt.Error naming the lines not written and
        the skip_lines that resumes."""
        output = _capi.PIPELINE_OUTPUT_SCORES if with_scores else _capi.PIPELINE_OUTPUT_TEXT
        pipeline = self._open_pipeline("translate_file", read_batch_size, host_threads,
                                       dry_run, output)
        try:
            with pipeline:
                return _pipeline.translate_file(pipeline, input_path, output_path, skip_lines,
                                                limit_lines)
        finally:
            self._done_streaming()

    def translate_iterable(self, source, read_batch_size=0, host_threads=0, dry_run=False):
        """Translates the lines of source (an iterable of str or UTF-8 bytes)
        through the library's host pipeline, yielding one nmt.Result a line,
        in order, as translate_batch would give it. Lines are read ahead in
        windows of read_batch_size (0: 8 x batch_size); memory stays bounded
        whatever the source's length. The translator is busy until the
        generator is exhausted or closed."""
        pipeline = self._open_pipeline("translate_iterable", read_batch_size, host_threads,
                                       dry_run, _capi.PIPELINE_OUTPUT_NONE)
        try:
            with pipeline:
                yield from _pipeline.translate_iterable(pipeline, source)
        finally:
            self._done_streaming()

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
            self._check_idle()
            if self._pool is not None:  # the pipeline's own (not the default one)
                own = set(self._translators.values())
                for ptr in self._pool[0]:
                    if ptr not in own:
                        self._lib.nmt_translator_free(ptr)
                self._pool = None
            for ptr in self._translators.values():
                self._lib.nmt_translator_free(ptr)
            self._translators.clear()
            self._model_ptr = None
        self._models._release()

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
