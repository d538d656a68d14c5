/* bench_skinny.cu: the GEMMs of a batch-1 decoder step (few rows) by name:
 * the skinny kernel (nmt_cuda_linear_skinny, kernels/linear.h) against the
 * cuBLAS paths the engine otherwise takes at those rows.
 *
 * One timed call is a step's sequence, as model/cuda runs it: decoder layer
 * 0 ([4H, E + 2H]), layer 1 ([4H, 2H]), W_c ([H, 2H]) with its tanh, the
 * output layer ([V, H]) with its bias; and, separately, the encoder's
 * recurrence ([4 H/2, H/2], one row a sentence). By default the weights
 * stay the same from call to call, as in the decode loop, where a step
 * re-reads them (the shipped model's 30 MB of fp32 weights against the
 * 50 MB L2); with --copies N a call takes the next of N copies, so with
 * enough of them every call reads its weights from memory. The floor is
 * their bytes over the device-to-device copy bandwidth, which L2 reuse may
 * beat. Each variant's outputs are checked against the CPU
 * twin (nmt_cpu_linear on the values multiplied) on the last call: the
 * largest error over sum |x w|.
 *   bench_skinny                                 # E 256, H 512, V 4778; rows 1,5,8
 *   bench_skinny --rows 5 --variant cublas,skinny_w16 --hidden 1024 --emb 512 --vocab 35000
 *   bench_skinny --variant skinny_w16/1x2,skinny_w16/2x2x1,skinny_w16/1x1x4
 *   bench_skinny --copies 8                      # weights from memory, not L2
 *   bench_skinny --list
 * A skinny variant's name may end in /OUTPUTSxUNROLL[xSPLIT]: its policy
 * (nmt_skinny_policy; a field left out or 0: the library's). Variants:
 * cublas (fp32 sgemm / cuBLASLt with the bias, tanh a pass),
 * half_fp16 (nmt_cuda_linear_half, fp16 tensor cores, tanh a pass),
 * skinny_f32 (fp32 weights), skinny_w16 (fp32 activations, an fp16 copy of
 * fp16-exact weights), skinny_bf16, skinny_fp16 (activations rounded as the
 * tensor cores'), chain_fp16 (nmt_cuda_linear_chain: the batch-invariant
 * GEMM's order, the bits of half_fp16 under batch invariance, tanh fused),
 * chain_stream_fp16 (nmt_cuda_linear_chain_stream: the same bits, x given
 * rounded, the weights streamed through shared memory).
 * Output: JSON lines on stdout, a table on stderr. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cuda_ctx.h"
#include "half.h"
#include "linear.h"
#include "pointwise.h"

typedef enum {
    CUBLAS,
    HALF_FP16,
    SKINNY_F32,
    SKINNY_W16,
    SKINNY_BF16,
    SKINNY_FP16,
    CHAIN_FP16,
    CHAIN_STREAM_FP16
} variant;
static const char *const kNames[] = {"cublas",      "half_fp16",   "skinny_f32",
                                     "skinny_w16",  "skinny_bf16", "skinny_fp16",
                                     "chain_fp16",  "chain_stream_fp16"};
enum { N_VARIANTS = 8, MAX_GEMMS = 4 };

typedef struct gemm {
    int n, k, bias, tanh_out;
    float *w;          /* fp32, fp16-exact */
    uint16_t *w16[2];  /* bf16, fp16 */
    float *bias_d, *x, *y;
    uint16_t *x16;     /* x rounded to fp16, as a step's producers write it */
    float *host_w, *host_b, *host_x;
} gemm;

typedef struct run {
    nmt_cuda_ctx *ctx;
    variant v;
    int rows, n_gemms;
    gemm g[MAX_GEMMS];
    void *x16; /* half_fp16's activation scratch */
    nmt_skinny_policy policy;
} run;

static int g_copies = 1; /* --copies: weight copies a call rotates over */

