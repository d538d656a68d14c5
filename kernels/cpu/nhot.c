/* nhot.c: CPU N-hot embedding lookup (kernels/nhot.h): one CSR row times the
 * table, accumulated in double. row_ptr values are absolute indices into
 * cols/values, so a slice of a larger CSR (e.g. one sentence of a batch) is
 * passed as row_ptr + first_row with the full cols and values. */
#include "nhot.h"

#include "error.h"

nmt_status nmt_cpu_nhot_lookup(int32_t n_rows, int32_t dim, int32_t table_rows,
                               const int32_t *row_ptr, const int32_t *cols, const float *values,
                               const float *table, float *out, nmt_error *err)
{
    if (n_rows < 0 || dim < 0 || table_rows < 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "nhot_lookup: negative size (n_rows %d, dim %d, table_rows %d)",
                             n_rows, dim, table_rows);
    /* Validate everything before writing anything. */
    for (int32_t r = 0; r < n_rows; r++) {
        if (row_ptr[r + 1] < row_ptr[r])
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "nhot_lookup: row_ptr decreases at row %d (%d > %d)", r,
                                 row_ptr[r], row_ptr[r + 1]);
        for (int32_t e = row_ptr[r]; e < row_ptr[r + 1]; e++)
            if (cols[e] < 0 || cols[e] >= table_rows)
                return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                     "nhot_lookup: row %d entry %d: column %d outside [0, %d)",
                                     r, e, cols[e], table_rows);
    }
    for (int32_t r = 0; r < n_rows; r++) {
        for (int32_t d = 0; d < dim; d++) {
            double sum = 0.0;
            for (int32_t e = row_ptr[r]; e < row_ptr[r + 1]; e++)
                sum += (double)values[e] * (double)table[(int64_t)cols[e] * dim + d];
            out[(int64_t)r * dim + d] = (float)sum;
        }
    }
    return NMT_STATUS_OK;
}
