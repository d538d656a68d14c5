/* test_spmm_cpu.c: the CPU SpMM (kernels/spmm.h) on random sparse matrices
 * over a shape table with the edges: empty rows, a single nonzero in the
 * whole matrix, every row full, no nonzero at all, odd sizes, 1 to 300 rows
 * of x, leading dimensions wider than the data (the gaps poisoned and
 * checked untouched), with and without bias and accumulation.
 * Each output is compared
 * - bit for bit with nmt_cpu_linear on the dense matrix (the CPU engine's
 *   sparse and dense paths must agree exactly: same order, double sums);
 * - with a double-precision reference within a bound that any fp32 summation
 *   order meets: (k + 2) * 2^-23 * the sum of the terms' magnitudes, the
 *   tolerance the GPU SpMM is held to against this oracle
 *   (tests/kernels/test_gpu_spmm.cu, with the row's nonzeros in place of k).
 * Also the row order the GPU SpMM's preparation uploads (nmt_spmm_row_order). */
#include "linear.h"
#include "spmm.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum pattern { RANDOM, EMPTY_ROWS, ONE_NONZERO, FULL, NO_NONZERO } pattern;
static const char *const pattern_names[] = {"random 20%", "empty rows", "one nonzero", "full",
                                            "no nonzero"};

/* Dense [n, k] with the pattern's zeros, and its CSR. */
static int32_t make_matrix(pattern p, int32_t n, int32_t k, float *dense, int32_t *offsets,
                           int32_t *cols, float *values)
{
    int32_t one_r = test_rand_int(0, n), one_c = test_rand_int(0, k);
    for (int32_t r = 0; r < n; r++)
        for (int32_t c = 0; c < k; c++) {
            int keep = 0;
            switch (p) {
            case RANDOM: keep = test_rand_int(0, 5) == 0; break;
            case EMPTY_ROWS: keep = r % 3 != 1 && test_rand_int(0, 2) == 0; break;
            case ONE_NONZERO: keep = r == one_r && c == one_c; break;
            case FULL: keep = 1; break;
            case NO_NONZERO: keep = 0; break;
            }
            float v = test_rand_uniform(-1.0f, 1.0f);
            dense[(size_t)r * k + c] = keep && v != 0.0f ? v : 0.0f;
        }
    int32_t nnz = 0;
    for (int32_t r = 0; r < n; r++) {
        offsets[r] = nnz;
        for (int32_t c = 0; c < k; c++)
            if (dense[(size_t)r * k + c] != 0.0f) {
                cols[nnz] = c;
                values[nnz++] = dense[(size_t)r * k + c];
            }
    }
    offsets[n] = nnz;
    return nnz;
}

static void run_case(int32_t m, int32_t n, int32_t k, pattern p, int use_bias, int accumulate)
{
    const int32_t ldx = k + 3, ldy = n + 2;
    float *dense = malloc(sizeof(float) * (size_t)n * k);
    int32_t *offsets = malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *cols = malloc(sizeof(int32_t) * (size_t)n * k + 4);
    float *values = malloc(sizeof(float) * (size_t)n * k + 4);
    float *x = malloc(sizeof(float) * (size_t)m * ldx);
    float *bias = malloc(sizeof(float) * (size_t)n);
    float *y0 = malloc(sizeof(float) * (size_t)m * ldy);
    float *y_sparse = malloc(sizeof(float) * (size_t)m * ldy);
    float *y_dense = malloc(sizeof(float) * (size_t)m * ldy);
    if (!dense || !offsets || !cols || !values || !x || !bias || !y0 || !y_sparse || !y_dense) {
        CHECK(0, "out of memory");
        goto done;
    }
    int32_t nnz = make_matrix(p, n, k, dense, offsets, cols, values);
    test_fill_uniform(x, (size_t)m * ldx, -1.0f, 1.0f);
    test_fill_uniform(bias, (size_t)n, -0.5f, 0.5f);
    test_poison_f32(y0, (size_t)m * ldy);
    for (int32_t i = 0; i < m && accumulate; i++)
        test_fill_uniform(y0 + (size_t)i * ldy, (size_t)n, -1.0f, 1.0f);
    memcpy(y_sparse, y0, sizeof(float) * (size_t)m * ldy);
    memcpy(y_dense, y0, sizeof(float) * (size_t)m * ldy);
    const float *b = use_bias ? bias : NULL;
    nmt_cpu_spmm(m, n, k, x, ldx, offsets, cols, values, b, accumulate, y_sparse, ldy);
    nmt_cpu_linear(m, n, k, x, ldx, dense, k, b, accumulate, y_dense, ldy);

    int64_t not_equal = 0, not_close = 0, guard = 0;
    double max_err = 0.0;
    for (int32_t i = 0; i < m; i++) {
        for (int32_t j = 0; j < n; j++) {
            size_t at = (size_t)i * ldy + j;
            double ref = accumulate ? (double)y0[at] : 0.0, mag = fabs(ref);
            if (b) {
                ref += b[j];
                mag += fabs(b[j]);
            }
            for (int32_t c = 0; c < k; c++) {
                double t = (double)x[(size_t)i * ldx + c] * dense[(size_t)j * k + c];
                ref += t;
                mag += fabs(t);
            }
            double e = fabs((double)y_sparse[at] - ref), tol = (k + 2) * ldexp(mag, -23) + 1e-30;
            max_err = e > max_err ? e : max_err;
            if (!(e <= tol) && not_close++ < 3)
                fprintf(stderr, "  [%d, %d]: %.9g, reference %.9g (tolerance %.3g)\n", i, j,
                        y_sparse[at], ref, tol);
            not_equal += !(y_sparse[at] == y_dense[at]);
        }
        for (int32_t j = n; j < ldy; j++) {
            uint32_t got, want;
            memcpy(&got, &y_sparse[(size_t)i * ldy + j], 4);
            memcpy(&want, &y0[(size_t)i * ldy + j], 4);
            guard += got != want;
        }
    }
    CHECK(not_close == 0 && not_equal == 0 && guard == 0,
          "spmm m %d n %d k %d %s (nnz %d) bias %d acc %d: %lld outside the tolerance (max error "
          "%.3g), %lld differ from the dense product, %lld guard values written",
          m, n, k, pattern_names[p], nnz, use_bias, accumulate, (long long)not_close, max_err,
          (long long)not_equal, (long long)guard);
done:
    free(dense);
    free(offsets);
    free(cols);
    free(values);
    free(x);
    free(bias);
    free(y0);
    free(y_sparse);
    free(y_dense);
}

