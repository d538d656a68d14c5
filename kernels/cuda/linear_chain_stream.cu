/* linear_chain_stream.cu: the batch-invariant 16-bit product (kernels/linear.h,
 * nmt_cuda_linear_chain_stream) with its weights streamed: the same mma
 * chain as linear_chain.cu's (each output's k16 blocks in order from zero,
 * w the A operand, x^T the B one; then the bias, then tanh), so the same
 * bits, fed for a few rows instead of loaded just in time.
 *
 * x comes rounded, as the step's producers write it (nmt_half_out): a
 * block copies its 8 rows into shared memory once (cp.async, zeros past k
 * and m). Each warp owns 16 outputs and streams their weight rows through
 * a ring of kStages stages of 64 columns (cp.async, 16 bytes a lane, zero
 * fill past n and k), so ~kStages - 1 stages are in flight while one is
 * summed; fragments come by ldmatrix (the ring's 16-byte chunks swizzled by
 * row, x's rows padded by 16 bytes: no bank conflicts). A warp's chain is
 * serial over k, so the parallelism is the outputs': WARPS a block is 4
 * where the outputs fill the SMs that way, else 1. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "cuda_ctx.h"
#include "device.cuh"
#include "linear.h"
#include "mma_device.cuh"

namespace {

constexpr int kRows = 8;                       /* x rows a block: the mma's n */
constexpr int kOutputs = 16;                   /* outputs a warp: the mma's m */
constexpr int kStageK = 64;                    /* columns a stage: 4 k16 blocks */
constexpr int kStages = 8;                     /* a warp's ring */
constexpr int kStageHalfs = kOutputs * kStageK;
constexpr int kChunks = kStageK / 8;           /* 16-byte chunks a stage row */
static_assert(kOutputs * kChunks % kWarpSize == 0, "whole cp.async rounds a stage");

/* x rows' length in shared memory: k in whole k16 blocks and 16 bytes more. */
__host__ __device__ inline int x_ld(int k)
{
    return (k + 15) / 16 * 16 + 8;
}

template <int WARPS> __host__ __device__ inline size_t smem_bytes(int k)
{
    return ((size_t)kRows * x_ld(k) + (size_t)WARPS * kStages * kStageHalfs) * sizeof(uint16_t);
}

template <int BF16, int WARPS>
__global__ void __launch_bounds__(WARPS *kWarpSize)
    chain_stream_kernel(int m, int n, int k, const uint16_t *__restrict__ x16, int ldx,
                        const uint16_t *__restrict__ w, int ldw, const float *__restrict__ bias,
                        int tanh_out, float *__restrict__ y, int ldy)
{
    pdl_enter();
    extern __shared__ uint4 smem_raw[];
    uint16_t *xs = reinterpret_cast<uint16_t *>(smem_raw);
    const int nb = (k + 15) / 16, kp = nb * 16, xld = x_ld(k);
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const int j0 = (blockIdx.x * WARPS + warp) * kOutputs, r0 = blockIdx.y * kRows;
    /* x's rows, one commit group of their own, in before the first stage
     * is summed (the barrier at s = 0). A warp past n runs along on zeros
     * (its loads read nothing, its outputs are not written). */
    for (int q = threadIdx.x; q < kRows * (kp / 8); q += WARPS * kWarpSize) {
        const int r = q / (kp / 8), col = q % (kp / 8) * 8;
        const int bytes = r0 + r < m && col < k ? min(16, 2 * (k - col)) : 0;
        const uint16_t *src = bytes ? x16 + (int64_t)(r0 + r) * ldx + col : x16;
        cp_async16_to((unsigned)__cvta_generic_to_shared(xs + r * xld + col), src, bytes);
    }
    cp_async_commit();

    uint16_t *ring = xs + kRows * xld + warp * kStages * kStageHalfs;
    const int n_stages = (kp + kStageK - 1) / kStageK;
    /* Stage s: columns [s kStageK, (s + 1) kStageK) of the warp's 16 rows;
     * chunk c of row r lies at chunk c ^ (r % 8) of the slot's row r. */
    const auto load_stage = [&](int s) {
        uint16_t *slot = ring + (s % kStages) * kStageHalfs;
#pragma unroll
        for (int i = 0; i < kOutputs * kChunks / kWarpSize; i++) {
            const int q = lane + i * kWarpSize, r = q / kChunks, c = q % kChunks;
            const int col = s * kStageK + c * 8, j = j0 + r;
            const int bytes = j < n && col < k ? min(16, 2 * (k - col)) : 0;
            const uint16_t *src = bytes ? w + (int64_t)j * ldw + col : w;
            cp_async16_to((unsigned)__cvta_generic_to_shared(slot + r * kStageK +
                                                             ((c ^ (r % 8)) * 8)),
                          src, bytes);
        }
    };
#pragma unroll
    for (int s = 0; s < kStages - 1; s++) {
        if (s < n_stages)
            load_stage(s);
        cp_async_commit();
    }
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_half = lane >> 4;
    const int b_row = lane & 7, b_half = (lane >> 3) & 1;
    for (int s = 0; s < n_stages; s++) {
        cp_async_wait<kStages - 2>();
        if (s == 0)
            __syncthreads(); /* x and stage 0 in, every warp's share of x */
        else
            __syncwarp(); /* stage s in for every lane; stage s - 1's slot read by all */
        if (s + kStages - 1 < n_stages)
            load_stage(s + kStages - 1);
        cp_async_commit();
        const uint16_t *slot = ring + (s % kStages) * kStageHalfs;
#pragma unroll
        for (int u = 0; u < kStageK / 16; u++) {
            const int kb = s * (kStageK / 16) + u;
            if (kb >= nb) /* past k: no block (zeros would add nothing, but a -0 sum) */
                break;
            uint32_t a[4], b[2];
            const int c = 2 * u + a_half;
            ldmatrix_x4(a[0], a[1], a[2], a[3], slot + a_row * kStageK + ((c ^ (a_row % 8)) * 8));
            ldmatrix_x2(b[0], b[1], xs + b_row * xld + kb * 16 + b_half * 8);
            mma_k16<BF16>(d, a, b);
        }
    }
    cp_async_wait<0>();
#pragma unroll
    for (int h = 0; h < 4; h++) {
        const int j = j0 + lane / 4 + (h >> 1) * 8, row = r0 + 2 * (lane % 4) + (h & 1);
        if (j < n && row < m)
            y[(int64_t)row * ldy + j] = chain_finish(d[h], bias, j, tanh_out);
    }
}

