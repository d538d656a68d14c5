#!/usr/bin/env bash
# The CPU engine reproduces the PyTorch reference decoder's golden outputs
# (python/reference/translate.py over models/multi30k-de-en.bin) on the first
# 200 lines of test_2016_flickr, beams 1 and 5: identical text on every line,
# scores within 1e-4. The golden files are regenerated with:
#   PYTHONPATH=python python3 python/reference/translate.py -m models/multi30k-de-en.bin \
#       --beam B --scores < tests/data/golden/test_2016_flickr.200.de
set -euo pipefail
: "${NMT_SOURCE_DIR:?}" "${NMT_TRANSLATE:?}"
G=$NMT_SOURCE_DIR/tests/data/golden
MODEL=$NMT_SOURCE_DIR/models/multi30k-de-en.bin
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
for beam in 1 5; do
    "$NMT_TRANSLATE" -m "$MODEL" --device cpu --beam $beam --batch-size 64 --scores \
        < "$G/test_2016_flickr.200.de" > "$TMP/out.tsv"
    golden=$G/test_2016_flickr.200.beam$beam.tsv
    if ! paste "$golden" "$TMP/out.tsv" | awk -F'\t' -v beam=$beam '
        { d = $1 - $3; if (d < 0) d = -d
          if ($2 != $4) { text++; if (text <= 3) printf "beam %d line %d: text differs\n  golden %s\t%s\n  engine %s\t%s\n", beam, NR, $1, $2, $3, $4 }
          else if (d > 1e-4) { score++; if (score <= 3) printf "beam %d line %d: score %s vs %s\n", beam, NR, $1, $3 }
          if (d > maxd) maxd = d }
        END { printf "beam %d: %d lines, %d text differences, %d score differences > 1e-4, max score diff %.2g\n", beam, NR, text, score, maxd
              exit (NR != 200 || text || score) }'; then
        failures=$((failures + 1))
    fi
done
[ $failures -eq 0 ] || { echo "test_golden: FAILED"; exit 1; }
echo "test_golden: passed"
