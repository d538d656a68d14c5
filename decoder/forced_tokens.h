/* forced_tokens.h: target tokens a search is told to take, and the rules
 * both searches follow for them (docs/decoding.md, "Target prefixes" and
 * "Scoring"), as inline functions compiled for host and device like
 * search_rules.h, so the CPU search (decoder/forced_search.c) and the GPU's
 * beam step (decoder/cuda/forced_step.cuh) agree by construction.
 *
 * A sentence's forced tokens are taken one a step from its step 1: while
 * they last, its only candidate is slot 0's forced word, so the beam holds
 * one hypothesis (a target prefix; or a whole target ending in EOS, which
 * is what scoring computes: decoder/forced_score.c). After them the search
 * is free, except that a sentence with an alternative rank k takes, at its
 * first free step, only slot 0's k-th best word that is not EOS (CTranslate2's
 * return_alternatives: the engine gives a line n_best such sentences, one a
 * rank). A sampling sentence's samples all take its forced words, drawing
 * nothing at those steps (nmt_rule_sample_forced). Plain C. */
#ifndef NMT_FORCED_TOKENS_H
#define NMT_FORCED_TOKENS_H

#include "search_rules.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The forced tokens of a batch's sentences (host or device pointers). */
typedef struct nmt_forced_tokens {
    const int32_t *offset;      /* [n + 1]: sentence i's tokens are ids[offset[i], offset[i+1]) */
    const int32_t *ids;
    const int32_t *alternative; /* [n] or NULL: >= 0, the rank sentence i takes at its first
                                   free step; -1 none */
} nmt_forced_tokens;

/* The word a sentence with n_forced tokens ids takes at its own step `step`
 * (1-based), or -1 when the step is free. */
NMT_HOST_DEVICE static inline int32_t nmt_rule_forced_word(const int32_t *ids, int32_t n_forced,
                                                          int32_t step)
{
    return step >= 1 && step <= n_forced ? ids[step - 1] : -1;
}

/* Whether sentence i's step `step` takes one of its forced words: the
 * logit rules leave such a step's rows as the model scored them (the word
 * is the caller's; the rules shape the free steps, which see it). */
NMT_HOST_DEVICE static inline int nmt_rule_forced_step(const nmt_forced_tokens *f, int32_t i,
                                                      int32_t step)
{
    return f && f->offset && step >= 1 && step <= f->offset[i + 1] - f->offset[i];
}

/* The word every sample of sampling sentence i takes at its step `step`
 * without a draw: its forced word, or -1 when the step draws. A skipped draw
 * uses up no random number: the draw of step t is keyed by t whether or not
 * earlier steps were forced (logit_rules.h, nmt_rule_sample_uniform). */
NMT_HOST_DEVICE static inline int32_t nmt_rule_sample_forced(const nmt_forced_tokens *f,
                                                            int32_t i, int32_t step)
{
    if (!f || !f->offset)
        return -1;
    const int32_t first = f->offset[i];
    return nmt_rule_forced_word(f->ids + first, f->offset[i + 1] - first, step);
}

/* The rank the sentence takes at this step (its first free one), or -1. */
NMT_HOST_DEVICE static inline int32_t nmt_rule_alternative_rank(int32_t alternative,
                                                               int32_t n_forced, int32_t step)
{
    return alternative >= 0 && step == n_forced + 1 ? alternative : -1;
}

/* A sentence's max length with forced tokens: room for them, for the
 * alternative word, and for an EOS after them (model-v1's last step allows
 * EOS only). */
NMT_HOST_DEVICE static inline int32_t nmt_rule_forced_max_len(int32_t max_len, int32_t n_forced,
                                                             int32_t alternative)
{
    const int32_t least = n_forced + (alternative >= 0 ? 2 : 1);
    return max_len > least ? max_len : least;
}

/* The position of the alternative of rank k in a row's best words (words[0
 * .. n), best first; -1 ends the list): the k-th that is not EOS, or -1. */
NMT_HOST_DEVICE static inline int32_t nmt_rule_alternative_at(const int32_t *words, int32_t n,
                                                             int32_t eos_id, int32_t k)
{
    for (int32_t j = 0; j < n; j++) {
        if (words[j] < 0)
            return -1;
        if (words[j] != eos_id && k-- == 0)
            return j;
    }
    return -1;
}

#ifdef __cplusplus
}
#endif

#endif /* NMT_FORCED_TOKENS_H */
