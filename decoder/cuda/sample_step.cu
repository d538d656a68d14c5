/* sample_step.cu: random sampling on the device (cuda_rules.h), the twin of
 * decoder/beam_sample.c: a sentence's B slots are its samples, each drawing
 * from its own Philox stream (seed, line key, sample, step) by the rules of
 * decoder/logit_rules.h, so a sample's words do not depend on its batch.
 *
 * Draw, top-K (K = sampling_topk): the top-K of every row (value desc, ties
 * to the lower word: kernels/cuda/softmax_topk.cu, PAD and BOS excluded,
 * lse over every word), then a thread a row picks from its list
 * (nmt_rule_sample_pick: temperature, top-p, the inverse CDF).
 * Draw, the whole vocabulary: a block a row: lse, the best drawable
 * log-probability and the weights' sum by block reductions, then the
 * inverse CDF in word order by a block scan over chunks of the row.
 * At a sentence's forced step (a target prefix) every sample takes the
 * forced word with its model log p, drawing nothing (nmt_rule_sample_forced);
 * at its max-length step every sample draws EOS (model-v1).
 * Split: a block a sentence; one thread walks the slots in order (the
 * finished list's order, as the CPU's): an EOS finishes the sample, another
 * word continues it in its own slot. */
#include "beam_rows.cuh"
#include "cuda_rules.h"

#include "cuda_check.h"
#include "device.cuh"
#include "forced_tokens.h"
#include "logit_rules.h"
#include "search_params.h"
#include "softmax_topk.h"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <limits.h>
#include <math.h>

static constexpr int kPickThreads = 128;
static constexpr int kAllThreads = 256;
static constexpr int kSplitThreads = 32;

/* The block reductions' operators. */
struct MaxOf {
    template <typename T> __device__ T operator()(const T &a, const T &b) const
    {
        return a > b ? a : b;
    }
};
struct MinOf {
    template <typename T> __device__ T operator()(const T &a, const T &b) const
    {
        return a < b ? a : b;
    }
};

/* Row `row` (slot k of sentence s) draws at this step. */
static __device__ bool row_draws(const nmt_beam_device &b, int32_t s, int32_t k)
{
    return !b.done[s] && b.scores[(int64_t)s * b.beam + k] > -INFINITY;
}

static __global__ void __launch_bounds__(kPickThreads)
    sample_pick_kernel(nmt_beam_device b, nmt_cuda_rules r, const int32_t *act, int32_t n_rows,
                       const float *logits, int32_t ld)
{
    const int32_t row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_rows)
        return;
    const int32_t p = row / b.beam, k = row % b.beam, s = act[p];
    r.sample_word[row] = -1;
    if (!row_draws(b, s, k))
        return;
    const int32_t step = *b.step - b.start[s];
    const int32_t forced = nmt_rule_sample_forced(&b.forced, s, step);
    if (forced >= 0 || step >= b.max_len[s]) { /* a forced word, or EOS */
        const int32_t w = forced >= 0 ? forced : r.eos_id;
        r.sample_word[row] = w;
        r.sample_log_prob[row] = __fsub_rn(logits[(int64_t)row * ld + w], r.lse[row]);
        return;
    }
    const float *values = r.top_values + (int64_t)row * r.topk;
    const double u = nmt_rule_sample_uniform(r.seed, r.line_keys[s], k, step);
    const int32_t at = nmt_rule_sample_pick(values, r.topk, r.temperature, r.topp, u);
    if (at < 0)
        return;
    r.sample_word[row] = r.top_ids[(int64_t)row * r.topk + at];
    r.sample_log_prob[row] = values[at];
}

/* A word of the whole-vocabulary draw: not PAD or BOS, log p above -inf. */
static __device__ bool drawable(const nmt_cuda_rules &r, int32_t w, float log_prob)
{
    return w != r.pad_id && w != r.bos_id && log_prob > -INFINITY;
}

static __device__ float log_prob_of(const float *z, int32_t w, double lse)
{
    return (float)((double)z[w] - lse);
}

