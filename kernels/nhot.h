/* nhot.h: N-hot embedding lookup (Argueta & Chiang, Alg. 2).
 * out[r, :] = sum_{e in row_ptr[r]..row_ptr[r+1]} values[e] * table[cols[e], :]
 * A CSR matrix of token features (n_rows x table_rows) times table
 * (table_rows x dim). Any N per row (including 0: the row is zeros). */
#ifndef NMT_KERNELS_NHOT_H
#define NMT_KERNELS_NHOT_H

#include "nmt_status.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Refuses a column outside [0, table_rows) or a decreasing row_ptr. */
nmt_status nmt_cpu_nhot_lookup(int32_t n_rows, int32_t dim, int32_t table_rows,
                               const int32_t *row_ptr, const int32_t *cols, const float *values,
                               const float *table, float *out, nmt_error *err);

/* Device pointers; the CSR is trusted (validated on the host before upload). */
nmt_status nmt_cuda_nhot_lookup(int32_t n_rows, int32_t dim, int32_t table_rows,
                                const int32_t *row_ptr, const int32_t *cols, const float *values,
                                const float *table, float *out, void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
