/* bench_output_topk: the fused output layer (kernels/output_topk.h) against
 * the unfused one it replaces, per call, at rows x V x H:
 *   unfused      nmt_cuda_linear_half (activations rounded, cuBLASLt, logits
 *                written) + softmax + top-K (AUTO_INVARIANT: the engine's
 *                default, batch invariant)
 *   unfused-best the same on a context without batch invariance, softmax +
 *                top-K AUTO (cuBLASLt's heuristic pick, the fastest variant)
 *   fused        nmt_cuda_to_half + nmt_cuda_output_topk_policy (no logits),
 *                once a policy of each --stages (default 3,4,5) x --row-tiles
 *                (default 0: the kernel's own pick by the row count)
 * Medians of NMT_BENCH_REPEATS runs (CUDA events); one JSON line a case and
 * a table on stderr, with the ratios unfused / fused. The fused results are
 * checked against the unfused ones (ids equal) before timing.
 *
 *   bench_output_topk [--rows 5,640,5120] [--vocabs 4778,32000,50000]
 *                     [--hidden 512] [--k 10] [--kind fp16|bf16] [--stages 3,4,5]
 *                     [--row-tiles 0,32,64,128]
 */
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
#include "output_topk.h"
#include "softmax_topk.h"

typedef struct bench_case {
    nmt_cuda_ctx *ctx;
    cudaStream_t stream;
    nmt_half_kind kind;
    int32_t rows, vocab, hidden, k;
    float *x;          /* [rows, hidden] fp32, exact in the 16-bit format */
    uint16_t *x16, *w; /* scratch [rows, hidden]; W [vocab, hidden] */
    float *bias, *logits, *values, *lse;
    int32_t *ids, *excluded;
    void *topk_ws, *fused_ws;
    size_t topk_ws_bytes, fused_ws_bytes;
    nmt_softmax_topk_variant variant;
    nmt_output_topk_policy policy;
} bench_case;

static void run_unfused(void *p, int i)
{
    bench_case *c = (bench_case *)p;
    (void)i;
    NMT_OK(nmt_cuda_linear_half(c->ctx, c->kind, c->rows, c->vocab, c->hidden, c->x, c->hidden,
                                c->w, c->hidden, c->bias, c->logits, c->vocab, c->x16, &err));
    NMT_OK(nmt_cuda_softmax_topk_variant(c->rows, c->vocab, c->logits, c->vocab, c->k,
                                         c->excluded, 2, c->values, c->ids, c->lse, c->topk_ws,
                                         c->topk_ws_bytes, c->variant, c->stream, &err));
}

static void run_fused(void *p, int i)
{
    bench_case *c = (bench_case *)p;
    (void)i;
    NMT_OK(nmt_cuda_to_half(c->ctx, c->kind, c->rows, c->hidden, c->x, c->hidden, c->x16, &err));
    const nmt_output_topk_args a = {
        .kind = c->kind, .n_rows = c->rows, .vocab = c->vocab, .k = c->hidden, .x = c->x16,
        .ldx = c->hidden, .w = c->w, .ldw = c->hidden, .bias = c->bias, .top_k = c->k,
        .excluded = c->excluded, .n_excluded = 2, .top_values = c->values, .top_ids = c->ids,
        .lse = c->lse, .workspace = c->fused_ws, .workspace_bytes = c->fused_ws_bytes,
    };
    NMT_OK(nmt_cuda_output_topk_policy(&a, &c->policy, c->stream, &err));
}

static int32_t *download_ids(const bench_case *c)
{
    int32_t *ids = (int32_t *)malloc((size_t)c->rows * c->k * sizeof(int32_t));
    CUDA_OK(cudaStreamSynchronize(c->stream));
    CUDA_OK(cudaMemcpy(ids, c->ids, (size_t)c->rows * c->k * sizeof(int32_t),
                       cudaMemcpyDeviceToHost));
    return ids;
}

