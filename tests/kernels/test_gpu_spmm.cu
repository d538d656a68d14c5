/* test_gpu_spmm.cu: nmt_cuda_spmm (kernels/spmm.h) against the CPU oracle
 * nmt_cpu_spmm, on fresh random sparse matrices over a shape table with the
 * edges: empty rows, one nonzero in the whole matrix, every row full, no
 * nonzero at all, rows of odd lengths so that every row but the first
 * starts off a vector boundary (ROMA's masking), lengths skewed from 0 to k
 * (the row swizzle), odd sizes, 1 to 5000 rows of x, and the model's shapes
 * (4H x (E+2H), H x 2H, V x H at 90-98% sparsity). Each matrix is prepared
 * with fp32 and fp16 values and with 16- and 32-bit column indices; each
 * call runs through the launcher (AUTO, its plan logged) and through each
 * variant by name; a coverage pass then runs every instance of both kernels
 * (row: lanes 4..32 x rows 1, 4, 8; tile: 8..64) by explicit configuration.
 * x and y are slices of wider buffers at an odd column (x's other columns
 * NaN: a read of them shows; y's poisoned: a write shows), y poisoned
 * unless accumulating, a guard after y.
 *
 * Tolerance: the GPU sums the same products in fp32 in another order (FMA,
 * lanes or tiles, then a tree), the CPU in double rounded once. For output
 * (i, j) with L_j nonzeros in row j of W, any fp32 order of the L_j + 2
 * terms (products, bias, old y) is within (L_j + 1) 2^-24 sum|terms| of the
 * exact sum, and the CPU's within 2^-24 of it; the check allows
 * (L_j + 2) 2^-23 sum|terms|, twice that (the CPU test's bound with the
 * row's nonzeros for k). fp16 runs compare with the oracle on the values
 * rounded to fp16 as the preparation rounds them (nearest even), so the
 * bound is the same. The oracle itself is checked bit for bit against the
 * dense product (nmt_cpu_linear on W's dense expansion) where that is cheap. */
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "linear.h"
#include "spmm.h"
#include "test_util.h"

typedef enum pattern { RANDOM, EMPTY_ROWS, ONE_NONZERO, FULL, NO_NONZERO, ODD_LENGTHS, SKEWED } pattern;
static const char *const pattern_names[] = {"random", "empty rows", "one nonzero", "full",
                                            "no nonzero", "odd lengths", "skewed"};

typedef struct {
    int32_t m, n, k;
    pattern p;
    double density; /* RANDOM, EMPTY_ROWS */
} shape;

static const shape shapes[] = {
    {1, 1, 1, FULL, 0},
    {1, 1, 1, NO_NONZERO, 0},
    {3, 7, 5, ONE_NONZERO, 0},
    {7, 33, 17, EMPTY_ROWS, 0.5},
    {9, 64, 130, ODD_LENGTHS, 0},
    {5, 333, 257, RANDOM, 0.2},
    {17, 100, 300, SKEWED, 0},
    {64, 65, 31, FULL, 0},
    {65, 200, 1000, RANDOM, 0.05},
    {127, 129, 67, ODD_LENGTHS, 0},
    {100, 50, 40, NO_NONZERO, 0},
    {333, 64, 130, EMPTY_ROWS, 0.3},
    {1000, 40, 70, RANDOM, 0.5},
    {5000, 33, 17, RANDOM, 0.3},
    {4999, 7, 3, FULL, 0},
    /* The model's: decoder layer 0 (4H x (E + 2H)) at 90%, W_c (H x 2H) at
     * 95%, the output layer (V x H) at 98%, a layer at batch 64 x beam 5. */
    {5, 4096, 2560, RANDOM, 0.1},
    {40, 1024, 2048, RANDOM, 0.05},
    {5, 10000, 512, RANDOM, 0.02},
    {320, 2048, 1536, RANDOM, 0.1},
    {1280, 1024, 768, SKEWED, 0},
};

