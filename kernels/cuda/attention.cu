/* attention.cu: global "general" attention for a batch of hypothesis rows.
 *
 * Shapes: keys, memory [n_sentences, max_src, hidden]; query, context
 * [n_rows, hidden]; weights [n_rows, max_src] (optional); argmax [n_rows]
 * (optional). Row r reads sentence s = row_sentence[r] with S = src_len[s]
 * positions (ragged; clamped to [0, max_src]):
 *   score_j = query[r] . keys[s, j]   (j < S)
 *   a = softmax(score);  context[r] = sum_j a_j memory[s, j]
 * argmax is the lowest j with the largest a_j (-1 when S = 0, where weights
 * and context are 0).
 *
 * The three reductions of Dikbayir et al. ("Fast multidimensional reduction
 * and broadcast operations on GPU") in one launch. In decoding the batch is
 * a beam or a few (5 rows, H = 512, S ~ 13): a handful of blocks, so the
 * time is the block's dependent chain (memory round trips, then instruction
 * latencies), not bandwidth. The layout keeps that chain short:
 *  - grid (row, slice): the context of a row is split into `slices` column
 *    ranges of H, one block each, so a small batch spreads its memory reads
 *    over more SMs. Every slice computes the row's full scores (the score
 *    must see all of H); the launcher uses slices > 1 only while the grid
 *    is smaller than the GPU, so big batches read keys once per row.
 *  - one round of loads: right after src_len, each thread issues its first
 *    kContextBatch memory rows and each warp the keys and query of its
 *    kScorePositions positions (kScoreFloats floats a lane per position,
 *    float4 where H % 4 == 0 and the pointers are 16-byte aligned), all
 *    before the first FMA; four partial sums a position, then shuffles.
 *  - softmax: every warp takes the max (one redux) and the sum (shuffles)
 *    itself, in the same order, so the block needs no merge and every slice
 *    divides by the same d.
 *  - context: threads are (position group, column): G groups of W (a power
 *    of two) or, for wide slices, G = 1 and threads striding over the
 *    columns; a thread sums its column over positions g, g + G, ... and the
 *    G groups are added in shared memory in a fixed order.
 *  - the last warp of slice 0 writes weights and argmax (a redux) while the
 *    others store the context (and its 16-bit copy, when asked for). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "attention.h"
#include "attention_device.cuh"
#include "cuda_check.h"
#include "cuda_ctx.h"

/* slice_vec: context columns (in lanes of V floats) per slice; group_shift:
 * log2 of the group width W, or -1 for G = 1 (the launcher computes both,
 * the same for every slice). */
