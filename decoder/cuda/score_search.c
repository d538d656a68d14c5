/* score_search.c: scoring on the GPU (cuda_search.h, nmt_cuda_search_score),
 * the twin of decoder/forced_score.c: a teacher-forced pass with no beam.
 *
 * The batch is encoded as a search's is (longest source first, one row a
 * sentence: beam 1). Every target token is known, so the host lays out
 * every step's rows before the first one: the sentences are ranked longest
 * target first, so the rows still scoring at step t are a prefix of that
 * ranking, rows keep their index from step to step (step 1's parents move
 * them from the encoder's order into it, after that row j continues row
 * j), and step t's rows are a slice of flat arrays copied up in one
 * transfer. A step is the model's step, its rows' output-layer inputs
 * stashed by the model, and its attention argmax and (with
 * config->attention) weights copied into the slice of their step. The
 * output layer runs when the stash is full and after the last step, over
 * every row stashed since (consecutive steps: one slice of the flat
 * arrays): one GEMM and a pick (the full softmax's log-sum-exp and the
 * target word's logit, kernels/pick_log_prob.h: no softmax, top-K or beam
 * bookkeeping). One copy brings everything back after the last step; the
 * host sums the log-probabilities in the float order decoder/forced_score.c
 * uses. */
#include "cuda_search_impl.h"

#include "forced_search.h"

#include <stdlib.h>
#include <string.h>

/* The flat layout of a batch's rows over its steps (R row-steps), in
 * 4-byte words: up [tokens, sentence, parent, live, words] x R, then down
 * [log_probs, argmax] x R and [weights] x R x stride. */
typedef struct score_layout {
    int32_t *tokens, *sentence, *parent, *live, *words, *argmax;
    float *log_probs, *weights;
    size_t up_bytes, down_bytes, bytes;
} score_layout;

static score_layout layout_score(void *base, size_t rows, int32_t stride, int attention)
{
    score_layout l;
    int32_t *w = (int32_t *)base;
    l.tokens = w;
    l.sentence = w + rows;
    l.parent = w + 2 * rows;
    l.live = w + 3 * rows;
    l.words = w + 4 * rows;
    l.log_probs = (float *)(w + 5 * rows);
    l.argmax = w + 6 * rows;
    l.weights = (float *)(w + 7 * rows);
    l.up_bytes = sizeof(int32_t) * 5 * rows;
    l.down_bytes = sizeof(int32_t) * (2 * rows + (attention ? rows * (size_t)stride : 0));
    l.bytes = l.up_bytes + l.down_bytes;
    return l;
}

/* rank[j]: the encoder position (s->order's index) of the j-th longest
 * target, ties in encoder order (a stable insertion sort: a batch is at
 * most max_sentences). steps[j]: its tokens and the EOS. */
static void rank_targets(const nmt_cuda_search *s, const nmt_forced_tokens *f, int32_t n,
                         int32_t *rank, int32_t *steps)
{
    for (int32_t p = 0; p < n; p++) {
        const int32_t b = s->order[p], len = f->offset[b + 1] - f->offset[b] + 1;
        int32_t j = p;
        while (j > 0 && steps[j - 1] < len) {
            rank[j] = rank[j - 1];
            steps[j] = steps[j - 1];
            j--;
        }
        rank[j] = p;
        steps[j] = len;
    }
}

/* The rows of every step: step t's n_t rows at offset first[t - 1]. */
static void lay_out_rows(const nmt_cuda_search *s, const nmt_search_config *config,
                         const int32_t *rank, const int32_t *steps, int32_t n,
                         const int32_t *first, const score_layout *h)
{
    const nmt_forced_tokens *f = config->forced;
    for (int32_t t = 1; t <= steps[0]; t++)
        for (int32_t j = 0; j < n && steps[j] >= t; j++) {
            const size_t r = (size_t)first[t - 1] + (size_t)j;
            const int32_t p = rank[j], b = s->order[p], len = steps[j] - 1;
            const int32_t *ids = f->ids + f->offset[b];
            h->tokens[r] = t == 1 ? config->bos_id : ids[t - 2];
            h->words[r] = t - 1 < len ? ids[t - 1] : config->eos_id;
            h->sentence[r] = p;
            h->parent[r] = t == 1 ? p : j; /* step 1 leaves the encoder's order */
            h->live[r] = 1;
        }
}

/* Sentence b's result from its rank j's row-steps (host copies). */
static nmt_status fill_result(const nmt_search_config *config, const nmt_forced_tokens *f,
                              int32_t b, int32_t j, int32_t steps, int32_t n_src,
                              const int32_t *first, const score_layout *h, int32_t stride,
                              nmt_search_result *out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t length = steps - 1;
    nmt_search_hypothesis *hyp = NULL;
    NMT_ALLOC(out->hypotheses, 1);
    out->n_hypotheses = 1;
    hyp = &out->hypotheses[0];
    hyp->length = length;
    hyp->n_src = n_src;
    NMT_ALLOC(hyp->tokens, length > 0 ? length : 1);
    NMT_ALLOC(hyp->attn_argmax, length > 0 ? length : 1);
    NMT_ALLOC(hyp->token_scores, (size_t)length + 1);
    if (config->attention)
        NMT_ALLOC(hyp->attention, length > 0 ? (size_t)length * (size_t)n_src : 1);
    float sum = 0.0f;
    for (int32_t t = 0; t <= length; t++) { /* token t, scored at step t + 1 */
        const size_t r = (size_t)first[t] + (size_t)j;
        const float before = sum;
        sum = nmt_rule_rank(before, h->log_probs[r], 1.0f);
        hyp->token_scores[t] = t == 0 ? sum : sum - before;
        if (t == length)
            break;
        hyp->tokens[t] = f->ids[f->offset[b] + t];
        hyp->attn_argmax[t] = h->argmax[r];
        if (hyp->attention)
            memcpy(hyp->attention + (size_t)t * (size_t)n_src, h->weights + r * (size_t)stride,
                   sizeof(float) * (size_t)n_src);
    }
    hyp->log_prob = sum;
    hyp->score = nmt_forced_score_normalized(config, sum, length);
cleanup:
    return status;
}

