"""test_nmt_binding.py: the Python package nmt (python/nmt: ctypes over
libnmt) on the CPU with the test model.

- the ctypes structs against the C ones: every sizeof, alignment and offsetof
  and every enum constant, from a C program compiled here against the built
  nmt.h (skipped without a C compiler);
- Translator answers equal translate's (text and score, 1-best and n-best,
  LSH shrinking) for the same lines and options; per-call search options;
  n-best order; per-line refusals (invalid UTF-8, NUL, too long, lone
  surrogate) beside good lines; the asynchronous variant;
- the Service: tests/python/test_nmt_service.py, with this file's model
  and runner;
- errors: a missing or malformed model file, bad options, integers past a C
  int and paths with a NUL byte (refused, not wrapped or cut), the library
  not found (the message names what was tried); the wheel builds (pip).

Runs under pytest (python3 -m pytest tests/python/test_nmt_binding.py) or as
a script (ctest: pytest when installed, else a plain runner)."""

import ctypes
import os
import random
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import nmt  # noqa: E402
from nmt import _capi  # noqa: E402

try:
    import pytest
except ImportError:
    pytest = None

BINARY_DIR = os.environ.get("NMT_BINARY_DIR", os.path.join(SOURCE_DIR, "build"))
LIBRARY = os.path.join(BINARY_DIR, "libnmt.so")
MODEL = os.environ.get("NMT_TEST_MODEL", os.path.join(BINARY_DIR, "test-model.bin"))
TRANSLATE = os.environ.get("NMT_TRANSLATE", os.path.join(BINARY_DIR, "translate"))
WORDS = ["ein", "mann", "frau", "hund", "spielt", "im", "park", "Haus", "rot", "Ball", ".", "!",
         "Zwei", "kind", "läuft", "über", "die", "Straße"]
OPTIONS = dict(device="cpu", beam_size=3, max_len_b=8)
CLI_OPTIONS = ["--device", "cpu", "-b", "3", "--max-len-b", "8"]
BAD = b"Ein \xff Hund"  # invalid UTF-8: refused by the library


class Skipped(Exception):
    pass


def skip(reason):
    if pytest is not None:
        pytest.skip(reason)
    raise Skipped(reason)


def make_lines(n=24, seed=7):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9))) for _ in range(n)]


LINES = make_lines()
_shared = {}


def model():
    if "model" not in _shared:
        for path in (LIBRARY, MODEL):
            if not os.path.exists(path):
                skip("%s not built (NMT_BINARY_DIR=%s)" % (path, BINARY_DIR))
        # A stale struct would read C memory wrongly (a crash): fail first.
        diff = compare_layout()
        assert not diff, "python/nmt/_capi.py vs nmt.h (ctypes, C): %s" % diff
        _shared["model"] = nmt.Model(MODEL, library=LIBRARY)
    return _shared["model"]


def translator(**options):
    return nmt.Translator(model(), **dict(OPTIONS, **options))


def service(**options):
    return nmt.Service(model(), **dict(OPTIONS, **options))


def run_cli(args, data):
    if not os.path.exists(TRANSLATE):
        skip("translate not built")
    p = subprocess.run([TRANSLATE, "-m", MODEL, *args], input=data, capture_output=True,
                       timeout=300)
    assert p.returncode in (0, 1), p.stderr.decode()
    return p.stdout.decode("utf-8").split("\n")[:-1]


# ---- the structs ------------------------------------------------------------------


