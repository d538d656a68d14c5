/* test_cpu_linear_fixed.c: the CPU's own product (kernels/linear_fixed.h),
 * on every code path this CPU runs (generic, avx2, avx512):
 *  - The arithmetic is the documented one: every output of the first rows
 *    equals, bit for bit, a scalar model of it (L lanes, fma or not, the
 *    lane tree, then bias, then y), so no row count, position, tile tail or
 *    thread can change a bit.
 *  - Batch invariance, checked directly: row r has the same bits at every
 *    row count from 1 to 64, then every 13th, as in a call of 300 rows,
 *    with bias and without, accumulating and not, on 1 thread on the best
 *    path (the engine's); on 2 and 3 threads and the other paths, 1 to 9
 *    rows and a few more.
 *  - Against the oracle nmt_cpu_linear (double sums): within fp32's
 *    rounding of a k-term sum.
 *  - Only y's [m, n] is written (columns past n and rows past m keep their
 *    poison).
 *  - nmt_cpu_linear_fixed_half on the weights' fp16 copy gives the same
 *    bits (the weights are drawn exact in fp16). */
#include "half.h"
#include "linear.h"
#include "linear_fixed.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ROWS = 300, MODEL_ROWS = 13, ORACLE_ROWS = 24, LDY_PAD = 3 };

typedef struct shape {
    int32_t n, k, ldw; /* ldw > k: a column slice */
} shape;

static const shape shapes[] = {
    /* the shipped model (E 256, H 512, V 4778) */
    {1024, 256, 256}, {2048, 256, 768}, {2048, 512, 768}, {2048, 512, 512},
    {512, 512, 1024}, {4778, 512, 512},
    /* the test model (E 16, H 32, V 32), then odd ones: tails of every kind */
    {64, 16, 16},     {128, 16, 48},    {32, 32, 64},     {7, 333, 333},
    {1, 5, 5},        {5, 17, 20},      {6, 1, 1},        {9, 8, 9},
};

static int next_rows(int m)
{
    return m < 64 ? m + 1 : (m + 13 < MAX_ROWS ? m + 13 : (m < MAX_ROWS ? MAX_ROWS : m + 1));
}

/* One output by the arithmetic linear_fixed.h documents, in scalar C. */
static float model_output(const float *x, const float *w, int32_t k, int lanes, int fma,
                          const float *bias, const float *y_old)
{
    float acc[16] = {0};
    const int32_t padded = (k + lanes - 1) / lanes * lanes;
    for (int32_t p = 0; p < padded; p++) {
        const float xp = p < k ? x[p] : 0.0f, wp = p < k ? w[p] : 0.0f;
        if (fma) {
            acc[p % lanes] = fmaf(xp, wp, acc[p % lanes]);
        } else {
            volatile float product = xp * wp; /* rounded on its own */
            acc[p % lanes] = acc[p % lanes] + product;
        }
    }
    for (int half = lanes / 2; half >= 1; half /= 2)
        for (int l = 0; l < half; l++)
            acc[l] = acc[l] + acc[l + half];
    float s = acc[0];
    if (bias)
        s = s + *bias;
    if (y_old)
        s = s + *y_old;
    return s;
}

typedef struct buffers {
    float *x, *w, *bias, *init, *ref, *got, *oracle;
    uint16_t *w16;
} buffers;

/* y = x w^T (+ bias) (+ y) for m rows into y (rows ldy = n + LDY_PAD
 * apart), y preset from init when accumulating, else poisoned; the pad
 * poisoned either way. */
static void run(const nmt_cpu_gemm *gemm, int m, const shape *s, const buffers *b,
                const float *bias, int accumulate, float *y, int half)
{
    const int32_t ldy = s->n + LDY_PAD;
    test_poison_f32(y, (size_t)(m + 1) * ldy);
    if (accumulate)
        for (int i = 0; i < m; i++)
            memcpy(y + (size_t)i * ldy, b->init + (size_t)i * s->n, sizeof(float) * s->n);
    if (half)
        nmt_cpu_linear_fixed_half(gemm, m, s->n, s->k, b->x, s->k, b->w16, s->ldw, bias,
                                  accumulate, y, ldy);
    else
        nmt_cpu_linear_fixed(gemm, m, s->n, s->k, b->x, s->k, b->w, s->ldw, bias, accumulate, y,
                             ldy);
}

