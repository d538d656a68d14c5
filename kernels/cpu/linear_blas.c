/* linear_blas.c: y = x . w^T (+ bias) (+ y) on the BLAS's SGEMM
 * (kernels/linear_blas.h): row-major x [m, k] times w [n, k] transposed.
 * The bias is written first and SGEMM adds the product (beta 1), so with
 * or without accumulate each output is one float chain the BLAS owns.
 * Without a BLAS (NMT_WITH_BLAS unset) the reference runs instead. */
#include "linear_blas.h"

#include "linear.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NMT_WITH_BLAS
#include <cblas.h>
/* OpenBLAS's own extensions (cblas.h declares them in its Debian builds,
 * not in every BLAS's). */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char *openblas_get_config(void);
char *openblas_get_corename(void);
#endif

/* Outputs a call computes at least, and rows at least: over OpenBLAS 0.3.21's
 * small-matrix limit (m * n <= 1200 on x86-64) with room to spare, and
 * above GEMV's one row. */
enum { kMinOutputs = 8192, kMinRows = 4 };

int32_t nmt_cpu_blas_min_rows(int32_t n)
{
    const int32_t rows = n > 0 ? (kMinOutputs + n - 1) / n : kMinOutputs;
    return rows > kMinRows ? rows : kMinRows;
}

size_t nmt_cpu_linear_blas_scratch(int32_t n, int32_t k)
{
    return (size_t)nmt_cpu_blas_min_rows(n) * ((size_t)k + (size_t)n);
}

#ifdef NMT_WITH_BLAS

int nmt_cpu_blas_available(void)
{
    return 1;
}

const char *nmt_cpu_blas_name(void)
{
    static char name[256];
    if (!name[0]) {
        const char *config = openblas_get_config(), *core = openblas_get_corename();
        snprintf(name, sizeof name, "%s, %s", config ? config : "OpenBLAS", core ? core : "?");
    }
    return name;
}

void nmt_cpu_blas_set_threads(int threads)
{
    openblas_set_num_threads(threads > 0 ? threads : 1);
}

int nmt_cpu_blas_threads(void)
{
    return openblas_get_num_threads();
}

/* y rows = bias (or kept with accumulate, bias added), then y += x . w^T. */
static void sgemm_rows(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                       const float *w, int32_t ldw, const float *bias, int accumulate, float *y,
                       int32_t ldy)
{
    for (int32_t i = 0; i < m; i++) {
        float *row = y + (int64_t)i * ldy;
        if (!accumulate && bias)
            memcpy(row, bias, sizeof(float) * (size_t)n);
        else if (!accumulate)
            memset(row, 0, sizeof(float) * (size_t)n);
        else if (bias)
            for (int32_t j = 0; j < n; j++)
                row[j] += bias[j];
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, ldx, w, ldw, 1.0f, y,
                ldy);
}

void nmt_cpu_linear_blas(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                         const float *w, int32_t ldw, const float *bias, int accumulate,
                         float *y, int32_t ldy, float *scratch)
{
    if (m <= 0 || n <= 0)
        return;
    const int32_t min_rows = nmt_cpu_blas_min_rows(n);
    if (m >= min_rows) {
        sgemm_rows(m, n, k, x, ldx, w, ldw, bias, accumulate, y, ldy);
        return;
    }
    /* Few rows: min_rows of them, x's below zeros, the results copied back. */
    float *x_pad = scratch, *y_pad = scratch + (size_t)min_rows * k;
    for (int32_t i = 0; i < m; i++) {
        memcpy(x_pad + (size_t)i * k, x + (int64_t)i * ldx, sizeof(float) * (size_t)k);
        memcpy(y_pad + (size_t)i * n, y + (int64_t)i * ldy, sizeof(float) * (size_t)n);
    }
    memset(x_pad + (size_t)m * k, 0, sizeof(float) * (size_t)(min_rows - m) * k);
    memset(y_pad + (size_t)m * n, 0, sizeof(float) * (size_t)(min_rows - m) * n);
    sgemm_rows(min_rows, n, k, x_pad, k, w, ldw, bias, accumulate, y_pad, n);
    for (int32_t i = 0; i < m; i++)
        memcpy(y + (int64_t)i * ldy, y_pad + (size_t)i * n, sizeof(float) * (size_t)n);
}