nmt_status nmt_cuda_search_score(nmt_cuda_search *self, const nmt_source_batch *batch,
                                 const nmt_search_config *config, nmt_search_result *results,
                                 nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    int32_t *rank = NULL, *steps = NULL, *first = NULL;
    if (!self || !batch || !config || !results)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda score: NULL argument");
    const int32_t n = batch->n_sentences;
    for (int32_t i = 0; i < n; i++)
        results[i] = (nmt_search_result){0, NULL};
    if (!self->model.stash || !self->model.pick || self->model.stash_rows < n)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "cuda score: the network "
                             "has no stash and pick (scoring's output layer) for %d rows", n);
    if (config->attention && !self->config.attention)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda score: attention weights "
                             "asked for, but the search keeps none");
    NMT_TRY(nmt_forced_tokens_check(config, n, self->model.vocab_size, 1, err));
    /* The encoder pass as a search's at beam 1 (its forced tokens are ours). */
    nmt_search_config encode = *config;
    encode.params.beam_size = encode.params.n_best = 1;
    encode.params.return_alternatives = 0;
    encode.forced = NULL;
    nmt_cuda_encoded enc;
    NMT_TRY(nmt_cuda_search_encode_only(self, batch, &encode, &enc, err));
    cudaStream_t stream = self->stream;

    const nmt_forced_tokens *f = config->forced;
    NMT_ALLOC(rank, n);
    NMT_ALLOC(steps, n);
    rank_targets(self, f, n, rank, steps);
    const int32_t longest = steps[0];
    NMT_ALLOC(first, (size_t)longest + 1);
    size_t rows = 0;
    for (int32_t t = 1, j = n; t <= longest; t++) {
        while (j > 0 && steps[j - 1] < t)
            j--;
        first[t - 1] = (int32_t)rows;
        rows += (size_t)j;
    }
    first[longest] = (int32_t)rows;
    const int attention = config->attention;
    const score_layout need = layout_score(NULL, rows, enc.mem_stride, attention);
    NMT_TRY(nmt_cuda_staged_ensure(&self->score, need.bytes, err));
    const score_layout host = layout_score(self->score.host, rows, enc.mem_stride, attention);
    const score_layout dev = layout_score(self->score.dev, rows, enc.mem_stride, attention);
    lay_out_rows(self, config, rank, steps, n, first, &host);
    NMT_CUDA_TRY(cudaMemcpyAsync(self->score.dev, self->score.host, host.up_bytes,
                                 cudaMemcpyHostToDevice, stream));

    const nmt_cuda_step_model *model = &self->model;
    int32_t stashed = 0; /* the flat row of the stash's first row */
    for (int32_t t = 1; t <= longest; t++) {
        const int32_t at = first[t - 1], n_rows = first[t] - at;
        const nmt_cuda_rows step_rows = {dev.tokens + at, dev.sentence + at, dev.parent + at,
                                         dev.live + at};
        const int32_t *argmax = NULL;
        if (at + n_rows - stashed > model->stash_rows) { /* full: its output layer now */
            NMT_TRY(model->pick(model->self, at - stashed, dev.words + stashed,
                                dev.log_probs + stashed, err));
            stashed = at;
        }
        NMT_TRY(model->step(model->self, self->cur, n_rows, &step_rows, enc.src_len,
                            enc.mem_stride, 0, 0, err));
        self->cur = 1 - self->cur;
        NMT_TRY(model->stash(model->self, self->cur, n_rows, at - stashed, &argmax, err));
        NMT_CUDA_TRY(cudaMemcpyAsync(dev.argmax + at, argmax, sizeof(int32_t) * (size_t)n_rows,
                                     cudaMemcpyDeviceToDevice, stream));
        if (attention)
            NMT_CUDA_TRY(cudaMemcpyAsync(dev.weights + (size_t)at * (size_t)enc.mem_stride,
                                         model->attn_weights,
                                         sizeof(float) * (size_t)n_rows *
                                             (size_t)enc.mem_stride,
                                         cudaMemcpyDeviceToDevice, stream));
        self->counts_now.steps++;
        self->counts_now.eager_runs++;
    }
    NMT_TRY(model->pick(model->self, first[longest] - stashed, dev.words + stashed,
                        dev.log_probs + stashed, err));
    NMT_CUDA_TRY(cudaMemcpyAsync(host.log_probs, dev.log_probs, host.down_bytes,
                                 cudaMemcpyDeviceToHost, stream));
    NMT_CUDA_TRY(cudaStreamSynchronize(stream));
    for (int32_t j = 0; j < n; j++) {
        const int32_t b = self->order[rank[j]];
        NMT_TRY(fill_result(config, f, b, j, steps[j], batch->src_len[b], first, &host,
                            enc.mem_stride, &results[b], err));
    }
cleanup:
    if (status != NMT_STATUS_OK) {
        cudaStreamSynchronize(self->stream); /* nothing in flight on the pinned buffers */
        for (int32_t i = 0; i < n; i++)
            nmt_search_result_clear(&results[i]);
    }
    free(rank);
    free(steps);
    free(first);
    return status;
}
