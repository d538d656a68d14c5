/* spmm.h: y[m, n] = x[m, k] . W^T (+ bias[n]) (+ y if accumulate) with W a
 * sparse matrix [n, k] in CSR form: row j of W (output j) holds the values
 * values[row_offsets[j] .. row_offsets[j + 1]) at the columns
 * col_indices[...], strictly increasing, each in [0, k). The signature is
 * nmt_cpu_linear's (kernels/linear.h) with (w, ldw) replaced by the CSR.
 *
 * CPU: the plain loop, each output one double-accumulated dot product over
 * the row's nonzeros in column order, rounded once. With the zeros of a dense
 * matrix dropped it gives exactly nmt_cpu_linear's result on that matrix
 * (the skipped products are exact zeros), which the CPU engine relies on.
 * There is no CUDA twin yet: it will be Gale et al.'s row-split SpMM
 * ("Sparse GPU Kernels for Deep Learning", SC 2020) and be tested against
 * this one. */
#ifndef NMT_KERNELS_SPMM_H
#define NMT_KERNELS_SPMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void nmt_cpu_spmm(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                  const int32_t *row_offsets, const int32_t *col_indices, const float *values,
                  const float *bias, int accumulate, float *y, int32_t ldy);

#ifdef __cplusplus
}
#endif
#endif
