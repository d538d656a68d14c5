/* linear.c: CPU y = x . w^T (+ bias) (+ y) (kernels/linear.h): the plain
 * triple loop, each output one double-accumulated dot product rounded once.
 * w may be a column slice of a wider matrix (pointer to the first column,
 * ldw the full row length). */
#include "linear.h"

void nmt_cpu_linear(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                    const float *w, int32_t ldw, const float *bias, int accumulate,
                    float *y, int32_t ldy)
{
    for (int32_t i = 0; i < m; i++) {
        const float *x_row = x + (int64_t)i * ldx;
        float *y_row = y + (int64_t)i * ldy;
        for (int32_t j = 0; j < n; j++) {
            const float *w_row = w + (int64_t)j * ldw;
            double sum = accumulate ? (double)y_row[j] : 0.0;
            if (bias)
                sum += (double)bias[j];
            for (int32_t p = 0; p < k; p++)
                sum += (double)x_row[p] * (double)w_row[p];
            y_row[j] = (float)sum;
        }
    }
}