def compare_layout():
    """{what: (ctypes, C)} for every difference between _capi's structs and
    enums and the built nmt.h's (a C program prints sizeof, _Alignof,
    offsetof and the constants); None without a C compiler. Once."""
    if "layout" in _shared:
        return _shared["layout"]
    header = os.path.join(BINARY_DIR, "include", "nmt.h")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or not os.path.exists(header):
        _shared["layout"] = None
        return None
    lines = ['#include "nmt.h"', "#include <stdio.h>", "#include <stddef.h>",
             "int main(void) {"]
    expect = {"version": nmt.__version__}
    for s in _capi.STRUCTS:
        name = s.__name__
        lines.append('printf("%s sizeof %%zu\\n", sizeof(%s));' % (name, name))
        lines.append('printf("%s alignof %%zu\\n", _Alignof(%s));' % (name, name))
        expect["%s sizeof" % name] = ctypes.sizeof(s)
        expect["%s alignof" % name] = ctypes.alignment(s)
        for field, ftype in s._fields_:
            lines.append('printf("%s.%s offsetof %%zu\\n", offsetof(%s, %s));'
                         % (name, field, name, field))
            lines.append('printf("%s.%s sizeof %%zu\\n", sizeof(((%s *)0)->%s));'
                         % (name, field, name, field))
            expect["%s.%s offsetof" % (name, field)] = getattr(s, field).offset
            expect["%s.%s sizeof" % (name, field)] = ctypes.sizeof(ftype)
    for enum in ("nmt_status", "nmt_device", "nmt_shrink_mode", "nmt_lsh_share", "nmt_lsh_lists",
                 "nmt_precision", "nmt_sparse"):
        lines.append('printf("%s sizeof %%zu\\n", sizeof(%s));' % (enum, enum))
        expect["%s sizeof" % enum] = ctypes.sizeof(ctypes.c_int)
    for const, value in _capi.ENUM_CONSTANTS.items():
        lines.append('printf("%s value %%d\\n", (int)%s);' % (const, const))
        expect["%s value" % const] = value
    lines.append('printf("version %s\\n", NMT_VERSION_STRING);')
    lines.append("return 0; }")
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run([cc, "-std=c11", "-I", os.path.dirname(header), src, "-o", exe],
                       check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        key, value = line.rsplit(" ", 1)
        got[key] = value if key == "version" else int(value)
    diff = {k: (expect.get(k), got.get(k)) for k in set(expect) | set(got)
            if expect.get(k) != got.get(k)}
    _shared["layout"] = diff
    return diff


def test_struct_layout():
    diff = compare_layout()
    if diff is None:
        skip("no C compiler or no built nmt.h")
    assert not diff, "python/nmt/_capi.py vs nmt.h (ctypes, C): %s" % diff


def test_runtime_layout_check():
    """The library reports its structs' sizes (nmt_struct_size) and a binding
    whose layout differs is refused at load, naming the struct."""
    lib = nmt.load_library(LIBRARY)
    for name in _capi.CHECKED_STRUCTS:
        assert lib.nmt_struct_size(name.encode()) == ctypes.sizeof(getattr(_capi, name)), name
    assert lib.nmt_struct_size(b"no_such_struct") == 0
    real = _capi.nmt_stats

    class shorter(ctypes.Structure):
        _fields_ = real._fields_[:-1]

    _capi.nmt_stats = shorter
    try:
        _capi._open(LIBRARY)
        raise AssertionError("a library of another nmt_stats layout was accepted")
    except AttributeError as e:
        assert "nmt_stats" in str(e) and "another version" in str(e), str(e)
    finally:
        _capi.nmt_stats = real


# ---- the translator ---------------------------------------------------------------


def rows_of(result, n_best):
    """translate's n-best rows for one Result: (score as printed, text)."""
    rows = [("%.9g" % h.score, h.text) for h in result.hypotheses] if result.ok else []
    return rows + [("-inf", "")] * (n_best - len(rows))


def test_translator_matches_cli():
    py_lines = LINES + [BAD, ""]
    data = b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in py_lines)
    # 1-best with scores
    with translator() as t:
        assert t.device == "cpu"
        results = t.translate_batch(py_lines)
    cli = run_cli(CLI_OPTIONS + ["--scores"], data)
    assert len(cli) == len(results)
    for r, row in zip(results, cli):
        score, text = row.split("\t", 1)
        assert (score, text) == rows_of(r, 1)[0]
    assert not results[-2].ok and results[-2].status == nmt.Status.ERROR_INPUT
    assert results[-1].ok and results[-1].text == ""
    # n-best 3
    with translator(n_best=3) as t:
        results = t.translate_batch(py_lines)
    cli = run_cli(CLI_OPTIONS + ["--n-best", "3"], data)
    assert len(cli) == 3 * len(results)
    for i, r in enumerate(results):
        rows = [tuple(row.split("\t")[2:]) for row in cli[3 * i:3 * i + 3]]
        assert rows == rows_of(r, 3), (i, rows, r)
    # LSH shrinking (nmt_shrink_options through ctypes)
    with translator(lsh=(4, 2, 8, 10, 2), lsh_share="row") as t:
        results = t.translate_batch(LINES)
    cli = run_cli(CLI_OPTIONS + ["--scores", "--lsh", "4,2,8,10,2", "--lsh-share", "row"],
                  data[:data.index(BAD)])
    assert [tuple(row.split("\t", 1)) for row in cli] == [rows_of(r, 1)[0] for r in results]
    # The CPU's kernels, instructions and threads as keywords: the CLI's bits
    for kw, flags in ((dict(cpu_kernels="reference", threads=1), ["--cpu-kernels", "reference"]),
                      (dict(cpu_isa="generic", threads=2), ["--cpu-isa", "generic"])):
        with translator(**kw) as t:
            results = t.translate_batch(LINES)
        cli = run_cli(CLI_OPTIONS + ["--scores"] + flags, data[:data.index(BAD)])
        assert [tuple(row.split("\t", 1)) for row in cli] == \
            [rows_of(r, 1)[0] for r in results], kw


