/* bench_gemm_algos.cu: the 16-bit GEMMs of a decoder step, every algorithm
 * cuBLASLt's heuristic offers for a shape, timed one by one, against a
 * baseline: cublasGemmEx without a bias (the layers and W_c), cuBLASLt's
 * first choice with the bias epilogue (the output layer). The engine runs
 * cuBLASLt's first choice for the shape's row class (kernels/cuda/linear_lt.cu),
 * which is algorithm 0 here where the class is the shape's rows.
 *
 * The heuristic ranks its algorithms by a model, not by time: this program
 * shows how far its first choice is from the fastest it offers, shape by
 * shape, and whether the algorithms give the same bits (the largest |y -
 * y_first| over the output; 0 means bit for bit the same on these inputs).
 * The shapes (rows m, outputs n, inputs k) are the shipped model's (E 256,
 * H 512, V 4778, the output layer's width padded to 4800 as the engine's
 * 16-bit copy of W_out) unless given:
 *   bench_gemm_algos                              # rows 320,5120; all sites
 *   bench_gemm_algos --rows 5120 --types fp16 --algos 24
 *   bench_gemm_algos --shapes 5120x4778x512       # m x n x k, bias epilogue
 *   bench_gemm_algos --shapes 5120x4800x512 --no-bias
 *   bench_gemm_algos --rows 5120 --invariance 1,5,16,320,5120 --graph --types fp16,fp32
 * --invariance compares each row of X W^T at m rows, bit for bit, with the
 * same row computed at the largest m, under three ways of choosing the
 * GEMM: cublasGemmEx, cuBLASLt's first choice, and its first choice with no
 * split of k allowed (CUBLASLT_REDUCTION_SCHEME_NONE); fp32 is plain fp32
 * (the context disables TF32). --graph times CUDA graph replays.
 * Output: JSON lines on stdout, a table on stderr. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cuda_ctx.h"

#define LT_OK(call)                                                                       \
    do {                                                                                  \
        cublasStatus_t st_ = (call);                                                      \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                               \
            fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #call,   \
                    (int)st_);                                                            \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

enum { MAX_ALGOS = 64, MAX_SHAPES = 16 };

typedef struct shape {
    int m, n, k, bias;
    const char *site;
} shape;

typedef struct call {
    cublasLtHandle_t lt;
    cublasHandle_t blas;
    cudaStream_t stream;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    const cublasLtMatmulAlgo_t *algo; /* NULL: cublasGemmEx */
    cudaDataType_t type;
    int m, n, k, ldy; /* ldy: n rounded up to 32 floats, as the engine's logits */
    void *x, *w, *workspace;
    float *y;
    size_t workspace_bytes;
} call;

static void run_call(void *arg, int iteration)
{
    call *c = (call *)arg;
    const float alpha = 1.0f, beta = 0.0f;
    (void)iteration;
    if (!c->algo) {
        LT_OK(cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, c->n, c->m, c->k, &alpha, c->w,
                           c->type, c->k, c->x, c->type, c->k, &beta, c->y, CUDA_R_32F, c->ldy,
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        return;
    }
    LT_OK(cublasLtMatmul(c->lt, c->op, &alpha, c->w, c->a, c->x, c->b, &beta, c->y, c->d, c->y,
                         c->d, c->algo, c->workspace, c->workspace_bytes, c->stream));
}

/* --graph: the calls captured into a CUDA graph and timed as its replays,
 * the device's time without the host's (the engine replays a step's graph;
 * cublasGemmEx runs its heuristic on the host at every eager call). */
static int g_graph = 0;

static double time_us(call *c)
{
    if (!g_graph)
        return bench_time_us(run_call, c, c->stream);
    const int batch = bench_batch(), repeats = bench_repeats();
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    run_call(c, 0); /* cublasGemmEx's first call outside the capture */
    CUDA_OK(cudaStreamSynchronize(c->stream));
    CUDA_OK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    for (int j = 0; j < batch; j++)
        run_call(c, j);
    CUDA_OK(cudaStreamEndCapture(c->stream, &graph));
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_OK(cudaGraphLaunch(exec, c->stream));
    cudaEvent_t start, stop;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&stop));
    float *ms = (float *)malloc((size_t)repeats * sizeof(float));
    if (!ms)
        exit(1);
    for (int i = 0; i < repeats; i++) {
        CUDA_OK(cudaEventRecord(start, c->stream));
        CUDA_OK(cudaGraphLaunch(exec, c->stream));
        CUDA_OK(cudaEventRecord(stop, c->stream));
        CUDA_OK(cudaEventSynchronize(stop));
        CUDA_OK(cudaEventElapsedTime(&ms[i], start, stop));
        ms[i] /= (float)batch;
    }
    qsort(ms, (size_t)repeats, sizeof(float), cmp_float);
    const double median = ms[repeats / 2] * 1000.0;
    free(ms);
    CUDA_OK(cudaEventDestroy(start));
    CUDA_OK(cudaEventDestroy(stop));
    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    return median;
}