template <int V>
static __global__ void __launch_bounds__(kThreads, 2)
    attention_kernel(int32_t hidden, int32_t max_src, int32_t slice_vec, int32_t group_shift,
                     const int32_t *__restrict__ row_sentence, const int32_t *__restrict__ src_len,
                     const float *__restrict__ keys, const float *__restrict__ memory,
                     const float *__restrict__ query, int32_t ld_query,
                     float *__restrict__ context, int32_t ld_context, nmt_half_out context16,
                     float *__restrict__ weights, int32_t *__restrict__ argmax)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    using Vec = typename Lane<V>::type;
    extern __shared__ float s_dynamic[];
    float *s_score = s_dynamic;         /* [max_src] */
    float *s_exp = s_dynamic + max_src; /* [max_src]: exp(score - max) */
    __shared__ Vec s_group_sums[kThreads];

    const int tid = threadIdx.x, lane = tid & (kWarpSize - 1), warp = tid >> 5;
    const int32_t row = blockIdx.x;
    const int32_t n_vec = hidden / V; /* H in lanes of V floats */

    const RowInputs<V> in = row_inputs<V>(row, row_sentence, src_len, max_src, hidden, query,
                                           ld_query, keys, memory);

    /* This block's columns [col0, col0 + n_cols) and the thread's place. */
    const int32_t col0 = blockIdx.y * slice_vec;
    const int32_t n_cols = max(0, min(slice_vec, n_vec - col0));
    const bool grouped = group_shift >= 0;
    const int32_t groups = grouped ? kThreads >> group_shift : 1;
    const int32_t group = grouped ? tid >> group_shift : 0;
    const int32_t col_first = grouped ? tid & ((1 << group_shift) - 1) : tid;
    const int32_t col_step = grouped ? n_cols : kThreads; /* grouped: one column */

    /* The first memory rows of the context go out with the keys. */
    Vec rows[kContextBatch];
    if (col_first < n_cols)
        load_memory_batch<V>(rows, in.memory + col0 + col_first, n_vec, group, groups, in.len);

    /* Scores: a warp per kScorePositions positions, lanes over H. The query
     * is read by every warp; after the first it comes from L1. */
    score_into<V, kScorePositions>(in.query, in.keys, n_vec, in.len, lane, warp * kScorePositions,
                                   kWarps * kScorePositions, s_score);
    __syncthreads();

    /* Softmax: each warp reduces all the scores itself (S is small), the
     * same way, so every warp of every slice holds the same m and d. */
    const float inv_d = softmax_scale(s_score, warp == 0 ? s_exp : nullptr, in.len, lane);
    __syncthreads();

    /* Context: each thread sums its column over positions group, group + G,
     * ...; the first batch of memory rows is already in registers, and rows
     * past len are zero, so the sum needs no branch. */
    Vec *ctx_row = (Vec *)(context + (int64_t)row * ld_context) + col0;
    for (int32_t c = col_first; c < n_cols; c += col_step) {
        const Vec *column = in.memory + col0 + c;
        if (c != col_first) /* G = 1: the thread's later columns */
            load_memory_batch<V>(rows, column, n_vec, group, groups, in.len);
        Vec acc = Lane<V>::zero();
        for (int32_t j0 = group; j0 < in.len; j0 += groups * kContextBatch) {
            if (j0 != group)
                load_memory_batch<V>(rows, column, n_vec, j0, groups, in.len);
#pragma unroll
            for (int u = 0; u < kContextBatch; u++) {
                int32_t j = j0 + u * groups;
                acc = Lane<V>::axpy(j < in.len ? s_exp[j] : 0.0f, rows[u], acc);
            }
        }
        if (grouped) {
            s_group_sums[tid] = acc;
        } else {
            const Vec v = Lane<V>::scale(acc, inv_d);
            ctx_row[c] = v;
            put_context16(context16, row, col0 + c, v);
        }
    }
    if (grouped) { /* block-uniform */
        __syncthreads();
        if (tid < n_cols) {
            Vec sum = s_group_sums[tid];
            for (int32_t g = 1; g < groups; g++)
                sum = Lane<V>::add(sum, s_group_sums[(g << group_shift) + tid]);
            const Vec v = Lane<V>::scale(sum, inv_d);
            ctx_row[tid] = v;
            put_context16(context16, row, col0 + tid, v);
        }
    }

    /* Slice 0's last warp: weights and argmax. */
    if (blockIdx.y == 0 && warp == kWarps - 1)
        write_weights(s_exp, inv_d, in.len, max_src, row, lane, weights, argmax);
}