def test_per_call_options_and_n_best():
    with translator(n_best=3) as t3:
        ref = t3.translate_batch(LINES)
    with translator(beam_size=4, alpha=0.6) as t:
        assert t.translate_batch(LINES, beam_size=3, n_best=3, alpha=1.0) == ref
        for _ in range(6):  # more search options than the cache holds
            for beam in (1, 2, 3):
                t.translate(LINES[0], beam_size=beam)
        assert t.translate_batch(LINES, beam_size=3, n_best=3, alpha=1.0) == ref
        try:
            t.translate("x", beam_size=2, n_best=3)
            raise AssertionError("n_best above the beam was accepted")
        except nmt.ArgumentError as e:
            assert e.status == nmt.Status.ERROR_ARGUMENT and "n_best" in e.message.lower()
        try:
            t.translate("x", beam=3)
            raise AssertionError("an unknown option was accepted")
        except TypeError:
            pass
    for r in ref:
        assert r.ok and len(r) == 3
        scores = [h.score for h in r]
        assert scores == sorted(scores, reverse=True)
        for h in r:
            assert isinstance(h, nmt.Hypothesis) and isinstance(h.text, str)
            assert isinstance(h.n_tokens, int) and h.log_prob <= 0.0
            assert len(h.alignment) == h.n_tokens and all(i >= 0 for i in h.alignment)


def test_line_errors():
    with translator(max_line_bytes=60) as t:
        results = t.translate_batch(["ein hund", BAD, "a\0b", "hund " * 20, "\ud800 hund",
                                     b"ein mann"])
        assert results[0].ok and results[5].ok
        for r in results[1:5]:
            assert not r.ok and r.status == nmt.Status.ERROR_INPUT and r.message
            assert r.hypotheses == [] and r.text == ""
            try:
                r.raise_for_status()
                raise AssertionError("raise_for_status did not raise")
            except nmt.Error as e:
                assert e.status == nmt.Status.ERROR_INPUT
        assert "UTF-8" in results[1].message and "NUL" in results[2].message
        assert "too long" in results[3].message
        assert t.translate_batch([]) == []
        try:
            t.translate_batch([1])
            raise AssertionError("a number was accepted as a line")
        except TypeError:
            pass
        # one string is not a batch of its characters (nor bytes one of ints)
        for one in ("abc", b"abc", bytearray(b"abc")):
            for call in (t.translate_batch, t.translate_batch_async):
                try:
                    call(one)
                    raise AssertionError("%r was taken as a batch" % (one,))
                except TypeError as e:
                    assert "list of lines" in str(e), e
        assert t.translate_batch(("ein hund",)) == t.translate_batch(["ein hund"])


def test_async():
    with translator() as t:
        ref = t.translate_batch(LINES)
        futures = [t.translate_batch_async(LINES[i:i + 5]) for i in range(0, len(LINES), 5)]
        got = [r for f in futures for r in f.result(timeout=120)]
        assert got == ref
        stats = t.stats()
        assert stats.sentences == 0  # collect_stats off
    try:
        t.translate("ein hund")
        raise AssertionError("a closed translator translated")
    except ValueError:
        pass
    with translator(collect_stats=1) as t:
        t.translate_batch(LINES)
        assert t.stats().sentences == len(LINES)