static __global__ void __launch_bounds__(kAllThreads)
    sample_all_kernel(nmt_beam_device b, nmt_cuda_rules r, const int32_t *act,
                      const float *logits, int32_t ld, int32_t vocab)
{
    typedef cub::BlockReduce<float, kAllThreads> FloatReduce;
    typedef cub::BlockReduce<double, kAllThreads> DoubleReduce;
    typedef cub::BlockReduce<int, kAllThreads> IntReduce;
    typedef cub::BlockScan<double, kAllThreads> DoubleScan;
    __shared__ union {
        typename FloatReduce::TempStorage f;
        typename DoubleReduce::TempStorage d;
        typename IntReduce::TempStorage i;
        typename DoubleScan::TempStorage scan;
    } tmp;
    __shared__ float shared_f;
    __shared__ double shared_d;
    __shared__ int shared_i;

    const int tid = threadIdx.x;
    const int32_t row = blockIdx.x, p = row / b.beam, k = row % b.beam, s = act[p];
    if (!row_draws(b, s, k)) { /* uniform across the block */
        if (tid == 0)
            r.sample_word[row] = -1;
        return;
    }
    const float *z = logits + (int64_t)row * ld;
    const int32_t step = *b.step - b.start[s];
    /* lse over every word, as the CPU's log-softmax: max + log sum exp. */
    float m = -INFINITY;
    for (int32_t w = tid; w < vocab; w += kAllThreads)
        m = fmaxf(m, z[w]);
    m = FloatReduce(tmp.f).Reduce(m, MaxOf());
    if (tid == 0)
        shared_f = m;
    __syncthreads();
    m = shared_f;
    double sum = 0.0;
    for (int32_t w = tid; m > -INFINITY && w < vocab; w += kAllThreads)
        sum += exp((double)z[w] - (double)m);
    sum = DoubleReduce(tmp.d).Sum(sum);
    if (tid == 0)
        shared_d = (double)m + log(sum);
    __syncthreads();
    const double lse = shared_d;
    const int32_t forced = nmt_rule_sample_forced(&b.forced, s, step);
    if (forced >= 0 || step >= b.max_len[s]) { /* a forced word, or EOS; uniform */
        if (tid == 0) {
            const int32_t w = forced >= 0 ? forced : r.eos_id;
            r.sample_word[row] = w;
            r.sample_log_prob[row] = log_prob_of(z, w, lse);
        }
        return;
    }
    float best = -INFINITY;
    for (int32_t w = tid; w < vocab; w += kAllThreads) {
        const float lp = log_prob_of(z, w, lse);
        if (drawable(r, w, lp) && lp > best)
            best = lp;
    }
    __syncthreads(); /* tmp's last use is read by all */
    best = FloatReduce(tmp.f).Reduce(best, MaxOf());
    if (tid == 0)
        shared_f = best;
    __syncthreads();
    best = shared_f;
    if (!(best > -INFINITY)) {
        if (tid == 0)
            r.sample_word[row] = -1;
        return;
    }
    double total = 0.0;
    for (int32_t w = tid; w < vocab; w += kAllThreads) {
        const float lp = log_prob_of(z, w, lse);
        if (drawable(r, w, lp))
            total += nmt_rule_sample_weight(lp, best, r.temperature);
    }
    __syncthreads();
    total = DoubleReduce(tmp.d).Sum(total);
    if (tid == 0)
        shared_d = total;
    __syncthreads();
    const double target =
        nmt_rule_sample_uniform(r.seed, r.line_keys[s], k, step) * shared_d;
    /* The first word whose running sum (in word order) exceeds the target. */
    double before = 0.0;
    int last = -1;
    for (int32_t first = 0; first < vocab; first += kAllThreads) {
        const int32_t w = first + tid;
        const float lp = w < vocab ? log_prob_of(z, w, lse) : -INFINITY;
        const bool ok = w < vocab && drawable(r, w, lp);
        const double x = ok ? nmt_rule_sample_weight(lp, best, r.temperature) : 0.0;
        double running, chunk;
        __syncthreads();
        DoubleScan(tmp.scan).InclusiveSum(x, running, chunk);
        __syncthreads();
        const int hit = IntReduce(tmp.i).Reduce(ok && before + running > target ? w : INT_MAX,
                                                MinOf());
        if (tid == 0)
            shared_i = hit;
        __syncthreads();
        if (shared_i != INT_MAX) { /* uniform */
            if (tid == 0) {
                r.sample_word[row] = shared_i;
                r.sample_log_prob[row] = log_prob_of(z, shared_i, lse);
            }
            return;
        }
        before += chunk;
        last = ok ? w : last;
    }
    /* Rounding left the target unreached: the last drawable word. */
    __syncthreads();
    last = IntReduce(tmp.i).Reduce(last, MaxOf());
    if (tid == 0) {
        r.sample_word[row] = last;
        r.sample_log_prob[row] = last >= 0 ? log_prob_of(z, last, lse) : -INFINITY;
    }
}

