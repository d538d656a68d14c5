"""test_nmt_options.py: the Python binding's keyword checks come from
translate's option table (python/nmt/_option_table.py, written from
apps/common/option_table.c; tests/dev/test_option_table_py.sh keeps the two
equal). No library needed:

- every keyword Translator and Service check has a row;
- each int row's lo and hi pass and lo - 1 and hi + 1 raise nmt.ArgumentError
  naming the keyword and the translate option; float rows likewise (and
  NaN); bool and flag rows take 0 and 1 only; choice rows take each name (any
  case) and each value, and refuse another;
- a C int overflow still raises OverflowError before any range;
- changing a row changes the check: a narrower range or another choice list
  patched into the table is what fill_options then enforces.

Runs under pytest or as a script (ctest)."""

import ctypes
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import nmt  # noqa: E402
from nmt import _capi, _option_table, _options, _translator  # noqa: E402

KEYWORDS = _translator.FIELDS + tuple(_translator.SHRINK_FIELDS) + ("device_index", "device")


class FakeLib:
    """fill_options' only call into the library."""

    def nmt_options_init(self, options):
        pass


def c_type(keyword):
    return ctypes.c_uint if keyword == "lsh_seed" else ctypes.c_int


def refused(keyword, value, error=nmt.ArgumentError):
    try:
        _options.value(keyword, value, c_type(keyword))
    except error as e:
        text = str(e)
        assert keyword in text, text
        if error is nmt.ArgumentError:
            assert "--" + _options.row_name(keyword) in text, text
            assert e.status == nmt.Status.ERROR_ARGUMENT
        return
    raise AssertionError("%s=%r accepted" % (keyword, value))


def test_every_keyword_has_a_row():
    for keyword in KEYWORDS:
        assert _options.row_name(keyword) in _option_table.ROWS, keyword
    try:
        _options.row_name("no_such_option")
        raise AssertionError("a row for no_such_option")
    except KeyError:
        pass


def test_ranges_and_choices_are_the_rows():
    checked = set()
    for keyword in KEYWORDS:
        row = _option_table.ROWS[_options.row_name(keyword)]
        kind = row["kind"]
        checked.add(kind)
        if kind == "int":
            for ok in (row["lo"], row["hi"]):
                assert _options.value(keyword, ok, c_type(keyword)) == ok
            for bad in (row["lo"] - 1, row["hi"] + 1):  # past the C type: overflow first
                fits = c_type(keyword)(bad).value == bad
                refused(keyword, bad, nmt.ArgumentError if fits else OverflowError)
        elif kind == "float":
            for ok in (row["lo"], row["hi"]):
                assert _options.value(keyword, ok) == ok
            refused(keyword, row["lo"] - 0.001)
            refused(keyword, row["hi"] * 1.001 + 0.001)
            refused(keyword, math.nan)
        elif kind in ("bool", "flag"):
            for ok in (0, 1, False, True):
                assert _options.value(keyword, ok) == int(ok)
            refused(keyword, 2)
            refused(keyword, -1)
        elif kind == "choice":
            for name, value in row["choices"]:
                assert _options.value(keyword, name) == value
                assert _options.value(keyword, name.upper()) == value
                assert _options.value(keyword, value) == value
            refused(keyword, "no-such-" + keyword)
            refused(keyword, max(v for _, v in row["choices"]) + 1)
        else:
            raise AssertionError("%s: row of kind %s" % (keyword, kind))
    assert checked == {"int", "float", "bool", "flag", "choice"}, checked


def test_overflow_before_range():
    big = 2**32 + 3
    for keyword in ("beam_size", "max_len_b", "batch_size", "lsh_seed", "device_index"):
        refused(keyword, big, OverflowError)
    refused("max_len_b", -2**32 - 1, OverflowError)


def test_a_changed_row_changes_the_check():
    rows = _option_table.ROWS
    saved = {name: rows[name] for name in ("beam", "alpha", "lsh-share")}
    try:
        o = _capi.nmt_options()
        assert _translator.fill_options(FakeLib(), o, beam_size=8, alpha=3.0).beam_size == 8
        rows["beam"] = dict(saved["beam"], hi=7)
        rows["alpha"] = dict(saved["alpha"], hi=2.5)
        rows["lsh-share"] = dict(saved["lsh-share"], choices=(("sentence", 1), ("all", 0)))
        for bad in (dict(beam_size=8), dict(alpha=3.0), dict(lsh_share="batch")):
            try:
                _translator.fill_options(FakeLib(), o, **bad)
                raise AssertionError("accepted %s" % bad)
            except nmt.ArgumentError:
                pass
        o = _translator.fill_options(FakeLib(), o, beam_size=7, alpha=2.5, lsh_share="all")
        assert (o.beam_size, o.alpha, o.shrink.share) == (7, 2.5, 0)
    finally:
        rows.update(saved)


def test_fill_options():
    o = _translator.fill_options(FakeLib(), _capi.nmt_options(), device="cuda:3", beam_size=4,
                                 input_tokens="tokens", output_tokens=0, precision="FP16",
                                 lsh_lists="direct", lsh_seed=2**31 - 1, top_words=9,
                                 attention_weights=True)
    assert (o.device, o.device_index, o.beam_size) == (_capi.DEVICE_CUDA, 3, 4)
    assert (o.input_tokens, o.output_tokens, o.precision) == (1, 0, _capi.PRECISION_FP16)
    assert (o.shrink.lists, o.shrink.seed, o.shrink.top) == (_capi.LSH_LISTS_DIRECT,
                                                             2**31 - 1, 9)
    assert (o.shrink.mode, o.attention_weights) == (_capi.SHRINK_TOP, 1)
    for bad, error in ((dict(device="tpu"), ValueError), (dict(device="cuda:1025"),
                                                          nmt.ArgumentError),
                       (dict(no_such_option=1), TypeError)):
        try:
            _translator.fill_options(FakeLib(), _capi.nmt_options(), **bad)
            raise AssertionError("accepted %s" % bad)
        except error:
            pass


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print("ok", name)