typedef struct {
    int32_t n, k, nnz;
    int32_t *offsets, *cols;
    float *values, *values_half; /* as generated; rounded to fp16 */
    float *dense;                 /* [n, k] or NULL when large */
} host_csr;

/* The columns of one row: `len` of k in increasing order (selection sampling). */
static void pick_columns(int32_t k, int32_t len, int32_t *cols)
{
    int32_t taken = 0;
    for (int32_t c = 0; c < k && taken < len; c++)
        if (test_rand_int(0, k - c) < len - taken)
            cols[taken++] = c;
}

static int32_t row_length(const shape *s, int32_t j, int32_t one_row)
{
    const int32_t k = s->k;
    switch (s->p) {
    case FULL: return k;
    case NO_NONZERO: return 0;
    case ONE_NONZERO: return j == one_row;
    case ODD_LENGTHS: { /* 1 first: every later row starts misaligned somewhere */
        static const int32_t odd[] = {1, 3, 5, 7, 9, 13, 17, 31, 33, 63, 65, 127};
        int32_t len = j == 0 ? 1 : odd[test_rand_int(0, 12)];
        return len <= k ? len : (k % 2 ? k : k - 1);
    }
    case SKEWED: { /* u^3 x k: mostly short rows, a few long ones */
        double u = test_rand_uniform(0.0f, 1.0f);
        return (int32_t)(u * u * u * k);
    }
    case EMPTY_ROWS:
        if (j % 3 == 1)
            return 0;
        /* fall through */
    case RANDOM: {
        int32_t len = 0;
        for (int32_t c = 0; c < k; c++)
            len += test_rand_uniform(0.0f, 1.0f) < s->density;
        return len;
    }
    }
    return 0;
}

static host_csr make_csr(const shape *s)
{
    host_csr w = {};
    w.n = s->n;
    w.k = s->k;
    w.offsets = (int32_t *)host_alloc(((size_t)w.n + 1) * sizeof(int32_t));
    const int32_t one_row = test_rand_int(0, w.n);
    size_t cap = 1024, nnz = 0;
    w.cols = (int32_t *)host_alloc(cap * sizeof(int32_t));
    w.offsets[0] = 0;
    for (int32_t j = 0; j < w.n; j++) {
        const int32_t len = row_length(s, j, one_row);
        while (nnz + len > cap) {
            cap *= 2;
            w.cols = (int32_t *)realloc(w.cols, cap * sizeof(int32_t));
            if (!w.cols) {
                fprintf(stderr, "out of host memory\n");
                exit(1);
            }
        }
        pick_columns(w.k, len, w.cols + nnz);
        nnz += len;
        w.offsets[j + 1] = (int32_t)nnz;
    }
    w.nnz = (int32_t)nnz;
    w.values = (float *)host_alloc((nnz ? nnz : 1) * sizeof(float));
    w.values_half = (float *)host_alloc((nnz ? nnz : 1) * sizeof(float));
    for (size_t p = 0; p < nnz; p++) {
        float v = 0.0f;
        while (v == 0.0f)
            v = test_rand_uniform(-1.0f, 1.0f);
        w.values[p] = v;
        w.values_half[p] = __half2float(__float2half_rn(v));
    }
    if ((double)w.n * w.k <= 4e6) {
        w.dense = (float *)host_alloc((size_t)w.n * w.k * sizeof(float));
        memset(w.dense, 0, (size_t)w.n * w.k * sizeof(float));
        for (int32_t j = 0; j < w.n; j++)
            for (int32_t p = w.offsets[j]; p < w.offsets[j + 1]; p++)
                w.dense[(size_t)j * w.k + w.cols[p]] = w.values[p];
    }
    return w;
}

static void free_csr(host_csr *w)
{
    free(w->offsets); free(w->cols); free(w->values); free(w->values_half); free(w->dense);
}

