/* linear.cu: y[m, n] = x[m, k] . w[n, k]^T (+ bias[n]) (+ y if accumulate),
 * row-major with leading dimensions, on cuBLAS sgemm.
 *
 * cuBLAS is column-major; a row-major [r, c] matrix with leading dimension ld
 * is the column-major [c, r] matrix with the same ld, i.e. its transpose. So
 *     y^T (n x m, ldy) = w (k x n as stored, transposed) . x^T (k x m, ldx)
 * is one call: sgemm(T, N, n, m, k, w, ldw, x, ldx, y, ldy), beta = 1 to
 * accumulate. With a bias (and no accumulate) the GEMM is cuBLASLt's with
 * the bias in its epilogue (linear_lt.cu); otherwise, or where cuBLASLt has
 * no algorithm, the bias is a broadcast add over rows afterwards. Plain fp32
 * math (the context disables TF32).
 * nmt_cuda_linear_tf32x2: the split-activation TF32 variant (linear.h).
 * nmt_cuda_linear_half: bf16 or fp16 inputs on tensor cores, fp32 sums and
 * output (CUBLAS_COMPUTE_32F), one cuBLASLt call with a cached plan, bias or
 * not (cublasGemmEx only where cuBLASLt has no algorithm); the activations
 * are rounded into a scratch by the same kernel that rounds the weights once
 * at create, or, with nmt_cuda_linear_half_rounded, were rounded by the
 * kernels that computed them (nmt_half_out). */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "cuda_ctx.h"
#include "device.cuh"
#include "half_device.cuh"
#include "linear.h"
#include "linear_lt.h"

static constexpr int kBiasThreads = 256;

/* y[i, j] += bias[j] for i < m, j < n; grid.x over column tiles, grid.y rows. */
static __global__ void __launch_bounds__(kBiasThreads)
    add_bias_kernel(int32_t m, int32_t n, const float *__restrict__ bias, float *y, int32_t ldy)
{
    const int32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    const float b = __ldg(&bias[j]);
    for (int32_t i = blockIdx.y; i < m; i += gridDim.y)
        y[(int64_t)i * ldy + j] += b;
}

static constexpr int kSplitThreads = 256;

static __device__ __forceinline__ float tf32_round(float x)
{
    return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u); /* = nmt_tf32_round */
}

/* split[i, :] = [tf32(x) tf32(x - tf32(x))] of row i; grid.y over rows. */
static __global__ void __launch_bounds__(kSplitThreads)
    tf32_split_kernel(int32_t m, int32_t k, const float *__restrict__ x, int32_t ldx,
                      float *__restrict__ split)
{
    for (int32_t i = blockIdx.y; i < m; i += gridDim.y)
        for (int32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < k;
             p += gridDim.x * blockDim.x) {
            const float v = x[(int64_t)i * ldx + p], hi = tf32_round(v);
            split[(int64_t)i * 2 * k + p] = hi;
            split[(int64_t)i * 2 * k + k + p] = tf32_round(v - hi);
        }
}

static constexpr int kHalfThreads = 256;

/* dst[i, p] = T(src[i * ld + p]), dst rows k apart; grid.y over rows. */
template <typename T>
static __global__ void __launch_bounds__(kHalfThreads)
    to_half_kernel(int32_t m, int32_t k, const float *__restrict__ src, int32_t ld,
                   T *__restrict__ dst)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    for (int32_t i = blockIdx.y; i < m; i += gridDim.y)
        for (int32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < k;
             p += gridDim.x * blockDim.x)
            store_half(&dst[(int64_t)i * k + p], src[(int64_t)i * ld + p]);
}

/* The same by four (k and ld multiples of 4, src 16-byte and dst 8-byte
 * aligned), a thread a float4 over the whole [m, k / 4] grid: a row of the
 * decoder is a few hundred float4s, so a block a row segment left most of a
 * block's threads idle, and the scalar kernel's 2-byte stores took ~2x the
 * bytes' time. */
