/* linear_lt.h: linear.cu's GEMMs as one cuBLASLt call with a cached plan,
 * the bias (if any) added in its epilogue (kernels/cuda/linear_lt.cu).
 * Internal to kernels/cuda (C++ linkage). */
#ifndef NMT_KERNELS_CUDA_LINEAR_LT_H
#define NMT_KERNELS_CUDA_LINEAR_LT_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_ctx.h"
#include "nmt_status.h"

/* y[m, n] = x[m, k] . w[n, k]^T (+ bias[n] unless NULL) in one
 * cublasLtMatmul, fp32 sums and output; x and w of `type` (CUDA_R_32F: plain
 * fp32 math, no TF32; CUDA_R_16F or CUDA_R_16BF: tensor cores), row-major
 * with leading dimensions as nmt_cuda_linear's. *ran = 0 and nothing
 * launched when cuBLASLt offers no algorithm for the call (the caller then
 * runs its GEMM and the bias pass); k >= 1, m, n >= 1. */
nmt_status nmt_cuda_linear_lt(nmt_cuda_ctx *ctx, cudaDataType_t type, int32_t m, int32_t n,
                              int32_t k, const void *x, int32_t ldx, const void *w, int32_t ldw,
                              const float *bias, float *y, int32_t ldy, int *ran, nmt_error *err);

#endif
