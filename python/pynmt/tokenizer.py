"""The engine's tokenizer in Python (stdlib only): the rules of
docs/tokenization.md, identical to model/tokenizer.c on the test vectors in
tests/data/tokenizer_cases.tsv.

    tokenize(text) -> [Token(text, key, case_class)]
    detokenize(token_texts) -> str
    utf8_valid(data) -> (ok, bad_offset)

Python's str.lower is the full (SpecialCasing) mapping; the engine lowercases
one code point to one code point (utf8proc_tolower, the simple mapping). They
differ only on U+0130 (capital I with dot above), which lowercases to "i".
"""

import unicodedata
from typing import List, NamedTuple, Tuple

JOINER = "\uffed"
JOINER_ESCAPE = "<U+FFED>"

CASE_LOWER, CASE_CAPITALIZED, CASE_UPPER, CASE_OTHER = 0, 1, 2, 3

# The Unicode White_Space property.
_WHITE_SPACE = frozenset(
    [chr(c) for c in range(0x09, 0x0E)]
    + [chr(c) for c in range(0x2000, 0x200B)]
    + list("\u0020\u0085\u00a0\u1680\u2028\u2029\u202f\u205f\u3000"))
_ZERO_WIDTH_SPACE = "\u200b"
_BYTE_ORDER_MARK = "\ufeff"


class Token(NamedTuple):
    text: str        # joiner (if glued) + original form
    key: str         # joiner (if glued) + lowercased form
    case_class: int  # CASE_*


def utf8_valid(data: bytes) -> Tuple[bool, int]:
    """(True, -1) for valid UTF-8, else (False, offset of the bad sequence)."""
    try:
        data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        return False, e.start
    return True, -1


def lower_char(c: str) -> str:
    """Per-code-point simple lowercase mapping (as utf8proc_tolower)."""
    if c == "\u0130":
        return "i"
    low = c.lower()
    return low if len(low) == 1 else c


def is_separator(c: str) -> bool:
    return c in _WHITE_SPACE or c == _ZERO_WIDTH_SPACE or unicodedata.category(c) == "Cc"


def _is_mark(c: str) -> bool:
    return unicodedata.category(c)[0] == "M"


def _is_word_char(c: str) -> bool:
    return unicodedata.category(c)[0] in "LMN"


def case_class(form: str) -> int:
    """The case class of a token's form (without joiner), from its letters."""
    letters = [unicodedata.category(c) in ("Lu", "Lt")
               for c in form if unicodedata.category(c)[0] == "L"]
    upper = sum(letters)
    if upper == 0:
        return CASE_LOWER
    if letters[0] and upper == 1:
        return CASE_CAPITALIZED
    if len(letters) >= 2 and upper == len(letters):
        return CASE_UPPER
    return CASE_OTHER


def _token(form: str, glued: bool, escaped: bool = False) -> Token:
    prefix = JOINER if glued else ""
    if escaped:
        return Token(prefix + form, prefix + form, CASE_LOWER)
    key = "".join(lower_char(c) for c in form)
    return Token(prefix + form, prefix + key, case_class(form))


def tokenize(text) -> List[Token]:
    """Tokenizes one line (str, or bytes that must be valid UTF-8)."""
    if isinstance(text, bytes):
        ok, offset = utf8_valid(text)
        if not ok:
            raise ValueError("invalid UTF-8 at byte offset %d" % offset)
        text = text.decode("utf-8")
    text = unicodedata.normalize("NFC", text.replace(_BYTE_ORDER_MARK, ""))
    tokens: List[Token] = []
    current = []         # characters of the open token
    current_is_word = False
    current_glued = False
    in_chunk = False

    def close():
        if current:
            tokens.append(_token("".join(current), current_glued))
            current.clear()

    for c in text:
        if is_separator(c):
            close()
            in_chunk = False
        elif c == JOINER:
            close()
            tokens.append(_token(JOINER_ESCAPE, in_chunk, escaped=True))
            in_chunk = True
        elif current and (_is_mark(c) or (current_is_word and _is_word_char(c))):
            current.append(c)
        else:
            close()
            current.append(c)
            current_is_word = _is_word_char(c)
            current_glued = in_chunk
            in_chunk = True
    close()
    return tokens


def detokenize(tokens) -> str:
    """Joins token texts: single spaces, none before a joiner-prefixed token."""
    out = []
    for tok in tokens:
        glued = tok.startswith(JOINER)
        if glued:
            tok = tok[len(JOINER):]
        if not tok:
            continue
        if out and not glued:
            out.append(" ")
        out.append(JOINER if tok == JOINER_ESCAPE else tok)
    return "".join(out)
