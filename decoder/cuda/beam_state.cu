/* beam_state.cu: the beam state's bookkeeping outside a search step
 * (beam_step.h): the step-1 state of a batch (init) or of sentences joining
 * a running search (join), the rows a step computes from the active list
 * (prepare_rows), the rows' attention weights kept beside the history
 * (record_attention), and the n-best hypotheses rebuilt from the history
 * after the last step (backtrack). The step itself, the selection of the
 * rules, is beam_step.cu.
 *
 * Attention weights are kept by row, not by history entry: every row's
 * weights at every step, [s, step, slot], copied before the selection, so
 * the copy needs no selection result and runs as its own small launch; a
 * token's weights are then those of the row it was chosen from, its parent
 * slot in the history entry (slot 0 at step 1), as decoder/beam_search.c
 * keeps them per entry. */
#include "beam_rows.cuh"
#include "beam_step.h"

#include "cuda_check.h"
#include "device.cuh"

#include <math.h>

#define BEAM_MAX NMT_CUDA_BEAM_MAX

/* Slot k of sentence s to its step-1 state, started at step `start`. */
static __device__ void begin_sentence(const nmt_beam_device &b, int32_t s, int32_t k,
                                      int32_t bos_id, int32_t start)
{
    const int64_t e = (int64_t)s * b.beam + k;
    b.scores[e] = k == 0 || b.sampling ? 0.0f : -INFINITY;
    b.tokens[e] = bos_id;
    b.parents[e] = 0;
    for (int32_t half = 0; b.coverage && half < 2; half++)
        for (int32_t j = 0; j < b.coverage_stride; j++)
            b.coverage[(((int64_t)s * 2 + half) * b.beam + k) * b.coverage_stride + j] = 0.0f;
    if (k == 0) {
        b.done[s] = 0;
        b.n_finished[s] = 0;
        if (b.n_ended)
            b.n_ended[s] = 0;
        b.start[s] = start;
    }
}

static __global__ void beam_init_kernel(nmt_beam_device b, int32_t n, int32_t bos_id,
                                        int32_t tag)
{
    int32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n * b.beam)
        return;
    if (e == 0) {
        *b.step = 0;
        if (b.ticket)
            *b.ticket = 0;
        if (b.tag)
            *b.tag = tag;
    }
    begin_sentence(b, e / b.beam, e % b.beam, bos_id, 0);
}

static __global__ void beam_join_kernel(nmt_beam_device b, const int32_t *slots, int32_t n,
                                        int32_t bos_id)
{
    int32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n * b.beam)
        return;
    begin_sentence(b, slots[e / b.beam], e % b.beam, bos_id, *b.step);
}

static __global__ void prepare_rows_kernel(nmt_beam_device b, int32_t n_active,
                                           const int32_t *act, const int32_t *old_pos,
                                           int32_t *row_tokens, int32_t *row_sentence,
                                           int32_t *row_parent, int32_t *row_live, int advance)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    int32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n_active * b.beam)
        return;
    if (r == 0 && advance)
        *b.step += 1; /* nothing in this kernel reads it */
    int32_t p = r / b.beam, k = r % b.beam, s = act[p];
    write_step_row(b, r, s, k, old_pos ? old_pos[p] : p, row_tokens, row_sentence, row_parent,
                   row_live);
}

/* Block r copies row r = p * B + k's weights (threads over positions). */
static __global__ void record_attention_kernel(nmt_beam_device b, const int32_t *act,
                                               const float *weights)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    const int32_t r = blockIdx.x, p = r / b.beam, k = r % b.beam, s = act[p];
    if (b.done[s])
        return; /* uniform across the block, as the test below */
    const int32_t t = *b.step - b.start[s]; /* the sentence's step, 1-based */
    if (t < 1 || t > b.hist_len)
        return;
    const int64_t stride = b.weights_stride;
    float *out = b.hist_weights + (((int64_t)s * b.hist_len + (t - 1)) * b.beam + k) * stride;
    const float *in = weights + (int64_t)r * stride;
    for (int64_t j = threadIdx.x; j < stride; j += blockDim.x)
        out[j] = in[j];
}

/* Token t of a hypothesis (history entry (t, slot)) was chosen from the row
 * of its parent slot, slot 0 at step 1; its weights are that row's. */