/* The pad columns and the row after m still poison. */
static void check_untouched(int m, const shape *s, const float *y, const char *what)
{
    const int32_t ldy = s->n + LDY_PAD;
    int untouched = 1;
    for (int i = 0; i <= m; i++)
        for (int32_t j = i < m ? s->n : 0; j < ldy; j++)
            untouched &= isnan(y[(size_t)i * ldy + j]);
    CHECK(untouched, "%s: %d rows: wrote outside y[m, n]", what, m);
}

/* Bits of every output of the first MODEL_ROWS rows against the model. */
static void check_model(nmt_cpu_isa isa, const shape *s, const buffers *b, const float *bias,
                        int accumulate, const float *y, const char *what)
{
    const int32_t ldy = s->n + LDY_PAD;
    int bad = 0;
    for (int i = 0; i < MODEL_ROWS; i++)
        for (int32_t j = 0; j < s->n; j++) {
            const float want = model_output(b->x + (size_t)i * s->k, b->w + (size_t)j * s->ldw,
                                            s->k, nmt_cpu_isa_lanes(isa), nmt_cpu_isa_fma(isa),
                                            bias ? &bias[j] : NULL,
                                            accumulate ? &b->init[(size_t)i * s->n + j] : NULL);
            const float got = y[(size_t)i * ldy + j];
            if (memcmp(&want, &got, sizeof want) && bad++ < 3)
                fprintf(stderr, "%s: row %d col %d: %.9g, the model %.9g\n", what, i, j, got,
                        want);
        }
    CHECK(bad == 0, "%s: %d outputs differ from the model's arithmetic", what, bad);
}

static void check_shape(nmt_cpu_isa isa, const shape *s, nmt_thread_pool *const pools[3])
{
    const size_t nx = (size_t)MAX_ROWS * s->k, ny = (size_t)(MAX_ROWS + 1) * (s->n + LDY_PAD);
    buffers b = {
        .x = malloc(sizeof(float) * nx), .w = malloc(sizeof(float) * s->n * s->ldw),
        .bias = malloc(sizeof(float) * s->n), .init = malloc(sizeof(float) * MAX_ROWS * s->n),
        .ref = malloc(sizeof(float) * ny), .got = malloc(sizeof(float) * ny),
        .oracle = malloc(sizeof(float) * ORACLE_ROWS * s->n),
        .w16 = malloc(sizeof(uint16_t) * s->n * s->ldw),
    };
    if (!b.x || !b.w || !b.bias || !b.init || !b.ref || !b.got || !b.oracle || !b.w16) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    test_fill_uniform(b.x, nx, -1.0f, 1.0f);
    test_fill_uniform(b.w, (size_t)s->n * s->ldw, -0.5f, 0.5f);
    for (size_t i = 0; i < (size_t)s->n * s->ldw; i++) /* exact in fp16 */
        b.w16[i] = nmt_f32_to_f16(b.w[i]), b.w[i] = nmt_f16_to_f32(b.w16[i]);
    test_fill_uniform(b.bias, s->n, -1.0f, 1.0f);
    test_fill_uniform(b.init, (size_t)MAX_ROWS * s->n, -1.0f, 1.0f);
    const int32_t ldy = s->n + LDY_PAD;
    const int big = (int64_t)s->n * s->k > (1 << 20);
    for (int variant = 0; variant < 4; variant += big ? 3 : 1) {
        const int accumulate = variant & 1;
        const float *bias = variant & 2 ? b.bias : NULL;
        char what[128];
        snprintf(what, sizeof what, "%s n %d k %d ldw %d variant %d", nmt_cpu_isa_name(isa),
                 s->n, s->k, s->ldw, variant);
        const nmt_cpu_gemm one = {.isa = isa, .pool = pools[0]};
        run(&one, MAX_ROWS, s, &b, bias, accumulate, b.ref, 0);
        check_model(isa, s, &b, bias, accumulate, b.ref, what);
        check_untouched(MAX_ROWS, s, b.ref, what);
        for (int m = 1; m <= MAX_ROWS;
             m = m < 7 ? m + 1 : m * 7 < MAX_ROWS ? m * 7 : MAX_ROWS + m) {
            const int at = m < MAX_ROWS ? m : MAX_ROWS;
            run(&one, at, s, &b, bias, accumulate, b.got, 1);
            CHECK(!memcmp(b.got, b.ref, sizeof(float) * ((size_t)(at - 1) * ldy + s->n)),
                  "%s: %d rows: fp16 weights give other bits than their fp32 values", what, at);
            check_untouched(at, s, b.got, what);
        }
        for (int t = 0; t < 3; t++) {
            const nmt_cpu_gemm gemm = {.isa = isa, .pool = pools[t]};
            int bad_rows = 0, first_bad = 0;
            /* Every row count on one thread on the path the engine takes; on
             * more threads or another path, 1 to 9 and a few more. */
            const int every = t == 0 && isa == nmt_cpu_isa_best();
            for (int m = 1; m <= MAX_ROWS;
                 m = every || m < 9       ? next_rows(m)
                     : m * 3 < MAX_ROWS   ? m * 3
                     : m < MAX_ROWS       ? MAX_ROWS
                                          : m + 1) {
                run(&gemm, m, s, &b, bias, accumulate, b.got, 0);
                if (memcmp(b.got, b.ref, sizeof(float) * ((size_t)(m - 1) * ldy + s->n)) &&
                    !bad_rows++)
                    first_bad = m;
                check_untouched(m, s, b.got, what);
            }
            CHECK(bad_rows == 0, "%s threads %d: %d row counts give other bits than %d rows "
                  "(the first: %d)", what, t + 1, bad_rows, MAX_ROWS, first_bad);
        }
        /* The oracle: |error| <= k ulps of the sum of |terms|, loosely. */
        memcpy(b.oracle, b.init, sizeof(float) * ORACLE_ROWS * s->n);
        nmt_cpu_linear(ORACLE_ROWS, s->n, s->k, b.x, s->k, b.w, s->ldw, bias, accumulate,
                       b.oracle, s->n);
        for (int i = 0; i < ORACLE_ROWS; i++)
            memcpy(b.got + (size_t)i * s->n, b.ref + (size_t)i * ldy, sizeof(float) * s->n);
        CHECK(test_close_f32(what, b.got, b.oracle, (size_t)ORACLE_ROWS * s->n, 2e-6 * s->k,
                             1e-5), "%s: the oracle", what);
    }
    free(b.x), free(b.w), free(b.bias), free(b.init), free(b.ref), free(b.got), free(b.oracle);
    free(b.w16);
}

