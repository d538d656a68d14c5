/* pick_log_prob.cu: out[r] = logits[r, words[r]] - logsumexp(logits[r, :cols])
 * (pick_log_prob.h), one block a row: each thread strides over the row for
 * its max and then its sum of exp(x - max), the block combines them with
 * warp butterflies and one shared step (the same order for every row and
 * batch). fp32 throughout, expf/logf as the softmax kernels use them. */
#include "cuda_check.h"
#include "device.cuh"
#include "pick_log_prob.h"

#include <math.h>

static constexpr int kThreads = 256;
static_assert(kThreads % kWarpSize == 0 && kThreads / kWarpSize <= kWarpSize,
              "kThreads: whole warps, at most a warp of them");

/* The block's max (op 0) or sum (op 1) of v, in every thread. */
template <int OP> static __device__ __forceinline__ float block_reduce(float v, float *shared)
{
    v = OP == 0 ? warp_max(v) : warp_sum(v);
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    v = lane < kThreads / kWarpSize ? shared[lane] : (OP == 0 ? -INFINITY : 0.0f);
    v = OP == 0 ? warp_max(v) : warp_sum(v);
    __syncthreads(); /* shared is free again */
    return v;
}

static __global__ void __launch_bounds__(kThreads)
    pick_log_prob_kernel(int32_t cols, const float *__restrict__ logits, int32_t ld,
                         const int32_t *__restrict__ words, float *__restrict__ out)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    __shared__ float partial[kThreads / kWarpSize];
    const int32_t r = blockIdx.x;
    const float *x = logits + (int64_t)r * ld;
    float max = -INFINITY;
    for (int32_t j = threadIdx.x; j < cols; j += kThreads)
        max = fmaxf(max, x[j]);
    max = block_reduce<0>(max, partial);
    float sum = 0.0f;
    for (int32_t j = threadIdx.x; j < cols; j += kThreads)
        sum += expf(x[j] - max);
    sum = block_reduce<1>(sum, partial);
    if (threadIdx.x == 0) {
        const int32_t w = words[r];
        out[r] = w >= 0 && w < cols ? x[w] - (max + logf(sum)) : NAN;
    }
}

nmt_status nmt_cuda_pick_log_prob(int32_t rows, int32_t cols, const float *logits, int32_t ld,
                                  const int32_t *words, float *out, void *stream,
                                  nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (rows < 0 || cols < 1 || ld < cols || (rows > 0 && (!logits || !words || !out)))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "pick_log_prob: %d rows, %d columns, ld %d", rows, cols, ld);
    if (rows == 0)
        return NMT_STATUS_OK;
    nmt_launch_pdl(pick_log_prob_kernel, rows, kThreads, 0, (cudaStream_t)stream, cols, logits,
                   ld, words, out);
    NMT_LAUNCH_TRY("pick_log_prob_kernel");
cleanup:
    return status;
}
