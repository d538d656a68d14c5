# europarl-data.sh (sourced): the data options of the Europarl it->en model,
# shared by python/train/train-europarl.sh and dev/eval/prune-curve.sh. They
# must stay what the --prepared cache was made with: the cache stores the
# vocabularies and the model's ids are those.
EUROPARL_DATA_ARGS=(--src-lang it --tgt-lang en --train-prefix train --valid-prefix dev
                    --src-min-freq 2 --tgt-min-freq 1 --src-max-vocab 20000 --tgt-max-vocab 30004
                    --max-src-len 50 --max-tgt-len 50)
