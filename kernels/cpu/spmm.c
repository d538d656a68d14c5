/* spmm.c: CPU y = x . W^T (+ bias) (+ y) for W sparse in CSR (kernels/spmm.h):
 * the oracle of the GPU SpMM (kernels/cuda/spmm.cu), and the row order
 * (swizzle) that the GPU's preparation uploads. The loop order and double accumulation
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

/* Row j comes before row i: more nonzeros, or as many and a lower index.
 * A strict total order, so any correct sort gives the same permutation. */
static int row_before(const int32_t *row_offsets, int32_t j, int32_t i)
{
    const int32_t len_j = row_offsets[j + 1] - row_offsets[j];
    const int32_t len_i = row_offsets[i + 1] - row_offsets[i];
    return len_j > len_i || (len_j == len_i && j < i);
}

static void sift_down(const int32_t *row_offsets, int32_t *order, int32_t root, int32_t size)
{
    for (;;) {
        int32_t child = 2 * root + 1;
        if (child >= size)
            return;
        if (child + 1 < size && row_before(row_offsets, order[child], order[child + 1]))
            child++; /* the one that comes later */
        if (!row_before(row_offsets, order[root], order[child]))
            return;
        const int32_t t = order[root];
        order[root] = order[child];
        order[child] = t;
        root = child;
    }
}

/* A heap sort: in place, so the library's one-time preparation needs no
 * scratch allocation for it (n log n for the model's n <= ~35k rows). */
void nmt_spmm_row_order(int32_t n, const int32_t *row_offsets, int32_t *order)
{
    for (int32_t j = 0; j < n; j++)
        order[j] = j;
    for (int32_t root = n / 2 - 1; root >= 0; root--)
        sift_down(row_offsets, order, root, n);
    for (int32_t end = n - 1; end > 0; end--) {
        const int32_t t = order[0]; /* the row that comes last among order[0 .. end] */
        order[0] = order[end];
        order[end] = t;
        sift_down(row_offsets, order, 0, end);
    }
}
