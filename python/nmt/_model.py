"""Model and Ensemble: nmt_model handles, shared by translators and services."""

import ctypes
import os
import threading

from . import _capi
from ._results import raise_error


class Model:
    """A loaded model file (nmt_model_load): immutable, shared by any number
    of translators and services, freed when the last of them and this object
    are gone (or at close(), deferred until then).

    library: the libnmt to use (a path); default: $NMT_LIBRARY, the one
    recorded at install, ctypes.util.find_library("nmt"), then the
    repository's build/libnmt.so."""

    def __init__(self, path, library=None):
        self._lib = _capi.load_library(library)
        self.path = os.fspath(path)
        self._ptr = None
        self._users = 0
        self._closing = False
        self._lock = threading.Lock()
        handle = ctypes.c_void_p()
        err = _capi.nmt_error()
        if self._lib.nmt_model_load(_capi.c_path(self.path, "model"), ctypes.byref(handle),
                                    ctypes.byref(err)) != _capi.STATUS_OK:
            raise_error(err)
        self._ptr = handle.value

    def describe(self):
        """The library's one-line description (sizes, vocabularies)."""
        return self._lib.nmt_model_describe(self._handle()).decode("utf-8", "replace")

    def _handle(self):
        if self._ptr is None or self._closing:
            raise ValueError("the model is closed")
        return self._ptr

    def _acquire(self):
        """A translator or service starts using the C model."""
        with self._lock:
            ptr = self._handle()
            self._users += 1
            return ptr

    def _release(self):
        with self._lock:
            self._users -= 1
            self._free_if_unused()

    def _free_if_unused(self):
        if self._closing and self._users == 0 and self._ptr is not None:
            self._lib.nmt_model_free(self._ptr)
            self._ptr = None

    def close(self):
        """Frees the model once no translator or service uses it any more."""
        with self._lock:
            self._closing = True
            self._free_if_unused()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_ptr", None) is not None and getattr(self, "_lock", None) is not None:
            self.close()

    def __repr__(self):
        return "nmt.Model(%r)" % self.path


def as_model(model_or_path, library):
    if isinstance(model_or_path, Model):
        return model_or_path
    return Model(model_or_path, library=library)


class Ensemble:
    """Several models decoded as one (docs/decoding.md, "Ensembles"), for a
    Translator or a Service: at each step the search ranks
    sum_i weights[i] * log p_i(word) over the models' log-probabilities.
    weights None: 1/n each (OpenNMT-py's mean); else one number a model,
    each >= 0 and not all 0, used as given (Marian's --weights). models:
    Model objects or paths (loaded with library). The models must share
    their vocabularies and tokenizer: the translator or service refuses
    others (nmt.ArgumentError, naming the difference). The first model gives
    the alignment and the attention."""

    def __init__(self, models, weights=None, library=None):
        if isinstance(models, (str, bytes, os.PathLike, Model)):
            models = [models]
        self.models = [as_model(m, library) for m in models]
        if not self.models:
            raise ValueError("an ensemble needs at least one model")
        self.weights = None if weights is None else [float(w) for w in weights]
        if self.weights is not None and len(self.weights) != len(self.models):
            raise ValueError("%d weights for %d models: give one a model" % (
                len(self.weights), len(self.models)))
        self._lib = self.models[0]._lib
        if any(m._lib is not self._lib for m in self.models):
            raise ValueError("the models were loaded from different libraries")

    def _acquire(self):
        """Every model in use: (C model array, C weights or None, n) for the
        library's _ensemble calls."""
        acquired = []
        try:
            for m in self.models:
                acquired.append(m._acquire())
        except BaseException:
            for m in self.models[:len(acquired)]:
                m._release()
            raise
        n = len(acquired)
        weights = None if self.weights is None else (ctypes.c_float * n)(*self.weights)
        return (ctypes.c_void_p * n)(*acquired), weights, n

    def _release(self):
        for m in self.models:
            m._release()

    def shown(self):
        """What a Translator or Service shows as its .model: the Model when
        this is one, unweighted, else the Ensemble."""
        return self.models[0] if len(self.models) == 1 and self.weights is None else self

    def __repr__(self):
        if self.weights is None:
            return "nmt.Ensemble(%r)" % (self.models,)
        return "nmt.Ensemble(%r, weights=%r)" % (self.models, self.weights)


def as_ensemble(model, weights, library):
    """A Translator's or Service's models: an Ensemble as given, or one made
    of a model, a path or a list of them."""
    if isinstance(model, Ensemble):
        if weights is not None:
            raise ValueError("weights belong to the Ensemble given")
        return model
    return Ensemble(model, weights, library)
