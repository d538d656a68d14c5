/* test_cpu_linear_int8.c: the CPU's int8 product (kernels/linear_int8.h):
 *  - the arithmetic is the documented one: every output of the first rows
 *    equals, bit for bit, a scalar model (the int32 sum of the int8 forms,
 *    then (float)(sum - colsum) * t_i * s_j, + bias, + y);
 *  - batch invariance: row r has the same bits at every row count from 1
 *    to 64, then every 13th, as in a call of 300 rows, on 1 and 3 threads;
 *  - the int8 forms: every weight within half a step of its value, the
 *    padding zero (weights) and 128 (rows);
 *  - against the fp32 oracle: the error's RMS within 1% of the outputs'.
 * On each tile this CPU runs (--cpu-isa avx512: VNNI, avx2), and the tiles
 * give each other's bits. Exits 77 on a CPU with neither. */
#include "linear.h"
#include "linear_int8.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ROWS = 300, MODEL_ROWS = 9 };

typedef struct shape {
    int32_t n, k, ldw;
} shape;

static const shape shapes[] = {{2048, 256, 768}, {2048, 512, 512}, {4778, 512, 512},
                               {512, 512, 1024}, {64, 16, 16},     {7, 333, 333},
                               {1, 5, 5},        {9, 64, 70}};

static int next_rows(int m)
{
    return m < 64 ? m + 1 : (m + 13 < MAX_ROWS ? m + 13 : (m < MAX_ROWS ? MAX_ROWS : m + 1));
}

/* The first tile's outputs of every variant, against which the others are held. */
static float *first_tile[4];

