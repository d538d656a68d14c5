/* linear_chain.cu: y[m, n] = x[m, k] . w[n, k]^T (+ bias[n]) (tanh) with
 * each output summed as one chain over k from k = 0 (kernels/linear.h,
 * nmt_cuda_linear_chain): the arithmetic every batch-invariant GEMM shares.
 *
 *  fp32   acc = fmaf(x[r][p], w[j][p], acc) for p = 0, 1, ..., k - 1
 *  16-bit x rounded to the weights' format, then mma.sync m16n8k16 with an
 *         fp32 accumulator over the k16 blocks in order (zeros past k)
 *
 * These are the bits of cuBLASLt's tiled, unsplit algorithms for the same
 * operands at any row count (bench_gemm_algos --invariance: every such
 * algorithm of the model's shapes, fp32 and 16-bit, against own_a/own_b), so
 * a batch-invariant caller may run this kernel for a few rows, or where
 * cuBLASLt offers no such algorithm, and cuBLASLt elsewhere. The bias is
 * added after the chain, as cuBLASLt's epilogue adds it; tanh after that.
 *
 * fp32: a block 32 outputs x 8 rows through shared memory, each sum one
 * thread's chain. 16-bit: one warp 16 outputs x 8 rows, w the A operand, x^T
 * the B one. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "cuda_ctx.h"
#include "device.cuh"
#include "linear.h"
#include "mma_device.cuh"

namespace {

constexpr int kThreads = 128;
constexpr int kRows = 8;                        /* rows a thread (fp32) or a warp (16-bit) */
constexpr int kMmaOutputs = 16;                 /* outputs a warp (16-bit) */
constexpr int kMmaWarps = kThreads / kWarpSize; /* warps a block (16-bit) */

template <typename W> __device__ __forceinline__ float widen(W v);
template <> __device__ __forceinline__ float widen<float>(float v) { return v; }
template <> __device__ __forceinline__ float widen<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float widen<__nv_bfloat16>(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}

/* fp32: a block computes kTileOut outputs x kRows rows, two rows a thread;
 * the block stages kChunk columns of w and x in shared memory at a time
 * (loaded for the next chunk while this one is summed), so the loads in
 * flight are the block's, not a thread's, while each sum stays one chain. */
constexpr int kTileOut = 32;
constexpr int kChunk = 128;
constexpr int kPad = 1; /* w rows kChunk + 1 apart: a warp's 32 rows in 32 banks */
static_assert(kThreads == kTileOut * kRows / 2, "two rows a thread");

template <typename W>
__global__ void __launch_bounds__(kThreads)
    chain_f32_kernel(int m, int n, int k, const float *__restrict__ x, int ldx,
                     const W *__restrict__ w, int ldw, const float *__restrict__ bias,
                     int tanh_out, float *__restrict__ y, int ldy)
{
    pdl_enter();
    __shared__ float s_w[kTileOut][kChunk + kPad];
    __shared__ float s_x[kRows][kChunk];
    const int tid = threadIdx.x, o = tid % kTileOut, pair = tid / kTileOut;
    const int j0 = blockIdx.x * kTileOut, r0 = blockIdx.y * kRows;
    const int ra = 2 * pair, rb = 2 * pair + 1;
    float acc_a = 0.0f, acc_b = 0.0f;
    constexpr int kWPer = kTileOut * kChunk / kThreads, kXPer = kRows * kChunk / kThreads;
    float w_next[kWPer], x_next[kXPer];
    /* Element e of a thread's share: w row e / kChunk, column e % kChunk;
     * consecutive threads take consecutive columns (coalesced). Past n, m or
     * k: zeros, never summed. */
    const auto load = [&](int c0) {
#pragma unroll
        for (int i = 0; i < kWPer; i++) {
            const int e = i * kThreads + tid, row = e / kChunk, col = c0 + e % kChunk;
            const int j = j0 + row;
            w_next[i] = j < n && col < k ? widen<W>(w[(int64_t)j * ldw + col]) : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < kXPer; i++) {
            const int e = i * kThreads + tid, row = e / kChunk, col = c0 + e % kChunk;
            const int r = r0 + row;
            x_next[i] = r < m && col < k ? __ldg(&x[(int64_t)r * ldx + col]) : 0.0f;
        }
    };
    load(0);
    for (int c0 = 0; c0 < k; c0 += kChunk) {
        __syncthreads(); /* the last chunk's sums are done with the tiles */
#pragma unroll
        for (int i = 0; i < kWPer; i++) {
            const int e = i * kThreads + tid;
            s_w[e / kChunk][e % kChunk] = w_next[i];
        }
#pragma unroll
        for (int i = 0; i < kXPer; i++) {
            const int e = i * kThreads + tid;
            s_x[e / kChunk][e % kChunk] = x_next[i];
        }
        __syncthreads();
        if (c0 + kChunk < k)
            load(c0 + kChunk);
        const int cols = min(kChunk, k - c0);
        for (int p = 0; p < cols; p++) {
            const float wv = s_w[o][p];
            acc_a = fmaf(s_x[ra][p], wv, acc_a);
            acc_b = fmaf(s_x[rb][p], wv, acc_b);
        }
    }
    const int j = j0 + o;
    if (j < n && r0 + ra < m)
        y[(int64_t)(r0 + ra) * ldy + j] = chain_finish(acc_a, bias, j, tanh_out);
    if (j < n && r0 + rb < m)
        y[(int64_t)(r0 + rb) * ldy + j] = chain_finish(acc_b, bias, j, tanh_out);
}

