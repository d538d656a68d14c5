"""nmt: Python bindings of libnmt (include/nmt.h) through ctypes.

    import nmt
    with nmt.Translator("models/multi30k-de-en.bin", device="cpu", beam_size=5) as t:
        for r in t.translate_batch(["Ein Hund läuft im Park.", "Zwei Kinder spielen."]):
            print(r.hypotheses[0].text if r.ok else "refused: " + r.message)

    with nmt.Service("models/multi30k-de-en.bin", device="cpu", workers=4) as s:
        future = s.submit("Ein Hund läuft im Park.", beam_size=2)
        print(future.result().text)

    with nmt.Translator("models/multi30k-de-en.bin", device="cpu", workers=2) as t:
        t.translate_file("in.de", "out.en")                # the library's host pipeline
        for r in t.translate_iterable(open("in.de")):
            print(r.text)

The library is found through library=..., $NMT_LIBRARY, the one recorded
at install (pip install ./python), ctypes.util.find_library("nmt"), then the
repository's build/libnmt.so (docs/python.md)."""

from ._capi import LibraryNotFoundError, load_library
from ._pipeline import FileStats
from ._results import (ArgumentError, Busy, Closed, Error, Hypothesis, Result, ServiceStats,
                       Status, TranslatorStats)
from ._service import RequestFuture, Service
from ._model import Ensemble, Model
from ._translator import Translator

__version__ = "0.1.0"  # NMT_VERSION_STRING of the library it was written for

__all__ = ["ArgumentError", "Busy", "Closed", "Ensemble", "Error", "FileStats", "Hypothesis",
           "LibraryNotFoundError", "Model", "RequestFuture", "Result", "Service", "ServiceStats",
           "Status", "Translator", "TranslatorStats", "cuda_available", "load_library"]


def cuda_available(library=None):
    """True when the library was built with CUDA and a GPU is visible."""
    return bool(load_library(library).nmt_cuda_available())
