/* linear_fixed_generic.c: nmt_cpu_linear_fixed's portable path: 8 lanes
 * a sum, each term x_p * w_p rounded and then added (the file is built
 * with -ffp-contract=off, so no compiler fuses them), the tree of
 * kernels/linear_fixed.h. For CPUs without AVX2 and FMA. */
#include "linear_fixed_impl.h"

enum { kLanes = 8 };

/* The lane sums of output (row, j), reduced: lane l + l + 4, + 2, + 1. */
static float dot(const nmt_fixed_job *job, const float *x, int32_t j)
{
    const int32_t k = job->k;
    const float *w = job->w16 ? NULL : job->w + (int64_t)j * job->ldw;
    float acc[kLanes] = {0};
    int32_t p = 0;
    if (w)
        for (; p + kLanes <= k; p += kLanes)
            for (int l = 0; l < kLanes; l++)
                acc[l] += x[p + l] * w[p + l];
    for (; p < k; p += kLanes)
        for (int l = 0; l < kLanes; l++)
            acc[l] += p + l < k ? x[p + l] * nmt_fixed_weight(job, j, p + l) : 0.0f * 0.0f;
    for (int half = kLanes / 2; half >= 1; half /= 2)
        for (int l = 0; l < half; l++)
            acc[l] += acc[l + half];
    return acc[0];
}

void nmt_fixed_tile_generic(const nmt_fixed_job *job, int32_t row, int rows, int32_t col,
                            int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const float *x = job->x + (int64_t)(row + r) * job->ldx;
            nmt_fixed_finish(job, row + r, col + c, dot(job, x, col + c));
        }
}
