/* search.h: beam search over a narrow step interface (model-v1 semantics).
 *
 * The search never touches weights: it drives any nmt_step_model, the CPU
 * reference model (model/cpu_step_model.c) or a scripted fake in the tests.
 *
 * Rows: the model holds one decoder state per row. Before the search starts,
 * row i is sentence i's initial (BOS) state, for i in [0, n_sentences). After
 * each step the search calls reorder with, for every new row, the index of
 * the old row it continues; rows of finished sentences are simply dropped. */
#ifndef NMT_SEARCH_H
#define NMT_SEARCH_H

#include "forced_tokens.h"
#include "nmt_enums.h"
#include "nmt_status.h"
#include "search_params.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_step_model {
    void *self;
    int32_t vocab_size;
    /* Scores the n_rows current rows: prev_tokens[r] is row r's last token
     * (BOS at the first step). Writes log_probs[r * vocab_size + w], the full
     * log-softmax, and attn_argmax[r], the source position with the largest
     * attention weight (for UNK replacement). */
    nmt_status (*step)(void *self, int32_t n_rows, const int32_t *prev_tokens,
                       float *log_probs, int32_t *attn_argmax, nmt_error *err);
    /* New row i continues old row parent[i], i in [0, n_rows). */
    nmt_status (*reorder)(void *self, int32_t n_rows, const int32_t *parent, nmt_error *err);
    /* NULL, or the attention weights of the last step: row r's weights over
     * its sentence's source positions start at r * *stride (valid until the
     * next step or reorder). Read only when the config asks for them. */
    const float *(*attention)(void *self, int32_t *stride);
    /* NULL, or the logits of the last step before their log-softmax (row r
     * at r * *ld; valid until the next step or reorder): the repetition
     * penalty rescales logits (without them it rescales the
     * log-probabilities). */
    const float *(*logits)(void *self, int32_t *ld);
} nmt_step_model;

/* OpenNMT-py's -max_length default: the onmt rules never search longer. */
#define NMT_ONMT_MAX_LENGTH 250

typedef struct nmt_search_config {
    nmt_search_params params; /* beam, n-best, length penalty and limit (checked there) */
    int32_t pad_id, bos_id, eos_id;
    nmt_search_rules rules; /* 0 (zero-initialized): model-v1 */
    int32_t attention;    /* 1: give every hypothesis its tokens' attention weights
                             (nmt_search_hypothesis.attention); 0 (zero-initialized): not */
    const nmt_forced_tokens *forced; /* NULL (zero-initialized): none; else the tokens each
                                        sentence of the batch must take (forced_tokens.h) */
    int32_t unk_id;       /* params.ban_unk's word */
    const uint64_t *line_keys; /* sampling: sentence i's random streams are keyed
                                  line_keys[i] (logit_rules.h); NULL: i */
} nmt_search_config;

typedef struct nmt_search_hypothesis {
    int32_t length;       /* tokens, EOS excluded */
    int32_t *tokens;      /* [length] */
    int32_t *attn_argmax; /* [length]: source position attended most at each token */
    float log_prob;       /* sum of log-probabilities, EOS included (onmt rules: a
                             hypothesis cut at the max length has no EOS) */
    float score;          /* v1: log_prob / (length + 1)^alpha; onmt: log_prob /
                             (length + 2)^alpha (BOS and EOS counted), or / (length + 1)^alpha
                             when cut at the max length */
    float *token_scores;  /* [length + 1]: each token's log-probability, then the EOS's,
                             as differences of the score the search accumulated (so they
                             sum to log_prob up to float rounding); the last is 0 for an
                             onmt hypothesis cut at the max length (it has no EOS) */
    int32_t n_src;        /* source tokens: the columns of attention */
    float *attention;     /* config.attention: [length, n_src], row t the attention weights
                             of the decoder step that produced token t (each row sums to 1);
                             else NULL */
} nmt_search_hypothesis;

typedef struct nmt_search_result {
    int32_t n_hypotheses; /* <= n_best */
    nmt_search_hypothesis *hypotheses; /* best first */
} nmt_search_result;

/* Runs the batched beam search for n_sentences sentences whose source token
 * counts are src_lengths[i] (>= 1). Fills results[i] (release each with
 * nmt_search_result_clear). Allocation happens up front, not per step. */
nmt_status nmt_beam_search(const nmt_step_model *model, int32_t n_sentences,
                           const int32_t *src_lengths, const nmt_search_config *config,
                           nmt_search_result *results, nmt_error *err);

void nmt_search_result_clear(nmt_search_result *result);

/* floor(a * S + b), at least 1; the onmt rules cap it at NMT_ONMT_MAX_LENGTH. */
int32_t nmt_search_max_length(const nmt_search_config *config, int32_t src_length);

#ifdef __cplusplus
}
#endif

#endif /* NMT_SEARCH_H */
