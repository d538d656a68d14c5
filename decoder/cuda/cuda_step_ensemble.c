/* cuda_step_ensemble.c: several GPU step models as one
 * (cuda_step_ensemble.h). Its buffers are one device allocation carved at
 * create: the score block [max_rows, ld], the 2B best of each row (values,
 * ids), the top-K's log-sum-exp (not read), the zeros the beam step reads
 * as each row's log-sum-exp, the top-K's workspace, and scoring's picks
 * (a row's word's log p, [member, max_rows]). */
#include "cuda_step_ensemble.h"

#include "align.h"
#include "cuda_check.h"
#include "ensemble.h"
#include "error.h"
#include "softmax_topk.h"
#include "step_ensemble.h"

#include <stdlib.h>
#include <string.h>

struct nmt_cuda_step_ensemble {
    nmt_cuda_step_ensemble_config config;
    int32_t n, vocab, ld;
    nmt_cuda_step_model members[NMT_MAX_ENSEMBLE_MODELS];
    float weights[NMT_MAX_ENSEMBLE_MODELS];
    void *arena;
    float *scores, *top_values, *lse, *zeros, *picks;
    int32_t *top_ids;
    int32_t stash_rows; /* scoring's rows at once: the members' least (0: no scoring) */
    void *workspace;
    size_t workspace_bytes;
};

/* Score rows start on 128-byte boundaries, as the output layer's logits. */
enum { kScoresAlign = 32 };

typedef struct arena_layout {
    size_t scores, top_values, top_ids, lse, zeros, workspace, picks, total;
} arena_layout;

static arena_layout layout(const nmt_cuda_step_ensemble_config *c, int32_t n, int32_t ld,
                           size_t workspace_bytes)
{
    const size_t R = (size_t)c->max_rows, K = 2 * (size_t)c->beam;
    arena_layout l;
    size_t at = 0;
#define PLACE(field, bytes) (l.field = at, at = nmt_align_up(at + (bytes), 256))
    PLACE(scores, R * (size_t)ld * sizeof(float));
    PLACE(top_values, R * K * sizeof(float));
    PLACE(top_ids, R * K * sizeof(int32_t));
    PLACE(lse, R * sizeof(float));
    PLACE(zeros, R * sizeof(float));
    PLACE(workspace, workspace_bytes);
    PLACE(picks, (size_t)n * R * sizeof(float));
#undef PLACE
    l.total = at;
    return l;
}

size_t nmt_cuda_step_ensemble_device_bytes(const nmt_cuda_step_ensemble_config *config,
                                           int32_t n, int32_t vocab)
{
    const size_t ws = nmt_cuda_softmax_topk_workspace_size(config->max_rows, vocab,
                                                           2 * config->beam);
    if (ws == SIZE_MAX)
        return SIZE_MAX;
    return layout(config, n, (int32_t)nmt_align_up((size_t)vocab, kScoresAlign), ws).total;
}

static nmt_status ensemble_encode(void *self, int buf, const nmt_cuda_encoder_input *in,
                                  nmt_error *err)
{
    nmt_cuda_step_ensemble *e = self;
    for (int32_t i = 0; i < e->n; i++) {
        const nmt_cuda_step_model *m = &e->members[i];
        const nmt_status status = m->encode(m->self, buf, in, err);
        if (status != NMT_STATUS_OK)
            return status;
    }
    return NMT_STATUS_OK;
}

static nmt_status ensemble_step(void *self, int buf, int32_t n_rows, const nmt_cuda_rows *rows,
                                const int32_t *src_len, int32_t src_stride, int carried_in,
                                int carry_out, nmt_error *err)
{
    nmt_cuda_step_ensemble *e = self;
    for (int32_t i = 0; i < e->n; i++) {
        const nmt_cuda_step_model *m = &e->members[i];
        const nmt_status status = m->step(m->self, buf, n_rows, rows, src_len, src_stride,
                                          carried_in, carry_out, err);
        if (status != NMT_STATUS_OK)
            return status;
    }
    return NMT_STATUS_OK;
}

