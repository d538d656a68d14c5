/* attention_warp.cu: the warp variant of nmt_cuda_attention (attention.h):
 * a warp a row, kWarpRows rows a block, for batches of thousands of rows.
 *
 * The block variant (attention.cu) gives a row a block of 256 threads, and
 * a block's time is its dependent chain (keys, barrier, softmax, barrier,
 * memory, barrier): with two blocks an SM, an H100 has 264 rows in flight
 * and 5,120 rows (batch 1,024, beam 5) take ~20 such chains in a row. Here
 * a row is one warp with no barrier, so an SM holds a row for each of its
 * resident warps.
 *
 * The arithmetic is the block variant's with one slice (what it runs at
 * these batch sizes), so the two give the same bits:
 *  - scores: score_positions (attention_device.cuh), the same lanes over H
 *    and partial sums for each position;
 *  - softmax: softmax_scale, as every warp of the block computes it;
 *  - context: the block sums column c over positions g, g + G, g + 2G, ...
 *    in G position groups (G = kThreads / W, attention_group_shift) and then
 *    adds the groups in order; the lane of column c keeps G sums the same
 *    way (kGroups, a template argument, so the sums stay in registers), and
 *    where the block's last batch of 8 positions a group ran past the
 *    sentence it added 0 x 0, which turns a -0 sum into +0, the lane adds
 *    +0 too;
 *  - weights and argmax: write_weights.
 * The lane's columns are c = lane + 32 t (t < kCols), so a position's
 * memory row is read by the warp in coalesced float4s. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "attention_device.cuh"
#include "cuda_check.h"

static constexpr int kWarpRows = 8; /* rows (warps) a block */
static constexpr int kWarpBlockThreads = kWarpRows * kWarpSize;
static constexpr int kWarpInFlight = 16; /* float4 memory loads a lane has in flight */

/* Row blockIdx.x x kWarpRows + warp. kCols x kGroups = 8 (the launcher). */
template <int kCols, int kGroups>
static __global__ void __launch_bounds__(kWarpBlockThreads, 2)
    attention_warp_kernel(int32_t n_rows, int32_t hidden, int32_t max_src,
                          const int32_t *__restrict__ row_sentence,
                          const int32_t *__restrict__ src_len, const float *__restrict__ keys,
                          const float *__restrict__ memory, const float *__restrict__ query,
                          int32_t ld_query, float *__restrict__ context, int32_t ld_context,
                          nmt_half_out context16, float *__restrict__ weights,
                          int32_t *__restrict__ argmax)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    using L = Lane<4>;
    constexpr int kRep = kWarpInFlight / (kCols * kGroups) > 0 ? kWarpInFlight / (kCols * kGroups) : 1;
    extern __shared__ float s_dynamic[];
    const int lane = threadIdx.x & (kWarpSize - 1), warp = threadIdx.x >> 5;
    const int32_t row = blockIdx.x * kWarpRows + warp;
    if (row >= n_rows)
        return; /* a whole warp; nothing in this kernel waits for the others */
    float *s_score = s_dynamic + (size_t)warp * 2 * max_src;
    float *s_exp = s_score + max_src;
    const int32_t n_vec = hidden / 4;

    const RowInputs<4> in = row_inputs<4>(row, row_sentence, src_len, max_src, hidden, query,
                                           ld_query, keys, memory);

    score_into<4, kScorePositions>(in.query, in.keys, n_vec, in.len, lane, 0, kScorePositions,
                                   s_score);
    __syncwarp();
    const float inv_d = softmax_scale(s_score, s_exp, in.len, lane);
    __syncwarp();

    /* Context: acc[t][g] sums column lane + 32 t over positions g, g + G, ... */
    float4 acc[kCols][kGroups];
#pragma unroll
    for (int t = 0; t < kCols; t++)
