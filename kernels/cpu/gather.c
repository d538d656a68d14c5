/* gather.c: CPU row gather (kernels/gather.h). */
#include "gather.h"

#include <string.h>

void nmt_cpu_gather_rows(int32_t n_rows, int32_t dim, const float *src, const int32_t *index,
                         float *dst)
{
    for (int32_t i = 0; i < n_rows; i++)
        memcpy(dst + (int64_t)i * dim, src + (int64_t)index[i] * dim, (size_t)dim * sizeof(float));
}

void nmt_cpu_gather_segments(int32_t n_rows, int32_t n_segments,
                             const nmt_gather_segment *segments)
{
    for (int32_t g = 0; g < n_segments; g++) {
        const nmt_gather_segment *s = &segments[g];
        for (int32_t i = 0; i < n_rows; i++) {
            const float *row = s->src + (int64_t)s->index[i] * s->ld_src;
            memcpy(s->dst + (int64_t)i * s->ld_dst, row, (size_t)s->width * sizeof(float));
            for (int32_t j = 0; s->dst16.dst && j < s->width; j++)
                nmt_half_out_put(&s->dst16, i, j, row[j]);
        }
    }
}