template <int V>
static nmt_status launch(int32_t n_rows, int32_t slices, int32_t slice_vec, int32_t group_shift,
                         size_t smem, cudaStream_t stream, int32_t hidden, int32_t max_src,
                         const int32_t *row_sentence, const int32_t *src_len, const float *keys,
                         const float *memory, const float *query, int32_t ld_query,
                         float *context, int32_t ld_context, nmt_half_out context16,
                         float *weights, int32_t *argmax, nmt_error *err)
{
    if (smem > 48 * 1024)
        NMT_CUDA_RETURN(cudaFuncSetAttribute(attention_kernel<V>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)smem));
    dim3 grid((unsigned)n_rows, (unsigned)slices);
    nmt_launch_pdl(attention_kernel<V>, grid, kThreads, smem, stream, hidden, max_src, slice_vec,
                   group_shift, row_sentence, src_len, keys, memory, query, ld_query, context,
                   ld_context, context16, weights, argmax);
    NMT_LAUNCH_RETURN("attention_kernel");
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_attention_with(nmt_attention_variant variant, int32_t n_rows,
                                              int32_t hidden, int32_t max_src,
                                              const int32_t *row_sentence,
                                              const int32_t *src_len, const float *keys,
                                              const float *memory, const float *query,
                                              int32_t ld_query, float *context,
                                              int32_t ld_context, const nmt_half_out *context16,
                                              float *weights, int32_t *argmax, void *stream,
                                              nmt_error *err)
{
    NMT_ARG_CHECK(variant == NMT_ATTENTION_AUTO || variant == NMT_ATTENTION_BLOCK ||
                  variant == NMT_ATTENTION_WARP);
    NMT_ARG_CHECK(n_rows >= 0 && hidden >= 0 && max_src >= 0);
    NMT_ARG_CHECK(ld_query >= hidden && ld_context >= hidden && half_out_ok(context16, hidden));
    NMT_ARG_CHECK(n_rows == 0 || (row_sentence && src_len && query && context &&
                                  (max_src == 0 || hidden == 0 || (keys && memory))));
    if (n_rows == 0)
        return NMT_STATUS_OK;
    size_t smem = 2 * (size_t)max_src * sizeof(float);
    int device = 0, smem_optin = 0;
    NMT_CUDA_RETURN(cudaGetDevice(&device));
    NMT_CUDA_RETURN(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                           device));
    const int sms = nmt_cuda_sm_count(device);
    if (sms < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_CUDA,
                             "attention: the SM count of device %d cannot be queried", device);
    if (smem + kThreads * sizeof(float4) + 1024 > (size_t)smem_optin)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "attention: 2 x max_src %d floats exceed shared memory", max_src);
    if ((int64_t)max_src * hidden > INT32_MAX)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "attention: max_src %d x hidden %d exceed 32-bit offsets", max_src,
                             hidden);

    const bool vec4 = hidden % 4 == 0 && ld_query % 4 == 0 && ld_context % 4 == 0 &&
                      nmt_is_aligned(keys, 16) && nmt_is_aligned(memory, 16) &&
                      nmt_is_aligned(query, 16) && nmt_is_aligned(context, 16);
    const int32_t n_vec = vec4 ? hidden / 4 : hidden;

    /* Split the context over H while the grid is smaller than the GPU; a
     * slice stays at least kMinSliceFloats wide. */
    int32_t slices = sms / n_rows;
    slices = slices < hidden / kMinSliceFloats ? slices : hidden / kMinSliceFloats;
    slices = slices < 1 ? 1 : (slices > kMaxSlices ? kMaxSlices : slices);
    const int32_t slice_vec = (n_vec + slices - 1) / slices;
    if (slice_vec > 0)
        slices = (n_vec + slice_vec - 1) / slice_vec; /* no empty last slice */
    /* Position groups of W = 2^shift threads when the whole row fits in half
     * the block, else (shift -1) one group striding over the columns: set by
     * H alone, not by the slices, so that a column's sum over positions is in
     * the same order at every row count (and the warp variant's). */
    const int32_t group_shift = attention_group_shift(n_vec);
    /* One slice and rows enough: the warp variant adds the same products in
     * the same order with an SM's rows all in flight. */
    const bool warp_shape = vec4 && n_vec >= kWarpMinVec && n_vec <= kWarpMaxVec;
    if (variant == NMT_ATTENTION_WARP && !warp_shape)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "attention warp variant: hidden %d (a multiple of 4 in [%d, %d], "
                             "rows 16-byte aligned)", hidden, 4 * kWarpMinVec, 4 * kWarpMaxVec);
    const bool warp_fits = warp_shape && slices == 1 && n_rows >= kWarpMinRowsPerSm * sms;
    if (variant == NMT_ATTENTION_WARP || (variant == NMT_ATTENTION_AUTO && warp_fits)) {
        const nmt_status status = nmt_attention_warp(
            n_rows, hidden, max_src, row_sentence, src_len, keys, memory, query, ld_query, context,
            ld_context, half_out_of(context16), weights, argmax, smem_optin,
            (cudaStream_t)stream, err);
        if (variant == NMT_ATTENTION_WARP || status != NMT_STATUS_ERROR_UNSUPPORTED)
            return status;
        /* AUTO: a max_src past the warp variant's shared memory runs the block one. */
    }
    if (vec4)
        return launch<4>(n_rows, slices, slice_vec, group_shift, smem, (cudaStream_t)stream,
                         hidden, max_src, row_sentence, src_len, keys, memory, query, ld_query,
                         context, ld_context, half_out_of(context16), weights, argmax, err);
    return launch<1>(n_rows, slices, slice_vec, group_shift, smem, (cudaStream_t)stream, hidden,
                     max_src, row_sentence, src_len, keys, memory, query, ld_query, context,
                     ld_context, half_out_of(context16), weights, argmax, err);
}

extern "C" nmt_status nmt_cuda_attention(int32_t n_rows, int32_t hidden, int32_t max_src,
                                         const int32_t *row_sentence, const int32_t *src_len,
                                         const float *keys, const float *memory,
                                         const float *query, int32_t ld_query, float *context,
                                         int32_t ld_context, const nmt_half_out *context16,
                                         float *weights, int32_t *argmax, void *stream,
                                         nmt_error *err)
{
    return nmt_cuda_attention_with(NMT_ATTENTION_AUTO, n_rows, hidden, max_src, row_sentence,
                                   src_len, keys, memory, query, ld_query, context, ld_context,
                                   context16, weights, argmax, stream, err);
}