int main(void)
{
    test_seed();
    nmt_thread_pool *pools[3] = {NULL, NULL, NULL};
    for (int t = 1; t < 3; t++)
        if (nmt_thread_pool_create(t + 1, &pools[t], NULL) != NMT_STATUS_OK) {
            fprintf(stderr, "could not start %d threads\n", t + 1);
            return 1;
        }
    CHECK(nmt_cpu_isa_supported(NMT_CPU_ISA_GENERIC), "the generic path is always there");
    CHECK(nmt_cpu_isa_supported(nmt_cpu_isa_best()), "the best path is supported");
    CHECK(nmt_cpu_isa_best() != NMT_CPU_ISA_AUTO, "the best path is a path");
    CHECK(nmt_cpu_isa_check(NMT_CPU_ISA_AUTO, NULL) == NMT_STATUS_OK, "auto is supported");
    nmt_error err = {0};
    CHECK(nmt_cpu_isa_check((nmt_cpu_isa)9, &err) == NMT_STATUS_ERROR_ARGUMENT &&
          strstr(err.message, "9") && strstr(err.message, "generic"),
          "an unknown path is refused, naming the ones there are: %s", err.message);
    for (int isa = NMT_CPU_ISA_GENERIC; isa < NMT_CPU_ISA_COUNT; isa++) {
        if (!nmt_cpu_isa_supported((nmt_cpu_isa)isa)) {
            printf("%s: not run by this CPU, skipped\n", nmt_cpu_isa_name((nmt_cpu_isa)isa));
            CHECK(nmt_cpu_isa_check((nmt_cpu_isa)isa, &err) == NMT_STATUS_ERROR_UNSUPPORTED &&
                  strstr(err.message, "lacks"), "a path the CPU lacks is refused: %s",
                  err.message);
            continue;
        }
        printf("%s: %d lanes, %s\n", nmt_cpu_isa_name((nmt_cpu_isa)isa),
               nmt_cpu_isa_lanes((nmt_cpu_isa)isa),
               nmt_cpu_isa_fma((nmt_cpu_isa)isa) ? "fma" : "no fma");
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            check_shape((nmt_cpu_isa)isa, &shapes[si], pools);
    }
    for (int t = 0; t < 3; t++)
        nmt_thread_pool_free(pools[t]);
    return test_finish("test_cpu_linear_fixed");
}
