/* pointwise.h: small element-wise ops the layers need between GEMMs.
 * tanh_inplace: x[i] = tanh(x[i]) for i < n (the attentional vector
 * f = tanh(W_c [c; h]) after its linear; the CPU step model's, no CUDA twin).
 * tanh_rows: the same over n_rows rows of `width` floats, ld apart (the CUDA
 * decoder keeps f inside a wider row buffer, beside the state it feeds);
 * x16 (NULL: none; half.h) gets the results rounded to 16 bits, for the
 * 16-bit output layer that reads f next. */
#ifndef NMT_KERNELS_POINTWISE_H
#define NMT_KERNELS_POINTWISE_H

#include "half.h"
#include "nmt_status.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void nmt_cpu_tanh_inplace(int64_t n, float *x);

void nmt_cpu_tanh_rows(int32_t n_rows, int32_t width, float *x, int32_t ld,
                       const nmt_half_out *x16);
nmt_status nmt_cuda_tanh_rows(int32_t n_rows, int32_t width, float *x, int32_t ld,
                              const nmt_half_out *x16, void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