static int config(const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr)
{
    uint32_t v = 0; /* every attribute read here is at most 32 bits */
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, attr, &v, sizeof v, &written) !=
        CUBLAS_STATUS_SUCCESS)
        return -1;
    return (int)v;
}

static size_t type_bytes(cudaDataType_t type)
{
    return type == CUDA_R_32F ? 4 : 2;
}

static const char *type_name(cudaDataType_t type)
{
    return type == CUDA_R_32F ? "fp32" : type == CUDA_R_16F ? "fp16" : "bf16";
}

static void fill_random(void *dev, size_t count, cudaDataType_t type, unsigned seed)
{
    uint16_t *h = (uint16_t *)malloc(count * type_bytes(type));
    if (!h)
        exit(1);
    srand(seed);
    for (size_t i = 0; i < count; i++) {
        const float v = ((float)rand() / RAND_MAX - 0.5f) * 0.5f;
        if (type == CUDA_R_32F) {
            memcpy((float *)(void *)h + i, &v, 4);
        } else if (type == CUDA_R_16F) {
            __half x = __float2half(v);
            memcpy(&h[i], &x, 2);
        } else {
            __nv_bfloat16 x = __float2bfloat16(v);
            memcpy(&h[i], &x, 2);
        }
    }
    CUDA_OK(cudaMemcpy(dev, h, count * type_bytes(type), cudaMemcpyHostToDevice));
    free(h);
}

static double max_diff(const float *a, const float *b, size_t n)
{
    return bench_max_abs_err(a, b, n);
}

/* c for m rows of n x k on ctx's handles, stream and workspace (no
 * descriptors yet: describe_call). */
static void init_call(call *c, nmt_cuda_ctx *ctx, cudaDataType_t type, int m, int n, int k,
                      void *x, void *w, float *y)
{
    memset(c, 0, sizeof *c);
    c->lt = (cublasLtHandle_t)nmt_cuda_ctx_cublaslt(ctx);
    c->blas = (cublasHandle_t)nmt_cuda_ctx_cublas(ctx);
    c->stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    c->workspace = nmt_cuda_ctx_workspace(ctx, &c->workspace_bytes);
    c->type = type;
    c->m = m; c->n = n; c->k = k; c->ldy = (n + 31) / 32 * 32;
    c->x = x; c->w = w; c->y = y;
}

/* c's cuBLASLt descriptors (the bias epilogue when bias is not NULL) and up
 * to max of the heuristic's algorithms into res (*n_res of them; with
 * nosplit, none that splits k). Returns the heuristic's status. */
