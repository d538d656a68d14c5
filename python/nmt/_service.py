"""Service: nmt_service, requests as concurrent.futures.Future objects.

Each submit passes one C callback (made once, kept for the life of the
process) and a key into a table of pending requests as the callback's user
pointer, and keeps the request's handle so that Future.cancel() can cancel
it. The callback runs on the thread that completes the request (a worker, or
the caller of cancel/shutdown; ctypes takes the GIL for it): it copies the
result out, releases the handle (the service's own reference goes after the
callback returns, docs/service.md) and completes the future."""

import atexit
import concurrent.futures
import ctypes
import itertools
import sys
import threading
import time
import traceback
import weakref

from . import _capi, _options
from ._model import as_ensemble
from ._results import (Busy, Closed, ServiceStats, Status, batch_lines, copy_result, copy_struct,
                       encode_line, error_from, line_error, raise_error)
from ._translator import RULE_OPTIONS, fill_options, suppress_text

_pending = {}  # key -> _Request, from submit until the callback
_pending_lock = threading.Lock()
_keys = itertools.count(1)
_live = weakref.WeakSet()  # services not closed yet, closed at exit
_callback = threading.local()  # .active: this thread is running a request's callback


class _Request:
    __slots__ = ("lock", "lib", "handle", "done", "future", "service")

    def __init__(self, lib, service):
        self.lock = threading.RLock()  # the callback may run inside cancel() on this thread
        self.lib = lib
        self.handle = None  # the C handle while the request is not complete
        self.done = False
        self.future = RequestFuture(self)
        self.service = service  # keeps the service alive until the request completes


class RequestFuture(concurrent.futures.Future):
    """The future of one submitted line: its result is an nmt.Result (per-line
    errors and DEADLINE are results with that status); a request cancelled by
    cancel() or by shutdown(drain=False) ends cancelled (result() raises
    concurrent.futures.CancelledError)."""

    def __init__(self, request=None):
        super().__init__()
        self._request = request

    def cancel(self):
        """Cancels the request: True when it was still queued (the future is
        now cancelled). A request being translated is cancelled when its batch
        ends (this returns False; the future then ends cancelled)."""
        req = self._request
        if req is None:
            return super().cancel()
        with req.lock:
            if not req.done and req.handle is not None:
                req.lib.nmt_request_cancel(req.handle)
        return self.cancelled()

    def _complete(self, result):
        self._request = None
        if result.status == Status.CANCELLED:
            super().cancel()
            self.set_running_or_notify_cancel()
        else:
            self.set_result(result)


def _on_complete(request, result, user):
    """The C callback (never raises into C)."""
    outer = getattr(_callback, "active", False)
    _callback.active = True
    try:
        with _pending_lock:
            req = _pending.pop(user, None)
        if req is None:
            return
        value = copy_result(result.contents)
        with req.lock:
            req.done = True
            req.handle = None
            req.lib.nmt_request_free(request)  # the handle's reference
        req.future._complete(value)
        req.service = None  # may be the last reference: see Service.__del__
        del req
    except BaseException:  # noqa: B902 - nothing may propagate into the C worker
        try:
            traceback.print_exc()
        except Exception:
            pass
    finally:
        _callback.active = outer


_CALLBACK = _capi.REQUEST_CALLBACK(_on_complete)


def _completed(result):
    f = RequestFuture()
    f.set_result(result)
    return f


