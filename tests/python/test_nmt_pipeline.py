"""test_nmt_pipeline.py: Translator.translate_file and translate_iterable
(python/nmt/_pipeline.py over the library's nmt_pipeline) on the CPU with
the test model:
- translate_iterable gives each line (str, bytes, empty, invalid UTF-8, a
  NUL byte, too long) the Result translate_batch gives it in a call of the
  same window's lines, from a list and from a generator, with one
  translator and with workers=3; closing it part way frees the translator;
  the translator refuses other calls while it streams;
- translate_file writes what translate writes (text, or "SCORE\\tTEXT"), one
  line a line, the same with workers=3, a part of the file with skip_lines
  and limit_lines, and counts the refused lines; a dry run echoes the lines;
- a worker that fails mid-run (NMT_TEST_TRANSLATOR_FAIL) is named in a
  RuntimeWarning and the output is complete; with no worker left,
  nmt.Error names the lines not written and the skip_lines that resumes,
  after a complete prefix;
- devices= on a build or machine without CUDA is refused.
Runs under pytest or as a script (ctest)."""
import os
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, HERE)

import nmt  # noqa: E402
import test_nmt_binding as binding  # noqa: E402  (the model, skip, the runner)

OPTIONS = dict(device="cpu", beam_size=2, max_len_b=6, max_line_bytes=60)
WINDOW = 16
LINES = binding.make_lines(150, seed=11) + ["", binding.BAD, "ein \0 hund", "x" * 80,
                                            b"zwei hunde", "ein hund"]


def translator(**options):
    return nmt.Translator(binding.model(), **dict(OPTIONS, **options))


def by_windows(t, lines, window=WINDOW):
    """translate_batch over the windows the pipeline makes."""
    return [r for i in range(0, len(lines), window) for r in t.translate_batch(lines[i:i + window])]


def write_input(path, lines):
    with open(path, "wb") as f:
        for line in lines:
            f.write((line if isinstance(line, bytes) else line.encode()) + b"\n")


def test_iterable():
    with translator() as t:
        ref = by_windows(t, LINES)
        assert list(t.translate_iterable(LINES, read_batch_size=WINDOW)) == ref
        assert list(t.translate_iterable(iter(LINES), read_batch_size=WINDOW)) == ref
        refused = [i for i, r in enumerate(ref) if not r.ok]
        assert refused == [151, 152, 153], refused
        assert ref[152].message == "contains a NUL byte"
        g = t.translate_iterable((line for line in LINES), read_batch_size=WINDOW)
        assert next(g) == ref[0]
        try:
            t.translate_batch(["ein hund"])
            raise AssertionError("translate_batch ran while the translator streamed")
        except RuntimeError as e:
            assert "translate_iterable" in str(e), e
        g.close()
        assert t.translate("ein hund") == ref[-1]
    with translator(workers=3) as t:
        assert list(t.translate_iterable(LINES, read_batch_size=WINDOW)) == ref
        assert list(t.translate_iterable([])) == []


def test_file():
    with tempfile.TemporaryDirectory() as tmp, translator() as t:
        src, out = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.txt")
        write_input(src, LINES)
        ref = by_windows(t, LINES)
        stats = t.translate_file(src, out, read_batch_size=WINDOW)
        text = "".join(r.text + "\n" for r in ref)
        assert open(out, encoding="utf-8").read() == text
        assert (stats.lines, stats.refused, stats.failed) == (len(LINES), 3, ()), stats
        assert stats.seconds > 0 and stats.lines_per_second > 0
        t.translate_file(src, out, read_batch_size=WINDOW, with_scores=True)
        scored = "".join(("%.9g\t%s\n" % (r.hypotheses[0].score, r.text)) if r.ok else "-inf\t\n"
                         for r in ref)
        assert open(out, encoding="utf-8").read() == scored
        # the translate program's output for the same file and windows
        if os.path.exists(binding.TRANSLATE):
            cli = subprocess.run([binding.TRANSLATE, "-m", binding.MODEL, "--device", "cpu",
                                  "-b", "2", "--max-len-b", "6", "--max-line-bytes", "60",
                                  "--maxi-batch", str(WINDOW), "--scores", "-i", src],
                                 capture_output=True, timeout=300)
            assert cli.stdout.decode() == scored, cli.stderr.decode()
        part = t.translate_file(src, out, read_batch_size=WINDOW, skip_lines=32, limit_lines=40)
        assert part.lines == 40
        assert open(out, encoding="utf-8").read() == "".join(
            r.text + "\n" for r in by_windows(t, LINES[32:72]))
        dry = t.translate_file(src, out, dry_run=True)
        echoed = open(out, encoding="utf-8").read().split("\n")
        assert dry.refused == 3 and echoed[:150] == LINES[:150]
    with tempfile.TemporaryDirectory() as tmp, translator(workers=3) as t:
        src, out = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.txt")
        write_input(src, LINES)
        t.translate_file(src, out, read_batch_size=WINDOW)
        assert open(out, encoding="utf-8").read() == text


def test_failing_workers():
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.txt")
        write_input(src, LINES)
        with translator() as t:
            text = "".join(r.text + "\n" for r in by_windows(t, LINES))
        os.environ["NMT_TEST_TRANSLATOR_FAIL"] = "*,3"
        try:
            with translator(workers=3) as t, warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                stats = t.translate_file(src, out, read_batch_size=WINDOW)
            assert open(out, encoding="utf-8").read() == text
            assert len(stats.failed) == 1 and "CPU worker" in stats.failed[0], stats
            assert any("failed; its windows went to the other translators" in str(w.message)
                       for w in caught), [str(w.message) for w in caught]
            os.environ["NMT_TEST_TRANSLATOR_FAIL"] = "0,2"
            with translator() as t:
                try:
                    t.translate_file(src, out, read_batch_size=WINDOW)
                    raise AssertionError("no worker was left, and nothing was raised")
                except nmt.Error as e:
                    assert "lines 33-48 failed on CPU worker 0" in e.message, e.message
                    assert "resume with skip_lines=32" in e.message, e.message
            assert open(out, encoding="utf-8").read() == "".join(text.splitlines(True)[:32])
        finally:
            del os.environ["NMT_TEST_TRANSLATOR_FAIL"]


def test_devices_without_cuda():
    if nmt.cuda_available(binding.LIBRARY):
        binding.skip("a GPU is visible")
    with translator(devices=[0]) as t:
        try:
            list(t.translate_iterable(["ein hund"]))
            raise AssertionError("devices=[0] without CUDA was taken")
        except nmt.Error:
            pass


if __name__ == "__main__":
    if binding.pytest is not None:
        code = binding.pytest.main([__file__, "-q", "-p", "no:cacheprovider"])
        sys.exit(77 if code == binding.pytest.ExitCode.NO_TESTS_COLLECTED else int(code))
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
    failed = 0
    for name, fn in tests:
        try:
            fn()
            print("PASS", name)
        except binding.Skipped as e:
            print("SKIP", name, e)
        except Exception:
            import traceback
            traceback.print_exc()
            failed += 1
            print("FAIL", name)
    sys.exit(1 if failed else 0)