def test_model_lifetime():
    model()
    m = nmt.Model(MODEL, library=LIBRARY)
    assert "vocabulary" in m.describe()
    t = nmt.Translator(m, **OPTIONS)
    m.close()  # deferred: the translator still uses it
    assert t.translate(LINES[0]).ok
    t.close()
    t.close()
    assert m._ptr is None
    with nmt.Translator(MODEL, library=LIBRARY, **OPTIONS) as t2:  # from a path
        assert t2.translate(LINES[0]).ok


# ---- errors -----------------------------------------------------------------------


def test_errors():
    model()
    try:
        nmt.Model("/nonexistent/model.bin", library=LIBRARY)
        raise AssertionError("a missing model loaded")
    except nmt.Error as e:
        assert e.status == nmt.Status.ERROR_IO and "/nonexistent/model.bin" in e.message
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(b"not a model file at all" * 10)
        f.flush()
        try:
            nmt.Model(f.name, library=LIBRARY)
            raise AssertionError("a malformed model loaded")
        except nmt.Error as e:
            assert e.status == nmt.Status.ERROR_FORMAT, e
    for bad in (dict(device="tpu"), dict(lsh=(1, 2, 3)), dict(lsh_share="all"),
                dict(lsh=(8, 3, 500, 20, 2), top_words=10), dict(cpu_isa="avx9"),
                dict(cpu_kernels="gpu"), dict(threads=0)):
        try:
            translator(**bad)
            raise AssertionError("accepted %s" % bad)
        except ValueError:
            pass
    for bad in (dict(beam_size=0), dict(batch_size=-1), dict(n_best=4)):
        try:
            translator(**bad)
            raise AssertionError("accepted %s" % bad)
        except nmt.ArgumentError as e:
            assert e.message
    try:
        service(workers=0)
        raise AssertionError("a service without workers was made")
    except nmt.ArgumentError:
        pass
    if not nmt.cuda_available(LIBRARY):
        try:
            translator(device="cuda")
            raise AssertionError("device cuda without a GPU")
        except nmt.Error as e:
            assert e.status in (nmt.Status.ERROR_UNSUPPORTED, nmt.Status.ERROR_CUDA), e


def test_values_c_cannot_hold():
    """Integers past a C int and paths with a NUL byte are refused, never
    wrapped (2**32 + 3 was beam 3) or cut (path + "\\0x" loaded path)."""
    def refused(make, error, words):
        try:
            make()
        except error as e:
            assert all(w in str(e) for w in words), e
            return
        raise AssertionError("accepted: %s" % words)

    big = 2**32 + 3
    t = translator()
    refused(lambda: translator(beam_size=big), OverflowError, ["beam_size", str(big)])
    refused(lambda: translator(max_len_b=-2**32 - 1), OverflowError, ["max_len_b"])
    refused(lambda: translator(lsh=(2**32 + 8, 3, 16, 20, 2)), OverflowError, ["lsh"])
    refused(lambda: translator(lsh_seed=2**32), OverflowError, ["lsh_seed"])
    refused(lambda: translator(device="cuda:%d" % big), OverflowError, ["device"])
    refused(lambda: t.translate_batch(LINES[:2], max_len_b=2**32 + 5), OverflowError,
            ["max_len_b", str(2**32 + 5)])
    with service() as s:
        refused(lambda: s.submit(LINES[0], beam_size=big), OverflowError, ["beam_size"])
        refused(lambda: s.submit(LINES[0], max_len_b=2**32 + 5), OverflowError, ["max_len_b"])
    refused(lambda: service(queue_capacity=big), OverflowError, ["queue_capacity"])
    refused(lambda: nmt.Model(MODEL + "\0x", library=LIBRARY), ValueError, ["NUL", "model"])
    t.close()


