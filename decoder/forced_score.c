/* forced_score.c: scoring on the CPU (forced_search.h, nmt_score_forced): a
 * teacher-forced pass over the step interface. Each sentence is one row
 * whose next token is known, so a step is the model's step over the rows
 * still scoring, each row's target word picked from its log-probabilities,
 * and a reorder that drops the rows whose target ended (OpenNMT-py's -tgt
 * gold score, CTranslate2's score_batch, marian-scorer). The sums are the
 * float sums a beam search accumulates (nmt_rule_rank with penalty 1), so a
 * model-v1 search forced to the same tokens gives the same bits. */
#include "forced_search.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

float nmt_forced_score_normalized(const nmt_search_config *config, float log_prob,
                                  int32_t length)
{
    if (config->rules == NMT_SEARCH_RULES_ONMT)
        return log_prob / nmt_rule_onmt_penalty(length + 1, config->params.alpha);
    return nmt_rule_v1_score(log_prob, length + 1, config->params.alpha);
}

/* results[i]'s one hypothesis, its arrays allocated for its target. */
static nmt_status allocate_results(const nmt_search_config *config, int32_t n,
                                   const int32_t *src_lengths, nmt_search_result *results,
                                   nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const nmt_forced_tokens *f = config->forced;
    for (int32_t i = 0; i < n; i++) {
        const int32_t length = f->offset[i + 1] - f->offset[i];
        nmt_search_hypothesis *h = NULL;
        NMT_ALLOC(results[i].hypotheses, 1);
        results[i].n_hypotheses = 1;
        h = &results[i].hypotheses[0];
        h->length = length;
        h->n_src = src_lengths[i];
        NMT_ALLOC(h->tokens, length > 0 ? length : 1);
        NMT_ALLOC(h->attn_argmax, length > 0 ? length : 1);
        NMT_ALLOC(h->token_scores, (size_t)length + 1);
        if (config->attention)
            NMT_ALLOC(h->attention, length > 0 ? (size_t)length * (size_t)src_lengths[i] : 1);
        if (length > 0)
            memcpy(h->tokens, f->ids + f->offset[i], sizeof(int32_t) * (size_t)length);
    }
cleanup:
    return status;
}

nmt_status nmt_score_forced(const nmt_step_model *model, int32_t n, const int32_t *src_lengths,
                            const nmt_search_config *config, nmt_search_result *results,
                            nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    float *log_probs = NULL, *sums = NULL;
    int32_t *tokens = NULL, *attn = NULL, *parent = NULL, *rows = NULL;
    for (int32_t i = 0; results && i < n; i++)
        results[i] = (nmt_search_result){0, NULL};
    if (!model || !model->step || !model->reorder || !config || n < 0 ||
        (n > 0 && (!src_lengths || !results)))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "scoring: bad arguments");
    if (config->attention && !model->attention)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "scoring: attention weights asked "
                             "for, but the model gives none");
    const int32_t vocab = model->vocab_size;
    NMT_TRY(nmt_forced_tokens_check(config, n, vocab, 1, err));
    if (n == 0)
        return NMT_STATUS_OK;
    if ((size_t)n > SIZE_MAX / sizeof(float) / (size_t)vocab)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "scoring: %d sentences x "
                             "vocabulary %d is too large", n, vocab);
    const nmt_forced_tokens *f = config->forced;
    NMT_TRY(allocate_results(config, n, src_lengths, results, err));
    NMT_ALLOC(log_probs, (size_t)n * (size_t)vocab);
    NMT_ALLOC(sums, n);
    NMT_ALLOC(tokens, n);
    NMT_ALLOC(attn, n);
    NMT_ALLOC(parent, n);
    NMT_ALLOC(rows, n); /* rows[r]: the sentence of row r */
    int32_t n_rows = n;
    for (int32_t i = 0; i < n; i++) {
        rows[i] = i;
        tokens[i] = config->bos_id;
        sums[i] = 0.0f;
    }
    for (int32_t step = 1; n_rows > 0; step++) {
        NMT_TRY(model->step(model->self, n_rows, tokens, log_probs, attn, err));
        int32_t stride = 0;
        const float *weights = config->attention ? model->attention(model->self, &stride) : NULL;
        int32_t n_next = 0;
        for (int32_t r = 0; r < n_rows; r++) {
            const int32_t i = rows[r], length = f->offset[i + 1] - f->offset[i];
            nmt_search_hypothesis *h = &results[i].hypotheses[0];
            const int32_t t = step - 1; /* the token this step scores */
            const int32_t word = t < length ? f->ids[f->offset[i] + t] : config->eos_id;
            const float before = sums[i];
            sums[i] = nmt_rule_rank(before, log_probs[(size_t)r * (size_t)vocab + word], 1.0f);
            h->token_scores[t] = t == 0 ? sums[i] : sums[i] - before;
            if (t == length) {
                h->log_prob = sums[i];
                h->score = nmt_forced_score_normalized(config, sums[i], length);
                continue; /* its EOS: the row ends */
            }
            h->attn_argmax[t] = attn[r];
            if (weights)
                memcpy(h->attention + (size_t)t * (size_t)h->n_src,
                       weights + (size_t)r * (size_t)stride, sizeof(float) * (size_t)h->n_src);
            parent[n_next] = r;
            tokens[n_next] = word;
            rows[n_next++] = i; /* r >= n_next: row r was read already */
        }
        if (n_next == 0)
            break;
        NMT_TRY(model->reorder(model->self, n_next, parent, err));
        n_rows = n_next;
    }
cleanup:
    if (status != NMT_STATUS_OK)
        for (int32_t i = 0; results && i < n; i++)
            nmt_search_result_clear(&results[i]);
    free(log_probs);
    free(sums);
    free(tokens);
    free(attn);
    free(parent);
    free(rows);
    return status;
}