/* The probe's rows: a pool of kProbePool x rows, each computed in calls of
 * m = kProbeRows[i] rows at every position; one shape per width class
 * (n over and under the small-matrix limit's row count). */
enum { kProbePool = 70, kProbeShapes = 2, kProbeCalls = 12 };
static const int32_t kProbeN[kProbeShapes] = {2048, 96}, kProbeK[kProbeShapes] = {264, 200};
static const int32_t kProbeRows[kProbeCalls] = {1, 2, 3, 4, 5, 8, 13, 16, 17, 31, 40, 64};

/* 1 when every pool row came out with the same bits in every call. */
static int probe_shape(int32_t n, int32_t k)
{
    const size_t scratch_floats = nmt_cpu_linear_blas_scratch(n, k);
    float *x = malloc(sizeof(float) * (size_t)kProbePool * k);
    float *w = malloc(sizeof(float) * (size_t)n * k);
    float *call_x = malloc(sizeof(float) * (size_t)kProbePool * k);
    float *y = malloc(sizeof(float) * (size_t)kProbePool * n);
    float *first = malloc(sizeof(float) * (size_t)kProbePool * n);
    float *scratch = malloc(sizeof(float) * scratch_floats);
    unsigned char *seen = calloc(kProbePool, 1);
    int same = x && w && call_x && y && first && scratch && seen;
    uint32_t state = 12345u;
    for (size_t i = 0; same && i < (size_t)kProbePool * k; i++)
        x[i] = (float)((state = state * 1664525u + 1013904223u) >> 8) * 0x1p-24f - 0.5f;
    for (size_t i = 0; same && i < (size_t)n * k; i++)
        w[i] = (float)((state = state * 1664525u + 1013904223u) >> 8) * 0x1p-24f - 0.5f;
    for (int c = 0; same && c < kProbeCalls; c++) {
        const int32_t m = kProbeRows[c];
        for (int32_t i = 0; i < m; i++) /* pool row (7 i + c) at position i */
            memcpy(call_x + (size_t)i * k, x + (size_t)((7 * i + c) % kProbePool) * k,
                   sizeof(float) * (size_t)k);
        nmt_cpu_linear_blas(m, n, k, call_x, k, w, k, NULL, 0, y, n, scratch);
        for (int32_t i = 0; i < m && same; i++) {
            const int row = (7 * i + c) % kProbePool;
            float *want = first + (size_t)row * n, *got = y + (size_t)i * n;
            if (!seen[row]) {
                memcpy(want, got, sizeof(float) * (size_t)n);
                seen[row] = 1;
            } else {
                same = memcmp(want, got, sizeof(float) * (size_t)n) == 0;
            }
        }
    }
    free(x);
    free(w);
    free(call_x);
    free(y);
    free(first);
    free(scratch);
    free(seen);
    return same;
}

/* Cached per thread count: OpenBLAS splits the work by its thread count. */
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static signed char probe_result[257]; /* 0: not probed, 1: invariant, -1: not */

int nmt_cpu_blas_row_invariant(void)
{
    const int threads = nmt_cpu_blas_threads();
    const int slot = threads > 0 && threads <= 256 ? threads : 256;
    pthread_mutex_lock(&probe_lock);
    if (probe_result[slot] == 0) {
        int same = 1;
        for (int s = 0; s < kProbeShapes && same; s++)
            same = probe_shape(kProbeN[s], kProbeK[s]);
        probe_result[slot] = same ? 1 : -1;
    }
    const int invariant = probe_result[slot] > 0;
    pthread_mutex_unlock(&probe_lock);
    return invariant;
}

#else /* no BLAS: the reference */

int nmt_cpu_blas_row_invariant(void)
{
    return 1;
}

int nmt_cpu_blas_available(void)
{
    return 0;
}

const char *nmt_cpu_blas_name(void)
{
    return "none";
}

void nmt_cpu_blas_set_threads(int threads)
{
    (void)threads;
}

int nmt_cpu_blas_threads(void)
{
    return 1;
}

void nmt_cpu_linear_blas(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                         const float *w, int32_t ldw, const float *bias, int accumulate,
                         float *y, int32_t ldy, float *scratch)
{
    (void)scratch;
    nmt_cpu_linear(m, n, k, x, ldx, w, ldw, bias, accumulate, y, ldy);
}

#endif
