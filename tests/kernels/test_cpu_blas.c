/* test_cpu_blas.c: the CPU's BLAS product (kernels/linear_blas.h).
 *  - Batch invariance: over the model's shapes (the shipped model's and the
 *    test model's, column slices of wider matrices among them), row r has
 *    the same bits at every row count from 1 to 64, then every 13th, as in a
 *    call of 300 rows, with bias and without, accumulating and not (the
 *    largest shapes: both or neither), at 1 and 2 BLAS threads.
 *  - The model's shapes give the same bits at 1 and 2 threads (not every
 *    shape does: OpenBLAS's threaded split of 7 outputs sums otherwise).
 *  - Against the oracle nmt_cpu_linear on the first rows: within fp32's
 *    rounding of a k-term sum.
 * Exits 77 when the library was built without a BLAS. */
#include "linear.h"
#include "linear_blas.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ROWS = 300, ORACLE_ROWS = 24 };

typedef struct shape {
    int32_t n, k, ldw; /* ldw > k: a column slice */
    int odd;           /* not a model's shape: threads may change its bits */
} shape;

static const shape shapes[] = {
    /* the shipped model (E 256, H 512, V 4778) */
    {1024, 256, 256, 0}, {1024, 512, 512, 0}, {2048, 256, 768, 0}, {2048, 512, 768, 0},
    {2048, 512, 512, 0}, {512, 512, 1024, 0}, {4778, 512, 512, 0}, {512, 512, 512, 0},
    /* the test model (E 16, H 32, V 32) */
    {64, 16, 16, 0},     {64, 32, 32, 0},     {128, 16, 48, 0},    {128, 32, 48, 0},
    {32, 32, 64, 0},     {32, 32, 32, 0},     {7, 333, 333, 1},    {1, 5, 5, 1},
};

static int next_rows(int m)
{
    return m < 64 ? m + 1 : (m + 13 < MAX_ROWS ? m + 13 : (m < MAX_ROWS ? MAX_ROWS : m + 1));
}

/* y = x w^T (+ bias) (+ y) for m rows into y (rows n apart), y preset
 * from init when accumulating, else poisoned. */
static void run(int m, const shape *s, const float *x, const float *w, const float *bias,
                int accumulate, const float *init, float *y, float *scratch)
{
    if (accumulate)
        memcpy(y, init, sizeof(float) * (size_t)m * s->n);
    else
        test_poison_f32(y, (size_t)m * s->n);
    nmt_cpu_linear_blas(m, s->n, s->k, x, s->k, w, s->ldw, bias, accumulate, y, s->n, scratch);
}

int main(void)
{
    if (!nmt_cpu_blas_available()) {
        printf("skipped: built without a BLAS\n");
        return NMT_TEST_SKIP;
    }
    test_seed();
    printf("BLAS: %s\n", nmt_cpu_blas_name());
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const shape *s = &shapes[si];
        const size_t nx = (size_t)MAX_ROWS * s->k, ny = (size_t)MAX_ROWS * s->n;
        float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * s->n * s->ldw);
        float *bias = malloc(sizeof(float) * s->n), *init = malloc(sizeof(float) * ny);
        float *ref = malloc(sizeof(float) * ny), *got = malloc(sizeof(float) * ny);
        float *one = malloc(sizeof(float) * ny), *oracle = malloc(sizeof(float) * ny);
        float *scratch = malloc(sizeof(float) * nmt_cpu_linear_blas_scratch(s->n, s->k));
        if (!x || !w || !bias || !init || !ref || !got || !one || !oracle || !scratch) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        test_fill_uniform(x, nx, -1.0f, 1.0f);
        test_fill_uniform(w, (size_t)s->n * s->ldw, -0.5f, 0.5f);
        test_fill_uniform(bias, s->n, -1.0f, 1.0f);
        test_fill_uniform(init, ny, -1.0f, 1.0f);
        const int big = (int64_t)s->n * s->k > (1 << 20);
        for (int variant = 0; variant < 4; variant += big ? 3 : 1) {
            const int accumulate = variant & 1;
            const float *b = variant & 2 ? bias : NULL;
            int invariant_at_one = 0;
            for (int threads = 1; threads <= 2; threads++) {
                nmt_cpu_blas_set_threads(threads);
                /* The probe's promise is what is checked: where it finds the
                 * BLAS's rows moving with m, the engine does not use it under
                 * batch invariance (engine/cpu_backend.c). */
                const int invariant = nmt_cpu_blas_row_invariant();
                if (!invariant)
                    printf("n %d k %d variant %d threads %d: the probe finds this BLAS not row "
                           "invariant; its row checks are skipped\n", s->n, s->k, variant,
                           threads);
                run(MAX_ROWS, s, x, w, b, accumulate, init, ref, scratch);
                if (threads == 1)
                    memcpy(one, ref, sizeof(float) * ny), invariant_at_one = invariant;
                else if (!s->odd && invariant && invariant_at_one)
                    CHECK(!memcmp(one, ref, sizeof(float) * ny),
                          "n %d k %d ldw %d variant %d: 2 threads differ from 1", s->n, s->k,
                          s->ldw, variant);
                int bad_rows = 0, first_bad = 0;
                for (int m = 1; m <= MAX_ROWS; m = next_rows(m)) {
                    run(m, s, x, w, b, accumulate, init, got, scratch);
                    if (memcmp(got, ref, sizeof(float) * (size_t)m * s->n)) {
                        if (!bad_rows++)
                            first_bad = m;
                    }
                }
                CHECK(bad_rows == 0 || !invariant,
                      "n %d k %d ldw %d variant %d threads %d: %d row counts give other bits "
                      "than %d rows (the first: %d)", s->n, s->k, s->ldw, variant, threads,
                      bad_rows, MAX_ROWS, first_bad);
            }
            /* The oracle: |error| <= k ulps of the sum of |terms|, loosely. */
            const size_t n_oracle = (size_t)ORACLE_ROWS * s->n;
            memcpy(oracle, init, sizeof(float) * n_oracle);
            nmt_cpu_linear(ORACLE_ROWS, s->n, s->k, x, s->k, w, s->ldw, b, accumulate, oracle,
                           s->n);
            char what[96];
            snprintf(what, sizeof what, "oracle n %d k %d variant %d", s->n, s->k, variant);
            CHECK(test_close_f32(what, one, oracle, n_oracle, 2e-6 * s->k, 1e-5), "%s", what);
        }
        nmt_cpu_blas_set_threads(1);
        free(x), free(w), free(bias), free(init), free(ref), free(got), free(one), free(oracle),
            free(scratch);
    }
    return test_finish("test_cpu_blas");
}