static __global__ void __launch_bounds__(kSplitThreads)
    sample_step_kernel(nmt_beam_device b, const int32_t *act, const int32_t *words,
                       const float *log_probs, const int32_t *attn_argmax,
                       nmt_beam_next_rows next)
{
    const int tid = threadIdx.x;
    const int32_t p = blockIdx.x, s = act[p], B = b.beam;
    if (b.done[s]) {
        finish_block(b, next, p, s, false, tid, kSplitThreads);
        return;
    }
    const int32_t step = *b.step - b.start[s];
    if (tid == 0) {
        const int last_step = step >= b.max_len[s];
        const int64_t row0 = (int64_t)p * B, fin0 = (int64_t)s * 2 * B;
        const int64_t hist0 = ((int64_t)s * b.hist_len + (step - 1)) * B;
        int32_t n_fin = b.n_finished[s], n_alive = 0;
        for (int32_t k = 0; k < B; k++) {
            const int64_t q = (int64_t)s * B + k;
            const int32_t word = words[row0 + k];
            const float score = b.scores[q] > -INFINITY && word >= 0
                                    ? nmt_rule_rank(b.scores[q], log_probs[row0 + k], 1.0f)
                                    : -INFINITY;
            const int32_t parent_slot = step > 1 ? k : -1;
            const int keep = nmt_rule_selectable(score);
            if (keep && word == b.eos_id && n_fin < 2 * B) {
                b.fin_log_prob[fin0 + n_fin] = score;
                b.fin_score[fin0 + n_fin] = nmt_rule_v1_score(score, step, b.alpha);
                b.fin_length[fin0 + n_fin] = step;
                b.fin_parent[fin0 + n_fin] = parent_slot;
                n_fin++;
            } else if (keep && word != b.eos_id && step - 1 < b.hist_len) {
                b.hist_token[hist0 + k] = word;
                b.hist_attn[hist0 + k] = attn_argmax[row0 + k];
                b.hist_parent[hist0 + k] = parent_slot;
                b.hist_score[hist0 + k] = score;
                b.scores[q] = score;
                b.tokens[q] = word;
                b.parents[q] = k;
                n_alive++;
                continue;
            }
            b.scores[q] = -INFINITY; /* finished or ended: the slot is dead */
            b.tokens[q] = b.eos_id;
            b.parents[q] = k;
        }
        b.n_finished[s] = n_fin;
        if (nmt_rule_v1_done(n_fin, B, last_step, n_alive))
            mark_done(b, s, step);
    }
    __syncthreads();
    finish_block(b, next, p, s, true, tid, kSplitThreads);
}

extern "C" nmt_status nmt_cuda_sample_draw(const nmt_beam_device *b, const nmt_cuda_rules *r,
                                           int32_t n_active, const int32_t *act,
                                           const float *logits, int32_t ld, int32_t vocab,
                                           const int32_t *excluded, void *stream,
                                           nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_ARG_CHECK(b && r && act && logits && n_active >= 1 && b->beam >= 1 && vocab >= 1 &&
                  ld >= vocab && r->sampling && r->line_keys && r->sample_word &&
                  r->sample_log_prob);
    NMT_ARG_CHECK(r->eos_id >= 0 && r->eos_id < vocab && r->temperature > 0.0f);
    const int32_t rows = n_active * b->beam;
    if (r->topk == NMT_SAMPLING_ALL) {
        sample_all_kernel<<<(unsigned)rows, kAllThreads, 0, (cudaStream_t)stream>>>(
            *b, *r, act, logits, ld, vocab);
        NMT_LAUNCH_RETURN("sample_all_kernel");
        return NMT_STATUS_OK;
    }
    NMT_ARG_CHECK(r->topk >= 1 && r->topk == r->top_k && r->top_values && r->top_ids && r->lse);
    const nmt_softmax_topk_variant variant =
        r->batch_invariant ? NMT_SOFTMAX_TOPK_AUTO_INVARIANT : NMT_SOFTMAX_TOPK_AUTO;
    NMT_TRY(nmt_cuda_softmax_topk_variant(rows, vocab, logits, ld, r->topk, excluded, 2,
                                          r->top_values, r->top_ids, r->lse, r->workspace,
                                          r->workspace_bytes, variant, stream, err));
    sample_pick_kernel<<<(unsigned)((rows + kPickThreads - 1) / kPickThreads), kPickThreads, 0,
                         (cudaStream_t)stream>>>(*b, *r, act, rows, logits, ld);
    NMT_LAUNCH_TRY("sample_pick_kernel");
cleanup:
    return status;
}

extern "C" nmt_status nmt_cuda_sample_step(const nmt_beam_device *b, const nmt_cuda_rules *r,
                                           int32_t n_active, const int32_t *act,
                                           const int32_t *attn_argmax,
                                           const nmt_beam_next_rows *next, void *stream,
                                           nmt_error *err)
{
    NMT_ARG_CHECK(b && r && act && attn_argmax && n_active >= 1 && b->beam >= 1 &&
                  b->beam <= NMT_CUDA_BEAM_MAX && b->hist_len >= 1 && b->step && b->start &&
                  b->sampling && r->sample_word && r->sample_log_prob);
    nmt_beam_next_rows rows = {NULL, NULL, NULL, NULL};
    if (next) {
        NMT_ARG_CHECK(next->tokens && next->sentence && next->parent && b->ticket);
        rows = *next;
    }
    sample_step_kernel<<<(unsigned)n_active, kSplitThreads, 0, (cudaStream_t)stream>>>(
        *b, act, r->sample_word, r->sample_log_prob, attn_argmax, rows);
    NMT_LAUNCH_RETURN("sample_step_kernel");
    return NMT_STATUS_OK;
}