static nmt_status ensemble_output(void *self, int buf, int32_t n_rows, int32_t beam,
                                  const nmt_cuda_rows *rows, const int32_t *excluded,
                                  int32_t n_excluded, int32_t logits_word, nmt_cuda_scores *out,
                                  nmt_error *err)
{
    (void)logits_word; /* the sum is written whole */
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_step_ensemble *e = self;
    void *stream = e->members[0].stream;
    if (n_rows < 1 || n_rows > e->config.max_rows || beam < 1 || beam > e->config.beam || !out)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda ensemble output: %d rows (max %d), beam %d (max %d)", n_rows,
                             e->config.max_rows, beam, e->config.beam);
    nmt_ensemble_members sum = {.n = e->n};
    nmt_cuda_scores first = {0};
    for (int32_t i = 0; i < e->n; i++) {
        const nmt_cuda_step_model *m = &e->members[i];
        nmt_cuda_scores s;
        /* every member's every logit: the sum reads them all */
        NMT_TRY(m->output(m->self, buf, n_rows, beam, rows, excluded, n_excluded, NMT_LOGITS_ALL,
                          &s, err));
        if (i == 0)
            first = s;
        sum.member[i] = (nmt_ensemble_member){
            .logits = s.logits,
            .ld = s.ld_logits,
            .lse = s.lse,
            .weight = e->weights[i],
        };
    }
    NMT_TRY(nmt_cuda_ensemble_log_probs(n_rows, e->vocab, &sum, e->scores, e->ld, stream, err));
    const nmt_softmax_topk_variant topk = e->config.batch_invariant
                                              ? NMT_SOFTMAX_TOPK_AUTO_INVARIANT
                                              : NMT_SOFTMAX_TOPK_AUTO;
    NMT_TRY(nmt_cuda_softmax_topk_variant(n_rows, e->vocab, e->scores, e->ld, 2 * beam, excluded,
                                          n_excluded, e->top_values, e->top_ids, e->lse,
                                          e->workspace, e->workspace_bytes, topk, stream, err));
    NMT_TRY(nmt_cuda_gather_top_values(n_rows, 2 * beam, e->scores, e->ld, e->top_ids,
                                       e->top_values, stream, err));
    *out = (nmt_cuda_scores){
        .top_values = e->top_values,
        .top_ids = e->top_ids,
        .logits = e->scores,
        .ld_logits = e->ld,
        .lse = e->zeros,
        .attn_argmax = first.attn_argmax,
    };
cleanup:
    return status;
}

/* Scoring: every member stashes the rows (each into its own stash); the
 * argmax is the first's. */
static nmt_status ensemble_stash(void *self, int buf, int32_t n_rows, int32_t at,
                                 const int32_t **attn_argmax, nmt_error *err)
{
    nmt_cuda_step_ensemble *e = self;
    for (int32_t i = 0; i < e->n; i++) {
        const nmt_cuda_step_model *m = &e->members[i];
        const int32_t *argmax = NULL;
        const nmt_status status = m->stash(m->self, buf, n_rows, at, &argmax, err);
        if (status != NMT_STATUS_OK)
            return status;
        if (i == 0)
            *attn_argmax = argmax;
    }
    return NMT_STATUS_OK;
}

/* Scoring: each member's log p of the rows' words, then their weighted sum
 * (a row of one word: the same kernel, the same order). */
static nmt_status ensemble_pick(void *self, int32_t n_rows, const int32_t *words,
                                float *log_probs, nmt_error *err)
{
    nmt_cuda_step_ensemble *e = self;
    if (n_rows < 0 || n_rows > e->stash_rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda ensemble pick: %d rows (max %d)", n_rows, e->stash_rows);
    nmt_ensemble_members sum = {.n = e->n};
    for (int32_t i = 0; i < e->n; i++) {
        const nmt_cuda_step_model *m = &e->members[i];
        float *picked = e->picks + (size_t)i * e->config.max_rows;
        const nmt_status status = m->pick(m->self, n_rows, words, picked, err);
        if (status != NMT_STATUS_OK)
            return status;
        sum.member[i] = (nmt_ensemble_member){.logits = picked, .ld = 1, .weight = e->weights[i]};
    }
    return nmt_cuda_ensemble_log_probs(n_rows, 1, &sum, log_probs, 1, e->members[0].stream, err);
}

static nmt_status check_members(const nmt_cuda_step_model *members, int32_t n, nmt_error *err)
{
    for (int32_t i = 0; i < n; i++) {
        const nmt_cuda_step_model *m = &members[i];
        if (!m->encode || !m->step || !m->output)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "cuda ensemble: model %d lacks a call", i + 1);
        if (m->vocab_size != members[0].vocab_size)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "cuda ensemble: model %d scores %d words, model 1 %d", i + 1,
                                 m->vocab_size, members[0].vocab_size);
        if (m->stream != members[0].stream)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "cuda ensemble: model %d runs on another stream", i + 1);
        if (m->shrunk)
            return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                                 "cuda ensemble: model %d has a shrunk output layer (an ensemble "
                                 "scores the whole vocabulary)", i + 1);
    }
    return NMT_STATUS_OK;
}