static cublasStatus_t describe_call(call *c, const float *bias, int nosplit, int max,
                                    cublasLtMatmulHeuristicResult_t *res, int *n_res)
{
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const cublasLtEpilogue_t epi = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    LT_OK(cublasLtMatmulDescCreate(&c->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_OK(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_OK(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT_OK(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (bias)
        LT_OK(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof bias));
    LT_OK(cublasLtMatrixLayoutCreate(&c->a, c->type, c->k, c->n, c->k));
    LT_OK(cublasLtMatrixLayoutCreate(&c->b, c->type, c->k, c->m, c->k));
    LT_OK(cublasLtMatrixLayoutCreate(&c->d, CUDA_R_32F, c->n, c->m, c->ldy));
    cublasLtMatmulPreference_t pref;
    LT_OK(cublasLtMatmulPreferenceCreate(&pref));
    LT_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &c->workspace_bytes, sizeof c->workspace_bytes));
    if (nosplit) {
        const uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
        LT_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                   &none, sizeof none));
    }
    *n_res = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(c->lt, c->op, c->a, c->b, c->d, c->d,
                                                             pref, max, res, n_res);
    cublasLtMatmulPreferenceDestroy(pref);
    return st;
}

/* The descriptors describe_call made, if any. */
static void free_call(call *c)
{
    if (!c->op)
        return;
    cublasLtMatrixLayoutDestroy(c->a);
    cublasLtMatrixLayoutDestroy(c->b);
    cublasLtMatrixLayoutDestroy(c->d);
    cublasLtMatmulDescDestroy(c->op);
}