/* One call's operands: x's data at columns xs .. xs + k of rows ldx apart
 * (NaN elsewhere), y's at ys .. ys + n (poison elsewhere, and inside too
 * unless accumulating). */
typedef struct {
    int32_t m, ldx, xs, ldy, ys;
    int accumulate;
    float *x, *bias, *y0; /* host; bias NULL: none */
    float *d_x, *d_bias;
} operands;

static operands make_operands(int32_t m, const host_csr *w, int with_bias, int accumulate)
{
    operands o = {};
    o.m = m;
    o.xs = 1;
    o.ldx = w->k + 2;
    o.ys = 1;
    o.ldy = w->n + 3;
    o.accumulate = accumulate;
    const size_t nx = (size_t)m * o.ldx, ny = (size_t)m * o.ldy;
    o.x = (float *)host_alloc(nx * sizeof(float));
    for (size_t i = 0; i < nx; i++) {
        const int32_t c = (int32_t)(i % o.ldx);
        o.x[i] = c >= o.xs && c < o.xs + w->k ? test_rand_uniform(-1.0f, 1.0f) : NAN;
    }
    o.y0 = (float *)host_alloc(ny * sizeof(float));
    memset(o.y0, POISON_F32, ny * sizeof(float));
    for (int32_t i = 0; i < m && accumulate; i++)
        test_fill_uniform(o.y0 + (size_t)i * o.ldy + o.ys, w->n, -1.0f, 1.0f);
    o.d_x = (float *)dev_upload(o.x, nx * sizeof(float));
    if (with_bias) {
        o.bias = (float *)host_alloc(w->n * sizeof(float));
        test_fill_uniform(o.bias, w->n, -0.5f, 0.5f);
        o.d_bias = (float *)dev_upload(o.bias, w->n * sizeof(float));
    }
    return o;
}

static void free_operands(operands *o)
{
    free(o->x); free(o->bias); free(o->y0);
    cudaFree(o->d_x);
    if (o->d_bias)
        cudaFree(o->d_bias);
}

/* The oracle's y (the whole buffer, poison kept) and each output's bound. */
static void expect(const host_csr *w, const float *values, const operands *o, float *want,
                   double *tol)
{
    const size_t ny = (size_t)o->m * o->ldy;
    memcpy(want, o->y0, ny * sizeof(float));
    nmt_cpu_spmm(o->m, w->n, w->k, o->x + o->xs, o->ldx, w->offsets, w->cols, values, o->bias,
                 o->accumulate, want + o->ys, o->ldy);
    for (int32_t i = 0; i < o->m; i++) {
        const float *xr = o->x + (size_t)i * o->ldx + o->xs;
        for (int32_t j = 0; j < w->n; j++) {
            double mag = o->accumulate ? fabs((double)o->y0[(size_t)i * o->ldy + o->ys + j]) : 0.0;
            mag += o->bias ? fabs((double)o->bias[j]) : 0.0;
            for (int32_t p = w->offsets[j]; p < w->offsets[j + 1]; p++)
                mag += fabs((double)xr[w->cols[p]] * values[p]);
            tol[(size_t)i * w->n + j] = (w->offsets[j + 1] - w->offsets[j] + 2) * ldexp(mag, -23);
        }
    }
    if (w->dense && values == w->values && (double)o->m * w->n * w->k <= 3e7) {
        float *dense_y = (float *)host_alloc(ny * sizeof(float));
        memcpy(dense_y, o->y0, ny * sizeof(float));
        nmt_cpu_linear(o->m, w->n, w->k, o->x + o->xs, o->ldx, w->dense, w->k, o->bias,
                       o->accumulate, dense_y + o->ys, o->ldy);
        CHECK(memcmp(dense_y, want, ny * sizeof(float)) == 0,
              "oracle: nmt_cpu_spmm differs from the dense product (m %d n %d k %d)", o->m, w->n,
              w->k);
        free(dense_y);
    }
}