#pragma unroll
        for (int g = 0; g < kGroups; g++)
            acc[t][g] = L::zero();
    for (int32_t j0 = 0; j0 < in.len; j0 += kRep * kGroups) {
        float4 rows[kRep][kGroups][kCols];
#pragma unroll
        for (int u = 0; u < kRep; u++)
#pragma unroll
            for (int g = 0; g < kGroups; g++)
#pragma unroll
                for (int t = 0; t < kCols; t++) {
                    const int32_t j = j0 + u * kGroups + g, c = lane + kWarpSize * t;
                    rows[u][g][t] = j < in.len && c < n_vec
                                        ? __ldg(in.memory + (uint32_t)(j * n_vec + c))
                                        : L::zero();
                }
#pragma unroll
        for (int u = 0; u < kRep; u++)
#pragma unroll
            for (int g = 0; g < kGroups; g++) {
                const int32_t j = j0 + u * kGroups + g;
                if (j < in.len)
#pragma unroll
                    for (int t = 0; t < kCols; t++)
                        acc[t][g] = L::axpy(s_exp[j], rows[u][g][t], acc[t][g]);
            }
    }
    /* The block's zero products past the sentence: 0 x 0 added to a sum
     * turns -0 into +0 and leaves every other value as it is. */
#pragma unroll
    for (int g = 0; g < kGroups; g++) {
        const int32_t n_g = in.len > g ? (in.len - g + kGroups - 1) / kGroups : 0;
        if (n_g % kContextBatch != 0)
#pragma unroll
            for (int t = 0; t < kCols; t++)
                acc[t][g] = L::add(acc[t][g], L::zero());
    }
    float4 *ctx_row = (float4 *)(context + (int64_t)row * ld_context);
#pragma unroll
    for (int t = 0; t < kCols; t++) {
        const int32_t c = lane + kWarpSize * t;
        if (c < n_vec) {
            float4 sum = acc[t][0];
#pragma unroll
            for (int g = 1; g < kGroups; g++)
                sum = L::add(sum, acc[t][g]);
            const float4 v = L::scale(sum, inv_d);
            ctx_row[c] = v;
            put_context16(context16, row, c, v);
        }
    }
    write_weights(s_exp, inv_d, in.len, max_src, row, lane, weights, argmax);
}

typedef void (*WarpKernel)(int32_t, int32_t, int32_t, const int32_t *, const int32_t *,
                           const float *, const float *, const float *, int32_t, float *,
                           int32_t, nmt_half_out, float *, int32_t *);

nmt_status nmt_attention_warp(int32_t n_rows, int32_t hidden, int32_t max_src,
                              const int32_t *row_sentence, const int32_t *src_len,
                              const float *keys, const float *memory, const float *query,
                              int32_t ld_query, float *context, int32_t ld_context,
                              nmt_half_out context16, float *weights, int32_t *argmax,
                              int smem_optin, cudaStream_t stream, nmt_error *err)
{
    const int32_t n_vec = hidden / 4;
    const size_t smem = (size_t)kWarpRows * 2 * max_src * sizeof(float);
    if (smem + 1024 > (size_t)smem_optin)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "attention warp variant: max_src %d past shared memory (%zu bytes)",
                             max_src, smem);
    /* The block variant's groups for one slice of n_vec lanes. */
    const int32_t shift = attention_group_shift(n_vec);
    const int groups = shift >= 0 ? kThreads >> shift : 1;
    const int cols = (n_vec + kWarpSize - 1) / kWarpSize;
    WarpKernel kernel = nullptr;
    if (cols == 1 && groups == 8)
        kernel = attention_warp_kernel<1, 8>;
    else if (cols == 2 && groups == 4)
        kernel = attention_warp_kernel<2, 4>;
    else if (cols == 4 && groups == 2)
        kernel = attention_warp_kernel<4, 2>;
    else if (cols <= 8 && groups == 1)
        kernel = attention_warp_kernel<8, 1>;
    if (!kernel)
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                             "attention warp variant: no kernel for %d columns a lane, %d groups",
                             cols, groups);
    if (smem > 48 * 1024)
        NMT_CUDA_RETURN(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)smem));
    const unsigned blocks = (unsigned)((n_rows + kWarpRows - 1) / kWarpRows);
    nmt_launch_pdl(kernel, blocks, kWarpBlockThreads, smem, stream, n_rows, hidden, max_src,
                   row_sentence, src_len, keys, memory, query, ld_query, context, ld_context,
                   context16, weights, argmax);
    NMT_LAUNCH_RETURN("attention_warp_kernel");
    return NMT_STATUS_OK;
}