static void bench_shape(nmt_cuda_ctx *inv, nmt_cuda_ctx *fast, nmt_half_kind kind, int32_t rows,
                        int32_t vocab, int32_t hidden, int32_t k,
                        const nmt_output_topk_policy *policies, int n_policies)
{
    bench_case c;
    memset(&c, 0, sizeof c);
    c.ctx = inv, c.stream = (cudaStream_t)nmt_cuda_ctx_stream(inv), c.kind = kind;
    c.rows = rows, c.vocab = vocab, c.hidden = hidden, c.k = k;
    const size_t nx = (size_t)rows * hidden, nw = (size_t)vocab * hidden;
    float *hx = (float *)malloc(nx * sizeof(float)), *hb = (float *)malloc(vocab * sizeof(float));
    uint16_t *hw = (uint16_t *)malloc(nw * sizeof(uint16_t));
    srand(1234);
    for (size_t i = 0; i < nx; i++)
        hx[i] = nmt_half_round(kind, 2.0f * rand() / RAND_MAX - 1.0f);
    for (size_t i = 0; i < nw; i++) {
        const float v = 0.5f * rand() / RAND_MAX - 0.25f;
        hw[i] = nmt_half_bits(kind, v);
    }
    for (int32_t j = 0; j < vocab; j++)
        hb[j] = 4.0f * rand() / RAND_MAX - 2.0f;
    const int32_t excluded[2] = {0, 2};
    CUDA_OK(cudaMalloc(&c.x, nx * sizeof(float)));
    CUDA_OK(cudaMalloc(&c.x16, nx * sizeof(uint16_t)));
    CUDA_OK(cudaMalloc(&c.w, nw * sizeof(uint16_t)));
    CUDA_OK(cudaMalloc(&c.bias, vocab * sizeof(float)));
    CUDA_OK(cudaMalloc(&c.logits, (size_t)rows * vocab * sizeof(float)));
    CUDA_OK(cudaMalloc(&c.values, (size_t)rows * k * sizeof(float)));
    CUDA_OK(cudaMalloc(&c.ids, (size_t)rows * k * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&c.lse, rows * sizeof(float)));
    CUDA_OK(cudaMalloc(&c.excluded, sizeof excluded));
    CUDA_OK(cudaMemcpy(c.x, hx, nx * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(c.w, hw, nw * sizeof(uint16_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(c.bias, hb, vocab * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(c.excluded, excluded, sizeof excluded, cudaMemcpyHostToDevice));
    c.topk_ws_bytes = nmt_cuda_softmax_topk_workspace_size(rows, vocab, k);
    CUDA_OK(cudaMalloc(&c.topk_ws, c.topk_ws_bytes));
    CUDA_OK(cudaMemset(c.topk_ws, 0, c.topk_ws_bytes));
    c.fused_ws_bytes = nmt_cuda_output_topk_workspace_size(rows, vocab, k);
    CUDA_OK(cudaMalloc(&c.fused_ws, c.fused_ws_bytes));

    /* The same words first, at every ring. */
    c.variant = NMT_SOFTMAX_TOPK_AUTO_INVARIANT;
    run_unfused(&c, 0);
    int32_t *want = download_ids(&c);
    size_t differ = 0;
    for (int v = 0; v < n_policies; v++) {
        c.policy = policies[v];
        run_fused(&c, 0);
        int32_t *got = download_ids(&c);
        differ += bench_count_diff_i32(got, want, (size_t)rows * k);
        free(got);
    }
    free(want);

    const double unfused = bench_time_us(run_unfused, &c, c.stream);
    double fused[32];
    for (int v = 0; v < n_policies; v++) {
        c.policy = policies[v];
        fused[v] = bench_time_us(run_fused, &c, c.stream);
    }
    c.ctx = fast, c.stream = (cudaStream_t)nmt_cuda_ctx_stream(fast);
    c.variant = NMT_SOFTMAX_TOPK_AUTO;
    const double best = bench_time_us(run_unfused, &c, c.stream);
    const double flop = 2.0 * rows * (double)vocab * hidden;
    for (int v = 0; v < n_policies; v++) {
        printf("{\"bench\":\"output_topk\",\"kind\":\"%s\",\"rows\":%d,\"vocab\":%d,"
               "\"hidden\":%d,\"k\":%d,\"stages\":%d,\"row_tile\":%d,\"unfused_us\":%.2f,"
               "\"unfused_best_us\":%.2f,\"fused_us\":%.2f,\"fused_tflops\":%.1f,"
               "\"ids_differ\":%zu}\n",
               kind == NMT_HALF_BF16 ? "bf16" : "fp16", rows, vocab, hidden, k, policies[v].stages,
               policies[v].row_tile,
               unfused, best, fused[v], flop / fused[v] / 1e6, differ);
        fprintf(stderr, "| %5d | %6d | %4d | %3d | %d | %3d | %9.2f | %9.2f | %9.2f | %5.2fx | %5.2fx "
                "| %6.1f | %zu |\n", rows, vocab, hidden, k, policies[v].stages,
                policies[v].row_tile, unfused, best, fused[v],
                unfused / fused[v], best / fused[v], flop / fused[v] / 1e6, differ);
    }
    fflush(stdout);
    void *bufs[] = {c.x, c.x16, c.w, c.bias, c.logits, c.values, c.ids, c.lse, c.excluded,
                    c.topk_ws, c.fused_ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        CUDA_OK(cudaFree(bufs[i]));
    free(hx);
    free(hb);
    free(hw);
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"--rows=", "--vocabs=", "--hidden=", "--k=", "--kind=",
                                        "--stages=", "--row-tiles=", NULL};
    bench_options_check(argc, argv, known, "bench_output_topk [--rows R,..] [--vocabs V,..] "
                        "[--hidden H] [--k K] [--kind fp16|bf16] [--stages S,..] "
                        "[--row-tiles T,..]");
    const int default_rows[] = {5, 640, 5120}, default_vocabs[] = {4778, 32000, 50000};
    int rows[16], vocabs[16];
    const char *v;
    const int n_rows = parse_ints_text(bench_option(argc, argv, "--rows"), default_rows, 3, rows, 16);
    const int n_vocabs =
        parse_ints_text(bench_option(argc, argv, "--vocabs"), default_vocabs, 3, vocabs, 16);
    const int default_stages[] = {3, 4, 5};
    int stages[8];
    const int n_stages =
        parse_ints_text(bench_option(argc, argv, "--stages"), default_stages, 3, stages, 8);
    const int default_tiles[] = {0};
    int tiles[4];
    const int n_tiles =
        parse_ints_text(bench_option(argc, argv, "--row-tiles"), default_tiles, 1, tiles, 4);
    nmt_output_topk_policy policies[32];
    int n_policies = 0;
    for (int a = 0; a < n_stages; a++)
        for (int b = 0; b < n_tiles; b++)
            policies[n_policies++] = (nmt_output_topk_policy){.stages = stages[a],
                                                              .row_tile = tiles[b]};
    const int hidden = (v = bench_option(argc, argv, "--hidden")) ? atoi(v) : 512;
    const int k = (v = bench_option(argc, argv, "--k")) ? atoi(v) : 10;
    const nmt_half_kind kind =
        (v = bench_option(argc, argv, "--kind")) && !strcmp(v, "bf16") ? NMT_HALF_BF16 : NMT_HALF_FP16;
    CUDA_OK(cudaSetDevice(0));
    nmt_cuda_ctx *inv = NULL, *fast = NULL;
    NMT_OK(nmt_cuda_ctx_create(0, &inv, &err));
    NMT_OK(nmt_cuda_ctx_create(0, &fast, &err));
    nmt_cuda_ctx_set_batch_invariant(inv, 1);
    nmt_cuda_ctx_set_batch_invariant(fast, 0);
    fprintf(stderr, "| rows | V | H | K | stages | row tile | unfused us | unfused-best us | fused us | "
                    "x unfused | x best | fused TFLOP/s | ids differ |\n| --- | --- | --- | --- "
                    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < n_vocabs; i++)
        for (int j = 0; j < n_rows; j++)
            bench_shape(inv, fast, kind, rows[j], vocabs[i], hidden, k, policies, n_policies);
    nmt_cuda_ctx_free(inv);
    nmt_cuda_ctx_free(fast);
    return 0;
}