static cudaStream_t g_stream;
static void *g_workspace;
static size_t g_workspace_bytes;

static void ensure_workspace(size_t bytes)
{
    if (bytes <= g_workspace_bytes)
        return;
    if (g_workspace)
        CUDA_OK(cudaFree(g_workspace));
    CUDA_OK(cudaMalloc(&g_workspace, bytes));
    g_workspace_bytes = bytes;
}

/* One call (config NULL: the AUTO launcher) against want/tol. */
static void run_call(const char *label, const nmt_cuda_spmm_matrix *dw, const host_csr *w,
                     const operands *o, const nmt_spmm_config *config, const float *want,
                     const double *tol)
{
    const size_t ny = (size_t)o->m * o->ldy;
    ensure_workspace(nmt_cuda_spmm_workspace_size(dw, o->m, config));
    float *d_y = (float *)dev_output(ny * sizeof(float), POISON_F32);
    dev_fill(d_y, o->y0, ny * sizeof(float));
    const nmt_spmm_config plan = nmt_cuda_spmm_plan(dw, o->m, config);
    char what[256];
    if (plan.variant == NMT_SPMM_ROW)
        snprintf(what, sizeof what, "%s %srow lanes %d rows %d", label, config ? "" : "auto -> ",
                 plan.lanes, plan.rows);
    else
        snprintf(what, sizeof what, "%s %s%s %d", label, config ? "" : "auto -> ",
                 nmt_cuda_spmm_variant_name(plan.variant), plan.tile);
    nmt_error err = {};
    const nmt_status st = config
        ? nmt_cuda_spmm_with(o->m, w->n, w->k, o->d_x + o->xs, o->ldx, dw, o->d_bias,
                             o->accumulate, d_y + o->ys, o->ldy, g_workspace,
                             g_workspace_bytes, config, g_stream, &err)
        : nmt_cuda_spmm(o->m, w->n, w->k, o->d_x + o->xs, o->ldx, dw, o->d_bias, o->accumulate,
                        d_y + o->ys, o->ldy, g_workspace, g_workspace_bytes, g_stream, &err);
    CHECK(st == NMT_STATUS_OK, "%s: status %d: %s", what, (int)st, err.message);
    CUDA_OK(cudaStreamSynchronize(g_stream));
    float *got = (float *)host_alloc(ny * sizeof(float));
    int ok = dev_download(got, d_y, ny * sizeof(float), POISON_F32, what);
    int64_t bad = 0, touched = 0;
    double worst = 0.0; /* the largest error / tolerance */
    for (int32_t i = 0; i < o->m; i++)
        for (int32_t c = 0; c < o->ldy; c++) {
            const size_t at = (size_t)i * o->ldy + c;
            if (c < o->ys || c >= o->ys + w->n) {
                touched += memcmp(&got[at], &o->y0[at], sizeof(float)) != 0;
                continue;
            }
            const double e = fabs((double)got[at] - want[at]), t = tol[(size_t)i * w->n + c - o->ys];
            if (e <= t) {
                worst = t > 0 && e / t > worst ? e / t : worst;
                continue;
            }
            if (bad++ < 3)
                fprintf(stderr, "  y[%d, %d]: %.9g, oracle %.9g (tolerance %.3g)\n", i,
                        c - o->ys, got[at], want[at], t);
        }
    ok &= st == NMT_STATUS_OK && bad == 0 && touched == 0;
    CHECK(ok, "%s: %lld outside the tolerance, %lld values outside y written", what,
          (long long)bad, (long long)touched);
    fprintf(stderr, "%s %s: worst error %.2f of the tolerance\n", ok ? "ok  " : "FAIL", what, worst);
    cudaFree(d_y);
    free(got);
}

static const nmt_spmm_values kValueTypes[] = {NMT_SPMM_VALUES_FP32, NMT_SPMM_VALUES_FP16};

