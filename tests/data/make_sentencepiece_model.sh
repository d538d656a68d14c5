#!/usr/bin/env bash
# Writes tests/data/sentencepiece-tiny.model, the SentencePiece model of the
# SentencePiece tests (tests/text/test_sentencepiece.c): a BPE model of 64
# pieces trained on the few lines below with Debian's spm_train (package
# sentencepiece). The ids are the engine's special ids (<pad> 0, <unk> 1,
# <s> 2, </s> 3; docs/model-format.md), so the model's pieces in id order are
# a valid target vocabulary as they are. BPE on one thread with a fixed seed
# gives the same file on every run; the tests pin the pieces it produces, so
# a re-run that changes them shows up as a test failure, not silently.
#
#   tests/data/make_sentencepiece_model.sh
set -euo pipefail
cd "$(dirname "$0")"
command -v spm_train >/dev/null || { echo "needs spm_train: apt-get install sentencepiece" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/corpus.txt" <<'CORPUS'
the dog runs in the park
the dog sleeps in the house
a cat sleeps on the warm mat
the cat runs after the dog
hello world
hello dog, hello cat
a small dog and a small cat play in the park
the house is warm and the park is cold
the world is small
two dogs and two cats run home
the man reads a book in the house
a woman walks the dog in the park
CORPUS
# Relative paths: the trainer's options, input and prefix included, are stored
# in the model. identity normalization: no 230 KB NFKC table in a test file.
(cd "$TMP" && spm_train --input=corpus.txt --model_prefix=tiny --model_type=bpe \
    --normalization_rule_name=identity --vocab_size=64 --character_coverage=1.0 --num_threads=1 --random_seed=1 \
    --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3 --minloglevel=2 >/dev/null 2>&1)
cp "$TMP/tiny.model" sentencepiece-tiny.model
echo "wrote tests/data/sentencepiece-tiny.model ($(stat -c %s sentencepiece-tiny.model) bytes)"
