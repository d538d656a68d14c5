"""python/pynmt/tokenizer.py against tests/data/tokenizer_cases.tsv (every
column, plus the round trip) and the UTF-8 check on invalid input. The C
tokenizer passes the same vectors (tests/text/test_tokenizer.c)."""

import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("NMT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

from pynmt import tokenizer  # noqa: E402

_ESCAPE = re.compile(r"\\(\\|t|n|r|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})")
_SIMPLE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def unescape(field):
    def one(m):
        e = m.group(1)
        return _SIMPLE[e] if e in _SIMPLE else chr(int(e[1:], 16))
    rest = _ESCAPE.sub("", field)
    assert "\\" not in rest, "unknown escape in %r" % field
    return _ESCAPE.sub(one, field)


def split_list(field):
    return field.split(" ") if field else []


def read_cases(path):
    cases = []
    with open(path, encoding="utf-8", newline="\n") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("#"):
                continue
            fields = line.split("\t")
            assert len(fields) == 5, "line %d: %d fields" % (number, len(fields))
            inp, texts, keys, classes, detok = (unescape(x) for x in fields)
            cases.append((number, inp, split_list(texts), split_list(keys),
                          [int(c) for c in split_list(classes)], detok))
    return cases


def check_cases(cases):
    failures = 0
    for number, inp, texts, keys, classes, detok in cases:
        got = tokenizer.tokenize(inp)
        checks = [
            ("texts", [t.text for t in got], texts),
            ("keys", [t.key for t in got], keys),
            ("classes", [t.case_class for t in got], classes),
            ("detokenized", tokenizer.detokenize(texts), detok),
            ("bytes input", tokenizer.tokenize(inp.encode("utf-8")), got),
        ]
        # The documented round trip: NFC, U+FEFF dropped, separator runs
        # collapsed to one space and trimmed.
        expected_roundtrip = " ".join(
            "".join(" " if tokenizer.is_separator(c) else c
                    for c in unicodedata.normalize("NFC", inp.replace("\ufeff", ""))).split())
        checks.append(("round trip", tokenizer.detokenize([t.text for t in got]), expected_roundtrip))
        for what, actual, expected in checks:
            if actual != expected:
                failures += 1
                print("line %d %r: %s: got %r, expected %r" % (number, inp, what, actual, expected))
    return failures


def check_utf8():
    failures = 0
    cases = [
        (b"", -1), (b"abc", -1), ("grüße ￭ 😀".encode(), -1),
        (b"\xf4\x8f\xbf\xbf", -1),          # U+10FFFF, the last code point
        (b"ab\xc0\xaf", 2),                 # overlong '/'
        (b"\xe0\x80\xaf", 0),               # overlong, 3 bytes
        (b"\xf0\x80\x80\xaf", 0),           # overlong, 4 bytes
        (b"x\xed\xa0\x80", 1),              # surrogate U+D800
        (b"\xed\xbf\xbf", 0),               # surrogate U+DFFF
        (b"\xf4\x90\x80\x80", 0),           # U+110000
        (b"abc\xe2\x82", 3),                # truncated at the end
        (b"\xe2\x82abc", 0),                # truncated before ASCII
        (b"\xff", 0), (b"a\xfe", 1), (b"\x80", 0), (b"a\xbfb", 1),
    ]
    for data, offset in cases:
        got = tokenizer.utf8_valid(data)
        expected = (offset < 0, offset)
        if got != expected:
            failures += 1
            print("utf8_valid(%r): got %r, expected %r" % (data, got, expected))
        if offset >= 0:
            try:
                tokenizer.tokenize(data)
                failures += 1
                print("tokenize(%r) accepted invalid UTF-8" % data)
            except ValueError as e:
                if "offset %d" % offset not in str(e):
                    failures += 1
                    print("tokenize(%r): message %r lacks the offset" % (data, str(e)))
    return failures


def main():
    path = os.path.join(SOURCE_DIR, "tests", "data", "tokenizer_cases.tsv")
    cases = read_cases(path)
    assert len(cases) >= 60, "only %d cases" % len(cases)
    failures = check_cases(cases) + check_utf8()
    print("test_tokenizer_py: %d cases, %d failures" % (len(cases), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
