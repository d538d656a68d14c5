/* attention.cu: global "general" attention for a batch of hypothesis rows.
 *
 * Shapes: keys, memory [n_sentences, max_src, hidden]; query, context
 * [n_rows, hidden]; weights [n_rows, max_src] (optional); argmax [n_rows]
 * (optional). Row r reads sentence s = row_sentence[r] with S = src_len[s]
 * positions (ragged; clamped to max_src):
 *   score_j = query[r] . keys[s, j]   (j < S)
 *   a = softmax(score);  context[r] = sum_j a_j memory[s, j]
 * One block per row does the three reductions of Dikbayir et al. ("Fast
 * multidimensional reduction and broadcast operations on GPU") in one launch:
 * a warp per position reduces the dot product over H (shuffles), the masked
 * softmax normalizer is the online (m, d) merge of Milakov & Gimelshein
 * (eq. 4) over a block, and the context reduces over positions with threads
 * over H (coalesced rows of memory). argmax is the lowest j with the largest
 * a_j (-1 when S = 0, where weights and context are 0). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "attention.h"
#include "cuda_check.h"

#define FULL_MASK 0xffffffffu
static constexpr int kThreads = 256;
static constexpr int kWarps = kThreads / 32;
static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");

struct MD {
    float m, d;
};

static __device__ __forceinline__ MD md_merge(MD a, MD b)
{
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY)
        return MD{m, 0.0f};
    return MD{m, a.d * expf(a.m - m) + b.d * expf(b.m - m)};
}

/* (value, index) with the larger value first, then the lower index. */
static __device__ __forceinline__ void arg_better(float &v, int &i, float v2, int i2)
{
    if (v2 > v || (v2 == v && i2 < i)) {
        v = v2;
        i = i2;
    }
}

static __global__ void __launch_bounds__(kThreads)
    attention_kernel(int32_t hidden, int32_t max_src, const int32_t *__restrict__ row_sentence,
                     const int32_t *__restrict__ src_len, const float *__restrict__ keys,
                     const float *__restrict__ memory, const float *__restrict__ query,
                     float *__restrict__ context, float *__restrict__ weights,
                     int32_t *__restrict__ argmax)
{
    extern __shared__ float smem[];
    float *s_query = smem;           /* [hidden] */
    float *s_prob = smem + hidden;   /* [max_src]: scores, then probabilities */
    __shared__ MD s_md[kWarps];
    __shared__ float s_best_v[kWarps];
    __shared__ int s_best_i[kWarps];

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int32_t row = blockIdx.x;
    const int32_t s = row_sentence[row];
    int32_t len = src_len[s];
    len = len > max_src ? max_src : (len < 0 ? 0 : len);
    const float *sent_keys = keys + (int64_t)s * max_src * hidden;
    const float *sent_memory = memory + (int64_t)s * max_src * hidden;

    for (int32_t h = threadIdx.x; h < hidden; h += blockDim.x)
        s_query[h] = query[(int64_t)row * hidden + h];
    __syncthreads();

    /* Scores: a warp per position, lanes over H. */
    for (int32_t j = warp; j < len; j += kWarps) {
        const float *kj = sent_keys + (int64_t)j * hidden;
        float dot = 0.0f;
        for (int32_t h = lane; h < hidden; h += 32)
            dot = fmaf(s_query[h], __ldg(&kj[h]), dot);
#pragma unroll
        for (int off = 16; off > 0; off /= 2)
            dot += __shfl_xor_sync(FULL_MASK, dot, off);
        if (lane == 0)
            s_prob[j] = dot;
    }
    __syncthreads();

    /* Masked softmax normalizer: online (m, d) per thread, merged. */
    MD md{-INFINITY, 0.0f};
    for (int32_t j = threadIdx.x; j < len; j += blockDim.x)
        md = md_merge(md, MD{s_prob[j], 1.0f});
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
        md = md_merge(md, MD{__shfl_xor_sync(FULL_MASK, md.m, off),
                             __shfl_xor_sync(FULL_MASK, md.d, off)});
    if (lane == 0)
        s_md[warp] = md;
    __syncthreads();
    MD total = s_md[0];
    for (int w = 1; w < kWarps; w++)
        total = md_merge(total, s_md[w]);

    /* Probabilities, weights out, and the argmax candidates. */
    float best_v = -INFINITY;
    int best_i = INT32_MAX;
    for (int32_t j = threadIdx.x; j < max_src; j += blockDim.x) {
        float a = 0.0f;
        if (j < len) {
            a = expf(s_prob[j] - total.m) / total.d;
            s_prob[j] = a;
            arg_better(best_v, best_i, a, j);
        }
        if (weights)
            weights[(int64_t)row * max_src + j] = a;
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        float v2 = __shfl_xor_sync(FULL_MASK, best_v, off);
        int i2 = __shfl_xor_sync(FULL_MASK, best_i, off);
        arg_better(best_v, best_i, v2, i2);
    }
    if (lane == 0) {
        s_best_v[warp] = best_v;
        s_best_i[warp] = best_i;
    }
    __syncthreads();
    if (argmax && threadIdx.x == 0) {
        for (int w = 1; w < kWarps; w++)
            arg_better(best_v, best_i, s_best_v[w], s_best_i[w]);
        argmax[row] = len > 0 ? best_i : -1;
    }

    /* Context: threads over H, each sums its column over the positions. */
    for (int32_t h = threadIdx.x; h < hidden; h += blockDim.x) {
        float acc = 0.0f;
        for (int32_t j = 0; j < len; j++)
            acc = fmaf(s_prob[j], __ldg(&sent_memory[(int64_t)j * hidden + h]), acc);
        context[(int64_t)row * hidden + h] = acc;
    }
}

extern "C" nmt_status nmt_cuda_attention(int32_t n_rows, int32_t hidden, int32_t max_src,
                                         const int32_t *row_sentence, const int32_t *src_len,
                                         const float *keys, const float *memory,
                                         const float *query, float *context, float *weights,
                                         int32_t *argmax, void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && hidden >= 0 && max_src >= 0);
    NMT_ARG_CHECK(n_rows == 0 || (row_sentence && src_len && query && context &&
                                  (max_src == 0 || hidden == 0 || (keys && memory))));
    if (n_rows == 0)
        return NMT_STATUS_OK;
    size_t smem = ((size_t)hidden + (size_t)max_src) * sizeof(float);
    int device = 0, smem_optin = 0;
    NMT_CUDA_RETURN(cudaGetDevice(&device));
    NMT_CUDA_RETURN(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                           device));
    if (smem + 1024 > (size_t)smem_optin)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "attention: hidden %d + max_src %d floats exceed shared memory",
                             hidden, max_src);
    if (smem > 48 * 1024)
        NMT_CUDA_RETURN(cudaFuncSetAttribute(attention_kernel,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)smem));
    attention_kernel<<<n_rows, kThreads, smem, (cudaStream_t)stream>>>(
        hidden, max_src, row_sentence, src_len, keys, memory, query, context, weights, argmax);
    NMT_LAUNCH_RETURN("attention_kernel");
    return NMT_STATUS_OK;
}