template <int BF16> __device__ __forceinline__ uint32_t pack_pair(float a, float b);
template <> __device__ __forceinline__ uint32_t pack_pair<0>(float a, float b)
{
    const __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<const uint32_t *>(&h);
}
template <> __device__ __forceinline__ uint32_t pack_pair<1>(float a, float b)
{
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const uint32_t *>(&h);
}

/* Columns c, c + 1 of a 16-bit row as one register (zeros past k). */
__device__ __forceinline__ uint32_t w_pair(const uint16_t *row, int c, int k, bool live)
{
    if (!live || c >= k)
        return 0u;
    if (c + 1 < k && ((uintptr_t)(row + c) & 3u) == 0)
        return __ldg(reinterpret_cast<const uint32_t *>(row + c));
    const uint32_t lo = __ldg(row + c), hi = c + 1 < k ? __ldg(row + c + 1) : 0u;
    return lo | hi << 16;
}

/* Columns c, c + 1 of an fp32 row rounded to the 16-bit format. */
template <int BF16>
__device__ __forceinline__ uint32_t x_pair(const float *row, int c, int k, bool live)
{
    if (!live || c >= k)
        return 0u;
    return pack_pair<BF16>(__ldg(row + c), c + 1 < k ? __ldg(row + c + 1) : 0.0f);
}

constexpr int kBlocksAhead = 4; /* k16 blocks whose operands a warp loads before their mmas */

/* A warp's 16 outputs x 8 rows. Fragments (PTX ISA, m16n8k16): lane = 4 g + t;
 * A (w) rows g and g + 8, columns 2t, 2t + 1 and 8 more; B (x^T) column g
 * (x's row), rows 2t, 2t + 1 and 8 more; D rows g, g + 8 (outputs), columns
 * 2t, 2t + 1 (x's rows). */
