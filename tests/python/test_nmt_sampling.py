"""test_nmt_sampling.py: sampling and the logit rules through the Python
package (nmt.Translator, nmt.Service) on the CPU with the test model.

- Translator(sampling_topk=10, n_best=3, seed=S): three samples a line
  (beam 1 implied); the same lines in another order with line_keys keep
  their samples, duplicates keyed alike sample alike; the same as translate
  prints for the lines keyed by their numbers; per call, another seed draws
  other samples;
- the service: a request's line_key draws what the translator draws for
  that key, whatever else is queued;
- suppress (a list of token lists) and ban_unk hold; coverage_penalty "wu"
  with search_rules "onmt" runs; nmt.ArgumentError for what the rules
  refuse (a sampling beam, the coverage penalty under v1, an unknown
  suppressed token, top-p without a top-K), scoring with sampling or a
  logit rule, alternatives with sampling; a prefix with the rules keeps its
  words;
- target_prefix with sampling: every sample starts with its line's prefix,
  a line without one samples as without prefixes, line_keys and the
  service's line_key key prefixed lines as plain ones.
Skips (77) when libnmt or the test model is not built."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_nmt_attention import LIBRARY, MODEL, TRANSLATE, nmt  # noqa: E402
from checks import check  # noqa: E402
import checks  # noqa: E402

LINES = ["ein mann spielt im park .", "zwei hunde laufen über die straße !", "Haus",
         "rot rot rot Ball", "ein mann spielt im park ."]
SAMPLING = dict(sampling_topk=10, n_best=3, seed=4)


def texts(result):
    return [(h.text, h.score, tuple(h.token_scores)) for h in result]


def main():
    if not os.path.exists(LIBRARY) or not os.path.exists(MODEL):
        print("libnmt or the test model not built: skipped")
        return 77
    t = nmt.Translator(MODEL, device="cpu", max_len_b=10, library=LIBRARY, **SAMPLING)
    base = t.translate_batch(LINES)
    check(all(len(r) == 3 for r in base), "three samples a line")
    check(texts(base[0]) != texts(base[4]), "lines 0 and 4 (the same text) keyed 0 and 4 "
          "sampled alike")
    order = [4, 2, 0, 3, 1]
    shuffled = t.translate_batch([LINES[i] for i in order], line_keys=order)
    for k, i in enumerate(order):
        check(texts(shuffled[k]) == texts(base[i]), "line %d keyed %d: other samples" % (k, i))
    same = t.translate_batch([LINES[0], LINES[4]], line_keys=[7, 7])
    check(texts(same[0]) == texts(same[1]), "the same text and key: other samples")
    other = t.translate_batch(LINES, seed=5)
    check([texts(r) for r in other] != [texts(r) for r in base], "seed 5 drew seed 4's samples")

    cli = subprocess.run([TRANSLATE, "-m", MODEL, "--device", "cpu", "--max-len-b", "10",
                          "--sampling-topk", "10", "--n-best", "3", "--seed", "4"],
                         input="\n".join(LINES) + "\n", capture_output=True, text=True,
                         timeout=300)
    check(cli.returncode == 0, "translate: " + cli.stderr)
    rows = [row.split("\t") for row in cli.stdout.splitlines()]
    python_rows = [[str(i + 1), str(rank + 1), h.text] for i, r in enumerate(base)
                   for rank, h in enumerate(r)]
    check([[r[0], r[1], r[3]] for r in rows] == python_rows, "translate's samples differ")

    service = nmt.Service(MODEL, device="cpu", max_len_b=10, library=LIBRARY, **SAMPLING)
    futures = [service.submit(LINES[i], line_key=i) for i in reversed(range(len(LINES)))]
    for k, f in enumerate(futures):
        i = len(LINES) - 1 - k
        check(texts(f.result()) == texts(base[i]), "service line %d: other samples" % i)
    service.close()

    plain = nmt.Translator(MODEL, device="cpu", beam_size=4, n_best=4, max_len_b=10,
                           output_tokens=1, library=LIBRARY)
    words = [w for r in plain.translate_batch(LINES) for h in r for w in h.text.split()]
    common = max(set(words), key=words.count)
    banned = plain.translate_batch(LINES, ban_unk=1)
    check(all("<unk>" not in h.text.split() for r in banned for h in r), "ban_unk")
    suppressing = nmt.Translator(MODEL, device="cpu", beam_size=4, n_best=4, max_len_b=10,
                                 output_tokens=1, library=LIBRARY, suppress=[[common]])
    check(all(common not in h.text.split() for r in suppressing.translate_batch(LINES)
              for h in r), "suppress %r came" % common)
    covered = nmt.Translator(MODEL, device="cpu", library=LIBRARY, search_rules="onmt",
                             coverage_penalty="wu", coverage_beta=0.2)
    check(all(r.ok for r in covered.translate_batch(LINES)), "coverage penalty")

    for options in (dict(sampling_topk=10, beam_size=3),
                    dict(coverage_penalty="wu"),
                    dict(suppress=["no-such-token-anywhere"]),
                    dict(sampling_topk=0, sampling_topp=0.5)):
        try:
            nmt.Translator(MODEL, device="cpu", library=LIBRARY, **options)
            check(False, "%r was not refused" % options)
        except nmt.ArgumentError:
            pass
    # With targets: every sample continues its prefix, keyed as without one
    # (line_keys, the service's line_key); scoring takes no sampling or
    # logit rule, sampling no alternatives; a prefix's words are taken, the
    # rules hold after them.
    prefixes = ["the", None, "a dog", "the", "the"]
    sampled = t.translate_batch(LINES, target_prefix=prefixes)
    for i, r in enumerate(sampled):
        check(len(r) == 3 and all(h.text.startswith(prefixes[i] or "") for h in r),
              "line %d: not 3 samples starting with %r: %r" % (i, prefixes[i],
                                                                [h.text for h in r]))
    check(texts(sampled[1]) == texts(base[1]), "a line without a prefix sampled otherwise")
    keyed = t.translate_batch([LINES[i] for i in order],
                              target_prefix=[prefixes[i] for i in order], line_keys=order)
    for k, i in enumerate(order):
        check(texts(keyed[k]) == texts(sampled[i]), "prefixed line %d keyed %d: other samples"
              % (k, i))
    service = nmt.Service(MODEL, device="cpu", max_len_b=10, library=LIBRARY, **SAMPLING)
    futures = [service.submit(LINES[i], line_key=i, target_prefix=prefixes[i]) for i in order]
    for k, f in enumerate(futures):
        check(texts(f.result()) == texts(sampled[order[k]]),
              "service, prefixed line %d: other samples" % order[k])
    service.close()
    for what, call in (
            ("scoring with sampling", lambda: t.score_batch(LINES[:2], ["the", "a"])),
            ("alternatives with sampling",
             lambda: t.translate_batch(LINES[:1], target_prefix=["the"],
                                       return_alternatives=True)),
            ("scoring with a logit rule",
             lambda: plain.score_batch(LINES[:2], ["the", "a"], repetition_penalty=1.5))):
        try:
            call()
            check(False, "%s was not refused" % what)
        except (nmt.ArgumentError, ValueError):
            pass
    prefixed = plain.translate_batch(LINES, target_prefix=["the"] * len(LINES), ban_unk=1,
                                     no_repeat_ngram_size=2)
    for r in prefixed:
        for h in r:
            tokens = h.text.split()
            grams = list(zip(tokens, tokens[1:]))
            check(tokens[:1] == ["the"] and "<unk>" not in tokens and
                  len(grams) == len(set(grams)), "a prefix with the rules: %r" % h.text)
    for x in (t, plain, suppressing, covered):
        x.close()
    print("test_nmt_sampling: %s" % ("FAILED" if checks.failures else "passed"))
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