static __device__ void gather_attention(const nmt_beam_device &b, int32_t s, int32_t length,
                                        int32_t slot, float *out, int32_t out_stride)
{
    for (int32_t t = length - 1; t >= 0 && slot >= 0; t--) {
        const int64_t e = ((int64_t)s * b.hist_len + t) * b.beam + slot;
        const int32_t parent = b.hist_parent[e]; /* every thread reads the same entry */
        const int32_t from = parent >= 0 ? parent : 0;
        const float *in =
            b.hist_weights + (((int64_t)s * b.hist_len + t) * b.beam + from) * b.weights_stride;
        for (int32_t j = threadIdx.x; j < out_stride; j += blockDim.x)
            out[(int64_t)t * out_stride + j] = in[j];
        slot = parent;
    }
}

static __global__ void backtrack_kernel(nmt_beam_device b, const int32_t *slots,
                                        nmt_beam_results r)
{
    __shared__ int32_t order[2 * BEAM_MAX];
    __shared__ int32_t n_out;
    const int32_t out = blockIdx.x, s = slots ? slots[out] : out, K = 2 * b.beam;
    const int64_t fin0 = (int64_t)s * K;
    if (threadIdx.x == 0) {
        /* Stable insertion sort by normalized score, best first: equal
         * scores keep finishing order (earlier step, then better rank). */
        const int32_t n_fin = b.n_finished[s] < K ? b.n_finished[s] : K;
        for (int32_t i = 0; i < n_fin; i++) {
            int32_t j = i;
            while (j > 0 && b.fin_score[fin0 + order[j - 1]] < b.fin_score[fin0 + i]) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = i;
        }
        n_out = n_fin < r.n_best ? n_fin : r.n_best;
        r.n_hypotheses[out] = n_out;
    }
    __syncthreads();
    for (int32_t h = threadIdx.x; h < n_out; h += blockDim.x) {
        const int64_t f = fin0 + order[h], o = (int64_t)out * r.n_best + h;
        int32_t length = b.fin_length[f] - 1;
        if (length > r.max_tokens)
            length = r.max_tokens; /* cannot happen: length < max_len - 1 + 1 */
        r.length[o] = length;
        r.score[o] = b.fin_score[f];
        r.log_prob[o] = b.fin_log_prob[f];
        /* Token t's log p: its accumulated score less its parent's (the
         * EOS's: the final log_prob less the last token's). */
        float *token_scores = r.token_scores + o * ((int64_t)r.max_tokens + 1);
        float after = b.fin_log_prob[f];
        int32_t slot = b.fin_parent[f];
        for (int32_t t = length - 1; t >= 0 && slot >= 0; t--) {
            const int64_t e = ((int64_t)s * b.hist_len + t) * b.beam + slot;
            r.tokens[o * r.max_tokens + t] = b.hist_token[e];
            r.attn[o * r.max_tokens + t] = b.hist_attn[e];
            token_scores[t + 1] = after - b.hist_score[e];
            after = b.hist_score[e];
            slot = b.hist_parent[e];
        }
        token_scores[0] = after;
    }
    if (r.src_stride <= 0)
        return;
    __syncthreads(); /* n_out and order are read below by every thread */
    for (int32_t h = 0; h < n_out; h++) {
        const int64_t f = fin0 + order[h], o = (int64_t)out * r.n_best + h;
        int32_t length = b.fin_length[f] - 1;
        if (length > r.max_tokens)
            length = r.max_tokens;
        gather_attention(b, s, length, b.fin_parent[f],
                         r.attention + o * r.max_tokens * (int64_t)r.src_stride, r.src_stride);
    }
}

static int blocks_for(int64_t n, int threads)
{
    return (int)((n + threads - 1) / threads);
}

nmt_status nmt_cuda_beam_init(const nmt_beam_device *b, int32_t n_sentences, int32_t bos_id,
                              int32_t tag, void *stream, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (n_sentences < 1 || b->beam < 1 || b->beam > BEAM_MAX || !b->start || !b->step ||
        tag < 0 || tag > 32767)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "beam init: %d sentences, beam %d (max %d), tag %d (0..32767), step "
                             "and start set", n_sentences, b->beam, BEAM_MAX, tag);
    beam_init_kernel<<<blocks_for((int64_t)n_sentences * b->beam, 256), 256, 0,
                       (cudaStream_t)stream>>>(*b, n_sentences, bos_id, tag);
    NMT_LAUNCH_TRY("beam_init_kernel");
