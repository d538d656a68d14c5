/* logit_rules.c: the CPU search's side of the logit rules, random sampling
 * and the coverage penalty (logit_rules_cpu.h; the rules themselves are
 * logit_rules.h's, which the GPU follows too). Rows are rewritten in place:
 * a row some rule changes gets the log-softmax of its rule-edited logits;
 * the others keep the model's log-probabilities. */
#include "logit_rules_cpu.h"

#include "error.h"
#include "logit_rules.h"
#include "softmax_topk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

nmt_status nmt_cpu_rules_init(nmt_cpu_rules *r, const nmt_search_config *config, int32_t vocab,
                              int32_t max_len, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    memset(r, 0, sizeof *r);
    r->config = config;
    r->vocab = vocab;
    const nmt_search_params *p = &config->params;
    for (int32_t at = 0; at < p->suppress_words; at += 1 + p->suppress[at])
        for (int32_t j = 1; j <= p->suppress[at]; j++)
            if (p->suppress[at + j] >= vocab)
                return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                     "search: suppressed word id %d is outside the vocabulary "
                                     "[0, %d)", p->suppress[at + j], vocab);
    if (p->ban_unk && (config->unk_id < 0 || config->unk_id >= vocab))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "search: ban_unk with unk_id %d outside [0, %d)", config->unk_id,
                             vocab);
    NMT_ALLOC(r->logits, vocab);
    NMT_ALLOC(r->held, vocab);
    NMT_ALLOC(r->tokens, max_len > 0 ? max_len : 1);
    if (nmt_search_sampling(p) && p->sampling_topk != NMT_SAMPLING_ALL) {
        NMT_ALLOC(r->top_values, p->sampling_topk);
        NMT_ALLOC(r->top_ids, p->sampling_topk);
    }
    return NMT_STATUS_OK;
cleanup:
    nmt_cpu_rules_free(r);
    return status;
}

void nmt_cpu_rules_free(nmt_cpu_rules *r)
{
    free(r->logits);
    free(r->held);
    free(r->tokens);
    free(r->top_values);
    free(r->top_ids);
    memset(r, 0, sizeof *r);
}

/* The bans of a row whose hypothesis is r->tokens[0..len), on logits z. */
static int ban_words(const nmt_cpu_rules *r, int32_t step, int32_t max_len, int32_t len, float *z)
{
    const nmt_search_config *c = r->config;
    const nmt_search_params *p = &c->params;
    int changed = 0;
#define BAN(word)                                                                             \
    do {                                                                                      \
        const int32_t w_ = (word);                                                            \
        if (w_ >= 0 && z[w_] != -INFINITY) {                                                  \
            z[w_] = -INFINITY;                                                                \
            changed = 1;                                                                      \
        }                                                                                     \
    } while (0)
    for (int32_t i = 0; p->no_repeat_ngram_size > 0 && i < len; i++)
        BAN(nmt_rule_ngram_ban(r->tokens, len, p->no_repeat_ngram_size, i));
    for (int32_t at = 0; at < p->suppress_words; at += 1 + p->suppress[at])
        BAN(nmt_rule_suppressed(r->tokens, len, p->suppress + at + 1, p->suppress[at]));
    if (p->ban_unk)
        BAN(c->unk_id);
    if (nmt_rule_eos_banned(step, p->min_length, max_len))
        BAN(c->eos_id);
#undef BAN
    return changed;
}

int nmt_cpu_rules_apply(nmt_cpu_rules *r, int32_t step, int32_t max_len, int32_t len,
                        const float *logits, float *log_probs)
{
    const nmt_search_params *p = &r->config->params;
    const int32_t V = r->vocab;
    float *z = r->logits;
    memcpy(z, logits ? logits : log_probs, sizeof(float) * (size_t)V);
    int changed = 0;
    if (nmt_search_repetition(p)) {
        /* Each word the hypothesis holds once, however often it holds it. */
        for (int32_t i = 0; i < len; i++) {
            const int32_t w = r->tokens[i];
            if (w < 0 || w >= V || r->held[w])
                continue;
            r->held[w] = 1;
            z[w] = nmt_rule_repetition(z[w], p->repetition_penalty);
            changed = 1;
        }
        for (int32_t i = 0; i < len; i++)
            if (r->tokens[i] >= 0 && r->tokens[i] < V)
                r->held[r->tokens[i]] = 0;
    }
    changed |= ban_words(r, step, max_len, len, z);
    if (changed)
        nmt_cpu_log_softmax(1, V, z, V, log_probs);
    return changed;
}

int32_t nmt_cpu_rules_sample(nmt_cpu_rules *r, const float *log_probs, uint64_t line_key,
                             int32_t sample, int32_t step)
{
    const nmt_search_config *c = r->config;
    const nmt_search_params *p = &c->params;
    const double u = nmt_rule_sample_uniform(p->seed, line_key, sample, step);
    const int32_t excluded[2] = {c->pad_id, c->bos_id};
    if (p->sampling_topk != NMT_SAMPLING_ALL) {
        nmt_cpu_softmax_topk(1, r->vocab, log_probs, r->vocab, p->sampling_topk, excluded, 2,
                             r->top_values, r->top_ids, NULL);
        const int32_t at = nmt_rule_sample_pick(r->top_values, p->sampling_topk,
                                                p->sampling_temperature, p->sampling_topp, u);
        return at >= 0 ? r->top_ids[at] : -1;
    }
    /* The whole vocabulary, in word order. */
    float best = -INFINITY;
    for (int32_t w = 0; w < r->vocab; w++)
        if (w != c->pad_id && w != c->bos_id && log_probs[w] > best)
            best = log_probs[w];
    if (!(best > -INFINITY))
        return -1;
    double total = 0.0;
    for (int32_t w = 0; w < r->vocab; w++)
        if (w != c->pad_id && w != c->bos_id && log_probs[w] > -INFINITY)
            total += nmt_rule_sample_weight(log_probs[w], best, p->sampling_temperature);
    const double target = u * total;
    double sum = 0.0;
    int32_t last = -1;
    for (int32_t w = 0; w < r->vocab; w++) {
        if (w == c->pad_id || w == c->bos_id || !(log_probs[w] > -INFINITY))
            continue;
        sum += nmt_rule_sample_weight(log_probs[w], best, p->sampling_temperature);
        last = w;
        if (sum > target)
            return w;
    }
    return last;
}

float nmt_cpu_coverage_penalty(const nmt_search_params *p, const float *coverage,
                               const float *weights, int32_t n_src)
{
    float sum = 0.0f;
    for (int32_t j = 0; j < n_src; j++)
        sum += nmt_rule_coverage_term((int32_t)p->coverage_penalty, coverage[j] + weights[j]);
    return p->coverage_beta * sum;
}