nmt_status nmt_cuda_step_ensemble_create(const nmt_cuda_step_model *members, const float *weights,
                                         int32_t n, const nmt_cuda_step_ensemble_config *config,
                                         nmt_cuda_step_ensemble **ensemble, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_step_ensemble *e = NULL;
    *ensemble = NULL;
    NMT_TRY(nmt_ensemble_check_weights(weights, n, err));
    if (!members || !config || config->max_rows < 1 || config->beam < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda ensemble: bad arguments");
    NMT_TRY(check_members(members, n, err));
    e = (nmt_cuda_step_ensemble *)calloc(1, sizeof *e);
    if (!e)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "cuda ensemble: out of memory");
    e->config = *config;
    e->n = n;
    e->vocab = members[0].vocab_size;
    e->ld = (int32_t)nmt_align_up((size_t)e->vocab, kScoresAlign);
    for (int32_t i = 0; i < n; i++) {
        e->members[i] = members[i];
        e->weights[i] = weights[i];
    }
    e->workspace_bytes = nmt_cuda_softmax_topk_workspace_size(config->max_rows, e->vocab,
                                                              2 * config->beam);
    if (e->workspace_bytes == SIZE_MAX) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_CUDA, "cuda ensemble: cannot size the "
                               "top-K workspace (V %d, K %d)", e->vocab, 2 * config->beam);
        goto cleanup;
    }
    const arena_layout l = layout(config, n, e->ld, e->workspace_bytes);
    NMT_CUDA_TRY(cudaSetDevice(config->device));
    NMT_CUDA_TRY(cudaMalloc(&e->arena, l.total));
    char *base = (char *)e->arena;
    e->scores = (float *)(base + l.scores);
    e->top_values = (float *)(base + l.top_values);
    e->top_ids = (int32_t *)(base + l.top_ids);
    e->lse = (float *)(base + l.lse);
    e->zeros = (float *)(base + l.zeros);
    e->workspace = base + l.workspace;
    e->picks = (float *)(base + l.picks);
    e->stash_rows = config->max_rows;
    for (int32_t i = 0; i < n; i++)
        e->stash_rows = !members[i].stash || !members[i].pick ? 0
                        : members[i].stash_rows < e->stash_rows ? members[i].stash_rows
                                                                : e->stash_rows;
    /* Once: the zeros stay, and every top-K call leaves its counters at zero. */
    NMT_CUDA_TRY(cudaMemsetAsync(base, 0, l.total, (cudaStream_t)members[0].stream));
    NMT_CUDA_TRY(cudaStreamSynchronize((cudaStream_t)members[0].stream));
    *ensemble = e;
    return NMT_STATUS_OK;
cleanup:
    nmt_cuda_step_ensemble_free(e);
    return status;
}

void nmt_cuda_step_ensemble_free(nmt_cuda_step_ensemble *e)
{
    if (!e)
        return;
    if (e->arena)
        cudaFree(e->arena);
    free(e);
}

nmt_cuda_step_model nmt_cuda_step_ensemble_model(nmt_cuda_step_ensemble *e)
{
    int32_t carry_rows = e->members[0].carry_rows;
    for (int32_t i = 1; i < e->n; i++)
        carry_rows = e->members[i].carry_rows < carry_rows ? e->members[i].carry_rows : carry_rows;
    return (nmt_cuda_step_model){
        .self = e,
        .stream = e->members[0].stream,
        .vocab_size = e->vocab,
        .shrunk = 0,
        .encode = ensemble_encode,
        .step = ensemble_step,
        .output = ensemble_output,
        .probe = NULL,
        .encoder_stream = NULL,
        .place = NULL,
        .attn_weights = e->members[0].attn_weights,
        .carry_rows = carry_rows,
        .stash = e->stash_rows > 0 ? ensemble_stash : NULL,
        .pick = e->stash_rows > 0 ? ensemble_pick : NULL,
        .stash_rows = e->stash_rows,
    };
}
