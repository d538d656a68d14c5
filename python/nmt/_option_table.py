"""translate's option table (apps/common/option_table.c): each row's
kind, range (int, float) and choices (name, value), by the long option
name. Written by dev/option-table/option_table_py.c: do not edit;
regenerate with build/option-table-py > python/nmt/_option_table.py
(tests/dev/test_option_table_py.sh fails while it differs)."""

ROWS = {
    "model": {"kind": "list"},
    "weights": {"kind": "custom"},
    "config": {"kind": "string"},
    "input": {"kind": "string"},
    "output": {"kind": "string"},
    "alignment": {"kind": "flag"},
    "token-scores": {"kind": "flag"},
    "attention": {"kind": "flag"},
    "quiet": {"kind": "flag"},
    "log-level": {"kind": "choice", "choices": (
        ("error", 0), ("warning", 1), ("info", 2),)},
    "input-format": {"kind": "choice", "choices": (
        ("auto", -1), ("raw", 0), ("tokens", 1),)},
    "output-format": {"kind": "choice", "choices": (
        ("auto", -1), ("text", 0), ("tokens", 1),)},
    "beam": {"kind": "int", "lo": 1, "hi": 256},
    "n-best": {"kind": "int", "lo": 1, "hi": 256},
    "n-best-format": {"kind": "choice", "choices": (
        ("tsv", 0), ("marian", 1),)},
    "alpha": {"kind": "float", "lo": 0.0, "hi": 10.0},
    "max-len-a": {"kind": "float", "lo": 0.0, "hi": 100.0},
    "max-len-b": {"kind": "int", "lo": 0, "hi": 10000},
    "search-rules": {"kind": "choice", "choices": (
        ("v1", 0), ("onmt", 1),)},
    "batch-size": {"kind": "int", "lo": 1, "hi": 16777216},
    "max-batch-tokens": {"kind": "int", "lo": 0, "hi": 16777216},
    "max-memory": {"kind": "size"},
    "batch-type": {"kind": "choice", "choices": (
        ("sentences", 0), ("tokens", 1),)},
    "maxi-batch": {"kind": "int", "lo": 1, "hi": 1048576},
    "device": {"kind": "choice", "choices": (
        ("auto", 0), ("cpu", 1), ("cuda", 2), ("gpu", 2),)},
    "device-index": {"kind": "int", "lo": 0, "hi": 1024},
    "devices": {"kind": "custom"},
    "workers": {"kind": "int", "lo": 1, "hi": 256},
    "host-threads": {"kind": "int", "lo": 1, "hi": 1024},
    "dry-run": {"kind": "flag"},
    "skip-lines": {"kind": "int", "lo": 0, "hi": 2147483647},
    "mpi": {"kind": "flag"},
    "no-unk-replace": {"kind": "flag"},
    "unk-replace": {"kind": "bool"},
    "scores": {"kind": "flag"},
    "max-line-bytes": {"kind": "int", "lo": 1, "hi": 1073741824},
    "max-src-tokens": {"kind": "int", "lo": 1, "hi": 4096},
    "cuda-graphs": {"kind": "bool"},
    "fused-output": {"kind": "bool"},
    "batch-invariant": {"kind": "bool"},
    "cpu-kernels": {"kind": "choice", "choices": (
        ("auto", 0), ("fast", 3), ("blas", 1), ("reference", 2),)},
    "cpu-isa": {"kind": "choice", "choices": (
        ("auto", 0), ("avx512", 3), ("avx2", 2), ("generic", 1),)},
    "threads": {"kind": "int", "lo": 1, "hi": 1024},
    "warmup": {"kind": "bool"},
    "check-every": {"kind": "int", "lo": 1, "hi": 64},
    "precision": {"kind": "choice", "choices": (
        ("auto", 4), ("fp32", 0), ("tf32x2", 1), ("bf16", 2), ("fp16", 3), ("int8", 5),)},
    "sparse": {"kind": "choice", "choices": (
        ("auto", 0), ("on", 1), ("off", 2),)},
    "progress": {"kind": "flag"},
    "no-progress": {"kind": "flag"},
    "score-target": {"kind": "string"},
    "target-prefix": {"kind": "string"},
    "return-alternatives": {"kind": "flag"},
    "sampling-topk": {"kind": "int", "lo": 0, "hi": 512},
    "sampling-topp": {"kind": "float", "lo": 0.0, "hi": 1.0},
    "sampling-temperature": {"kind": "float", "lo": 0.0, "hi": 100.0},
    "seed": {"kind": "int", "lo": 0, "hi": 2147483647},
    "min-length": {"kind": "int", "lo": 0, "hi": 10000},
    "no-repeat-ngram-size": {"kind": "int", "lo": 0, "hi": 64},
    "repetition-penalty": {"kind": "float", "lo": 0.0, "hi": 100.0},
    "ban-unk": {"kind": "flag"},
    "disable-unk": {"kind": "flag"},
    "suppress": {"kind": "custom"},
    "coverage-penalty": {"kind": "choice", "choices": (
        ("none", 0), ("wu", 1), ("summary", 2),)},
    "coverage-beta": {"kind": "float", "lo": 0.0, "hi": 100.0},
    "lsh": {"kind": "custom"},
    "top-words": {"kind": "int", "lo": 1, "hi": 16777216},
    "lsh-share": {"kind": "choice", "choices": (
        ("batch", 0), ("sentence", 1), ("row", 2),)},
    "lsh-seed": {"kind": "int", "lo": 0, "hi": 2147483647},
    "lsh-lists": {"kind": "choice", "choices": (
        ("auto", 2), ("hits", 0), ("direct", 1),)},
    "stats": {"kind": "string"},
    "timing": {"kind": "string"},
    "help": {"kind": "flag"},
    "version": {"kind": "flag"},
}