static nmt_cuda_spmm_matrix *prepare(const host_csr *w, nmt_spmm_values type, int index_bits)
{
    nmt_cuda_spmm_matrix *dw = NULL;
    nmt_error err = {};
    const nmt_status st = nmt_cuda_spmm_prepare(w->n, w->k, w->offsets, w->cols, w->values,
                                                type, index_bits, g_stream, &dw, &err);
    CHECK(st == NMT_STATUS_OK && dw, "prepare n %d k %d: status %d: %s", w->n, w->k, (int)st,
          err.message);
    if (dw) {
        nmt_cuda_spmm_info info;
        nmt_cuda_spmm_describe(dw, &info);
        CHECK(info.rows == w->n && info.cols == w->k && info.nnz == w->nnz &&
                  info.index_bits == (index_bits ? index_bits : (w->k <= 65536 ? 16 : 32)),
              "describe: %d x %d, %d nonzeros, %d-bit indices", info.rows, info.cols, info.nnz,
              info.index_bits);
    }
    return dw;
}

/* Every shape: both value types x both index widths, AUTO and each variant. */
static void test_shape(size_t index, const shape *s)
{
    host_csr w = make_csr(s);
    operands o = make_operands(s->m, &w, (int)(index % 2), (int)(index % 3 == 1));
    const size_t ny = (size_t)s->m * o.ldy;
    float *want = (float *)host_alloc(ny * sizeof(float));
    double *tol = (double *)host_alloc((size_t)s->m * s->n * sizeof(double));
    for (int t = 0; t < 2; t++) {
        expect(&w, t ? w.values_half : w.values, &o, want, tol);
        for (int bits = 16; bits <= 32; bits += 16) {
            nmt_cuda_spmm_matrix *dw = prepare(&w, kValueTypes[t], bits);
            if (!dw)
                continue;
            char label[160];
            snprintf(label, sizeof label, "m %d n %d k %d %s %.0f%% (nnz %d) %s/%d bias %d acc %d:",
                     s->m, s->n, s->k, pattern_names[s->p], 100.0 * w.nnz / ((double)s->n * s->k),
                     w.nnz, t ? "fp16" : "fp32", bits, o.bias != NULL, o.accumulate);
            run_call(label, dw, &w, &o, NULL, want, tol);
            for (int v = NMT_SPMM_ROW; v <= NMT_SPMM_TILE; v++) {
                const nmt_spmm_config config = {(nmt_spmm_variant)v, 0, 0, 0};
                run_call(label, dw, &w, &o, &config, want, tol);
            }
            nmt_cuda_spmm_free(dw);
        }
    }
    free(want); free(tol);
    free_operands(&o);
    free_csr(&w);
}

/* Every instance of both kernels by explicit configuration, on odd-length
 * rows (ROMA) and skewed ones (lanes past a row's end), x rows that fill
 * one strip, part of one, and more than one. */
