#!/usr/bin/env bash
# The CPU engine's speed, side by side in one run (docs/performance.md, "CPU"):
# translate --device cpu with the reference kernels, and with the fast kernels
# (fp32, --precision int8, and int8 on the AVX2 path: --cpu-isa avx2) and the
# blas kernels at each thread count, and
# OpenNMT-py 3.5.1's translator on the same weights
# (dev/eval/onmt_speed.py --device cpu; skipped when onmt is not importable),
# over the first N lines of a source file, beam 5, at each batch size.
# Times are the engine's decode seconds (translate --timing: not the model
# load) and OpenNMT-py's own translation time; the fast, int8 and blas cells
# the median of --repeat runs (default 3), the reference and OpenNMT-py one
# run (minutes).
#
#   dev/bench/cpu.sh [-m MODEL] [--src FILE] [--lines N] [--batches "1 8 32"]
#                    [--threads "1 2"] [--rows "reference fast int8 int8-avx2 blas onmt"]
#                    [--repeat N] [--work DIR]
#
# One thread runs pinned to one core (taskset -c 0 where it exists); more
# threads run unpinned. The default source is the repository's first 200
# lines of test_2016_flickr.de.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=models/multi30k-de-en.bin
src=tests/data/golden/test_2016_flickr.200.de
lines=200
batches="1 8 32"
threads="1 2"
rows="reference fast int8 blas onmt"
repeat=3
work=/tmp/nmt-cpu-bench
translate=${NMT_TRANSLATE:-build-cpu/translate}
python=${NMT_PYTHON:-/usr/bin/python3} # with torch and OpenNMT-py (docs/onmt.md)
while [ $# -gt 0 ]; do
    case $1 in
    -m) model=$2; shift 2 ;;
    --src) src=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "usage: $0 [-m MODEL] [--src FILE] [--lines N] [--batches LIST] [--threads LIST] [--rows LIST] [--work DIR]" >&2; exit 2 ;;
    esac
done
mkdir -p "$work"
case $src in
*.gz) { zcat "$src" || true; } | head -n "$lines" > "$work/src.de" ;; # zcat: SIGPIPE
*) head -n "$lines" "$src" > "$work/src.de" ;;
esac

# A command pinned to one core for one thread: THREADS COMMAND...
pin() {
    local t=$1; shift
    if [ "$t" = 1 ] && command -v taskset > /dev/null; then taskset -c 0 "$@"; else "$@"; fi
}

# decode seconds of one translate run: KERNELS PRECISION THREADS BATCH [ISA]
engine_once() {
    pin "$3" "$translate" -m "$model" --device cpu --beam 5 --cpu-kernels "$1" --precision "$2" \
        --cpu-isa "${5:-auto}" --threads "$3" --batch-size "$4" -i "$work/src.de" \
        -o "$work/out.$1.$2.$3.$4.${5:-auto}" --quiet \
        --timing "$work/timing.json" || { echo "failed"; return; }
    python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["decode_seconds"])' \
        "$work/timing.json"
}

# the median of RUNS runs: RUNS KERNELS PRECISION THREADS BATCH [ISA]
engine() {
    local runs=$1; shift
    for _ in $(seq "$runs"); do engine_once "$@"; done |
        python3 -c 'import statistics,sys; t = sys.stdin.read().split()
print("failed" if "failed" in t else "%.2f" % statistics.median(map(float, t)))'
}

onmt() { # THREADS BATCH: seconds, or "-" without OpenNMT-py
    if ! "$python" -c 'import importlib.util as u, sys; sys.exit(not u.find_spec("onmt"))' \
        2>/dev/null; then echo "-"; return; fi
    # torch's OpenMP and OpenBLAS each get THREADS; OpenBLAS's core-type hints
    # are unset as the issue's measurement did.
    pin "$1" env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS="$1" OPENBLAS_NUM_THREADS="$1" \
        PYTHONPATH=python:dev/eval "$python" dev/eval/onmt_speed.py -m "$model" --src "$work/src.de" \
        --device cpu --beam 5 --batch-sizes "$2" --repeat 1 --work "$work/onmt" \
        --json "$work/onmt.json" > "$work/onmt.log" 2>&1 || { echo "failed"; return; }
    python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["records"][0]["seconds"])' \
        "$work/onmt.json" 2>/dev/null || echo "-"
}

echo "# $(date -u +%F), commit $(git rev-parse --short HEAD), $(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p')"
echo "# $lines lines of $src, beam 5, decode seconds (lower is better)"
printf '| decoder | threads |'
for b in $batches; do printf ' batch %s |' "$b"; done
printf '\n| --- | --- |'
for b in $batches; do printf ' --- |'; done
printf '\n'
row() { # LABEL THREADS COMMAND...
    local label=$1 t=$2; shift 2
    printf '| %s | %s |' "$label" "$t"
    for b in $batches; do printf ' %s |' "$("$@" "$t" "$b")"; done
    printf '\n'
}
ref() { engine 1 reference auto "$@"; }
fast() { engine "$repeat" fast auto "$@"; }
int8() { engine "$repeat" fast int8 "$@"; }
int8_avx2() { engine "$repeat" fast int8 "$@" avx2; }
blas() { engine "$repeat" blas auto "$@"; }
want() { case " $rows " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if want reference; then row "translate --cpu-kernels reference" 1 ref; fi
if want fast; then for t in $threads; do row "translate --cpu-kernels fast" "$t" fast; done; fi
if want int8; then for t in $threads; do row "translate --precision int8" "$t" int8; done; fi
if want int8-avx2; then
    for t in $threads; do row "translate --precision int8 --cpu-isa avx2" "$t" int8_avx2; done
fi
if want blas; then for t in $threads; do row "translate --cpu-kernels blas" "$t" blas; done; fi
if want onmt; then for t in $threads; do row "OpenNMT-py 3.5.1 (torch $("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo '-'))" "$t" onmt; done; fi
