/* spmm.c: CPU y = x . W^T (+ bias) (+ y) for W sparse in CSR (kernels/spmm.h):
 * the oracle of a future GPU SpMM. The loop order and double accumulation
 * are nmt_cpu_linear's, so a matrix with its zeros dropped gives bit-equal
 * outputs to the dense product. k is not read: the columns were checked
 * against it when the matrix was loaded (format/model_file_sparse.c). */
#include "spmm.h"

void nmt_cpu_spmm(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                  const int32_t *row_offsets, const int32_t *col_indices, const float *values,
                  const float *bias, int accumulate, float *y, int32_t ldy)
{
    (void)k;
    for (int32_t i = 0; i < m; i++) {
        const float *x_row = x + (int64_t)i * ldx;
        float *y_row = y + (int64_t)i * ldy;
        for (int32_t j = 0; j < n; j++) {
            double sum = accumulate ? (double)y_row[j] : 0.0;
            if (bias)
                sum += (double)bias[j];
            for (int32_t p = row_offsets[j]; p < row_offsets[j + 1]; p++)
                sum += (double)x_row[col_indices[p]] * (double)values[p];
            y_row[j] = (float)sum;
        }
    }
}