template <int BF16, int WARPS>
nmt_status launch(int32_t m, int32_t n, int32_t k, const uint16_t *x, int32_t ldx,
                  const uint16_t *w, int32_t ldw, const float *bias, int tanh_out, float *y,
                  int32_t ldy, cudaStream_t stream, nmt_error *err)
{
    const size_t smem = smem_bytes<WARPS>(k);
    NMT_CUDA_RETURN(cudaFuncSetAttribute(chain_stream_kernel<BF16, WARPS>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const int per_block = WARPS * kOutputs;
    const dim3 grid((unsigned)((n + per_block - 1) / per_block),
                    (unsigned)((m + kRows - 1) / kRows));
    nmt_launch_pdl(chain_stream_kernel<BF16, WARPS>, grid, dim3(WARPS * kWarpSize), smem, stream,
                   m, n, k, x, ldx, w, ldw, bias, tanh_out, y, ldy);
    NMT_LAUNCH_RETURN("chain_stream_kernel");
    return NMT_STATUS_OK;
}

} // namespace

extern "C" int nmt_cuda_linear_chain_stream_fits(int32_t k, const void *x16, int32_t ldx16,
                                                 const void *w16, int32_t ldw16)
{
    int device = 0, optin = 0;
    if (k < 1 || ldx16 % 8 != 0 || ldw16 % 8 != 0 || (uintptr_t)x16 % 16 != 0 ||
        (uintptr_t)w16 % 16 != 0 || cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
            cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return smem_bytes<4>(k) <= (size_t)optin;
}

extern "C" nmt_status nmt_cuda_linear_chain_stream(nmt_cuda_ctx *ctx, nmt_half_kind kind,
                                                   int32_t m, int32_t n, int32_t k,
                                                   const void *x16, int32_t ldx16,
                                                   const void *w16, int32_t ldw16,
                                                   const float *bias, int tanh_out, float *y,
                                                   int32_t ldy, nmt_error *err)
{
    NMT_ARG_CHECK(ctx && m >= 0 && n >= 0 && k >= 1 && ldx16 >= k && ldw16 >= k &&
                  ldy >= (n > 1 ? n : 1) && m <= 65535 * kRows &&
                  (kind == NMT_HALF_BF16 || kind == NMT_HALF_FP16));
    NMT_ARG_CHECK(m == 0 || n == 0 || (x16 && w16 && y));
    if (m == 0 || n == 0)
        return NMT_STATUS_OK;
    if (!nmt_cuda_linear_chain_stream_fits(k, x16, ldx16, w16, ldw16))
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "linear chain stream: k %d, x at %p (rows %d apart), weights at %p "
                             "(rows %d apart): want 16-byte rows and x staged in shared memory",
                             k, x16, ldx16, w16, ldw16);
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    const uint16_t *x = (const uint16_t *)x16, *w = (const uint16_t *)w16;
    /* 4 warps a block where that still gives every SM a block, else 1. */
    const bool wide = (n + 4 * kOutputs - 1) / (4 * kOutputs) >= nmt_cuda_sm_count(-1);
    nmt_status (*run)(int32_t, int32_t, int32_t, const uint16_t *, int32_t, const uint16_t *,
                      int32_t, const float *, int, float *, int32_t, cudaStream_t, nmt_error *) =
        kind == NMT_HALF_BF16 ? (wide ? launch<1, 4> : launch<1, 1>)
                              : (wide ? launch<0, 4> : launch<0, 1>);
    return run(m, n, k, x, ldx16, w, ldw16, bias, tanh_out, y, ldy, stream, err);
}