static void test_coverage(void)
{
    static const shape cover[] = {{13, 77, 300, ODD_LENGTHS, 0}, {30, 90, 700, SKEWED, 0}};
    static const int lanes[] = {4, 8, 16, 32}, rows[] = {1, 4, 8}, tiles[] = {8, 16, 32, 64};
    static const int32_t ms[] = {1, 3, 8, 13, 100};
    for (size_t a = 0; a < sizeof cover / sizeof cover[0]; a++) {
        host_csr w = make_csr(&cover[a]);
        for (size_t b = 0; b < sizeof ms / sizeof ms[0]; b++) {
            operands o = make_operands(ms[b], &w, (int)(b % 2), (int)((a + b) % 2));
            const size_t ny = (size_t)o.m * o.ldy;
            float *want = (float *)host_alloc(ny * sizeof(float));
            double *tol = (double *)host_alloc((size_t)o.m * w.n * sizeof(double));
            for (int t = 0; t < 2; t++) {
                expect(&w, t ? w.values_half : w.values, &o, want, tol);
                for (int bits = 16; bits <= 32; bits += 16) {
                    nmt_cuda_spmm_matrix *dw = prepare(&w, kValueTypes[t], bits);
                    if (!dw)
                        continue;
                    char label[160];
                    snprintf(label, sizeof label, "cover m %d n %d k %d %s %s/%d:", o.m, w.n, w.k,
                             pattern_names[cover[a].p], t ? "fp16" : "fp32", bits);
                    for (int l = 0; l < 4; l++)
                        for (int r = 0; r < 3; r++) {
                            const nmt_spmm_config config = {NMT_SPMM_ROW, lanes[l], rows[r], 0};
                            run_call(label, dw, &w, &o, &config, want, tol);
                        }
                    for (int i = 0; i < 4; i++) {
                        const nmt_spmm_config config = {NMT_SPMM_TILE, 0, 0, tiles[i]};
                        run_call(label, dw, &w, &o, &config, want, tol);
                    }
                    nmt_cuda_spmm_free(dw);
                }
            }
            free(want); free(tol);
            free_operands(&o);
        }
        free_csr(&w);
    }
}

