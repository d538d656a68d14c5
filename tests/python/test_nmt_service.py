"""test_nmt_service.py: nmt.Service (python/nmt/_service.py over the
library's nmt_service) on the CPU with the test model:
- futures equal Translator results under 4 submitting threads with mixed
  per-request options;
- BUSY at capacity, cancel of a queued request, a deadline, shutdown with
  and without draining, CLOSED after it, options refused at submit,
  counters;
- a fire-and-forget service kept alive by its request and closed off its
  worker's thread; close() refused in a callback.
Runs under pytest or as a script (ctest), with test_nmt_binding.py's model
and runner."""

import concurrent.futures
import gc
import os
import random
import sys
import threading
import time
import weakref

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, HERE)

import nmt  # noqa: E402
import test_nmt_binding as binding  # noqa: E402  (the runner)
from test_nmt_binding import BAD, LINES, model, service, translator  # noqa: E402


KINDS = [{}, dict(beam_size=2, n_best=2, alpha=0.6)]


def test_service_matches_translator():
    lines = LINES + [BAD]
    with translator() as t:
        ref = [t.translate_batch(lines, **kind) for kind in KINDS]
    failures = []
    with service(workers=2, max_delay_us=2000) as s:
        def client(seed):
            rng = random.Random(seed)
            order = [(k, i) for k in range(len(KINDS)) for i in range(len(lines))]
            rng.shuffle(order)
            futures = [(k, i, s.submit(lines[i], **KINDS[k])) for k, i in order]
            for k, i, f in futures:
                if f.result(timeout=120) != ref[k][i]:
                    failures.append((seed, k, i))
        threads = [threading.Thread(target=client, args=(seed,)) for seed in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert s.translate_batch(lines, **KINDS[1]) == ref[1]
        assert s.translate(lines[0]) == ref[0][0]
        try:
            s.translate_batch("abc")  # refused before anything is submitted
            raise AssertionError("the service took one str as a batch")
        except TypeError:
            pass
        st = s.stats()
    assert not failures, failures
    total = (4 * len(KINDS) + 1) * len(lines) + 1
    assert st.submitted == total and st.completed == total, st
    assert st.queued == 0 and st.running == 0 and st.rejected == 0 and st.cancelled == 0
    assert st.failed == 4 * len(KINDS) + 1 and st.batch_sentences == total
    assert s.closed


def test_service_contract():
    with translator() as t:
        ref = t.translate_batch(LINES)
    s = service(queue_capacity=2, max_delay_us=800000)  # requests wait in the queue
    a, b = s.submit(LINES[5]), s.submit(LINES[6])
    try:
        s.submit(LINES[7])
        raise AssertionError("a third request at capacity 2 was queued")
    except nmt.Busy as e:
        assert e.status == nmt.Status.BUSY and "full" in e.message
    assert not b.done() and b.cancel() and b.cancelled()
    try:
        b.result()
        raise AssertionError("a cancelled future has a result")
    except concurrent.futures.CancelledError:
        pass
    assert a.result(timeout=30) == ref[5]
    assert not a.cancel() and not a.cancelled()
    d = s.submit(LINES[8], deadline_ms=1)
    assert d.result(timeout=30).status == nmt.Status.DEADLINE
    for bad in (dict(beam_size=4), dict(beam_size=2, n_best=3), dict(deadline_ms=-5),
                dict(shrink=True)):
        try:
            s.submit(LINES[8], **bad)
            raise AssertionError("accepted %s" % bad)
        except nmt.ArgumentError as e:
            assert isinstance(e, ValueError) and e.status == nmt.Status.ERROR_ARGUMENT
    nul = s.submit("a\0b")  # refused in Python: done at once, not counted
    assert nul.done() and nul.result().status == nmt.Status.ERROR_INPUT
    q = [s.submit(LINES[9]), s.submit(LINES[10])]
    assert s.shutdown(drain=False) == (0, 2)
    assert all(f.cancelled() for f in q)
    try:
        s.submit(LINES[9])
        raise AssertionError("a submit after shutdown was queued")
    except nmt.Closed as e:
        assert e.status == nmt.Status.CLOSED
    assert s.shutdown() == (0, 2)  # idempotent: the same counts
    st = s.stats()
    assert (st.submitted, st.completed, st.cancelled, st.expired, st.rejected) == (5, 5, 3, 1, 1)
    s.close()
    s.close()
    for call in (lambda: s.submit(LINES[0]), s.stats):
        try:
            call()
            raise AssertionError("a closed service answered")
        except nmt.Closed:
            pass

    # Shutdown with draining translates what is queued; shrink=False on a
    # service with shrinking gives the full softmax's answer.
    with service(queue_capacity=8, max_delay_us=5000000, top_words=10) as s:
        futures = [s.submit(LINES[i], shrink=False) for i in range(2, 5)]
        assert s.shutdown(drain=True) == (3, 0)
        assert [f.result(timeout=0) for f in futures] == ref[2:5]

    # translate_batch waits for its own requests while the queue is full.
    with service(queue_capacity=2, max_delay_us=50000) as s:
        assert s.translate_batch(LINES) == ref
        assert s.stats().rejected > 0


def test_service_fire_and_forget_and_callbacks():
    with translator() as t:
        ref = t.translate(LINES[3])
    # The service is referenced only by its request: kept until the answer,
    # then closed on another thread than the worker calling back.
    gc.collect()
    users = model()._users
    s = service()
    gone = weakref.ref(s)
    future = s.submit(LINES[3])
    del s
    assert future.result(timeout=60) == ref
    deadline = time.monotonic() + 60
    while (gone() is not None or model()._users != users) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert gone() is None and model()._users == users
    errors = []
    with service(max_delay_us=5000000) as s:  # held in the queue until the shutdown
        f = s.submit(LINES[3])

        def on_done(fut):
            try:
                s.close()
                errors.append("close() ran in a callback")
            except RuntimeError:
                errors.append(None)
        f.add_done_callback(on_done)
        assert s.shutdown(drain=True) == (1, 0)  # the worker translates it and calls back
        assert f.result(timeout=0) == ref
    assert errors == [None]


if __name__ == "__main__":
    binding.main(__file__, globals())