static void make_gemm(gemm *g, int n, int k, int bias, int tanh_out, int max_rows)
{
    memset(g, 0, sizeof *g);
    g->n = n; g->k = k; g->bias = bias; g->tanh_out = tanh_out;
    const size_t nw = (size_t)n * k;
    g->host_w = (float *)malloc(nw * sizeof(float));
    g->host_b = (float *)malloc((size_t)n * sizeof(float));
    g->host_x = (float *)malloc((size_t)max_rows * k * sizeof(float));
    uint16_t *h16 = (uint16_t *)malloc(nw * sizeof(uint16_t));
    if (!g->host_w || !g->host_b || !g->host_x || !h16)
        exit(1);
    srand(n * 31 + k);
    for (size_t i = 0; i < nw; i++) /* fp16-exact, as a model file's weights */
        g->host_w[i] = nmt_half_round(NMT_HALF_FP16, ((float)rand() / RAND_MAX - 0.5f) * 0.2f);
    for (int i = 0; i < n; i++)
        g->host_b[i] = (float)rand() / RAND_MAX - 0.5f;
    for (size_t i = 0; i < (size_t)max_rows * k; i++)
        g->host_x[i] = (float)rand() / RAND_MAX * 2.0f - 1.0f;
    CUDA_OK(cudaMalloc(&g->w, nw * sizeof(float) * g_copies));
    for (int c = 0; c < g_copies; c++)
        CUDA_OK(cudaMemcpy(g->w + c * nw, g->host_w, nw * sizeof(float), cudaMemcpyHostToDevice));
    for (int t = 0; t < 2; t++) {
        for (size_t i = 0; i < nw; i++)
            h16[i] = t == 0 ? nmt_f32_to_bf16(g->host_w[i]) : nmt_f32_to_f16(g->host_w[i]);
        CUDA_OK(cudaMalloc(&g->w16[t], nw * sizeof(uint16_t) * g_copies));
        for (int c = 0; c < g_copies; c++)
            CUDA_OK(cudaMemcpy(g->w16[t] + c * nw, h16, nw * sizeof(uint16_t),
                               cudaMemcpyHostToDevice));
    }
    CUDA_OK(cudaMalloc(&g->bias_d, (size_t)n * sizeof(float)));
    CUDA_OK(cudaMemcpy(g->bias_d, g->host_b, (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMalloc(&g->x, (size_t)max_rows * k * sizeof(float)));
    CUDA_OK(cudaMemcpy(g->x, g->host_x, (size_t)max_rows * k * sizeof(float),
                       cudaMemcpyHostToDevice));
    CUDA_OK(cudaMalloc(&g->y, (size_t)max_rows * n * sizeof(float)));
    free(h16);
    uint16_t *x16 = (uint16_t *)malloc((size_t)max_rows * k * sizeof(uint16_t));
    if (!x16)
        exit(1);
    for (size_t i = 0; i < (size_t)max_rows * k; i++)
        x16[i] = nmt_f32_to_f16(g->host_x[i]);
    CUDA_OK(cudaMalloc(&g->x16, (size_t)max_rows * k * sizeof(uint16_t)));
    CUDA_OK(cudaMemcpy(g->x16, x16, (size_t)max_rows * k * sizeof(uint16_t),
                       cudaMemcpyHostToDevice));
    free(x16);
}

static void run_gemm(run *r, const gemm *g, int copy)
{
    const float *b = g->bias ? g->bias_d : NULL;
    const int m = r->rows;
    const size_t off = (size_t)copy * g->n * g->k;
    const float *w32 = g->w + off;
    const uint16_t *w16[2] = {g->w16[0] + off, g->w16[1] + off};
    switch (r->v) {
    case CUBLAS:
        NMT_OK(nmt_cuda_linear(r->ctx, m, g->n, g->k, g->x, g->k, w32, g->k, b, 0, g->y, g->n,
                               &err));
        break;
    case HALF_FP16:
        NMT_OK(nmt_cuda_linear_half(r->ctx, NMT_HALF_FP16, m, g->n, g->k, g->x, g->k, w16[1],
                                    g->k, b, g->y, g->n, r->x16, &err));
        break;
    case CHAIN_FP16: /* x rounded in registers, tanh fused: one launch a GEMM */
        NMT_OK(nmt_cuda_linear_chain(r->ctx, m, g->n, g->k, g->x, g->k, NMT_SKINNY_X_FP16,
                                     w16[1], NMT_WEIGHT_FP16, g->k, b, g->tanh_out, g->y, g->n,
                                     &err));
        return;
    case CHAIN_STREAM_FP16: /* x as its producers round it, weights streamed */
        NMT_OK(nmt_cuda_linear_chain_stream(r->ctx, NMT_HALF_FP16, m, g->n, g->k, g->x16, g->k,
                                            w16[1], g->k, b, g->tanh_out, g->y, g->n, &err));
        return;
    default: {
        static const nmt_skinny_x xr[] = {NMT_SKINNY_X_F32, NMT_SKINNY_X_F32, NMT_SKINNY_X_BF16,
                                          NMT_SKINNY_X_FP16};
        static const nmt_weight_type wt[] = {NMT_WEIGHT_F32, NMT_WEIGHT_FP16, NMT_WEIGHT_BF16,
                                             NMT_WEIGHT_FP16};
        const int i = (int)r->v - SKINNY_F32;
        const void *w = wt[i] == NMT_WEIGHT_F32    ? (const void *)w32
                        : wt[i] == NMT_WEIGHT_BF16 ? (const void *)w16[0]
                                                   : (const void *)w16[1];
        NMT_OK(nmt_cuda_linear_skinny(r->ctx, m, g->n, g->k, g->x, g->k, xr[i], w, wt[i], g->k,
                                      b, g->tanh_out, g->y, g->n, &r->policy, &err));
        return;
    }
    }
    if (g->tanh_out)
        NMT_OK(nmt_cuda_tanh_rows(m, g->n, g->y, g->n, NULL, nmt_cuda_ctx_stream(r->ctx), &err));
}

static void run_all(void *arg, int iteration)
{
    run *r = (run *)arg;
    for (int i = 0; i < r->n_gemms; i++)
        run_gemm(r, &r->g[i], iteration % g_copies);
}

/* The largest |y - twin| / sum |x w| (+ |bias|) over the gemms' outputs. */
static double check(run *r)
{
    double worst = 0.0;
    CUDA_OK(cudaDeviceSynchronize());
    for (int i = 0; i < r->n_gemms; i++) {
        const gemm *g = &r->g[i];
        const size_t ny = (size_t)r->rows * g->n;
        float *y = (float *)malloc(ny * sizeof(float)), *xr = (float *)malloc(
                                                          (size_t)r->rows * g->k * sizeof(float));
        float *wr = r->v == SKINNY_BF16 ? (float *)malloc((size_t)g->n * g->k * sizeof(float))
                                        : NULL;
        CUDA_OK(cudaMemcpy(y, g->y, ny * sizeof(float), cudaMemcpyDeviceToHost));
        const nmt_half_kind kind = r->v == SKINNY_BF16 ? NMT_HALF_BF16 : NMT_HALF_FP16;
        const int rounded = r->v == SKINNY_BF16 || r->v == SKINNY_FP16 || r->v == HALF_FP16 ||
                            r->v == CHAIN_FP16 || r->v == CHAIN_STREAM_FP16;
        for (size_t p = 0; p < (size_t)r->rows * g->k; p++)
            xr[p] = rounded ? nmt_half_round(kind, g->host_x[p]) : g->host_x[p];
        if (wr)
            nmt_cpu_half_round_rows(kind, g->n, g->k, g->host_w, g->k, wr);
        const float *w = wr ? wr : g->host_w;
        for (int m = 0; m < r->rows; m++)
            for (int j = 0; j < g->n; j++) {
                double s = g->bias ? g->host_b[j] : 0.0, mag = g->bias ? fabs(g->host_b[j]) : 0;
                for (int p = 0; p < g->k; p++) {
                    const double t = (double)xr[(size_t)m * g->k + p] * w[(size_t)j * g->k + p];
                    s += t;
                    mag += fabs(t);
                }
                const double want = g->tanh_out ? tanh(s) : s;
                const double e = fabs(y[(size_t)m * g->n + j] - want) / (mag + 1e-30);
                worst = e > worst || e != e ? e : worst;
            }
        free(y); free(xr); free(wr);
    }
    return worst;
}

int main(int argc, char **argv)
{
    static const char kUsage[] = "bench_skinny [--rows 1,5,8] [--variant a,b] [--emb E] "
                                 "[--hidden H] [--vocab V] [--copies N] [--list]\n";
    static const char *const known[] = {"--rows=", "--variant=", "--emb=",    "--hidden=",
                                        "--vocab=", "--copies=", "--list", NULL};
    bench_options_check(argc, argv, known, kUsage);
    if (bench_flag(argc, argv, "--list")) {
        for (int i = 0; i < N_VARIANTS; i++)
            printf("%s\n", kNames[i]);
        return 0;
    }
    const char *o;
    const int E = (o = bench_option(argc, argv, "--emb")) ? atoi(o) : 256;
    const int H = (o = bench_option(argc, argv, "--hidden")) ? atoi(o) : 512;
    const int V = (o = bench_option(argc, argv, "--vocab")) ? atoi(o) : 4778;
    g_copies = (o = bench_option(argc, argv, "--copies")) ? atoi(o) : 1;
    g_copies = g_copies < 1 ? 1 : g_copies;
    const int default_rows[] = {1, 5, 8};
    int rows[16];
    const int n_rows = parse_ints_text(bench_option(argc, argv, "--rows"), default_rows, 3, rows,
                                       16);
    const char *variants = bench_option(argc, argv, "--variant");
    if (!variants)
        variants = "cublas,half_fp16,skinny_f32,skinny_w16,skinny_bf16,skinny_fp16";
    run r;
    memset(&r, 0, sizeof r);
    NMT_OK(nmt_cuda_ctx_create(0, &r.ctx, &err));
    CUDA_OK(cudaMalloc(&r.x16, (size_t)NMT_SKINNY_MAX_ROWS * (E + 2 * H) * 2));
    const double bw = bench_copy_bandwidth((cudaStream_t)nmt_cuda_ctx_stream(r.ctx));
    gemm step[MAX_GEMMS], enc;
    make_gemm(&step[0], 4 * H, E + 2 * H, 0, 0, NMT_SKINNY_MAX_ROWS);
    make_gemm(&step[1], 4 * H, 2 * H, 0, 0, NMT_SKINNY_MAX_ROWS);
    make_gemm(&step[2], H, 2 * H, 0, 1, NMT_SKINNY_MAX_ROWS);
    make_gemm(&step[3], V, H, 1, 0, NMT_SKINNY_MAX_ROWS);
    make_gemm(&enc, 2 * H, H / 2, 0, 0, NMT_SKINNY_MAX_ROWS);
    fprintf(stderr, "E %d, H %d, V %d; %d weight copies; copy bandwidth %.0f GB/s\n", E, H, V,
            g_copies, bw);
    fprintf(stderr, "| what | rows | variant | us | floor us | err / sum|xw| |\n"
                    "|---|---|---|---|---|---|\n");
    for (int part = 0; part < 2; part++) {
        r.n_gemms = part == 0 ? MAX_GEMMS : 1;
        size_t w_elems = 0;
        for (int i = 0; i < r.n_gemms; i++) {
            r.g[i] = part == 0 ? step[i] : enc;
            w_elems += (size_t)r.g[i].n * r.g[i].k;
        }
        for (int ri = 0; ri < n_rows; ri++) {
            r.rows = rows[ri];
            if (r.rows < 1 || r.rows > NMT_SKINNY_MAX_ROWS)
                continue;
            const char *list = variants;
            char name[48];
            while (bench_next_name(&list, name, sizeof name)) {
                /* name[/OUTPUTSxUNROLL[xSPLIT]]: a skinny variant with that policy */
                char *slash = strchr(name, '/');
                memset(&r.policy, 0, sizeof r.policy);
                if (slash) {
                    *slash = '\0';
                    if (sscanf(slash + 1, "%dx%dx%d", &r.policy.outputs, &r.policy.unroll,
                               &r.policy.split) < 2) {
                        fprintf(stderr, "variant %s/%s: want name/OUTPUTSxUNROLL[xSPLIT]\n",
                                name, slash + 1);
                        return 2;
                    }
                }
                int v = -1;
                for (int i = 0; i < N_VARIANTS; i++)
                    if (strcmp(name, kNames[i]) == 0)
                        v = i;
                if (slash)
                    *slash = '/';
                if (v < 0 || (slash && (v < SKINNY_F32 || v >= CHAIN_FP16))) {
                    fprintf(stderr, "unknown variant %s\n%s", name, kUsage);
                    return 2;
                }
                r.v = (variant)v;
                const double us =
                    bench_time_us(run_all, &r, (cudaStream_t)nmt_cuda_ctx_stream(r.ctx));
                const double wb = v == CUBLAS || v == SKINNY_F32 ? 4.0 : 2.0;
                const double floor_us = w_elems * wb / (bw * 1e3); /* bw: read + write bytes */
                const double e = check(&r);
                const char *what = part == 0 ? "decoder step" : "encoder recurrence";
                fprintf(stderr, "| %s | %d | %s | %.2f | %.2f | %.2g |\n", what, r.rows, name, us,
                        floor_us, e);
                printf("{\"bench\":\"skinny\",\"what\":\"%s\",\"rows\":%d,\"variant\":\"%s\","
                       "\"us\":%.3f,\"floor_us\":%.3f,\"rel_err\":%.3g,\"E\":%d,\"H\":%d,"
                       "\"V\":%d,\"copies\":%d}\n",
                       what, r.rows, name, us, floor_us, e, E, H, V, g_copies);
            }
        }
    }
    nmt_cuda_ctx_free(r.ctx);
    return 0;
}