/* What the preparation and the launcher must refuse, naming the cause. */
static void test_refusals(void)
{
    const int32_t offsets[] = {0, 2, 3}, bad_offsets[] = {0, 2, 1};
    const int32_t cols[] = {0, 3, 1}, bad_cols[] = {0, 4, 1};
    const float values[] = {1.0f, -2.0f, 0.5f}, big[] = {1.0f, 70000.0f, 0.5f};
    const float inf_values[] = {1.0f, INFINITY, 0.5f};
    struct {
        const int32_t *offsets, *cols;
        const float *values;
        nmt_spmm_values type;
        int32_t k;
        int bits;
        const char *words;
    } cases[] = {
        {bad_offsets, cols, values, NMT_SPMM_VALUES_FP32, 4, 0, "never decrease"},
        {offsets, bad_cols, values, NMT_SPMM_VALUES_FP32, 4, 0, "column 4 outside"},
        {offsets, cols, inf_values, NMT_SPMM_VALUES_FP32, 4, 0, "not finite"},
        {offsets, cols, big, NMT_SPMM_VALUES_FP16, 4, 0, "fp16"},
        {offsets, cols, values, NMT_SPMM_VALUES_FP32, 70000, 16, "65536"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nmt_cuda_spmm_matrix *dw = NULL;
        nmt_error err = {};
        const nmt_status st = nmt_cuda_spmm_prepare(2, cases[i].k, cases[i].offsets, cases[i].cols,
                                                    cases[i].values, cases[i].type, cases[i].bits,
                                                    g_stream, &dw, &err);
        CHECK(st == NMT_STATUS_ERROR_ARGUMENT && !dw && strstr(err.message, cases[i].words),
              "refusal %zu: status %d, message '%s' (expected '%s')", i, (int)st, err.message,
              cases[i].words);
        nmt_cuda_spmm_free(dw);
    }
    /* The fp16 value 70000 fits fp32: accepted there. Then the launcher's refusals. */
    nmt_cuda_spmm_matrix *dw = NULL;
    nmt_error err = {};
    CHECK(nmt_cuda_spmm_prepare(2, 4, offsets, cols, big, NMT_SPMM_VALUES_FP32, 0, g_stream, &dw,
                                &err) == NMT_STATUS_OK, "fp32 70000: %s", err.message);
    float *d_x = (float *)dev_output(100 * 4 * sizeof(float), 0);
    float *d_y = (float *)dev_output(100 * 2 * sizeof(float), 0);
    const nmt_spmm_config tile = {NMT_SPMM_TILE, 0, 0, 0}, odd = {NMT_SPMM_ROW, 3, 0, 0};
    nmt_status st = nmt_cuda_spmm_with(100, 2, 4, d_x, 4, dw, NULL, 0, d_y, 2, NULL, 0, &tile,
                                       g_stream, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT && strstr(err.message, "workspace"),
          "tile without a workspace: status %d: %s", (int)st, err.message);
    st = nmt_cuda_spmm_with(100, 2, 4, d_x, 4, dw, NULL, 0, d_y, 2, NULL, 0, &odd, g_stream, &err);
    CHECK(st == NMT_STATUS_ERROR_UNSUPPORTED, "row lanes 3: status %d", (int)st);
    st = nmt_cuda_spmm(100, 3, 4, d_x, 4, dw, NULL, 0, d_y, 3, NULL, 0, g_stream, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "n 3 for a 2-row matrix: status %d", (int)st);
    /* AUTO's workspace: none for its row variant, and never smaller at more
     * rows (its size at the most rows serves every call), on a short W (few
     * tile blocks: row up to 64 rows) and a tall one (tile from 9 rows). */
    const int32_t tall_rows = 40000, tall_cols = 64;
    int32_t *tall_offsets = (int32_t *)host_alloc(((size_t)tall_rows + 1) * sizeof(int32_t));
    int32_t *tall_cols_idx = (int32_t *)host_alloc((size_t)tall_rows * sizeof(int32_t));
    float *tall_values = (float *)host_alloc((size_t)tall_rows * sizeof(float));
    for (int32_t j = 0; j <= tall_rows; j++)
        tall_offsets[j] = j;
    for (int32_t j = 0; j < tall_rows; j++) {
        tall_cols_idx[j] = j % tall_cols;
        tall_values[j] = 1.0f;
    }
    nmt_cuda_spmm_matrix *tall = NULL;
    CHECK(nmt_cuda_spmm_prepare(tall_rows, tall_cols, tall_offsets, tall_cols_idx, tall_values,
                                NMT_SPMM_VALUES_FP32, 0, g_stream, &tall, &err) == NMT_STATUS_OK,
          "tall matrix: %s", err.message);
    const nmt_cuda_spmm_matrix *shapes_auto[] = {dw, tall};
    for (int a = 0; a < 2 && shapes_auto[a]; a++) {
        size_t last = 0;
        int tile_from = 0;
        for (int32_t m = 1; m <= 4096; m++) {
            const size_t bytes = nmt_cuda_spmm_workspace_size(shapes_auto[a], m, NULL);
            const nmt_spmm_variant v = nmt_cuda_spmm_plan(shapes_auto[a], m, NULL).variant;
            CHECK((v == NMT_SPMM_ROW) == (bytes == 0) && bytes >= last,
                  "AUTO workspace (W of %d rows) at m %d: %zu bytes, %zu at m - 1",
                  a ? tall_rows : 2, m, bytes, last);
            tile_from = !tile_from && v == NMT_SPMM_TILE ? m : tile_from;
            last = bytes;
        }
        CHECK(tile_from == (a ? 9 : 65), "AUTO's first tile plan (W of %d rows) at m %d",
              a ? tall_rows : 2, tile_from);
    }
    nmt_cuda_spmm_free(tall);
    free(tall_offsets);
    free(tall_cols_idx);
    free(tall_values);
    CUDA_OK(cudaStreamSynchronize(g_stream));
    cudaFree(d_x);
    cudaFree(d_y);
    nmt_cuda_spmm_free(dw);
    nmt_cuda_spmm_free(NULL);
    fprintf(stderr, "ok   refusals\n");
}

int main(void)
{
    gpu_test_require_device("test_gpu_spmm");
    test_seed();
    CUDA_OK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    test_refusals();
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        test_shape(i, &shapes[i]);
    test_coverage();
    if (g_workspace)
        CUDA_OK(cudaFree(g_workspace));
    CUDA_OK(cudaStreamDestroy(g_stream));
    return test_finish("test_gpu_spmm");
}