cleanup:
    return status;
}

nmt_status nmt_cuda_beam_prepare_rows(const nmt_beam_device *b, int32_t n_active,
                                      const int32_t *act, const int32_t *old_pos,
                                      int32_t *row_tokens, int32_t *row_sentence,
                                      int32_t *row_parent, int32_t *row_live, int advance,
                                      void *stream, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (n_active < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "beam prepare rows: %d active",
                             n_active);
    nmt_launch_pdl(prepare_rows_kernel, blocks_for((int64_t)n_active * b->beam, 256), 256, 0,
                   (cudaStream_t)stream, *b, n_active, act, old_pos, row_tokens, row_sentence,
                   row_parent, row_live, advance);
    NMT_LAUNCH_TRY("prepare_rows_kernel");
cleanup:
    return status;
}

nmt_status nmt_cuda_beam_record_attention(const nmt_beam_device *b, int32_t n_active,
                                          const int32_t *act, const float *weights,
                                          void *stream, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (n_active < 1 || !b->hist_weights || !weights || b->weights_stride < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "beam record attention: %d active, history %s, weights %s, "
                             "stride %d", n_active, b->hist_weights ? "set" : "NULL",
                             weights ? "set" : "NULL", b->weights_stride);
    nmt_launch_pdl(record_attention_kernel, n_active * b->beam, 64, 0, (cudaStream_t)stream, *b,
                   act, weights);
    NMT_LAUNCH_TRY("record_attention_kernel");
cleanup:
    return status;
}

/* What backtracking needs besides the sizes: a weights history as wide as
 * the results' rows when they ask for attention. */
static int attention_fits(const nmt_beam_device *b, const nmt_beam_results *r)
{
    return r->src_stride <= 0 || (b->hist_weights && r->attention &&
                                  r->src_stride <= b->weights_stride);
}

nmt_status nmt_cuda_beam_backtrack(const nmt_beam_device *b, int32_t n_sentences,
                                   const nmt_beam_results *r, void *stream, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!attention_fits(b, r))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "beam backtrack: attention rows "
                             "of %d, the history keeps %d", r->src_stride, b->weights_stride);
    if (n_sentences < 1 || r->n_best < 1 || r->n_best > b->beam || r->max_tokens < b->hist_len)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "beam backtrack: %d sentences, n_best %d (beam %d), max_tokens %d "
                             "(need %d)", n_sentences, r->n_best, b->beam, r->max_tokens,
                             b->hist_len);
    backtrack_kernel<<<n_sentences, 32, 0, (cudaStream_t)stream>>>(*b, NULL, *r);
    NMT_LAUNCH_TRY("backtrack_kernel");
cleanup:
    return status;
}

nmt_status nmt_cuda_beam_backtrack_slots(const nmt_beam_device *b, const int32_t *slots,
                                         int32_t n_slots, const nmt_beam_results *r,
                                         void *stream, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!attention_fits(b, r))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "beam backtrack: attention rows "
                             "of %d, the history keeps %d", r->src_stride, b->weights_stride);
    if (n_slots < 1 || !slots || r->n_best < 1 || r->n_best > b->beam ||
        r->max_tokens < b->hist_len)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "beam backtrack: %d slots, n_best %d (beam %d), max_tokens %d "
                             "(need %d)", n_slots, r->n_best, b->beam, r->max_tokens,
                             b->hist_len);
    backtrack_kernel<<<n_slots, 32, 0, (cudaStream_t)stream>>>(*b, slots, *r);
    NMT_LAUNCH_TRY("backtrack_kernel");
cleanup:
    return status;
}

nmt_status nmt_cuda_beam_join(const nmt_beam_device *b, const int32_t *slots, int32_t n_slots,
                              int32_t bos_id, void *stream, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (n_slots < 1 || !slots || b->beam < 1 || b->beam > BEAM_MAX || !b->start || !b->step)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "beam join: %d slots, beam %d",
                             n_slots, b->beam);
    beam_join_kernel<<<blocks_for((int64_t)n_slots * b->beam, 256), 256, 0,
                       (cudaStream_t)stream>>>(*b, slots, n_slots, bos_id);
    NMT_LAUNCH_TRY("beam_join_kernel");
cleanup:
    return status;
}