template <int BF16>
__global__ void __launch_bounds__(kThreads)
    chain_mma_kernel(int m, int n, int k, const float *__restrict__ x, int ldx,
                     const uint16_t *__restrict__ w, int ldw, const float *__restrict__ bias,
                     int tanh_out, float *__restrict__ y, int ldy)
{
    pdl_enter();
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const int g = lane >> 2, t = lane & 3;
    const int j0 = (blockIdx.x * kMmaWarps + warp) * kMmaOutputs, r0 = blockIdx.y * kRows;
    if (j0 >= n)
        return;
    const int ja = j0 + g, jb = j0 + g + 8, r = r0 + g;
    const bool live_a = ja < n, live_b = jb < n, live_x = r < m;
    const uint16_t *wa = w + (int64_t)(live_a ? ja : 0) * ldw;
    const uint16_t *wb = w + (int64_t)(live_b ? jb : 0) * ldw;
    const float *xr = x + (int64_t)(live_x ? r : 0) * ldx;
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    /* kBlocksAhead k16 blocks' operands loaded, then their mmas in order. */
    for (int k0 = 0; k0 < k; k0 += 16 * kBlocksAhead) {
        uint32_t a[kBlocksAhead][4], b[kBlocksAhead][2];
#pragma unroll
        for (int u = 0; u < kBlocksAhead; u++) {
            const int c = k0 + 16 * u + 2 * t;
            a[u][0] = w_pair(wa, c, k, live_a);
            a[u][1] = w_pair(wb, c, k, live_b);
            a[u][2] = w_pair(wa, c + 8, k, live_a);
            a[u][3] = w_pair(wb, c + 8, k, live_b);
            b[u][0] = x_pair<BF16>(xr, c, k, live_x);
            b[u][1] = x_pair<BF16>(xr, c + 8, k, live_x);
        }
#pragma unroll
        for (int u = 0; u < kBlocksAhead; u++)
            if (k0 + 16 * u < k) /* past k: no block (zeros would add nothing, but a -0 sum) */
                mma_k16<BF16>(d, a[u], b[u]);
    }
#pragma unroll
    for (int h = 0; h < 4; h++) {
        const int j = j0 + g + (h >> 1) * 8, row = r0 + 2 * t + (h & 1);
        if (j < n && row < m)
            y[(int64_t)row * ldy + j] = chain_finish(d[h], bias, j, tanh_out);
    }
}

} // namespace

extern "C" nmt_status nmt_cuda_linear_chain(nmt_cuda_ctx *ctx, int32_t m, int32_t n, int32_t k,
                                            const float *x, int32_t ldx, nmt_skinny_x x_round,
                                            const void *w, nmt_weight_type w_type, int32_t ldw,
                                            const float *bias, int tanh_out, float *y,
                                            int32_t ldy, nmt_error *err)
{
    NMT_ARG_CHECK(ctx && m >= 0 && n >= 0 && k >= 1 && ldx >= k && ldw >= k &&
                  ldy >= (n > 1 ? n : 1));
    NMT_ARG_CHECK(m == 0 || n == 0 || (x && w && y));
    const bool mma = x_round != NMT_SKINNY_X_F32;
    /* 16-bit: the weights in the format x is rounded to */
    NMT_ARG_CHECK(!mma || (x_round == NMT_SKINNY_X_BF16 && w_type == NMT_WEIGHT_BF16) ||
                  (x_round == NMT_SKINNY_X_FP16 && w_type == NMT_WEIGHT_FP16));
    NMT_ARG_CHECK(m <= 65535 * kRows);
    if (m == 0 || n == 0)
        return NMT_STATUS_OK;
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    const dim3 block(kThreads);
    const unsigned row_blocks = (unsigned)((m + kRows - 1) / kRows);
    if (mma) {
        const int per_block = kMmaWarps * kMmaOutputs;
        const dim3 grid((unsigned)((n + per_block - 1) / per_block), row_blocks);
        const uint16_t *w16 = (const uint16_t *)w;
        nmt_launch_pdl(x_round == NMT_SKINNY_X_BF16 ? chain_mma_kernel<1> : chain_mma_kernel<0>,
                       grid, block, 0, stream, m, n, k, x, ldx, w16, ldw, bias, tanh_out, y, ldy);
        NMT_LAUNCH_RETURN("chain_mma_kernel");
        return NMT_STATUS_OK;
    }
    const dim3 grid((unsigned)((n + kTileOut - 1) / kTileOut), row_blocks);
    if (w_type == NMT_WEIGHT_F32)
        nmt_launch_pdl(chain_f32_kernel<float>, grid, block, 0, stream, m, n, k, x, ldx,
                       (const float *)w, ldw, bias, tanh_out, y, ldy);
    else if (w_type == NMT_WEIGHT_FP16)
        nmt_launch_pdl(chain_f32_kernel<__half>, grid, block, 0, stream, m, n, k, x, ldx,
                       (const __half *)w, ldw, bias, tanh_out, y, ldy);
    else
        nmt_launch_pdl(chain_f32_kernel<__nv_bfloat16>, grid, block, 0, stream, m, n, k, x, ldx,
                       (const __nv_bfloat16 *)w, ldw, bias, tanh_out, y, ldy);
    NMT_LAUNCH_RETURN("chain_f32_kernel");
    return NMT_STATUS_OK;
}