/* A hand-checked case: W = [[0, 2, 0], [0, 0, 0], [1, 0, -1]]. */
static void test_known(void)
{
    const int32_t offsets[] = {0, 1, 1, 3}, cols[] = {1, 0, 2};
    const float values[] = {2.0f, 1.0f, -1.0f}, x[] = {1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 4.0f};
    const float bias[] = {0.5f, -1.0f, 0.0f};
    float y[6];
    nmt_cpu_spmm(2, 3, 3, x, 3, offsets, cols, values, bias, 0, y, 3);
    const float want[] = {4.5f, -1.0f, -2.0f, 1.5f, -1.0f, -5.0f};
    CHECK(test_close_f32("spmm known", y, want, 6, 0.0, 0.0), "hand-checked values");
}

/* nmt_spmm_row_order (the GPU SpMM's row swizzle): a permutation, by
 * decreasing length, equal lengths by increasing row; row counts 1..1000,
 * lengths from a few values (many ties) or all equal (the identity). */
static void test_row_order(int32_t n, int32_t max_len)
{
    int32_t *offsets = malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *order = malloc(sizeof(int32_t) * (size_t)n);
    char *seen = calloc((size_t)n, 1);
    if (!offsets || !order || !seen) {
        CHECK(0, "out of memory");
        goto done;
    }
    offsets[0] = 0;
    for (int32_t j = 0; j < n; j++)
        offsets[j + 1] = offsets[j] + test_rand_int(0, max_len + 1);
    nmt_spmm_row_order(n, offsets, order);
    int bad = 0;
    for (int32_t s = 0; s < n; s++) {
        const int32_t j = order[s];
        if (j < 0 || j >= n || seen[j]) {
            bad++;
            continue;
        }
        seen[j] = 1;
        if (s > 0) {
            const int32_t i = order[s - 1];
            const int32_t len_i = offsets[i + 1] - offsets[i], len_j = offsets[j + 1] - offsets[j];
            bad += len_i < len_j || (len_i == len_j && i > j);
        }
    }
    CHECK(bad == 0, "row order n %d lengths 0..%d: %d rows out of place or repeated", n, max_len,
          bad);
done:
    free(offsets);
    free(order);
    free(seen);
}

int main(void)
{
    test_seed();
    test_known();
    static const int32_t order_ns[] = {1, 2, 7, 333, 1000};
    for (size_t a = 0; a < sizeof order_ns / sizeof order_ns[0]; a++) {
        test_row_order(order_ns[a], 0);
        test_row_order(order_ns[a], 3);
        test_row_order(order_ns[a], 500);
    }
    static const int32_t ms[] = {1, 2, 7, 33, 300}, ns[] = {1, 5, 64, 333}, ks[] = {1, 3, 17, 130};
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
            for (size_t c = 0; c < sizeof ks / sizeof ks[0]; c++)
                for (int p = RANDOM; p <= NO_NONZERO; p++)
                    run_case(ms[a], ns[b], ks[c], (pattern)p, (int)(a + b + c + p) % 2,
                             (int)(a + c + p) % 3 == 0);
    return test_finish("test_spmm_cpu");
}
