/* step_ensemble.c: several step models as one (step_ensemble.h). A step
 * runs every member on the same rows into a row block of its own, then the
 * ensemble's scores are their weighted sum (nmt_cpu_ensemble_log_probs, in
 * member order); reorder reorders every member. Nothing allocates after
 * create. */
#include "step_ensemble.h"

#include "error.h"

#include <math.h>
#include <stdlib.h>

struct nmt_step_ensemble {
    int32_t n, max_rows, vocab;
    nmt_step_model members[NMT_MAX_ENSEMBLE_MODELS];
    float weights[NMT_MAX_ENSEMBLE_MODELS];
    float *member_log_probs; /* [n][max_rows, V] */
    int32_t *attn_scratch;   /* [max_rows]: the argmax of members after the first */
};

nmt_status nmt_ensemble_check_weights(const float *weights, int32_t n, nmt_error *err)
{
    if (n < 1 || n > NMT_MAX_ENSEMBLE_MODELS)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "ensemble: %d models, must be 1..%d", n, NMT_MAX_ENSEMBLE_MODELS);
    if (!weights)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "ensemble: no weights");
    double total = 0.0;
    for (int32_t i = 0; i < n; i++) {
        if (!isfinite(weights[i]) || weights[i] < 0.0f)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "ensemble: weight %d is %g: each must be finite and >= 0", i + 1,
                                 (double)weights[i]);
        total += weights[i];
    }
    if (total <= 0.0)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "ensemble: every weight is 0 (at least one must be positive)");
    return NMT_STATUS_OK;
}

static nmt_status ensemble_step(void *self, int32_t n_rows, const int32_t *prev_tokens,
                                float *log_probs, int32_t *attn_argmax, nmt_error *err)
{
    nmt_step_ensemble *e = self;
    const int32_t V = e->vocab;
    if (n_rows < 0 || n_rows > e->max_rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "ensemble step: %d rows outside [0, %d]", n_rows, e->max_rows);
    nmt_ensemble_members sum = {.n = e->n};
    for (int32_t i = 0; i < e->n; i++) {
        const nmt_step_model *m = &e->members[i];
        float *lp = e->member_log_probs + (size_t)i * e->max_rows * V;
        const nmt_status status = m->step(m->self, n_rows, prev_tokens, lp,
                                          i == 0 ? attn_argmax : e->attn_scratch, err);
        if (status != NMT_STATUS_OK)
            return status;
        sum.member[i] = (nmt_ensemble_member){
            .logits = lp,
            .ld = V,
            .lse = NULL,
            .weight = e->weights[i],
        };
    }
    nmt_cpu_ensemble_log_probs(n_rows, V, &sum, log_probs, V);
    return NMT_STATUS_OK;
}

static nmt_status ensemble_reorder(void *self, int32_t n_rows, const int32_t *parent,
                                   nmt_error *err)
{
    nmt_step_ensemble *e = self;
    for (int32_t i = 0; i < e->n; i++) {
        const nmt_step_model *m = &e->members[i];
        const nmt_status status = m->reorder(m->self, n_rows, parent, err);
        if (status != NMT_STATUS_OK)
            return status;
    }
    return NMT_STATUS_OK;
}

static const float *ensemble_attention(void *self, int32_t *stride)
{
    const nmt_step_model *first = &((nmt_step_ensemble *)self)->members[0];
    return first->attention ? first->attention(first->self, stride) : NULL;
}

nmt_status nmt_step_ensemble_create(const nmt_step_model *members, const float *weights,
                                    int32_t n, int32_t max_rows, nmt_step_ensemble **ensemble,
                                    nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_step_ensemble *e = NULL;
    *ensemble = NULL;
    NMT_TRY(nmt_ensemble_check_weights(weights, n, err));
    if (!members || max_rows < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "ensemble: no members or max_rows %d", max_rows);
    for (int32_t i = 0; i < n; i++) {
        if (!members[i].step || !members[i].reorder)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "ensemble: model %d has no step or reorder", i + 1);
        if (members[i].vocab_size != members[0].vocab_size)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "ensemble: model %d scores %d words, model 1 %d", i + 1,
                                 members[i].vocab_size, members[0].vocab_size);
    }
    NMT_ALLOC(e, 1);
    e->n = n;
    e->max_rows = max_rows;
    e->vocab = members[0].vocab_size;
    for (int32_t i = 0; i < n; i++) {
        e->members[i] = members[i];
        e->weights[i] = weights[i];
    }
    NMT_ALLOC(e->member_log_probs, (size_t)n * max_rows * e->vocab);
    NMT_ALLOC(e->attn_scratch, max_rows);
    *ensemble = e;
    return NMT_STATUS_OK;
cleanup:
    nmt_step_ensemble_free(e);
    return status;
}

void nmt_step_ensemble_free(nmt_step_ensemble *e)
{
    if (!e)
        return;
    free(e->member_log_probs);
    free(e->attn_scratch);
    free(e);
}

nmt_step_model nmt_step_ensemble_model(nmt_step_ensemble *e)
{
    return (nmt_step_model){
        .self = e,
        .vocab_size = e->vocab,
        .step = ensemble_step,
        .reorder = ensemble_reorder,
        .attention = ensemble_attention,
        .unnormalized = 1,
    };
}