def test_library_not_found():
    try:
        nmt.load_library("/nonexistent/libnmt.so")
        raise AssertionError("loaded a missing library")
    except nmt.LibraryNotFoundError as e:
        assert "/nonexistent/libnmt.so" in str(e)
    candidates, tried = _capi.locate(environ={}, find=lambda name: None,
                                     build_paths=["/nonexistent/build/libnmt.so"])
    assert candidates == []
    text = "; ".join(tried)
    for what in ("library=", "NMT_LIBRARY", "find_library", "/nonexistent/build/libnmt.so"):
        assert what in text, text
    assert _capi.locate(environ={"NMT_LIBRARY": "/x/libnmt.so"})[0] == ["/x/libnmt.so"]
    # The library recorded at install (python/setup.py) comes before the linker's.
    candidates, tried = _capi.locate(environ={}, find=lambda name: "libnmt.so.found",
                                     build_paths=[], installed=__file__)
    assert candidates == [__file__, "libnmt.so.found"], candidates
    candidates, tried = _capi.locate(environ={}, find=lambda name: None, build_paths=[],
                                     installed="/nonexistent/recorded/libnmt.so")
    assert candidates == [] and "/nonexistent/recorded/libnmt.so (recorded at install" in \
        "; ".join(tried), tried
    assert _capi.locate("/y/libnmt.so", environ={"NMT_LIBRARY": "/x"})[0] == ["/y/libnmt.so"]
    # The whole message, from a fresh interpreter with nothing to find.
    code = ("import ctypes.util, nmt, nmt._capi as c\n"
            "ctypes.util.find_library = lambda name: None\n"
            "c.BUILD_PATHS[:] = ['/nonexistent/build/libnmt.so']\n"
            "try:\n    nmt.Model('m.bin')\nexcept nmt.LibraryNotFoundError as e:\n"
            "    print(e)\n")
    env = {k: v for k, v in os.environ.items() if k != "NMT_LIBRARY"}
    env["PYTHONPATH"] = os.path.join(SOURCE_DIR, "python")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    for what in ("libnmt not found", "$NMT_LIBRARY (not set)", "find_library('nmt')",
                 "/nonexistent/build/libnmt.so (no such file)"):
        assert what in out.stdout, out.stdout
    env["NMT_LIBRARY"] = "/nonexistent/env/libnmt.so"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert "/nonexistent/env/libnmt.so" in out.stdout, out.stdout + out.stderr


def test_wheel():
    """pip builds the package (pyproject.toml, setup.py) without a compiler,
    with nmt/_library.py, the record of the library it goes with."""
    pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if pip.returncode != 0:
        skip("no pip")
    try:
        import setuptools.command.bdist_wheel  # noqa: F401 (setuptools >= 70.1)
    except ImportError:
        try:
            import setuptools  # noqa: F401
            import wheel  # noqa: F401
        except ImportError:
            skip("no setuptools with bdist_wheel (python3-setuptools, python3-wheel)")
    with tempfile.TemporaryDirectory() as tmp:  # a copy: the build leaves files behind
        src = os.path.join(tmp, "src")
        os.mkdir(src)
        for name in ("pyproject.toml", "setup.py"):
            shutil.copy(os.path.join(SOURCE_DIR, "python", name), src)
        shutil.copytree(os.path.join(SOURCE_DIR, "python", "nmt"), os.path.join(src, "nmt"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation",
                              "--no-deps", "--no-index", "-q", "-w", tmp, src],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
        assert len(wheels) == 1, wheels
        names = zipfile.ZipFile(os.path.join(tmp, wheels[0])).namelist()
    for name in ("__init__.py", "_capi.py", "_model.py", "_results.py", "_translator.py",
                 "_service.py", "_library.py"):
        assert "nmt/" + name in names, names


def run_plain(namespace=None):
    """Without pytest: every test_ function of namespace (default: this
    module's) in order; exit 0, 1 or 77 (all skipped)."""
    namespace = globals() if namespace is None else namespace
    tests = [(n, f) for n, f in namespace.items() if n.startswith("test_") and callable(f)]
    failed, skipped = [], 0
    for name, fn in tests:
        try:
            fn()
            print("PASS", name)
        except Skipped as e:
            skipped += 1
            print("SKIP", name, e)
        except Exception:
            import traceback
            traceback.print_exc()
            failed.append(name)
            print("FAIL", name)
    if failed:
        return 1
    return 77 if skipped == len(tests) else 0


def main(path, namespace=None):
    """A test file's entry: pytest on path when installed, else run_plain."""
    if pytest is not None:
        code = pytest.main([path, "-q", "-p", "no:cacheprovider"])
        sys.exit(77 if code == pytest.ExitCode.NO_TESTS_COLLECTED else int(code))
    sys.exit(run_plain(namespace))


if __name__ == "__main__":
    main(__file__)
