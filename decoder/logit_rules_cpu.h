/* logit_rules_cpu.h: private to decoder/: the CPU search's side of the
 * logit rules, random sampling and the coverage penalty
 * (decoder/logit_rules.c), over the rules of logit_rules.h. One
 * nmt_cpu_rules a search, its scratch allocated before the first step. */
#ifndef NMT_LOGIT_RULES_CPU_H
#define NMT_LOGIT_RULES_CPU_H

#include "search.h"

#include <stdint.h>

typedef struct nmt_cpu_rules {
    const nmt_search_config *config;
    int32_t vocab;
    float *logits;       /* [vocab]: a row's logits as the rules edit them */
    unsigned char *held; /* [vocab]: the words of the hypothesis (zero between rows) */
    int32_t *tokens;     /* [max_len]: the hypothesis the caller writes for a row */
    float *top_values;   /* [sampling_topk]: a row's top-K (sampling) */
    int32_t *top_ids;
} nmt_cpu_rules;

/* Scratch for hypotheses of up to max_len tokens; refuses suppressed words
 * and ban_unk's UNK outside the vocabulary. */
nmt_status nmt_cpu_rules_init(nmt_cpu_rules *rules, const nmt_search_config *config,
                              int32_t vocab, int32_t max_len, nmt_error *err);
void nmt_cpu_rules_free(nmt_cpu_rules *rules);

/* The logit rules on one row at step `step` of a sentence of max length
 * max_len, whose hypothesis is rules->tokens[0..len): the rules edit the
 * row's logits (the model's, or NULL: its log-probabilities stand for
 * them), and a row they change gets their log-softmax in log_probs.
 * Returns whether they changed it. */
int nmt_cpu_rules_apply(nmt_cpu_rules *rules, int32_t step, int32_t max_len, int32_t len,
                        const float *logits, float *log_probs);

/* The word sample `sample` of the line keyed line_key draws at step `step`
 * from a row's log-probabilities (PAD and BOS never), or -1 when no word
 * may be drawn. */
int32_t nmt_cpu_rules_sample(nmt_cpu_rules *rules, const float *log_probs, uint64_t line_key,
                             int32_t sample, int32_t step);

/* The coverage penalty of a hypothesis whose coverage was `coverage` before
 * the step whose attention weights are `weights` (n_src source positions). */
float nmt_cpu_coverage_penalty(const nmt_search_params *params, const float *coverage,
                               const float *weights, int32_t n_src);

#endif /* NMT_LOGIT_RULES_CPU_H */
