/* test_cpu_reduce.c: the lab's CPU reduce_sum and broadcast_add (reduce.h, the
 * oracle of reduce.cu) against explicit loops over the axes of a 2 x 3 x 5
 * tensor, every mask; out aliasing x; bad shapes and masks refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"
#include "test_util.h"

static void test_reduce_broadcast(void)
{
    const int64_t dims[3] = {2, 3, 5};
    float x[30];
    test_fill_uniform(x, 30, -1, 1);
    nmt_error err;
    for (uint32_t mask = 0; mask < 8; mask++) {
        float out[30], want[30] = {0};
        double acc[30] = {0};
        test_poison_f32(out, 30);
        CHECK(nmt_cpu_reduce_sum(3, dims, mask, x, out, &err) == 0, "reduce mask %u", mask);
        /* Explicit loops: a kept axis contributes its coordinate to the output index. */
        int64_t n_out = 1;
        for (int a = 0; a < 3; a++)
            if (!(mask >> a & 1))
                n_out *= dims[a];
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 5; k++) {
                    int64_t o = 0;
                    if (!(mask & 1)) o = o * 2 + i;
                    if (!(mask & 2)) o = o * 3 + j;
                    if (!(mask & 4)) o = o * 5 + k;
                    acc[o] += x[(i * 3 + j) * 5 + k];
                }
        for (int64_t o = 0; o < n_out; o++)
            want[o] = (float)acc[o];
        char what[32];
        snprintf(what, sizeof what, "reduce mask %u", mask);
        CHECK(test_close_f32(what, out, want, (size_t)n_out, 1e-6, 1e-6), "%s", what);

        /* Broadcast: y holds the masked axes; out may alias x. */
        float y[30], bout[30], bwant[30], xcopy[30];
        test_fill_uniform(y, 30, -1, 1);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 5; k++) {
                    int64_t yi = 0;
                    if (mask & 1) yi = yi * 2 + i;
                    if (mask & 2) yi = yi * 3 + j;
                    if (mask & 4) yi = yi * 5 + k;
                    bwant[(i * 3 + j) * 5 + k] = x[(i * 3 + j) * 5 + k] + y[yi];
                }
        CHECK(nmt_cpu_broadcast_add(3, dims, x, mask, y, bout, &err) == 0, "broadcast");
        snprintf(what, sizeof what, "broadcast mask %u", mask);
        CHECK(test_close_f32(what, bout, bwant, 30, 0, 0), "%s", what);
        memcpy(xcopy, x, sizeof x);
        CHECK(nmt_cpu_broadcast_add(3, dims, xcopy, mask, y, xcopy, &err) == 0, "aliased");
        CHECK(test_close_f32(what, xcopy, bwant, 30, 0, 0), "%s aliased", what);
    }
    float out[30];
    const int64_t bad_dims[3] = {2, 0, 5};
    CHECK(nmt_cpu_reduce_sum(0, dims, 0, x, out, &err) == NMT_STATUS_ERROR_ARGUMENT, "ndim 0");
    CHECK(nmt_cpu_reduce_sum(7, dims, 0, x, out, &err) == NMT_STATUS_ERROR_ARGUMENT, "ndim 7");
    CHECK(nmt_cpu_reduce_sum(3, bad_dims, 1, x, out, &err) == NMT_STATUS_ERROR_ARGUMENT, "dim 0");
    CHECK(nmt_cpu_reduce_sum(3, dims, 8, x, out, &err) == NMT_STATUS_ERROR_ARGUMENT, "mask axis 3");
    CHECK(nmt_cpu_broadcast_add(3, dims, x, 9, x, out, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "broadcast mask axis 3");
    CHECK(nmt_cpu_broadcast_add(3, bad_dims, x, 1, x, out, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "broadcast dim 0");
}

int main(void)
{
    test_seed();
    test_reduce_broadcast();
    return test_finish("test_cpu_reduce");
}
