/* bench_spmm.cu: the sparse product y = x . W^T (nmt_cuda_spmm, kernels/spmm.h;
 * Gale et al.'s SpMM) against cuSPARSE's generic SpMM (cusparseSpMM, CSR,
 * fp32, ALG_DEFAULT) and against dense cuBLAS on W's dense expansion: fp32
 * sgemm, TF32 tensor cores (cublasGemmEx, COMPUTE_32F_FAST_TF32) and bf16
 * tensor cores with fp32 accumulation and output (W and x in bf16; x's
 * conversion is not timed, so bf16 is a lower bound for the engine's fp32
 * activations).
 *
 * For each shape n x k (W [n, k]; default the decoder at H = 1024, E = 512,
 * V = 32000: layer 0's [w_ih w_hh] 4H x (E + 2H), a later layer's 4H x 2H,
 * W_c H x 2H, the output layer V x H), each sparsity (the fraction of zeros,
 * drawn independently per entry, so row lengths vary as after magnitude
 * pruning) and each row count m of x: every method by name, timed by
 * bench_util.h (median of NMT_BENCH_REPEATS runs of NMT_BENCH_BATCH calls
 * between events, after warm-up). W rotates over copies bigger than 2x the
 * L2 (at most 256 copies): a decoder step finds its weights cold, while x
 * and y stay where they are, as activations just written are warm. Dense
 * methods do not depend on the sparsity: timed once a shape and rows.
 * Every result is checked on 3 rows of y against nmt_cpu_spmm (with the
 * values rounded to fp16 for fp16): ours must be within the test's bound
 * (row nonzeros + 2) 2^-23 sum |terms| (err_of_tol <= 1; exit 1 if not), the
 * others report their error beside it. The floor of a method is its bytes
 * (W as it stores it, x read and y written once) over the device-to-device
 * copy bandwidth measured first.
 *
 * The inputs and the oracle are bench_spmm_data.h's.
 *
 * Output: JSON lines on stdout (one per measurement), a table on stderr
 * (microseconds a call; the floor of the first method; each other method's
 * time over the first's). dev/bench/spmm.sh runs the sweep shape by shape
 * and plots it.
 *   bench_spmm                                    # 4 shapes x 6 sparsities x 6 row counts
 *   bench_spmm --shapes 4096x2560 --rows 5,320 --sparsity 0.9 --variant auto,cusparse,bf16
 *   bench_spmm --variant row/8,row/32x8,tile/16,tile/64 --values fp16 --rows 20
 *   bench_spmm --list
 * Names: auto, row[/LANES[xROWS]], tile[/TILE] (ours, each with every
 * --values entry, default fp32,fp16), cusparse, sgemm, tf32, bf16. Options
 * also from NMT_BENCH_SHAPES, NMT_BENCH_ROWS, NMT_BENCH_SPARSITY. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cusparse.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lib_ok.h" /* CUBLAS_OK, CUSPARSE_OK */
#include "bench_spmm_data.h"
#include "bench_util.h"
#include "spmm.h"

enum { MAX_METHODS = 32, MAX_LIST = 64, MAX_COPIES = 256 };

typedef enum { OURS, CUSPARSE, SGEMM, TF32, BF16 } method_kind;
typedef struct {
    char name[40]; /* as given (ours: one entry a --values type) */
    method_kind kind;
    nmt_spmm_config config;
    nmt_spmm_values values;
} method;

static int parse_method(const char *name, method *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    static const struct { const char *name; method_kind kind; } fixed[] = {
        {"cusparse", CUSPARSE}, {"sgemm", SGEMM}, {"tf32", TF32}, {"bf16", BF16}};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (strcmp(name, fixed[i].name) == 0) {
            m->kind = fixed[i].kind;
            return 1;
        }
    m->kind = OURS;
    int a = 0, b = 0;
    if (strcmp(name, "auto") == 0)
        return 1;
    if (strncmp(name, "row", 3) == 0 && (name[3] == '\0' || sscanf(name + 3, "/%dx%d", &a, &b) >= 1)) {
        m->config = (nmt_spmm_config){NMT_SPMM_ROW, a, b, 0};
        return 1;
    }
    if (strncmp(name, "tile", 4) == 0 && (name[4] == '\0' || sscanf(name + 4, "/%d", &a) == 1)) {
        m->config = (nmt_spmm_config){NMT_SPMM_TILE, 0, 0, a};
        return 1;
    }
    return 0;
}