template <typename T>
static __global__ void __launch_bounds__(kHalfThreads)
    to_half4_kernel(int32_t m, int32_t k4, const float4 *__restrict__ src, int32_t ld4,
                    T *__restrict__ dst)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    const int64_t total = (int64_t)m * k4;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e / k4, p = e - i * k4;
        store_half4(dst + 4 * e, src[i * ld4 + p]);
    }
}

template <typename T>
static void launch_to_half(int32_t m, int32_t k, const float *src, int32_t ld, T *dst,
                           cudaStream_t stream)
{
    if (k % 4 == 0 && ld % 4 == 0 && nmt_is_aligned(src, 16) && nmt_is_aligned(dst, 8)) {
        const int64_t total = (int64_t)m * (k / 4);
        const int64_t blocks = (total + kHalfThreads - 1) / kHalfThreads;
        nmt_launch_pdl(to_half4_kernel<T>, (unsigned)(blocks < 65535 ? blocks : 65535),
                       kHalfThreads, 0, stream, m, k / 4,
                       reinterpret_cast<const float4 *>(src), ld / 4, dst);
        return;
    }
    dim3 grid((unsigned)((k + kHalfThreads - 1) / kHalfThreads),
              (unsigned)(m < 65535 ? m : 65535));
    nmt_launch_pdl(to_half_kernel<T>, grid, kHalfThreads, 0, stream, m, k, src, ld, dst);
}

static nmt_status to_half(nmt_half_kind kind, int32_t m, int32_t k, const float *src, int32_t ld,
                          void *dst, cudaStream_t stream, nmt_error *err)
{
    if (m == 0 || k == 0)
        return NMT_STATUS_OK;
    if (kind == NMT_HALF_BF16)
        launch_to_half(m, k, src, ld, (__nv_bfloat16 *)dst, stream);
    else
        launch_to_half(m, k, src, ld, (__half *)dst, stream);
    NMT_LAUNCH_RETURN("to_half_kernel");
    return NMT_STATUS_OK;
}

