/* linear.h: y[m, n] = x[m, k] . w[n, k]^T (+ bias[n]) (+ y if accumulate).
 * Row-major with leading dimensions, so a slice of a wider matrix works.
 * CPU: plain triple loop, double accumulation. CUDA: cuBLAS sgemm. */
#ifndef NMT_KERNELS_LINEAR_H
#define NMT_KERNELS_LINEAR_H

#include "nmt.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_cuda_ctx nmt_cuda_ctx; /* kernels/cuda_ctx.h */

void nmt_cpu_linear(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                    const float *w, int32_t ldw, const float *bias, int accumulate,
                    float *y, int32_t ldy);

nmt_status nmt_cuda_linear(nmt_cuda_ctx *ctx, int32_t m, int32_t n, int32_t k,
                           const float *x, int32_t ldx, const float *w, int32_t ldw,
                           const float *bias, int accumulate, float *y, int32_t ldy,
                           nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