static void bench_shape(nmt_cuda_ctx *ctx, const shape *s, cudaDataType_t type, int max_algos)
{
    const char *tname = type_name(type);
    call c;
    init_call(&c, ctx, type, s->m, s->n, s->k, NULL, NULL, NULL);
    const size_t ny = (size_t)s->m * c.ldy;
    float *bias = NULL;
    CUDA_OK(cudaMalloc(&c.x, (size_t)s->m * s->k * type_bytes(type)));
    CUDA_OK(cudaMalloc(&c.w, (size_t)s->n * s->k * type_bytes(type)));
    CUDA_OK(cudaMalloc(&c.y, ny * sizeof(float)));
    CUDA_OK(cudaMalloc(&bias, (size_t)s->n * sizeof(float)));
    CUDA_OK(cudaMemset(bias, 0, (size_t)s->n * sizeof(float)));
    fill_random(c.x, (size_t)s->m * s->k, type, 1u + (unsigned)s->m);
    fill_random(c.w, (size_t)s->n * s->k, type, 7u + (unsigned)s->n);
    CUDA_OK(cudaDeviceSynchronize()); /* the fills (legacy stream) before the GEMMs' stream */
    float *first = (float *)malloc(ny * sizeof(float)), *got = (float *)malloc(ny * sizeof(float));
    if (!first || !got)
        exit(1);

    cublasLtMatmulHeuristicResult_t res[MAX_ALGOS];
    int n_res = 0;
    LT_OK(describe_call(&c, s->bias ? bias : NULL, 0, max_algos, res, &n_res));
    const double flop = 2.0 * s->m * s->n * s->k;

    /* The baseline first: its output is the reference for the bits. */
    double base_us;
    if (s->bias) {
        c.algo = &res[0].algo;
    } else {
        c.algo = NULL;
    }
    run_call(&c, 0);
    CUDA_OK(cudaStreamSynchronize(c.stream));
    CUDA_OK(cudaMemcpy(first, c.y, ny * sizeof(float), cudaMemcpyDeviceToHost));
    base_us = time_us(&c);
    fprintf(stderr, "\n%s %s m %d n %d k %d%s: baseline (%s) %.2f us, %.0f TFLOP/s, %d algos\n",
            s->site, tname, s->m, s->n, s->k, s->bias ? " +bias" : "",
            s->bias ? "Lt first choice" : "cublasGemmEx", base_us, flop / base_us * 1e-6, n_res);
    printf("{\"bench\":\"gemm_algos\",\"site\":\"%s\",\"type\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,"
           "\"bias\":%d,\"algo\":\"%s\",\"us\":%.3f}\n",
           s->site, tname, s->m, s->n, s->k, s->bias, s->bias ? "lt_first" : "gemmex", base_us);
    fprintf(stderr, "  %3s %8s %6s %5s %4s %5s %6s %5s %6s %7s %9s %10s\n", "#", "us", "TF/s",
            "id", "tile", "stage", "splitK", "red", "swizz", "cluster", "waves", "max|diff|");
    double best = base_us;
    int best_i = -1;
    for (int i = 0; i < n_res; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS)
            continue;
        c.algo = &res[i].algo;
        run_call(&c, 0);
        CUDA_OK(cudaStreamSynchronize(c.stream));
        CUDA_OK(cudaMemcpy(got, c.y, ny * sizeof(float), cudaMemcpyDeviceToHost));
        const double diff = max_diff(got, first, ny);
        const double us = time_us(&c);
        const cublasLtMatmulAlgo_t *a = &res[i].algo;
        const int id = config(a, CUBLASLT_ALGO_CONFIG_ID),
                  tile = config(a, CUBLASLT_ALGO_CONFIG_TILE_ID),
                  stages = config(a, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                  split = config(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                  red = config(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
                  swz = config(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
                  cluster = config(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
        fprintf(stderr, "  %3d %8.2f %6.0f %5d %4d %5d %6d %5d %6d %7d %9.2f %10.3g\n", i, us,
                flop / us * 1e-6, id, tile, stages, split, red, swz, cluster,
                (double)res[i].wavesCount, diff);
        printf("{\"bench\":\"gemm_algos\",\"site\":\"%s\",\"type\":\"%s\",\"m\":%d,\"n\":%d,"
               "\"k\":%d,\"algo\":%d,\"us\":%.3f,\"id\":%d,\"tile\":%d,\"stages\":%d,"
               "\"splitk\":%d,\"reduction\":%d,\"max_diff\":%.3g}\n",
               s->site, tname, s->m, s->n, s->k, i, us, id, tile, stages, split, red, diff);
        if (us < best) {
            best = us;
            best_i = i;
        }
    }
    fprintf(stderr, "  best: %s %.2f us = %.2fx the baseline\n",
            best_i < 0 ? "the baseline" : "an algorithm above", best, base_us / best);
    free_call(&c);
    CUDA_OK(cudaFree(c.x));
    CUDA_OK(cudaFree(c.w));
    CUDA_OK(cudaFree(c.y));
    CUDA_OK(cudaFree(bias));
    free(first);
    free(got);
}

/* ---- batch invariance: row r of X W^T at m rows against the same row at
 * max_m rows, under each way of choosing the GEMM ------------------------
 * gemmex, lt, lt_nosplit: the heuristic at every m; lt_pinned: the no-split
 * algorithm chosen at max_m, run at every m; own_*: plain kernels whose
 * per-element sums are one chain over k (fp32: fmaf from k = 0; 16-bit:
 * mma.sync over k16 or k8 blocks from k = 0, x as the A or the B operand),
 * to learn whether a few-row kernel can give cuBLASLt's bits. */

typedef enum {
    POLICY_GEMMEX,
    POLICY_LT,
    POLICY_LT_NOSPLIT,
    POLICY_LT_PINNED,
    POLICY_OWN_A,  /* fp32: fma chain; 16-bit: mma m16n8k16, x the A operand */
    POLICY_OWN_B,  /* 16-bit: mma m16n8k16, w the A operand */
    POLICY_OWN_K8, /* 16-bit: mma m16n8k8, x the A operand */
    POLICY_COUNT
} policy;
static const char *const kPolicyNames[] = {"gemmex", "lt", "lt_nosplit", "lt_pinned",
                                           "own_a",  "own_b", "own_k8"};

typedef struct plan {
    call c;
    cublasLtMatmulAlgo_t algo;
    int found;
    policy p;
    const float *bias;
} plan;

static __device__ uint32_t load_pair(const uint16_t *p, int valid)
{
    return valid ? *(const uint32_t *)p : 0u;
}

template <int BF16>
static __device__ void mma_k16(float d[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                               uint32_t b0, uint32_t b1)
{
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <int BF16>
static __device__ void mma_k8(float d[4], uint32_t a0, uint32_t a1, uint32_t b0)
{
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5}, {%6}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(b0));
    else
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5}, {%6}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(b0));
}

/* One warp a 16 x 8 tile of P . Q^T (P [p_rows, k], Q [q_rows, k], 16-bit,
 * k a multiple of 16): P the A operand, Q^T the B operand. out(i, j) is
 * y[i * ld_i + j * ld_j]. */
template <int BF16, int K8>
static __global__ void own_mma_kernel(int p_rows, int q_rows, int k, const uint16_t *P,
                                      const uint16_t *Q, const float *bias, int bias_on_i,
                                      float *y, long ld_i, long ld_j)
{
    const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    const int i0 = blockIdx.y * 16, j0 = blockIdx.x * 8;
    const int ia = i0 + g, ib = i0 + g + 8, j = j0 + g;
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    const uint16_t *pa = P + (size_t)(ia < p_rows ? ia : 0) * k;
    const uint16_t *pb = P + (size_t)(ib < p_rows ? ib : 0) * k;
    const uint16_t *q = Q + (size_t)(j < q_rows ? j : 0) * k;
    for (int k0 = 0; k0 < k; k0 += 16) {
        const int c = k0 + 2 * t;
        if (K8) {
            mma_k8<BF16>(d, load_pair(pa + c, ia < p_rows), load_pair(pb + c, ib < p_rows),
                         load_pair(q + c, j < q_rows));
            mma_k8<BF16>(d, load_pair(pa + c + 8, ia < p_rows), load_pair(pb + c + 8, ib < p_rows),
                         load_pair(q + c + 8, j < q_rows));
        } else {
            mma_k16<BF16>(d, load_pair(pa + c, ia < p_rows), load_pair(pb + c, ib < p_rows),
                          load_pair(pa + c + 8, ia < p_rows), load_pair(pb + c + 8, ib < p_rows),
                          load_pair(q + c, j < q_rows), load_pair(q + c + 8, j < q_rows));
        }
    }
    for (int h = 0; h < 4; h++) {
        const int oi = i0 + g + (h >> 1) * 8, oj = j0 + 2 * t + (h & 1);
        if (oi < p_rows && oj < q_rows) {
            const float b = bias ? bias[bias_on_i ? oi : oj] : 0.f;
            y[oi * ld_i + oj * ld_j] = d[h] + b;
        }
    }
}

/* fp32: one thread an output, one fmaf chain over k from 0. */
static __global__ void own_fma_kernel(int m, int n, int k, const float *x, const float *w,
                                      const float *bias, float *y, int ldy)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
    if (j >= n)
        return;
    const float *xr = x + (size_t)r * k, *wj = w + (size_t)j * k;
    float acc = 0.f;
    for (int p = 0; p < k; p++)
        acc = fmaf(xr[p], wj[p], acc);
    y[(size_t)r * ldy + j] = acc + (bias ? bias[j] : 0.f);
}

static int own_runs(const call *c, policy p)
{
    if (c->type == CUDA_R_32F)
        return p == POLICY_OWN_A;
    return c->k % 16 == 0;
}

static void run_own(const call *c, policy p, const float *bias)
{
    const uint16_t *x = (const uint16_t *)c->x, *w = (const uint16_t *)c->w;
    const int bf = c->type == CUDA_R_16BF;
    if (c->type == CUDA_R_32F) {
        own_fma_kernel<<<dim3((c->n + 127) / 128, c->m), 128, 0, c->stream>>>(
            c->m, c->n, c->k, (const float *)c->x, (const float *)c->w, bias, c->y, c->ldy);
    } else if (p == POLICY_OWN_B) { /* i: w's rows (outputs), j: x's rows */
        const dim3 grid((c->m + 7) / 8, (c->n + 15) / 16);
        if (bf)
            own_mma_kernel<1, 0><<<grid, 32, 0, c->stream>>>(c->n, c->m, c->k, w, x, bias, 1,
                                                             c->y, 1, c->ldy);
        else
            own_mma_kernel<0, 0><<<grid, 32, 0, c->stream>>>(c->n, c->m, c->k, w, x, bias, 1,
                                                             c->y, 1, c->ldy);
    } else { /* i: x's rows, j: w's rows */
        const dim3 grid((c->n + 7) / 8, (c->m + 15) / 16);
        const int k8 = p == POLICY_OWN_K8;
        if (bf)
            (k8 ? own_mma_kernel<1, 1> : own_mma_kernel<1, 0>)<<<grid, 32, 0, c->stream>>>(
                c->m, c->n, c->k, x, w, bias, 0, c->y, c->ldy, 1);
        else
            (k8 ? own_mma_kernel<0, 1> : own_mma_kernel<0, 0>)<<<grid, 32, 0, c->stream>>>(
                c->m, c->n, c->k, x, w, bias, 0, c->y, c->ldy, 1);
    }
    CUDA_OK(cudaGetLastError());
}

static void run_plan(void *arg, int iteration)
{
    plan *pl = (plan *)arg;
    if (pl->p >= POLICY_OWN_A)
        run_own(&pl->c, pl->p, pl->bias);
    else
        run_call(&pl->c, iteration);
}

/* The call for m rows under policy p (descriptors created; free_call);
 * pinned: lt_pinned's algorithm, chosen at max_m. */
static void make_plan(plan *pl, nmt_cuda_ctx *ctx, policy p, cudaDataType_t type, int m, int n,
                      int k, const float *bias, void *x, void *w, float *y,
                      const cublasLtMatmulAlgo_t *pinned)
{
    memset(pl, 0, sizeof *pl);
    init_call(&pl->c, ctx, type, m, n, k, x, w, y);
    pl->found = 1;
    pl->p = p;
    pl->bias = bias;
    if (p == POLICY_GEMMEX)
        return;
    if (p >= POLICY_OWN_A) {
        pl->found = own_runs(&pl->c, p);
        return;
    }
    cublasLtMatmulHeuristicResult_t res;
    int n_res = 0;
    const cublasStatus_t st =
        describe_call(&pl->c, bias, p != POLICY_LT, 1, &res, &n_res);
    pl->found = st == CUBLAS_STATUS_SUCCESS && n_res > 0 && res.state == CUBLAS_STATUS_SUCCESS;
    if (pl->found)
        pl->algo = res.algo;
    if (p == POLICY_LT_PINNED && pinned) {
        pl->algo = *pinned;
        pl->found = 1;
    }
    pl->c.algo = &pl->algo;
}

/* Rows of got (m rows) whose n values differ in any bit from ref's. */
static int rows_differing(const float *got, const float *ref, int m, int n, int ld)
{
    int bad = 0;
    for (int r = 0; r < m; r++)
        bad += memcmp(got + (size_t)r * ld, ref + (size_t)r * ld, (size_t)n * sizeof(float)) != 0;
    return bad;
}

static double plan_us(plan *pl)
{
    if (pl->p < POLICY_OWN_A)
        return time_us(&pl->c);
    return bench_time_us(run_plan, pl, pl->c.stream);
}

static void invariance(nmt_cuda_ctx *ctx, const shape *s, cudaDataType_t type, const int *ms,
                       int n_ms)
{
    const char *tname = type_name(type);
    const int max_m = s->m, n = s->n, k = s->k, ld = (n + 31) / 32 * 32;
    const size_t ny = (size_t)max_m * ld;
    void *x, *w;
    float *y, *bias = NULL;
    CUDA_OK(cudaMalloc(&x, (size_t)max_m * k * type_bytes(type)));
    CUDA_OK(cudaMalloc(&w, (size_t)n * k * type_bytes(type)));
    CUDA_OK(cudaMalloc(&y, ny * sizeof(float)));
    fill_random(x, (size_t)max_m * k, type, 3u + (unsigned)k);
    fill_random(w, (size_t)n * k, type, 5u + (unsigned)n);
    if (s->bias) {
        CUDA_OK(cudaMalloc(&bias, (size_t)n * sizeof(float)));
        fill_random(bias, (size_t)n, CUDA_R_32F, 7u + (unsigned)n);
    }
    CUDA_OK(cudaDeviceSynchronize()); /* the fills (legacy stream) before the GEMMs' stream */
    float *ref[POLICY_COUNT], *got = (float *)malloc(ny * sizeof(float));
    int have[POLICY_COUNT] = {0};
    if (!got)
        exit(1);
    fprintf(stderr, "\ninvariance %s %s n %d k %d%s: rows differing from the same rows at %d "
                    "(us; algo id/tile/splitK/reduction)\n",
            s->site, tname, n, k, s->bias ? " +bias" : "", max_m);
    cublasLtMatmulAlgo_t pinned;
    int have_pinned = 0;
    for (int p = 0; p < POLICY_COUNT; p++) {
        ref[p] = (float *)malloc(ny * sizeof(float));
        if (!ref[p])
            exit(1);
        plan pl;
        make_plan(&pl, ctx, (policy)p, type, max_m, n, k, bias, x, w, y, NULL);
        if (!pl.found || (p == POLICY_GEMMEX && s->bias) ||
            (p == POLICY_LT_PINNED && !pl.found)) {
            free_call(&pl.c);
            memset(ref[p], 0, ny * sizeof(float));
            continue;
        }
        if (p == POLICY_LT_PINNED) {
            pinned = pl.algo;
            have_pinned = 1;
        }
        CUDA_OK(cudaMemsetAsync(y, 0xff, ny * sizeof(float), pl.c.stream));
        run_plan(&pl, 0);
        CUDA_OK(cudaStreamSynchronize(pl.c.stream));
        CUDA_OK(cudaMemcpy(ref[p], y, ny * sizeof(float), cudaMemcpyDeviceToHost));
        free_call(&pl.c);
        have[p] = 1;
        fprintf(stderr, "  %-10s", kPolicyNames[p]);
        for (int i = 0; i < n_ms; i++) {
            const int m = ms[i];
            if (m > max_m)
                continue;
            make_plan(&pl, ctx, (policy)p, type, m, n, k, bias, x, w, y,
                      have_pinned ? &pinned : NULL);
            if (!pl.found) {
                fprintf(stderr, " | %d: none", m);
                free_call(&pl.c);
                continue;
            }
            CUDA_OK(cudaMemsetAsync(y, 0xff, ny * sizeof(float), pl.c.stream));
            run_plan(&pl, 0);
            CUDA_OK(cudaStreamSynchronize(pl.c.stream));
            CUDA_OK(cudaMemcpy(got, y, (size_t)m * ld * sizeof(float), cudaMemcpyDeviceToHost));
            const int bad = rows_differing(got, ref[p], m, n, ld);
            const double us = plan_us(&pl);
            const cublasLtMatmulAlgo_t *a = &pl.algo;
            const int lt = p != POLICY_GEMMEX && p < POLICY_OWN_A;
            fprintf(stderr, " | %d: %d bad %.1fus", m, bad, us);
            if (lt)
                fprintf(stderr, " %d/%d/%d/%d", config(a, CUBLASLT_ALGO_CONFIG_ID),
                        config(a, CUBLASLT_ALGO_CONFIG_TILE_ID),
                        config(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                        config(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME));
            printf("{\"bench\":\"gemm_invariance\",\"site\":\"%s\",\"type\":\"%s\",\"n\":%d,"
                   "\"k\":%d,\"policy\":\"%s\",\"m\":%d,\"rows_differing\":%d,\"us\":%.3f}\n",
                   s->site, tname, n, k, kPolicyNames[p], m, bad, us);
            free_call(&pl.c);
        }
        fprintf(stderr, "\n");
    }
    fprintf(stderr, "  at %d rows, rows differing from lt_pinned:", max_m);
    for (int p = 0; p < POLICY_COUNT; p++)
        if (have[p] && have[POLICY_LT_PINNED] && p != POLICY_LT_PINNED)
            fprintf(stderr, " %s %d", kPolicyNames[p],
                    rows_differing(ref[p], ref[POLICY_LT_PINNED], max_m, n, ld));
    fprintf(stderr, "\n");
    for (int p = 0; p < POLICY_COUNT; p++)
        free(ref[p]);
    free(got);
    CUDA_OK(cudaFree(x));
    CUDA_OK(cudaFree(w));
    CUDA_OK(cudaFree(y));
    if (bias)
        CUDA_OK(cudaFree(bias));
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"--rows=", "--types=", "--algos=", "--shapes=", "--emb=",
                                        "--hidden=", "--vocab=", "--invariance=", "--graph",
                                        "--no-bias", NULL};
    static const char usage[] =
        "usage: bench_gemm_algos [--rows 320,5120] [--types fp16,bf16] [--algos 16]\n"
        "       [--emb 256 --hidden 512 --vocab 4778] [--shapes MxNxK,...] [--no-bias]\n"
        "       [--invariance 1,5,8,16,320,5120] (rows against the largest of --rows)\n"
        "       [--graph] (time CUDA graph replays: the device's time, not the host's)\n"
        "       [--types fp16,bf16,fp32]\n";
    bench_options_check(argc, argv, known, usage);
    int device_count = 0;
    if (cudaGetDeviceCount(&device_count) != cudaSuccess || device_count < 1) {
        fprintf(stderr, "no CUDA device\n");
        return 77;
    }
    const char *o;
    const int E = (o = bench_option(argc, argv, "--emb")) ? atoi(o) : 256;
    const int H = (o = bench_option(argc, argv, "--hidden")) ? atoi(o) : 512;
    const int V = (o = bench_option(argc, argv, "--vocab")) ? atoi(o) : 4778;
    int max_algos = (o = bench_option(argc, argv, "--algos")) ? atoi(o) : 16;
    max_algos = max_algos < 1 ? 1 : max_algos > MAX_ALGOS ? MAX_ALGOS : max_algos;
    static const int default_rows[] = {320, 5120};
    int rows[8];
    const int n_rows =
        parse_ints_text(bench_option(argc, argv, "--rows"), default_rows, 2, rows, 8);
    shape shapes[MAX_SHAPES];
    int n_shapes = 0;
    const char *list = bench_option(argc, argv, "--shapes");
    const int no_bias = bench_flag(argc, argv, "--no-bias");
    if (list) {
        int v[3 * MAX_SHAPES];
        const int n = parse_ints_text(list, NULL, 0, v, 3 * MAX_SHAPES);
        for (int i = 0; i + 2 < n; i += 3)
            shapes[n_shapes++] = (shape){v[i], v[i + 1], v[i + 2], !no_bias, "given"};
    } else {
        for (int r = 0; r < n_rows && n_shapes + 4 <= MAX_SHAPES; r++) {
            /* W_out's words padded to 32, as the engine's 16-bit copy */
            shapes[n_shapes++] = (shape){rows[r], (V + 31) / 32 * 32, H, 1, "output"};
            shapes[n_shapes++] = (shape){rows[r], 4 * H, E + 2 * H, 0, "layer0"};
            shapes[n_shapes++] = (shape){rows[r], 4 * H, 2 * H, 0, "layer1"};
            shapes[n_shapes++] = (shape){rows[r], H, 2 * H, 0, "attn_c"};
        }
    }
    const char *types = bench_option(argc, argv, "--types");
    if (!types)
        types = "fp16,bf16";
    g_graph = bench_flag(argc, argv, "--graph");
    const char *inv_list = bench_option(argc, argv, "--invariance");
    int inv_ms[32];
    const int n_inv = inv_list ? parse_ints_text(inv_list, NULL, 0, inv_ms, 32) : 0;
    nmt_cuda_ctx *ctx = NULL;
    NMT_OK(nmt_cuda_ctx_create(0, &ctx, &err));
    char name[16];
    const char *p = types;
    while (bench_next_name(&p, name, sizeof name)) {
        const cudaDataType_t type = strcmp(name, "bf16") == 0   ? CUDA_R_16BF
                                    : strcmp(name, "fp32") == 0 ? CUDA_R_32F
                                                                : CUDA_R_16F;
        for (int i = 0; i < n_shapes; i++) {
            if (inv_list)
                invariance(ctx, &shapes[i], type, inv_ms, n_inv);
            else
                bench_shape(ctx, &shapes[i], type, max_algos);
        }
    }
    nmt_cuda_ctx_free(ctx);
    return 0;
}
