"""The keyword checks of Translator, Service and per-call options, from
translate's option table (_option_table.py, written from
apps/common/option_table.c): a keyword's range and choices are its row's,
so the binding refuses what translate --option refuses.

A keyword names its row by the row's long name with '_' for '-', except
the aliases below (the nmt_options field where the command line says
otherwise). Integers are first checked against the C type (c_int), so a
value past it raises OverflowError, never wraps."""

import ctypes

from . import _capi
from ._option_table import ROWS
from ._results import error_from

# Keyword -> row, where the row's name is not the keyword with '-' for '_'.
ALIASES = {
    "beam_size": "beam",
    "input_tokens": "input-format",
    "output_tokens": "output-format",
    "attention_weights": "attention",
}


def row_name(keyword):
    """The option table's row for a keyword (KeyError when it has none)."""
    name = ALIASES.get(keyword, keyword.replace("_", "-"))
    if name not in ROWS:
        raise KeyError("%s: no row %r in translate's option table" % (keyword, name))
    return name


def _refuse(keyword, value, rule, row):
    return error_from(_capi.STATUS_ERROR_ARGUMENT,
                      "%s %r: %s (translate --%s)" % (keyword, value, rule, row))


def choices(keyword):
    """{name: value} of a choice keyword's row."""
    return dict(ROWS[row_name(keyword)]["choices"])


def choice_names(keyword):
    """{value: name} of a choice keyword's row, the first name of each value
    (the command line's spelling)."""
    names = {}
    for name, value in ROWS[row_name(keyword)]["choices"]:
        names.setdefault(value, name)
    return names


def value(keyword, given, c_type=ctypes.c_int):
    """given checked against the keyword's row, as the C field takes it:
    int rows an integer in [lo, hi] (c_type: the field's C type, checked
    first), float rows a number in [lo, hi] rounded to float32, bool and
    flag rows 0 or 1, choice rows one of the names (any case) or of their
    values. Raises nmt.ArgumentError (a ValueError) naming the keyword and
    the rule, OverflowError past the C type."""
    name = row_name(keyword)
    row = ROWS[name]
    kind = row["kind"]
    if kind == "choice":
        table = dict(row["choices"])
        if isinstance(given, str):
            if given.lower() in table:
                return table[given.lower()]
        elif isinstance(given, int) and given in table.values():
            return int(given)
        raise _refuse(keyword, given, "one of " + ", ".join(table), name)
    if kind == "float":
        number = float(given)
        if not row["lo"] <= number <= row["hi"]:  # NaN fails too
            raise _refuse(keyword, given, "must be in %g..%g" % (row["lo"], row["hi"]), name)
        return ctypes.c_float(number).value
    if kind not in ("bool", "flag", "int"):
        raise TypeError("%s: row %r is a %s, not a value the binding checks" % (keyword, name,
                                                                                kind))
    number = _capi.c_integer(c_type, given, keyword)
    lo, hi = (0, 1) if kind in ("bool", "flag") else (row["lo"], row["hi"])
    if not lo <= number <= hi:
        raise _refuse(keyword, given, "must be in %d..%d" % (lo, hi), name)
    return number
