/* pointwise.c: CPU element-wise ops (kernels/pointwise.h). */
#include "pointwise.h"

#include <math.h>

void nmt_cpu_tanh_inplace(int64_t n, float *x)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)tanh((double)x[i]);
}

void nmt_cpu_tanh_rows(int32_t n_rows, int32_t width, float *x, int32_t ld,
                       const nmt_half_out *x16)
{
    for (int32_t r = 0; r < n_rows; r++) {
        float *row = x + (int64_t)r * ld;
        nmt_cpu_tanh_inplace(width, row);
        for (int32_t j = 0; x16 && j < width; j++)
            nmt_half_out_put(x16, r, j, row[j]);
    }
}
