/* pointwise.c: CPU element-wise ops (kernels/pointwise.h). */
#include "pointwise.h"

#include <math.h>

void nmt_cpu_tanh_inplace(int64_t n, float *x)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)tanh((double)x[i]);
}