static int copies_for(size_t bytes)
{
    int c = bench_copies(bytes);
    return c > MAX_COPIES ? MAX_COPIES : c;
}

/* ---- one method's state and call ---------------------------------------------- */

typedef struct {
    const method *meth;
    int32_t m, n, k;
    cudaStream_t stream;
    const float *x;
    const __nv_bfloat16 *x16;
    float *y;
    int copies;
    nmt_cuda_spmm_matrix **ours; /* OURS: prepared copies */
    void *ws;
    size_t ws_bytes;
    cusparseHandle_t sp;
    cusparseSpMatDescr_t *sp_w; /* CUSPARSE: a descriptor a copy */
    cusparseDnMatDescr_t sp_x, sp_y;
    void *sp_buf;
    cublasHandle_t blas;
    float **w32; /* SGEMM, TF32 */
    __nv_bfloat16 **w16; /* BF16 */
} call_arg;

static void run_once(void *p, int i)
{
    call_arg *a = (call_arg *)p;
    const int c = i % a->copies;
    const float one = 1.0f, zero = 0.0f;
    switch (a->meth->kind) {
    case OURS: {
        nmt_error err;
        if (nmt_cuda_spmm_with(a->m, a->n, a->k, a->x, a->k, a->ours[c], NULL, 0, a->y, a->n,
                               a->ws, a->ws_bytes, &a->meth->config, a->stream, &err) !=
            NMT_STATUS_OK) {
            fprintf(stderr, "nmt_cuda_spmm_with (%s): %s\n", a->meth->name, err.message);
            exit(1);
        }
        break;
    }
    case CUSPARSE: /* y^T [n, m] (col-major, ld n) = W [n, k] (CSR) . x^T [k, m] (col-major, ld k) */
        CUSPARSE_OK(cusparseSpMM(a->sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                 CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a->sp_w[c], a->sp_x,
                                 &zero, a->sp_y, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, a->sp_buf));
        break;
    case SGEMM: /* as nmt_cuda_linear: y^T = (W as k x n col-major)^T . x^T */
        CUBLAS_OK(cublasSgemm(a->blas, CUBLAS_OP_T, CUBLAS_OP_N, a->n, a->m, a->k, &one,
                              a->w32[c], a->k, a->x, a->k, &zero, a->y, a->n));
        break;
    case TF32:
        CUBLAS_OK(cublasGemmEx(a->blas, CUBLAS_OP_T, CUBLAS_OP_N, a->n, a->m, a->k, &one,
                               a->w32[c], CUDA_R_32F, a->k, a->x, CUDA_R_32F, a->k, &zero, a->y,
                               CUDA_R_32F, a->n, CUBLAS_COMPUTE_32F_FAST_TF32,
                               CUBLAS_GEMM_DEFAULT));
        break;
    case BF16:
        CUBLAS_OK(cublasGemmEx(a->blas, CUBLAS_OP_T, CUBLAS_OP_N, a->n, a->m, a->k, &one,
                               a->w16[c], CUDA_R_16BF, a->k, a->x16, CUDA_R_16BF, a->k, &zero,
                               a->y, CUDA_R_32F, a->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        break;
    }
}

/* ---- the sweep ------------------------------------------------------------------ */

typedef struct {
    method methods[MAX_METHODS];
    int n_methods;
    int32_t shapes[MAX_LIST][2];
    int n_shapes;
    int rows[MAX_LIST], n_rows;
    double sparsity[MAX_LIST];
    int n_sparsity;
    double copy_gbps;
    cudaStream_t stream;
    cusparseHandle_t sp;
    cublasHandle_t blas;
} sweep;

static int g_failures;

static const char *values_name(const method *m)
{
    switch (m->kind) {
    case OURS: return m->values == NMT_SPMM_VALUES_FP16 ? "fp16" : "fp32";
    case TF32: return "tf32";
    case BF16: return "bf16";
    default: return "fp32";
    }
}

/* The device copies of one (shape, sparsity): ours by value type, cuSPARSE's CSR, and
 * (first sparsity only) W dense in fp32 and bf16. */
typedef struct {
    nmt_cuda_spmm_matrix *ours[2][MAX_COPIES];
    int ours_copies[2];
    int32_t *sp_block[MAX_COPIES];
    cusparseSpMatDescr_t sp_w[MAX_COPIES];
    int sp_copies;
    float *w32[MAX_COPIES];
    __nv_bfloat16 *w16[MAX_COPIES];
    int dense_copies;
} device_w;

static void upload_w(const sweep *sw, const host_csr *w, int first_sparsity, device_w *d)
{
    memset(d, 0, sizeof *d);
    for (int i = 0; i < sw->n_methods; i++) {
        const method *m = &sw->methods[i];
        const int t = m->values == NMT_SPMM_VALUES_FP16;
        if (m->kind == OURS && !d->ours_copies[t]) {
            for (int c = 0; c < MAX_COPIES && (c == 0 || c < d->ours_copies[t]); c++) {
                NMT_OK(nmt_cuda_spmm_prepare(w->n, w->k, w->offsets, w->cols, w->values, m->values,
                                             0, sw->stream, &d->ours[t][c], &err));
                if (c == 0) {
                    nmt_cuda_spmm_info info;
                    nmt_cuda_spmm_describe(d->ours[t][0], &info);
                    d->ours_copies[t] = copies_for(info.read_bytes);
                }
            }
        }
        if (m->kind == CUSPARSE && !d->sp_copies) {
            const size_t n_off = (size_t)w->n + 1, nnz = w->nnz ? (size_t)w->nnz : 1;
            d->sp_copies = copies_for((n_off + 2 * nnz) * 4);
            for (int c = 0; c < d->sp_copies; c++) {
                CUDA_OK(cudaMalloc(&d->sp_block[c], (n_off + 2 * nnz) * 4));
                int32_t *off = d->sp_block[c], *cols = off + n_off;
                float *vals = (float *)(cols + nnz);
                CUDA_OK(cudaMemcpy(off, w->offsets, n_off * 4, cudaMemcpyHostToDevice));
                CUDA_OK(cudaMemcpy(cols, w->cols, (size_t)w->nnz * 4, cudaMemcpyHostToDevice));
                CUDA_OK(cudaMemcpy(vals, w->values, (size_t)w->nnz * 4, cudaMemcpyHostToDevice));
                CUSPARSE_OK(cusparseCreateCsr(&d->sp_w[c], w->n, w->k, w->nnz, off, cols, vals,
                                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                              CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
            }
        }
        if ((m->kind == SGEMM || m->kind == TF32 || m->kind == BF16) && first_sparsity &&
            !d->dense_copies) {
            const size_t nk = (size_t)w->n * w->k;
            float *dense = (float *)calloc(nk, sizeof(float));
            if (!dense) {
                fprintf(stderr, "out of host memory\n");
                exit(1);
            }
            for (int32_t j = 0; j < w->n; j++)
                for (int32_t p = w->offsets[j]; p < w->offsets[j + 1]; p++)
                    dense[(size_t)j * w->k + w->cols[p]] = w->values[p];
            d->dense_copies = copies_for(nk * 4);
            for (int c = 0; c < d->dense_copies; c++) {
                CUDA_OK(cudaMalloc(&d->w32[c], nk * 4));
                CUDA_OK(cudaMalloc(&d->w16[c], nk * 2));
                CUDA_OK(cudaMemcpy(d->w32[c], dense, nk * 4, cudaMemcpyHostToDevice));
                to_bf16<<<1024, 256, 0, sw->stream>>>(nk, d->w32[c], d->w16[c]);
                CUDA_OK(cudaGetLastError());
            }
            CUDA_OK(cudaStreamSynchronize(sw->stream));
            free(dense);
        }
    }
}

static void free_w(device_w *d)
{
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < d->ours_copies[t]; c++)
            nmt_cuda_spmm_free(d->ours[t][c]);
    for (int c = 0; c < d->sp_copies; c++) {
        CUSPARSE_OK(cusparseDestroySpMat(d->sp_w[c]));
        CUDA_OK(cudaFree(d->sp_block[c]));
    }
    for (int c = 0; c < d->dense_copies; c++) {
        CUDA_OK(cudaFree(d->w32[c]));
        CUDA_OK(cudaFree(d->w16[c]));
    }
}

/* Bytes a method moves: W as it stores it, x read once, y written once. */
static double method_bytes(const method *m, const host_csr *w, const device_w *d, int32_t rows)
{
    const double xy = (double)rows * w->k * (m->kind == BF16 ? 2 : 4) + (double)rows * w->n * 4;
    switch (m->kind) {
    case OURS: {
        nmt_cuda_spmm_info info;
        nmt_cuda_spmm_describe(d->ours[m->values == NMT_SPMM_VALUES_FP16][0], &info);
        return (double)info.read_bytes + xy;
    }
    case CUSPARSE: return ((double)w->n + 1) * 4 + (double)w->nnz * 8 + xy;
    case BF16: return (double)w->n * w->k * 2 + xy;
    default: return (double)w->n * w->k * 4 + xy;
    }
}

static void run_shape(const sweep *sw, int32_t n, int32_t k)
{
    double dense_us[MAX_LIST][MAX_METHODS];
    void *ws = NULL;
    size_t ws_bytes = 0;
    fprintf(stderr, "\nW %d x %d (us a call)\n%7s %6s |", n, k, "zeros", "rows");
    for (int i = 0; i < sw->n_methods; i++)
        fprintf(stderr, " %11.11s %4s", sw->methods[i].name, values_name(&sw->methods[i]));
    fprintf(stderr, " | %8s | each other / the first\n", "floor us");
    for (int si = 0; si < sw->n_sparsity; si++) {
        host_csr w = make_csr(n, k, sw->sparsity[si]);
        device_w d;
        upload_w(sw, &w, si == 0, &d);
        for (int ri = 0; ri < sw->n_rows; ri++) {
            const int32_t m = sw->rows[ri];
            float *x = (float *)malloc((size_t)m * k * sizeof(float));
            for (size_t i = 0; i < (size_t)m * k; i++)
                x[i] = (float)(rand_unit() * 2.0 - 1.0);
            float *d_x, *d_y;
            __nv_bfloat16 *d_x16;
            CUDA_OK(cudaMalloc(&d_x, (size_t)m * k * 4));
            CUDA_OK(cudaMalloc(&d_x16, (size_t)m * k * 2));
            CUDA_OK(cudaMalloc(&d_y, (size_t)m * n * 4));
            CUDA_OK(cudaMemcpy(d_x, x, (size_t)m * k * 4, cudaMemcpyHostToDevice));
            to_bf16<<<1024, 256, 0, sw->stream>>>((size_t)m * k, d_x, d_x16);
            CUDA_OK(cudaGetLastError());
            sample s = make_sample(&w, m, x);
            call_arg a = {};
            a.m = m;
            a.n = n;
            a.k = k;
            a.stream = sw->stream;
            a.x = d_x;
            a.x16 = d_x16;
            a.y = d_y;
            a.sp = sw->sp;
            a.blas = sw->blas;
            if (d.sp_copies) {
                const float one = 1.0f, zero = 0.0f;
                size_t buf = 0;
                CUSPARSE_OK(cusparseCreateDnMat(&a.sp_x, k, m, k, d_x, CUDA_R_32F,
                                                CUSPARSE_ORDER_COL));
                CUSPARSE_OK(cusparseCreateDnMat(&a.sp_y, n, m, n, d_y, CUDA_R_32F,
                                                CUSPARSE_ORDER_COL));
                CUSPARSE_OK(cusparseSpMM_bufferSize(sw->sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                    CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                                    d.sp_w[0], a.sp_x, &zero, a.sp_y, CUDA_R_32F,
                                                    CUSPARSE_SPMM_ALG_DEFAULT, &buf));
                CUDA_OK(cudaMalloc(&a.sp_buf, buf ? buf : 1));
            }
            CUDA_OK(cudaDeviceSynchronize());
            double us_of[MAX_METHODS];
            for (int i = 0; i < sw->n_methods; i++) {
                const method *meth = &sw->methods[i];
                const int dense = meth->kind == SGEMM || meth->kind == TF32 || meth->kind == BF16;
                const int t = meth->values == NMT_SPMM_VALUES_FP16;
                if (dense && si > 0) { /* timed at the first sparsity: W's zeros cost the same */
                    us_of[i] = dense_us[ri][i];
                    continue;
                }
                a.meth = meth;
                char plan[64] = "";
                if (meth->kind == OURS) {
                    a.ours = d.ours[t];
                    a.copies = d.ours_copies[t];
                    const size_t need = nmt_cuda_spmm_workspace_size(a.ours[0], m, &meth->config);
                    if (need > ws_bytes) {
                        if (ws)
                            CUDA_OK(cudaFree(ws));
                        CUDA_OK(cudaMalloc(&ws, need));
                        ws_bytes = need;
                    }
                    a.ws = ws;
                    a.ws_bytes = ws_bytes;
                    const nmt_spmm_config p = nmt_cuda_spmm_plan(a.ours[0], m, &meth->config);
                    if (p.variant == NMT_SPMM_ROW)
                        snprintf(plan, sizeof plan, "row lanes %d rows %d", p.lanes, p.rows);
                    else
                        snprintf(plan, sizeof plan, "%s %d", nmt_cuda_spmm_variant_name(p.variant),
                                 p.tile);
                } else if (meth->kind == CUSPARSE) {
                    a.sp_w = d.sp_w;
                    a.copies = d.sp_copies;
                } else {
                    a.w32 = d.w32;
                    a.w16 = d.w16;
                    a.copies = d.dense_copies;
                }
                CUDA_OK(cudaMemset(d_y, 0xFF, (size_t)m * n * 4)); /* NaN until written */
                CUDA_OK(cudaDeviceSynchronize());
                const double us = bench_time_us(run_once, &a, sw->stream);
                double max_err, err_of_tol;
                check_sample(&s, meth->kind == OURS && t, d_y, n, &max_err, &err_of_tol);
                const int bad = meth->kind == OURS && !(err_of_tol <= 1.0);
                g_failures += bad;
                const double bytes = method_bytes(meth, &w, &d, m);
                const double floor_us = bytes / (sw->copy_gbps * 1e3);
                us_of[i] = us;
                if (dense)
                    dense_us[ri][i] = us;
                printf("{\"bench\":\"spmm\",\"method\":\"%s\",\"values\":\"%s\",\"plan\":\"%s\","
                       "\"n\":%d,\"k\":%d,\"rows\":%d,", meth->name, values_name(meth), plan, n, k,
                       m);
                if (dense)
                    printf("\"sparsity\":null,\"dense\":true,\"nnz\":%lld,",
                           (long long)n * k);
                else
                    printf("\"sparsity\":%.4f,\"dense\":false,\"nnz\":%d,", sw->sparsity[si],
                           w.nnz);
                printf("\"w_copies\":%d,\"median_us\":%.3f,\"bytes\":%.0f,\"floor_us\":%.3f,"
                       "\"copy_gbps\":%.1f,\"max_err\":%.3g,\"err_of_tol\":%.3g,\"ok\":%s}\n",
                       a.copies, us, bytes, floor_us, sw->copy_gbps, max_err, err_of_tol,
                       bad ? "false" : "true");
                fflush(stdout);
                if (bad)
                    fprintf(stderr, "MISMATCH %s (%s) m %d: error %.3g, %.3g of the tolerance\n",
                            meth->name, values_name(meth), m, max_err, err_of_tol);
            }
            fprintf(stderr, "%6.1f%% %6d |", 100.0 * sw->sparsity[si], m);
            for (int i = 0; i < sw->n_methods; i++)
                fprintf(stderr, " %16.2f", us_of[i]);
            fprintf(stderr, " | %8.2f |",
                    method_bytes(&sw->methods[0], &w, &d, m) / (sw->copy_gbps * 1e3));
            for (int i = 1; i < sw->n_methods; i++)
                fprintf(stderr, " %.2fx", us_of[i] / us_of[0]);
            fprintf(stderr, "\n");
            if (d.sp_copies) {
                CUSPARSE_OK(cusparseDestroyDnMat(a.sp_x));
                CUSPARSE_OK(cusparseDestroyDnMat(a.sp_y));
                CUDA_OK(cudaFree(a.sp_buf));
            }
            free_sample(&s);
            free(x);
            CUDA_OK(cudaFree(d_x));
            CUDA_OK(cudaFree(d_x16));
            CUDA_OK(cudaFree(d_y));
        }
        free_w(&d);
        free_csr(&w);
    }
    if (ws)
        CUDA_OK(cudaFree(ws));
}

static const char *kUsage =
    "usage: bench_spmm [--shapes NxK,..] [--rows M,..] [--sparsity S,..]\n"
    "                  [--variant NAME,..] [--values fp32,fp16]\n"
    "       bench_spmm --list\n"
    "NAME: auto, row[/LANES[xROWS]], tile[/TILE] (ours), cusparse, sgemm, tf32, bf16\n";

static const char *opt_or_env(int argc, char **argv, const char *option, const char *env)
{
    const char *v = bench_option(argc, argv, option);
    return v ? v : getenv(env);
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"--shapes=", "--rows=",   "--sparsity=", "--variant=",
                                        "--values=", "--list",    NULL};
    bench_options_check(argc, argv, known, kUsage);
    if (bench_flag(argc, argv, "--list")) {
        printf("auto\nrow\nrow/4 row/8 row/16 row/32 (lanes; xROWS: x1, x4, x8)\n"
               "tile\ntile/8 tile/16 tile/32 tile/64\ncusparse\nsgemm\ntf32\nbf16\n");
        return 0;
    }
    sweep sw = {};
    static const int d_shapes[] = {4096, 2560, 4096, 2048, 1024, 2048, 32000, 1024};
    static const int d_rows[] = {5, 20, 80, 320, 1280, 5120};
    static const double d_sparsity[] = {0.5, 0.7, 0.8, 0.9, 0.95, 0.98};
    int shape_numbers[2 * MAX_LIST];
    const int n_numbers = parse_ints_text(opt_or_env(argc, argv, "--shapes", "NMT_BENCH_SHAPES"),
                                          d_shapes, 8, shape_numbers, 2 * MAX_LIST);
    for (int i = 0; i + 1 < n_numbers; i += 2) {
        sw.shapes[sw.n_shapes][0] = shape_numbers[i];
        sw.shapes[sw.n_shapes++][1] = shape_numbers[i + 1];
    }
    sw.n_rows = parse_ints_text(opt_or_env(argc, argv, "--rows", "NMT_BENCH_ROWS"), d_rows, 6,
                                sw.rows, MAX_LIST);
    sw.n_sparsity = parse_doubles_text(opt_or_env(argc, argv, "--sparsity", "NMT_BENCH_SPARSITY"),
                                       d_sparsity, 6, sw.sparsity, MAX_LIST);
    const char *variants = bench_option(argc, argv, "--variant");
    const char *values = bench_option(argc, argv, "--values");
    variants = variants ? variants : "auto,cusparse,sgemm,tf32,bf16";
    values = values ? values : "fp32,fp16";
    char name[40];
    for (const char *p = variants; bench_next_name(&p, name, sizeof name);) {
        method m;
        if (!parse_method(name, &m)) {
            fprintf(stderr, "bench_spmm: no method \"%s\"\n%s", name, kUsage);
            return 2;
        }
        char value[16];
        for (const char *q = m.kind == OURS ? values : "fp32";
             bench_next_name(&q, value, sizeof value);) {
            if (strcmp(value, "fp32") != 0 && strcmp(value, "fp16") != 0) {
                fprintf(stderr, "bench_spmm: --values takes fp32 and fp16, not \"%s\"\n", value);
                return 2;
            }
            if (sw.n_methods == MAX_METHODS)
                break;
            m.values = strcmp(value, "fp16") == 0 ? NMT_SPMM_VALUES_FP16 : NMT_SPMM_VALUES_FP32;
            sw.methods[sw.n_methods++] = m;
        }
    }
    for (int i = 0; i < sw.n_rows; i++)
        if (sw.rows[i] < 1) {
            fprintf(stderr, "bench_spmm: rows must be >= 1\n");
            return 2;
        }
    for (int i = 0; i < sw.n_sparsity; i++)
        if (!(sw.sparsity[i] >= 0.0 && sw.sparsity[i] < 1.0)) {
            fprintf(stderr, "bench_spmm: a sparsity is a fraction of zeros in [0, 1)\n");
            return 2;
        }
    if (sw.n_methods == 0 || sw.n_shapes == 0) {
        fprintf(stderr, "%s", kUsage);
        return 2;
    }

    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&sw.stream, cudaStreamNonBlocking));
    sw.copy_gbps = bench_copy_bandwidth(sw.stream);
    CUSPARSE_OK(cusparseCreate(&sw.sp));
    CUSPARSE_OK(cusparseSetStream(sw.sp, sw.stream));
    CUBLAS_OK(cublasCreate(&sw.blas));
    CUBLAS_OK(cublasSetStream(sw.blas, sw.stream));
    CUBLAS_OK(cublasSetMathMode(sw.blas, CUBLAS_DEFAULT_MATH)); /* sgemm: no TF32 */
    for (int i = 0; i < sw.n_shapes; i++)
        if (sw.shapes[i][0] >= 1 && sw.shapes[i][1] >= 1)
            run_shape(&sw, sw.shapes[i][0], sw.shapes[i][1]);
    CUBLAS_OK(cublasDestroy(sw.blas));
    CUSPARSE_OK(cusparseDestroy(sw.sp));
    CUDA_OK(cudaStreamDestroy(sw.stream));
    if (g_failures)
        fprintf(stderr, "bench_spmm: %d result(s) outside the tolerance\n", g_failures);
    return g_failures ? 1 : 0;
}