static void check_shape(const shape *s, nmt_cpu_isa isa, nmt_thread_pool *pool)
{
    const int32_t ldq = (s->k + NMT_INT8_K_ALIGN - 1) / NMT_INT8_K_ALIGN * NMT_INT8_K_ALIGN;
    float *x = malloc(sizeof(float) * MAX_ROWS * s->k), *w = malloc(sizeof(float) * s->n * s->ldw);
    float *bias = malloc(sizeof(float) * s->n), *init = malloc(sizeof(float) * MAX_ROWS * s->n);
    const size_t ny = (size_t)MAX_ROWS * s->n;
    float *ref = malloc(sizeof(float) * ny), *got = malloc(sizeof(float) * ny);
    float *oracle = malloc(sizeof(float) * ny), *x_scale = malloc(sizeof(float) * MAX_ROWS);
    uint8_t *xq = malloc((size_t)MAX_ROWS * ldq);
    if (!x || !w || !bias || !init || !ref || !got || !oracle || !x_scale || !xq) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    test_fill_uniform(x, (size_t)MAX_ROWS * s->k, -1.0f, 1.0f);
    test_fill_uniform(w, (size_t)s->n * s->ldw, -0.5f, 0.5f);
    test_fill_uniform(bias, s->n, -1.0f, 1.0f);
    test_fill_uniform(init, (size_t)MAX_ROWS * s->n, -1.0f, 1.0f);
    nmt_int8_matrix w8;
    nmt_error err = {0};
    CHECK(nmt_int8_matrix_make(w, s->n, s->k, s->ldw, &w8, &err) == NMT_STATUS_OK, "make: %s",
          err.message);
    int bad_form = 0;
    for (int32_t j = 0; j < s->n; j++)
        for (int32_t p = 0; p < w8.ld; p++) {
            const float v = p < s->k ? w[(size_t)j * s->ldw + p] : 0.0f;
            bad_form += fabsf(nmt_int8_weight(&w8, j, p) * w8.scale[j] - v) >
                        0.5001f * w8.scale[j] + 1e-7f;
        }
    nmt_cpu_quantize_rows(MAX_ROWS, s->k, x, s->k, xq, ldq, x_scale);
    for (int i = 0; i < MAX_ROWS; i++)
        for (int32_t p = s->k; p < ldq; p++)
            bad_form += xq[(size_t)i * ldq + p] != 128;
    CHECK(bad_form == 0, "n %d k %d: %d entries of the int8 forms off", s->n, s->k, bad_form);
    for (int variant = 0; variant < 4; variant++) {
        const int accumulate = variant & 1;
        const float *b = variant & 2 ? bias : NULL;
        const nmt_cpu_gemm one = {.isa = isa}, threads = {.isa = isa, .pool = pool};
        memcpy(ref, init, sizeof(float) * MAX_ROWS * s->n);
        nmt_cpu_linear_int8(&one, MAX_ROWS, xq, ldq, x_scale, &w8, b, accumulate, ref, s->n);
        int bad = 0;
        for (int i = 0; i < MODEL_ROWS; i++)
            for (int32_t j = 0; j < s->n; j++) {
                int32_t sum = 0;
                for (int32_t p = 0; p < w8.ld; p++)
                    sum += xq[(size_t)i * ldq + p] * nmt_int8_weight(&w8, j, p);
                float v = (float)(sum - w8.colsum[j]);
                v = v * x_scale[i];
                v = v * w8.scale[j];
                if (b)
                    v = v + b[j];
                if (accumulate)
                    v = v + init[(size_t)i * s->n + j];
                bad += memcmp(&v, &ref[(size_t)i * s->n + j], sizeof v) != 0;
            }
        CHECK(bad == 0, "%s: n %d k %d variant %d: %d outputs differ from the model",
              nmt_cpu_isa_name(isa), s->n, s->k, variant, bad);
        if (!first_tile[variant]) {
            first_tile[variant] = malloc(sizeof(float) * ny);
            if (first_tile[variant])
                memcpy(first_tile[variant], ref, sizeof(float) * ny);
        } else {
            CHECK(memcmp(first_tile[variant], ref, sizeof(float) * ny) == 0,
                  "%s: n %d k %d variant %d: other bits than the first tile's",
                  nmt_cpu_isa_name(isa), s->n, s->k, variant);
        }
        for (int t = 0; t < 2; t++) {
            int bad_rows = 0;
            for (int m = 1; m <= MAX_ROWS; m = t == 0 ? next_rows(m) : m * 5) {
                memcpy(got, init, sizeof(float) * (size_t)m * s->n);
                nmt_cpu_linear_int8(t ? &threads : &one, m, xq, ldq, x_scale, &w8, b, accumulate,
                                    got, s->n);
                bad_rows += memcmp(got, ref, sizeof(float) * (size_t)m * s->n) != 0;
            }
            CHECK(bad_rows == 0, "%s: n %d k %d variant %d threads %d: %d row counts give other bits",
                  nmt_cpu_isa_name(isa), s->n, s->k, variant, t ? 3 : 1, bad_rows);
        }
        memcpy(oracle, init, sizeof(float) * MAX_ROWS * s->n);
        nmt_cpu_linear(MAX_ROWS, s->n, s->k, x, s->k, w, s->ldw, b, accumulate, oracle, s->n);
        double err2 = 0.0, ref2 = 0.0;
        for (size_t i = 0; i < (size_t)MAX_ROWS * s->n; i++) {
            const double d = (double)ref[i] - oracle[i];
            err2 += d * d, ref2 += (double)oracle[i] * oracle[i];
        }
        CHECK(err2 <= 1e-4 * ref2, "n %d k %d variant %d: error RMS %.3g of the outputs' %.3g",
              s->n, s->k, variant, sqrt(err2), sqrt(ref2));
    }
    nmt_int8_matrix_free(&w8);
    for (int v = 0; v < 4; v++)
        free(first_tile[v]), first_tile[v] = NULL;
    free(x), free(w), free(bias), free(init), free(ref), free(got), free(oracle), free(x_scale);
    free(xq);
}

int main(void)
{
    if (!nmt_cpu_int8_supported(NMT_CPU_ISA_AUTO)) {
        printf("skipped: this CPU lacks AVX-512 VNNI and AVX2\n");
        return NMT_TEST_SKIP;
    }
    test_seed();
    nmt_thread_pool *pool = NULL;
    if (nmt_thread_pool_create(3, &pool, NULL) != NMT_STATUS_OK)
        return 1;
    const nmt_cpu_isa isas[] = {NMT_CPU_ISA_AVX512, NMT_CPU_ISA_AVX2};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int i = 0; i < 2; i++)
            if (nmt_cpu_int8_supported(isas[i]))
                check_shape(&shapes[si], isas[i], pool);
            else if (si == 0)
                printf("%s: skipped (this CPU lacks its int8 instructions)\n",
                       nmt_cpu_isa_name(isas[i]));
    nmt_thread_pool_free(pool);
    return test_finish("test_cpu_linear_int8");
}
