/* gather.c: CPU row gather (kernels/gather.h). */
#include "gather.h"

#include <string.h>

void nmt_cpu_gather_rows(int32_t n_rows, int32_t dim, const float *src, const int32_t *index,
                         float *dst)
{
    for (int32_t i = 0; i < n_rows; i++)
        memcpy(dst + (int64_t)i * dim, src + (int64_t)index[i] * dim, (size_t)dim * sizeof(float));
}
