/* gather.h: dst[i, :] = src[index[i], :] for i < n_rows (rows of `dim` floats).
 * Reorders LSTM states and input feed by beam back-pointers. dst != src. */
#ifndef NMT_KERNELS_GATHER_H
#define NMT_KERNELS_GATHER_H

#include "nmt.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void nmt_cpu_gather_rows(int32_t n_rows, int32_t dim, const float *src, const int32_t *index,
                         float *dst);

nmt_status nmt_cuda_gather_rows(int32_t n_rows, int32_t dim, const float *src,
                                const int32_t *index, float *dst, void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
