/* search_params.h: what a search looks for (the beam, the n-best list, the
 * length penalty and the length limit, sampling and the logit rules): one
 * struct with one validator. The public options, a request's overrides, the
 * CPU search and the CUDA search all hold and check these fields here, so a
 * new decoding option is added in one place. Plain C. */
#ifndef NMT_SEARCH_PARAMS_H
#define NMT_SEARCH_PARAMS_H

#include "nmt_enums.h"
#include "nmt_status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest beam any search takes (the CUDA kernels' shared arrays). */
#define NMT_SEARCH_MAX_BEAM 256
/* The largest sampling_topk other than 0 (the whole vocabulary): the CUDA
 * top-K's largest K without a sort (kernels/cuda/softmax_topk.cu). */
#define NMT_SAMPLING_MAX_TOPK 512
/* Suppressed sequences: words in all (lengths included) and one's tokens. */
#define NMT_SUPPRESS_MAX_WORDS 4096
#define NMT_SUPPRESS_MAX_LENGTH 64

typedef struct nmt_search_params {
    int32_t beam_size; /* B, 1..max_beam (sampling: 1) */
    int32_t n_best;    /* N, 1..B (sampling: the samples a line, 1..max_beam) */
    float alpha;       /* length penalty exponent, 0..10 */
    float max_len_a;   /* max target length floor(a * S + b), EOS counted: a in 0..100, */
    int32_t max_len_b; /* b in 0..10000, not both 0 */
    /* forced tokens (scoring, prefixes): docs/decoding.md, "Target prefixes" */
    int32_t return_alternatives; /* 1: a line's n_best hypotheses are the n_best words that
                                    can follow its target prefix (none: at the first
                                    position), EOS excepted, each continued by the beam
                                    (CTranslate2's return_alternatives); 0 (default): the
                                    beam's n-best list */

    /* sampling and logit rules (docs/decoding.md). Zero-initialized, each
     * is off; the public options' values (nmt_options, CTranslate2's) are
     * mapped to these in one place (engine/translator_rules.c,
     * nmt_options_search_params). */
    int32_t sampling_topk;      /* 0: no sampling (the beam search); K in
                                   1..NMT_SAMPLING_MAX_TOPK: sample from the K likeliest
                                   words; NMT_SAMPLING_ALL: from every word. Sampling takes
                                   beam_size 1 and draws n_best samples a line */
    float sampling_topp;        /* sampling: (0, 1], the smallest prefix of the top-K whose
                                   probability is at least this (< 1 needs a K) */
    float sampling_temperature; /* sampling: (0, 100], softmax(logits / T) */
    uint64_t seed;              /* sampling: the random streams' key (logit_rules.h) */
    int32_t min_length;         /* 0..10000: EOS never ends a hypothesis of fewer tokens
                                   (its max-length step excepted) */
    int32_t no_repeat_ngram_size; /* 0 (off) or 1..64: a word that would repeat an n-gram
                                     of its hypothesis is never generated */
    float repetition_penalty;   /* 0 or 1: off; else (0, 100]: each word the hypothesis
                                   holds has its logit divided by this when positive,
                                   multiplied when negative */
    int32_t ban_unk;            /* 1: UNK (nmt_search_config.unk_id) is never generated */
    const int32_t *suppress;    /* sequences that are never generated, one after another:
                                   its length (1..NMT_SUPPRESS_MAX_LENGTH), then its word ids */
    int32_t suppress_words;     /* int32s in suppress, lengths included (0..MAX_WORDS) */
    nmt_coverage_penalty coverage_penalty; /* the onmt rules only */
    float coverage_beta;        /* 0..100 */
} nmt_search_params;

/* sampling_topk: sample from every word of the vocabulary. */
#define NMT_SAMPLING_ALL (-1)

/* Random sampling replaces the beam search: n_best independent samples. */
static inline int nmt_search_sampling(const nmt_search_params *p)
{
    return p->sampling_topk != 0;
}

/* Hypotheses a search keeps per sentence: its rows (the beam, or the
 * samples). */
static inline int32_t nmt_search_width(const nmt_search_params *p)
{
    return nmt_search_sampling(p) ? p->n_best : p->beam_size;
}

/* The repetition penalty is on (0 and 1 are off). */
static inline int nmt_search_repetition(const nmt_search_params *p)
{
    return p->repetition_penalty != 0.0f && p->repetition_penalty != 1.0f;
}

/* A logit rule changes some step's scores, which the searches then
 * renormalize; the coverage penalty is not one (it rescores finished
 * hypotheses). */
static inline int nmt_search_has_logit_rules(const nmt_search_params *p)
{
    return p->min_length > 0 || p->no_repeat_ngram_size > 0 || nmt_search_repetition(p) ||
           p->ban_unk || p->suppress_words > 0;
}

/* Refuses params outside the ranges above with NMT_STATUS_ERROR_ARGUMENT and
 * a message that names the field; max_beam is the caller's capacity (at most
 * NMT_SEARCH_MAX_BEAM): the most rows a sentence may take (nmt_search_width). */
nmt_status nmt_search_params_check(const nmt_search_params *params, int32_t max_beam,
                                   nmt_error *err);

/* What the rule sets take: sampling the v1 rules, the coverage penalty the
 * onmt rules (NMT_STATUS_ERROR_ARGUMENT otherwise). */
nmt_status nmt_search_params_check_rules(const nmt_search_params *params,
                                         nmt_search_rules rules, nmt_error *err);

/* Whether a and b ask for the same search (requests batch together). */
int nmt_search_params_equal(const nmt_search_params *a, const nmt_search_params *b);

#ifdef __cplusplus
}
#endif

#endif /* NMT_SEARCH_PARAMS_H */