static nmt_status add_bias(int32_t m, int32_t n, const float *bias, float *y, int32_t ldy,
                           cudaStream_t stream, nmt_error *err)
{
    unsigned rows = (unsigned)(m < 65535 ? m : 65535);
    dim3 grid((unsigned)((n + kBiasThreads - 1) / kBiasThreads), rows);
    add_bias_kernel<<<grid, kBiasThreads, 0, stream>>>(m, n, bias, y, ldy);
    NMT_LAUNCH_RETURN("add_bias_kernel");
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_linear_tf32x2(nmt_cuda_ctx *ctx, int32_t m, int32_t n, int32_t k,
                                             const float *x, int32_t ldx, const float *w2,
                                             int32_t ldw2, const float *bias, float *y,
                                             int32_t ldy, float *split, nmt_error *err)
{
    NMT_ARG_CHECK(ctx && m >= 0 && n >= 0 && k >= 1 && ldx >= k && ldw2 >= 2 * k &&
                  ldy >= (n > 1 ? n : 1));
    NMT_ARG_CHECK(m == 0 || n == 0 || (x && w2 && y && split));
    if (m == 0 || n == 0)
        return NMT_STATUS_OK;
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    cublasHandle_t handle = (cublasHandle_t)nmt_cuda_ctx_cublas(ctx);
    dim3 grid((unsigned)((k + kSplitThreads - 1) / kSplitThreads),
              (unsigned)(m < 65535 ? m : 65535));
    tf32_split_kernel<<<grid, kSplitThreads, 0, stream>>>(m, k, x, ldx, split);
    NMT_LAUNCH_RETURN("tf32_split_kernel");
    /* Column-major as in nmt_cuda_linear: y^T = w2^T' . split^T over 2k. */
    const float alpha = 1.0f, beta = 0.0f;
    NMT_CUBLAS_RETURN(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, 2 * k, &alpha, w2,
                                   CUDA_R_32F, ldw2, split, CUDA_R_32F, 2 * k, &beta, y,
                                   CUDA_R_32F, ldy, CUBLAS_COMPUTE_32F_FAST_TF32,
                                   CUBLAS_GEMM_DEFAULT));
    return bias ? add_bias(m, n, bias, y, ldy, stream, err) : NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_linear(nmt_cuda_ctx *ctx, int32_t m, int32_t n, int32_t k,
                                      const float *x, int32_t ldx, const float *w, int32_t ldw,
                                      const float *bias, int accumulate, float *y, int32_t ldy,
                                      nmt_error *err)
{
    NMT_ARG_CHECK(ctx && m >= 0 && n >= 0 && k >= 0);
    NMT_ARG_CHECK(ldx >= (k > 1 ? k : 1) && ldw >= (k > 1 ? k : 1) && ldy >= (n > 1 ? n : 1));
    NMT_ARG_CHECK(m == 0 || n == 0 || (y && (k == 0 || (x && w))));
    if (m == 0 || n == 0)
        return NMT_STATUS_OK;
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    cublasHandle_t handle = (cublasHandle_t)nmt_cuda_ctx_cublas(ctx);

    /* Batch-invariant: the chain kernel at a few rows, where cuBLASLt's
     * fixed-order algorithms are tiled for many, and wherever it has none. */
    const int invariant = nmt_cuda_ctx_batch_invariant(ctx);
    if (invariant && !accumulate && k > 0 && m <= NMT_SKINNY_MAX_ROWS)
        return nmt_cuda_linear_chain(ctx, m, n, k, x, ldx, NMT_SKINNY_X_F32, w, NMT_WEIGHT_F32,
                                     ldw, bias, 0, y, ldy, err);
    /* One cublasLtMatmul on a cached plan (linear_lt.cu): cublasSgemm runs
     * cuBLAS's heuristic on the host at every call, which at the encoder's
     * recurrent shapes takes longer than the GEMM. */
    if (!accumulate && k > 0) {
        int ran = 0;
        const nmt_status st = nmt_cuda_linear_lt(ctx, CUDA_R_32F, m, n, k, x, ldx, w, ldw, bias,
                                                 y, ldy, &ran, err);
        if (st != NMT_STATUS_OK || ran)
            return st;
        if (invariant)
            return nmt_cuda_linear_chain(ctx, m, n, k, x, ldx, NMT_SKINNY_X_F32, w,
                                         NMT_WEIGHT_F32, ldw, bias, 0, y, ldy, err);
    }
    if (k == 0) {
        /* An empty product: cuBLAS's quick return would leave y untouched. */
        if (!accumulate)
            NMT_CUDA_RETURN(cudaMemset2DAsync(y, (size_t)ldy * sizeof(float), 0,
                                              (size_t)n * sizeof(float), (size_t)m, stream));
    } else {
        const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
        NMT_CUBLAS_RETURN(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w, ldw,
                                      x, ldx, &beta, y, ldy));
    }
    return bias ? add_bias(m, n, bias, y, ldy, stream, err) : NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_to_half(nmt_cuda_ctx *ctx, nmt_half_kind kind, int32_t m,
                                       int32_t k, const float *src, int32_t ld, void *dst,
                                       nmt_error *err)
{
    NMT_ARG_CHECK(ctx && m >= 0 && k >= 0 && ld >= k &&
                  (kind == NMT_HALF_BF16 || kind == NMT_HALF_FP16));
    NMT_ARG_CHECK(m == 0 || k == 0 || (src && dst));
    if (m == 0 || k == 0)
        return NMT_STATUS_OK;
    return to_half(kind, m, k, src, ld, dst, (cudaStream_t)nmt_cuda_ctx_stream(ctx), err);
}

/* The 16-bit product's arguments, checked before anything runs. */
static bool half_args_ok(const nmt_cuda_ctx *ctx, nmt_half_kind kind, int32_t m, int32_t n,
                         int32_t k, const float *x, int32_t ldx, const void *x16,
                         const void *w16, int32_t ldw16, const float *y, int32_t ldy)
{
    return ctx && m >= 0 && n >= 0 && k >= 1 && ldx >= k && ldw16 >= k &&
           ldy >= (n > 1 ? n : 1) && (kind == NMT_HALF_BF16 || kind == NMT_HALF_FP16) &&
           (m == 0 || n == 0 || (x && w16 && y && x16));
}

extern "C" nmt_status nmt_cuda_linear_half(nmt_cuda_ctx *ctx, nmt_half_kind kind, int32_t m,
                                           int32_t n, int32_t k, const float *x, int32_t ldx,
                                           const void *w16, int32_t ldw16, const float *bias,
                                           float *y, int32_t ldy, void *x16, nmt_error *err)
{
    NMT_ARG_CHECK(half_args_ok(ctx, kind, m, n, k, x, ldx, x16, w16, ldw16, y, ldy));
    if (m == 0 || n == 0)
        return NMT_STATUS_OK;
    const nmt_status status =
        to_half(kind, m, k, x, ldx, x16, (cudaStream_t)nmt_cuda_ctx_stream(ctx), err);
    if (status != NMT_STATUS_OK)
        return status;
    return nmt_cuda_linear_half_rounded(ctx, kind, m, n, k, x, ldx, x16, w16, ldw16, bias, y,
                                        ldy, err);
}

extern "C" nmt_status nmt_cuda_linear_half_rounded(nmt_cuda_ctx *ctx, nmt_half_kind kind,
                                                   int32_t m, int32_t n, int32_t k,
                                                   const float *x, int32_t ldx, const void *x16,
                                                   const void *w16, int32_t ldw16,
                                                   const float *bias, float *y, int32_t ldy,
                                                   nmt_error *err)
{
    NMT_ARG_CHECK(half_args_ok(ctx, kind, m, n, k, x, ldx, x16, w16, ldw16, y, ldy));
    if (m == 0 || n == 0)
        return NMT_STATUS_OK;
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    cublasHandle_t handle = (cublasHandle_t)nmt_cuda_ctx_cublas(ctx);
    const nmt_skinny_x x_round = kind == NMT_HALF_BF16 ? NMT_SKINNY_X_BF16 : NMT_SKINNY_X_FP16;
    const nmt_weight_type w_type = kind == NMT_HALF_BF16 ? NMT_WEIGHT_BF16 : NMT_WEIGHT_FP16;
    /* Batch-invariant with k not in whole k16 blocks: cuBLASLt's algorithms
     * end such a k in orders of their own (bf16, test_gpu_invariance). */
    if (nmt_cuda_ctx_batch_invariant(ctx) && k % 16 != 0)
        return nmt_cuda_linear_chain(ctx, m, n, k, x, ldx, x_round, w16, w_type, ldw16, bias, 0,
                                     y, ldy, err);
    /* Column-major as in nmt_cuda_linear: y^T = w16^T' . x16^T. */
    const cudaDataType_t type = kind == NMT_HALF_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    int ran = 0;
    const nmt_status st =
        nmt_cuda_linear_lt(ctx, type, m, n, k, x16, k, w16, ldw16, bias, y, ldy, &ran, err);
    if (st != NMT_STATUS_OK || ran)
        return st;
    if (nmt_cuda_ctx_batch_invariant(ctx)) /* no fixed-order algorithm: the same bits */
        return nmt_cuda_linear_chain(ctx, m, n, k, x, ldx, x_round, w16, w_type, ldw16, bias, 0,
                                     y, ldy, err);
    const float alpha = 1.0f, beta = 0.0f;
    NMT_CUBLAS_RETURN(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w16, type,
                                   ldw16, x16, type, k, &beta, y, CUDA_R_32F, ldy,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return bias ? add_bias(m, n, bias, y, ldy, stream, err) : NMT_STATUS_OK;
}
