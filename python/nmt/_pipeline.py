"""The library's host pipeline (nmt_pipeline, docs/scale-out.md) under
Translator.translate_file and Translator.translate_iterable: lines are read
(or pushed), tokenized, batched, translated by every translator of the
Translator (its devices or CPU workers) and given back in input order, by
the same C code as the translate program."""

import ctypes
import dataclasses
import os
import time
import warnings

from . import _capi
from ._results import copy_result, encode_line, error_from, raise_error

# Lines handed to nmt_pipeline_push at a time.
_PUSH_LINES = 1024
# nmt_pipeline_next's end of the input (its None is "not yet").
END = object()


@dataclasses.dataclass(frozen=True)
class FileStats:
    """What translate_file did: lines (read and answered, the refused ones
    included), refused (those given an empty output line), seconds (wall
    time), lines_per_second, and failed (each translator that failed during
    the run, by device, with the error: its windows went to the others)."""
    lines: int
    refused: int
    seconds: float
    lines_per_second: float
    failed: tuple = ()


class Pipeline:
    """One nmt_pipeline over translators (C pointers, not owned), labelled
    for the messages. A context manager: its exit frees it."""

    def __init__(self, lib, model_ptr, options, translators, labels, window_lines=0,
                 host_threads=0, dry_run=False, output=_capi.PIPELINE_OUTPUT_NONE):
        self._lib = lib
        self._labels = labels
        self._ptr = None
        po = _capi.nmt_pipeline_options()
        lib.nmt_pipeline_options_init(ctypes.byref(po))
        po.window_lines = _capi.c_int(window_lines or 0, "read_batch_size")
        po.host_threads = _capi.c_int(host_threads or 0, "host_threads")
        po.translators = max(1, len(translators))
        po.dry_run = 1 if dry_run else 0
        po.output = output
        handle = ctypes.c_void_p()
        err = _capi.nmt_error()
        if lib.nmt_pipeline_create(model_ptr, ctypes.byref(options), ctypes.byref(po),
                                   ctypes.byref(handle), ctypes.byref(err)) != _capi.STATUS_OK:
            raise_error(err)
        self._ptr = handle.value
        for t in ([] if dry_run else translators):
            if lib.nmt_pipeline_add_translator(self._ptr, t, ctypes.byref(err)) != \
                    _capi.STATUS_OK:
                self.close()
                raise_error(err)

    def next(self, wait):
        """The next window in input order (give it back with release), None
        when none is ready (wait 0) or none is in flight (push more), or END;
        nmt.Error for a window no translator could translate (after warning
        of the other failed ones) or a failed read."""
        err = _capi.nmt_error()
        window = ctypes.POINTER(_capi.nmt_pipeline_window)()
        status = self._lib.nmt_pipeline_next(self._ptr, 1 if wait else 0, ctypes.byref(window),
                                             ctypes.byref(err))
        if status == _capi.STATUS_BUSY:
            return None
        if status != _capi.STATUS_OK:
            raise_error(err)
        if not window:
            return END
        w = window.contents
        if w.status != _capi.STATUS_OK:
            failed = error_from(w.status, "lines %d-%d failed on %s: %s; lines %d and after were "
                                "not given (resume with skip_lines=%d)" % (
                                    w.first_line + 1, w.first_line + w.n_lines,
                                    self._label(w.translator),
                                    w.error.message.decode("utf-8", "replace"),
                                    w.first_line + 1, w.first_line))
            self.warn_failed(but=w.translator)
            self.release(window)
            raise failed
        return window

    def release(self, window):
        self._lib.nmt_pipeline_release(self._ptr, window)

    def _label(self, i):
        return self._labels[i] if 0 <= i < len(self._labels) else "the host"

    def failed(self, but=-1):
        """Each translator that failed (label and error), but `but`."""
        err = _capi.nmt_error()
        return tuple("%s (%s)" % (self._labels[i], err.message.decode("utf-8", "replace"))
                     for i in range(len(self._labels))
                     if i != but and self._lib.nmt_pipeline_translator_failed(
                         self._ptr, i, ctypes.byref(err)))

    def warn_failed(self, but=-1):
        for what in self.failed(but):
            warnings.warn("nmt: %s failed; its windows went to the other translators" % what,
                          RuntimeWarning, stacklevel=4)

    def lines_read(self):
        s = _capi.nmt_pipeline_stats()
        self._lib.nmt_pipeline_stats_get(self._ptr, ctypes.byref(s))
        return s.lines_read

    def close(self):
        if self._ptr is not None:
            self._lib.nmt_pipeline_free(self._ptr)
            self._ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def translate_file(pipeline, input_path, output_path, skip_lines=0, limit_lines=None):
    """The lines of input_path, translated, into output_path; FileStats."""
    err = _capi.nmt_error()
    started = time.monotonic()
    refused = 0
    fd = os.open(os.fspath(input_path), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        with open(output_path, "wb") as out:
            if pipeline._lib.nmt_pipeline_read_fd(
                    pipeline._ptr, fd, -1,  # no target lines
                    _capi.c_integer(ctypes.c_int64, skip_lines, "skip_lines"),
                    -1 if limit_lines is None else
                    _capi.c_integer(ctypes.c_int64, limit_lines, "limit_lines"),
                    ctypes.byref(err)) != _capi.STATUS_OK:
                raise_error(err)
            while True:
                window = pipeline.next(wait=True)
                if window is END:
                    break
                try:
                    w = window.contents
                    refused += sum(1 for i in range(w.n_lines)
                                   if w.results[i].status != _capi.STATUS_OK)
                    if w.text_bytes:
                        out.write(ctypes.string_at(w.text, w.text_bytes))
                finally:
                    pipeline.release(window)
    finally:
        os.close(fd)
    pipeline.warn_failed()
    seconds = time.monotonic() - started
    lines = pipeline.lines_read() - int(skip_lines)
    return FileStats(lines, refused, seconds, lines / seconds if seconds > 0 else 0.0,
                     pipeline.failed())


def translate_iterable(pipeline, source):
    """Yields a Result for each line of source (str or bytes), in order."""
    err = _capi.nmt_error()
    refused = {}        # line number -> the Result of a line refused here (a NUL byte)
    pending = []        # encoded lines not pushed yet
    taken = given = 0   # lines taken from source, results yielded
    lines = iter(source)
    exhausted = ended = False
    while True:
        while not exhausted and len(pending) < _PUSH_LINES:
            try:
                data, refusal = encode_line(next(lines))
            except StopIteration:
                exhausted = True
                break
            if refusal is not None:
                refused[taken] = refusal
            pending.append(data if refusal is None else b"")
            taken += 1
        if pending:
            array = (ctypes.c_char_p * len(pending))(*pending)
            took = pipeline._lib.nmt_pipeline_push(pipeline._ptr, array, len(pending), 0,
                                                   ctypes.byref(err))
            if took < 0:
                raise_error(err)
            pending = pending[took:]
        if exhausted and not pending and not ended:
            pipeline._lib.nmt_pipeline_end(pipeline._ptr)
            ended = True
        # What is translated; waiting for it when the ring is full (lines are
        # pending) or everything is in.
        wait = bool(pending) or ended
        while True:
            window = pipeline.next(wait)
            if window is END:
                return
            if window is None:
                break
            try:
                w = window.contents
                results = [refused.pop(given + i) if given + i in refused
                           else copy_result(w.results[i]) for i in range(w.n_lines)]
            finally:
                pipeline.release(window)
            given += len(results)
            yield from results
            wait = False
