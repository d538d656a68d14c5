/* pointwise.c: CPU element-wise ops (kernels/pointwise.h). */
#include "pointwise.h"

#include <math.h>

void nmt_cpu_tanh_inplace(int64_t n, float *x)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)tanh((double)x[i]);
}

void nmt_cpu_tanh_rows(int32_t n_rows, int32_t width, float *x, int32_t ld)
{
    for (int32_t r = 0; r < n_rows; r++)
        nmt_cpu_tanh_inplace(width, x + (int64_t)r * ld);
}