class Service:
    """An asynchronous translation service (nmt_service): a queue, worker
    threads (workers= on the CPU, one per GPU on CUDA: devices=[0, 1] or
    devices="all") that
    batch the requests as they arrive, per-request options and deadlines.

    Service(model_or_path, device="auto", workers=1, devices=None,
    weights=None (model_or_path a list: an ensemble, as Translator's),
    batch_size=256, max_delay_us, max_batch_tokens, continuous=False,
    join_every=4, workers_per_device=2, queue_capacity=4096, beam_size=5, ...)
    (None: nmt_service_options_init's default): beam_size is the largest
    beam a request may ask for, batch_size the most sentences a batch holds,
    max_delay_us how long a worker waits for a batch to fill,
    max_batch_tokens the source tokens a batch holds at most, continuous
    whether a CUDA worker keeps one search running that requests join and
    leave (continuous batching) rather than batching (the default), join_every
    the steps between the points where they join and leave,
    workers_per_device the CUDA workers (translators) on each device; the other
    keywords are Translator's. Raises
    nmt.Error when the model or the workers cannot be made.

    Thread-safe: submit from any thread. A context manager: on exit, shuts
    down draining the queue, then closes."""

    def __init__(self, model, device="auto", workers=None, devices=None, batch_size=None,
                 max_delay_us=None, queue_capacity=None, max_batch_tokens=None, continuous=None,
                 join_every=None, workers_per_device=None, library=None, weights=None,
                 **options):
        self._models = as_ensemble(model, weights, library)
        self.model = self._models.shown()
        self._lib = self._models._lib
        so = _capi.nmt_service_options()
        self._lib.nmt_service_options_init(ctypes.byref(so))
        service_batch = so.translator.batch_size  # the service's default, not a translator's
        fill_options(self._lib, so.translator, device, batch_size=batch_size, **options)
        if batch_size is None:
            so.translator.batch_size = service_batch
        if workers_per_device is not None:
            so.workers_per_device = _capi.c_int(workers_per_device, "workers_per_device")
        if workers is not None:
            so.cpu_workers = _capi.c_int(workers, "workers")
        if queue_capacity is not None:
            so.queue_capacity = _capi.c_int(queue_capacity, "queue_capacity")
        if max_delay_us is not None:
            so.max_delay_us = _capi.c_int(max_delay_us, "max_delay_us")
        if max_batch_tokens is not None:
            so.max_batch_tokens = _options.value("max_batch_tokens", max_batch_tokens)
        if continuous is not None:
            so.continuous = 1 if continuous else 0
        if join_every is not None:
            so.join_every = _capi.c_int(join_every, "join_every")
        device_array = None
        if devices == "all":
            so.n_devices = -1  # every visible CUDA device
        elif devices:
            device_array = (ctypes.c_int * len(devices))(
                *[_capi.c_int(d, "devices") for d in devices])
            so.n_devices = len(devices)
            so.devices = device_array
        self._cond = threading.Condition()
        self._shutdown_lock = threading.Lock()  # one nmt_service_shutdown at a time
        self._in_calls = 0  # C calls in flight on self._ptr (close waits for them)
        self._closed = False
        self._ptr = None
        models, c_weights, n = self._models._acquire()
        handle = ctypes.c_void_p()
        err = _capi.nmt_error()
        if self._lib.nmt_service_create_ensemble(models, c_weights, n, ctypes.byref(so),
                                                 ctypes.byref(handle),
                                                 ctypes.byref(err)) != _capi.STATUS_OK:
            self._models._release()
            raise_error(err)
        self._ptr = handle.value
        _live.add(self)

    # -- C calls on the service, which close() must not free under them ----------

    def _enter(self):
        with self._cond:
            if self._closed:
                raise error_from(Status.CLOSED, "the service is closed")
            self._in_calls += 1
            return self._ptr

    def _leave(self):
        with self._cond:
            self._in_calls -= 1
            if self._in_calls == 0:
                self._cond.notify_all()

    # -- requests -----------------------------------------------------------------

    def submit(self, line, beam_size=None, n_best=None, alpha=None, max_len_a=None,
               max_len_b=None, deadline_ms=None, shrink=None, target_prefix=None,
               return_alternatives=None, target=None, line_key=None, suppress=None,
               coverage_penalty=None, coverage_beta=None, **rules):
        """Queues one line and returns a concurrent.futures.Future of its
        nmt.Result at once. Options (None: the service's): beam_size (up to
        the service's), n_best, alpha, max_len_a, max_len_b, deadline_ms (not
        translated within it: a result with Status.DEADLINE), shrink (False:
        full softmax; True: the service's shrinking), target_prefix (the
        translation continues it), return_alternatives, target (score this
        translation instead, as Translator.score_batch), the sampling and
        logit-rule options of Translator (RULE_OPTIONS, suppress,
        coverage_penalty, coverage_beta) and line_key (the request's sampling
        key, default 0; a sampling request with no beam_size of its own takes
        beam 1). Raises nmt.Busy when
        the queue is full, nmt.Closed after shutdown, nmt.ArgumentError for
        bad options (nothing queued in each case). A line the library cannot
        take (a NUL byte) gives a future already done with its refusal."""
        data, refused = encode_line(line)
        ro = _capi.nmt_request_options()
        self._lib.nmt_request_options_init(ctypes.byref(ro))
        for name, value in (("beam_size", beam_size), ("n_best", n_best), ("alpha", alpha),
                            ("max_len_a", max_len_a), ("max_len_b", max_len_b)):
            if value is not None:
                setattr(ro, name, _options.value(name, value))
        if deadline_ms is not None:
            ro.deadline_ms = float(deadline_ms)
        if shrink is not None:
            ro.shrink = 1 if shrink else 0
        if return_alternatives is not None:
            ro.return_alternatives = 1 if return_alternatives else 0
        for name, value in (("target_prefix", target_prefix), ("target", target)):
            if value is not None and refused is None:
                encoded, refused = encode_line(value)
                if refused is not None:
                    refused = line_error("%s: %s" % (name, refused.message))
                setattr(ro, name, encoded)
        unknown = set(rules) - set(RULE_OPTIONS)
        if unknown:
            raise TypeError("unknown option(s): %s" % ", ".join(sorted(unknown)))
        for name, value in (*rules.items(), ("coverage_penalty", coverage_penalty),
                            ("coverage_beta", coverage_beta)):
            if value is not None:
                c_type = ctypes.c_int64 if name == "seed" else ctypes.c_int
                setattr(ro, name, _options.value(name, value, c_type))
        if line_key is not None:
            ro.line_key = _capi.c_uint64(line_key, "line_key")
        if suppress is not None:
            ro.suppress = suppress_text(suppress)  # read at submit
        if refused is not None:
            return _completed(refused)
        req = _Request(self._lib, self)
        key = next(_keys)
        with _pending_lock:
            _pending[key] = req
        handle = ctypes.c_void_p()
        err = _capi.nmt_error()
        ptr = self._enter_or_forget(key)
        try:
            status = self._lib.nmt_service_submit(ptr, data, ctypes.byref(ro), _CALLBACK, key,
                                                  ctypes.byref(handle), ctypes.byref(err))
        finally:
            self._leave()
        if status != _capi.STATUS_OK:  # nothing queued: no callback will come
            with _pending_lock:
                _pending.pop(key, None)
            raise_error(err)
        with req.lock:
            if not req.done:  # else the callback has already released it
                req.handle = handle.value
        return req.future

    def _enter_or_forget(self, key):
        try:
            return self._enter()
        except BaseException:
            with _pending_lock:
                _pending.pop(key, None)
            raise

    def translate_batch(self, lines, **options):
        """Submits every line (waiting for this call's earlier requests while
        the queue is full) and returns their nmt.Results in order. options:
        as submit's. Raises concurrent.futures.CancelledError when a request
        was cancelled (a shutdown without draining)."""
        futures = []
        lines = batch_lines(lines)
        try:
            for line in lines:
                delay = 0.0005
                while True:
                    try:
                        futures.append(self.submit(line, **options))
                        break
                    except Busy:
                        waiting = [f for f in futures if not f.done()]
                        if waiting:
                            concurrent.futures.wait(waiting, timeout=0.05,
                                                    return_when=concurrent.futures.FIRST_COMPLETED)
                        else:  # full of others' requests
                            time.sleep(delay)
                            delay = min(2 * delay, 0.05)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
        return [f.result() for f in futures]

    def translate(self, line, **options):
        """submit(line, **options).result()."""
        return self.submit(line, **options).result()

    def stats(self):
        """nmt.ServiceStats: queued, running, submitted, completed, failed,
        cancelled, expired, rejected, batches, batch_sentences, and on CUDA
        device_memory_used / device_memory_total (bytes)."""
        st = _capi.nmt_service_stats()
        ptr = self._enter()
        try:
            self._lib.nmt_service_stats_get(ptr, ctypes.byref(st))
        finally:
            self._leave()
        return copy_struct(ServiceStats, st)

    # -- lifetime -----------------------------------------------------------------

    def shutdown(self, drain=True):
        """Stops taking requests (then submit raises nmt.Closed); with drain
        translates what is queued, without it cancels it; returns (finished,
        cancelled), the queued requests handled each way, once the workers
        have stopped. Idempotent (later calls return the same counts; (0, 0)
        once closed). Not from a
        request's callback (it would wait for its own worker)."""
        _not_in_callback("shutdown")
        finished, cancelled = ctypes.c_int64(0), ctypes.c_int64(0)
        try:
            ptr = self._enter()
        except Closed:
            return 0, 0
        try:
            with self._shutdown_lock:
                self._lib.nmt_service_shutdown(ptr, 1 if drain else 0, ctypes.byref(finished),
                                               ctypes.byref(cancelled))
        finally:
            self._leave()
        return finished.value, cancelled.value

    def close(self):
        """Shuts down without draining if still running (queued requests end
        cancelled), then frees the service. Idempotent. Not from a request's
        callback."""
        _not_in_callback("close")
        with self._cond:
            if self._closed:
                return
            self._closed = True  # later submits fail fast in Python
            ptr = self._ptr
        if ptr is None:
            return
        with self._shutdown_lock:  # those in flight get CLOSED
            self._lib.nmt_service_shutdown(ptr, 0, None, None)
        with self._cond:
            while self._in_calls:
                self._cond.wait()
            self._ptr = None
        _live.discard(self)
        _destroy(self._lib, ptr, self._models)

    @property
    def closed(self):
        return self._closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown(drain=True)
        self.close()

    def __del__(self):
        # Nothing else refers to the service now: no call is in flight. On a
        # callback's thread (a worker's), shutting down would wait for that
        # worker: another thread does it.
        ptr = getattr(self, "_ptr", None)
        if ptr is None or self._closed or sys.is_finalizing():
            return
        self._closed = True
        self._ptr = None
        if getattr(_callback, "active", False):
            threading.Thread(target=_destroy, args=(self._lib, ptr, self._models),
                             name="nmt-service-close").start()
        else:
            _destroy(self._lib, ptr, self._models)

    def __repr__(self):
        return "nmt.Service(%r%s)" % (self.model, ", closed" if self._closed else "")


def _not_in_callback(what):
    if getattr(_callback, "active", False):
        raise RuntimeError("Service.%s() from a request's callback (a future's done callback) "
                           "would wait for its own worker" % what)


def _destroy(lib, ptr, models):
    """Shuts the C service down without draining, frees it, releases the models."""
    lib.nmt_service_shutdown(ptr, 0, None, None)
    lib.nmt_service_free(ptr)
    models._release()


@atexit.register
def _close_all():
    """Workers must not call into Python once the interpreter is going."""
    for service in list(_live):
        try:
            service.close()
        except Exception:
            pass
