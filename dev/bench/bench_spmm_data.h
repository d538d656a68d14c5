/* bench_spmm_data.h: the inputs and the check of bench_spmm.cu (header only,
 * static, included by that one program): W drawn on the host as a CSR with
 * each entry zero with probability `sparsity` (independently, so row
 * lengths vary as after magnitude pruning; values uniform in [-1, 1), also
 * rounded to fp16 as the fp16 preparation rounds them), x to bf16 on the
 * device, and the CPU oracle (nmt_cpu_spmm) on a few rows of y with the
 * GPU test's bound for each output. */
#ifndef NMT_BENCH_SPMM_DATA_H
#define NMT_BENCH_SPMM_DATA_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "spmm.h"

enum { SAMPLE_ROWS = 3 };

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static double rand_unit(void) /* xorshift64*: [0, 1) */
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return (double)((g_rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

typedef struct {
    int32_t n, k, nnz;
    int32_t *offsets, *cols;
    float *values, *values16; /* fp32; the same rounded to fp16 */
} host_csr;

static host_csr make_csr(int32_t n, int32_t k, double sparsity)
{
    host_csr w = {n, k, 0, NULL, NULL, NULL, NULL};
    size_t cap = (size_t)((double)n * k * (1.0 - sparsity) * 1.05) + 1024, nnz = 0;
    w.offsets = (int32_t *)malloc(((size_t)n + 1) * sizeof(int32_t));
    w.cols = (int32_t *)malloc(cap * sizeof(int32_t));
    w.values = (float *)malloc(cap * sizeof(float));
    w.values16 = (float *)malloc(cap * sizeof(float));
    if (!w.offsets || !w.cols || !w.values || !w.values16) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    w.offsets[0] = 0;
    for (int32_t j = 0; j < n; j++) {
        for (int32_t c = 0; c < k; c++) {
            if (rand_unit() < sparsity)
                continue;
            if (nnz == cap) {
                cap *= 2;
                w.cols = (int32_t *)realloc(w.cols, cap * sizeof(int32_t));
                w.values = (float *)realloc(w.values, cap * sizeof(float));
                w.values16 = (float *)realloc(w.values16, cap * sizeof(float));
                if (!w.cols || !w.values || !w.values16) {
                    fprintf(stderr, "out of host memory\n");
                    exit(1);
                }
            }
            float v = (float)(rand_unit() * 2.0 - 1.0);
            v = v != 0.0f ? v : 0.5f;
            w.cols[nnz] = c;
            w.values[nnz] = v;
            w.values16[nnz++] = __half2float(__float2half_rn(v));
        }
        w.offsets[j + 1] = (int32_t)nnz;
    }
    w.nnz = (int32_t)nnz;
    return w;
}

static void free_csr(host_csr *w)
{
    free(w->offsets); free(w->cols); free(w->values); free(w->values16);
}

static __global__ void to_bf16(size_t n, const float *x, __nv_bfloat16 *out)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = __float2bfloat16(x[i]);
}

/* ---- the oracle on a few rows of y ---------------------------------------------- */

typedef struct {
    int count;
    int32_t rows[SAMPLE_ROWS];
    float *want[2];  /* [count, n] for fp32 and fp16 values */
    double *tol[2];
} sample;

static sample make_sample(const host_csr *w, int32_t m, const float *x)
{
    sample s = {};
    const int32_t cand[SAMPLE_ROWS] = {0, m / 2, m - 1};
    for (int i = 0; i < SAMPLE_ROWS; i++)
        if (s.count == 0 || cand[i] != s.rows[s.count - 1])
            s.rows[s.count++] = cand[i];
    for (int t = 0; t < 2; t++) {
        const float *vals = t ? w->values16 : w->values;
        s.want[t] = (float *)malloc((size_t)s.count * w->n * sizeof(float));
        s.tol[t] = (double *)malloc((size_t)s.count * w->n * sizeof(double));
        for (int r = 0; r < s.count; r++) {
            const float *xr = x + (size_t)s.rows[r] * w->k;
            nmt_cpu_spmm(1, w->n, w->k, xr, w->k, w->offsets, w->cols, vals, NULL, 0,
                         s.want[t] + (size_t)r * w->n, w->n);
            for (int32_t j = 0; j < w->n; j++) {
                double mag = 0.0;
                for (int32_t p = w->offsets[j]; p < w->offsets[j + 1]; p++)
                    mag += fabs((double)xr[w->cols[p]] * vals[p]);
                s.tol[t][(size_t)r * w->n + j] =
                    (w->offsets[j + 1] - w->offsets[j] + 2) * ldexp(mag, -23);
            }
        }
    }
    return s;
}

static void free_sample(sample *s)
{
    for (int t = 0; t < 2; t++) {
        free(s->want[t]);
        free(s->tol[t]);
    }
}

/* The largest |error| and |error| / tolerance over the sampled rows of y. */
static void check_sample(const sample *s, int fp16, const float *d_y, int32_t n, double *max_err,
                         double *err_of_tol)
{
    float *row = (float *)malloc((size_t)n * sizeof(float));
    *max_err = *err_of_tol = 0.0;
    CUDA_OK(cudaDeviceSynchronize());
    for (int r = 0; r < s->count; r++) {
        CUDA_OK(cudaMemcpy(row, d_y + (size_t)s->rows[r] * n, (size_t)n * sizeof(float),
                           cudaMemcpyDeviceToHost));
        for (int32_t j = 0; j < n; j++) {
            const double e = fabs((double)row[j] - s->want[fp16][(size_t)r * n + j]);
            const double t = s->tol[fp16][(size_t)r * n + j];
            const double q = e == 0.0 ? 0.0 : (t > 0.0 ? e / t : INFINITY);
            *max_err = e > *max_err || e != e ? e : *max_err;
            *err_of_tol = q > *err_of_tol || q != q ? q : *err_of_tol;
        }
    }
    free(row);
}

#endif /* NMT_BENCH_SPMM_DATA_H */
