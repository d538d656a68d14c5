/* test_gpu_invariance.cu: the batch-invariant kernels give row r the same
 * bits at every row count (docs/decoding.md, "Batch invariance").
 * For each op a reference runs at the most rows, then every row count from 1
 * up (NMT_TEST_SMALL: fewer) runs on the same leading rows, and a device
 * kernel counts the outputs whose bits differ from the reference's:
 *  - GEMMs of the model's shapes through the invariant dispatch (fp32:
 *    nmt_cuda_linear; bf16 / fp16: nmt_cuda_linear_half), and at up to
 *    NMT_SKINNY_MAX_ROWS rows the chain kernel the few-row steps run, over
 *    fp32 weights and their fp16 copy;
 *  - softmax + top-K, NMT_SOFTMAX_TOPK_AUTO_INVARIANT (values, ids, lse),
 *    whose kernel changes with the rows (row, then warp), rows aligned and
 *    not;
 *  - attention (context, weights, argmax), whose slices a row change with
 *    the rows.
 * Inputs are fresh random numbers, outputs poisoned before each call. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attention.h"
#include "gpu_test_util.h"
#include "linear.h"
#include "softmax_topk.h"

static int g_max_rows = 4096;

/* Counts the elements of got[r * ld + c] (r < rows, c < cols) whose bits
 * differ from ref's. */
static __global__ void count_differing(int rows, int cols, const uint32_t *got, long ld_got,
                                       const uint32_t *ref, long ld_ref, unsigned long long *bad)
{
    const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)rows * cols)
        return;
    const long r = i / cols, c = i % cols;
    if (got[r * ld_got + c] != ref[r * ld_ref + c])
        atomicAdd(bad, 1ull);
}

static unsigned long long *g_bad;

static unsigned long long differing(int rows, int cols, const void *got, long ld_got,
                                    const void *ref, long ld_ref)
{
    CUDA_OK(cudaMemset(g_bad, 0, sizeof *g_bad));
    const long n = (long)rows * cols;
    count_differing<<<(unsigned)((n + 255) / 256), 256>>>(
        rows, cols, (const uint32_t *)got, ld_got, (const uint32_t *)ref, ld_ref, g_bad);
    CUDA_OK(cudaGetLastError());
    unsigned long long bad = 0;
    CUDA_OK(cudaMemcpy(&bad, g_bad, sizeof bad, cudaMemcpyDeviceToHost));
    return bad;
}

/* The row counts swept: every one up to 64, then every 7th, and the top. */
static int next_rows(int m)
{
    return m < 64 ? m + 1 : (m + 7 < g_max_rows ? m + 7 : (m < g_max_rows ? g_max_rows : m + 1));
}

typedef struct {
    int n, k, bias;
    const char *site;
} gemm_shape;

static void *random_device(size_t n, float scale, int fp16_exact)
{
    float *h = (float *)host_alloc(n * sizeof(float));
    test_fill_uniform(h, n, -scale, scale);
    if (fp16_exact)
        for (size_t i = 0; i < n; i++)
            h[i] = nmt_half_round(NMT_HALF_FP16, h[i]);
    void *d = dev_upload(h, n * sizeof(float));
    free(h);
    return d;
}

/* One GEMM call of the invariant dispatch at m rows. */
static void run_gemm(nmt_cuda_ctx *ctx, int type, int m, const gemm_shape *s, const float *x,
                     const float *w, const void *w16, const float *bias, float *y, int ldy,
                     void *x16)
{
    nmt_error err = {};
    nmt_status st;
    if (type == 0)
        st = nmt_cuda_linear(ctx, m, s->n, s->k, x, s->k, w, s->k, bias, 0, y, ldy, &err);
    else
        st = nmt_cuda_linear_half(ctx, type == 1 ? NMT_HALF_BF16 : NMT_HALF_FP16, m, s->n, s->k,
                                  x, s->k, w16, s->k, bias, y, ldy, x16, &err);
    CHECK(st == NMT_STATUS_OK, "gemm %s: %s", s->site, err.message);
}

static void check_gemm(nmt_cuda_ctx *ctx, const gemm_shape *s, int type)
{
    static const char *const names[] = {"fp32", "bf16", "fp16"};
    const int M = g_max_rows, n = s->n, k = s->k, ldy = (n + 31) / 32 * 32;
    float *x = (float *)random_device((size_t)M * k, 1.0f, 0);
    float *w = (float *)random_device((size_t)n * k, 0.1f, 1); /* fp16-exact: the copy is w */
    float *bias = s->bias ? (float *)random_device((size_t)n, 0.5f, 0) : NULL;
    void *w16 = NULL, *x16 = NULL, *w_copy = NULL;
    nmt_error err = {};
    CUDA_OK(cudaMalloc(&x16, (size_t)M * k * 2));
    CUDA_OK(cudaMalloc(&w16, (size_t)n * k * 2));
    CUDA_OK(cudaMalloc(&w_copy, (size_t)n * k * 2));
    if (type != 0)
        CHECK(nmt_cuda_to_half(ctx, type == 1 ? NMT_HALF_BF16 : NMT_HALF_FP16, n, k, w, k, w16,
                               &err) == NMT_STATUS_OK, "to_half: %s", err.message);
    CHECK(nmt_cuda_to_half(ctx, NMT_HALF_FP16, n, k, w, k, w_copy, &err) == NMT_STATUS_OK,
          "to_half: %s", err.message);
    float *ref = (float *)dev_output((size_t)M * ldy * sizeof(float), POISON_F32);
    float *y = (float *)dev_output((size_t)M * ldy * sizeof(float), POISON_F32);
    run_gemm(ctx, type, M, s, x, w, w16, bias, ref, ldy, x16);
    CUDA_OK(cudaStreamSynchronize((cudaStream_t)nmt_cuda_ctx_stream(ctx)));
    unsigned long long bad_rows = 0, bad_chain = 0;
    int first_bad = 0, counts = 0;
    const nmt_skinny_x x_round = type == 0   ? NMT_SKINNY_X_F32
                                 : type == 1 ? NMT_SKINNY_X_BF16
                                             : NMT_SKINNY_X_FP16;
    const nmt_weight_type w_type = type == 1 ? NMT_WEIGHT_BF16 : NMT_WEIGHT_FP16;
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    for (int m = 1; m <= M; m = next_rows(m)) {
        CUDA_OK(cudaMemsetAsync(y, POISON_F32, (size_t)m * ldy * sizeof(float), stream));
        run_gemm(ctx, type, m, s, x, w, w16, bias, y, ldy, x16);
        CUDA_OK(cudaStreamSynchronize(stream));
        const unsigned long long bad = differing(m, n, y, ldy, ref, ldy);
        if (bad && !first_bad)
            first_bad = m;
        bad_rows += bad;
        counts++;
        if (m > NMT_SKINNY_MAX_ROWS)
            continue;
        /* The few-row steps' chain kernel: the precision's operands, and at
         * fp32 the fp16 copy of fp16-exact weights as well. */
        for (int copy = 0; copy < (type == 0 ? 2 : 1); copy++) {
            CUDA_OK(cudaMemsetAsync(y, POISON_F32, (size_t)m * ldy * sizeof(float), stream));
            const void *wc = type != 0 ? w16 : copy ? w_copy : (const void *)w;
            const nmt_weight_type wt = type != 0 ? w_type : copy ? NMT_WEIGHT_FP16 : NMT_WEIGHT_F32;
            CHECK(nmt_cuda_linear_chain(ctx, m, n, k, x, k, x_round, wc, wt, k, bias, 0, y, ldy,
                                        &err) == NMT_STATUS_OK, "chain: %s", err.message);
            CUDA_OK(cudaStreamSynchronize(stream));
            bad_chain += differing(m, n, y, ldy, ref, ldy);
        }
    }
    CHECK(bad_rows == 0 && bad_chain == 0,
          "gemm %s %s n %d k %d: %llu outputs differ over %d row counts (first at %d rows), "
          "%llu from the chain kernel", s->site, names[type], n, k, bad_rows, counts, first_bad,
          bad_chain);
    fprintf(stderr, "  gemm %-7s %s n %5d k %5d: %d row counts to %d, %llu outputs differ\n",
            s->site, names[type], n, k, counts, M, bad_rows + bad_chain);
    CUDA_OK(cudaFree(x));
    CUDA_OK(cudaFree(w));
    CUDA_OK(cudaFree(x16));
    CUDA_OK(cudaFree(w16));
    CUDA_OK(cudaFree(w_copy));
    CUDA_OK(cudaFree(ref));
    CUDA_OK(cudaFree(y));
    if (bias)
        CUDA_OK(cudaFree(bias));
}

/* ld: the rows' stride; one not a multiple of 4 starts rows off 16 bytes
 * (the kernels' head and tail words). */
static void check_softmax(int vocab, int k, int ld)
{
    const int M = g_max_rows;
    float *logits = (float *)random_device((size_t)M * ld, 8.0f, 0);
    const size_t ws_bytes = nmt_cuda_softmax_topk_workspace_size(M, vocab, k);
    void *ws = NULL;
    CUDA_OK(cudaMalloc(&ws, ws_bytes));
    CUDA_OK(cudaMemset(ws, 0, ws_bytes));
    const int32_t excluded[2] = {0, 2};
    int32_t *d_excluded = (int32_t *)dev_upload(excluded, sizeof excluded);
    float *vals[2], *lse[2];
    int32_t *ids[2];
    for (int i = 0; i < 2; i++) {
        vals[i] = (float *)dev_output((size_t)M * k * sizeof(float), POISON_F32);
        ids[i] = (int32_t *)dev_output((size_t)M * k * sizeof(int32_t), POISON_I32);
        lse[i] = (float *)dev_output((size_t)M * sizeof(float), POISON_F32);
    }
    nmt_error err = {};
    const auto run = [&](int m, int i) {
        CHECK(nmt_cuda_softmax_topk_variant(m, vocab, logits, ld, k, d_excluded, 2, vals[i],
                                            ids[i], lse[i], ws, ws_bytes,
                                            NMT_SOFTMAX_TOPK_AUTO_INVARIANT, NULL,
                                            &err) == NMT_STATUS_OK,
              "softmax_topk: %s", err.message);
        CUDA_OK(cudaDeviceSynchronize());
    };
    run(M, 0);
    unsigned long long bad_values = 0, bad_ids = 0, bad_lse = 0;
    int counts = 0;
    for (int m = 1; m <= M; m = next_rows(m)) {
        CUDA_OK(cudaMemset(vals[1], POISON_F32, (size_t)m * k * sizeof(float)));
        CUDA_OK(cudaMemset(lse[1], POISON_F32, (size_t)m * sizeof(float)));
        run(m, 1);
        bad_values += differing(m, k, vals[1], k, vals[0], k);
        bad_ids += differing(m, k, ids[1], k, ids[0], k);
        bad_lse += differing(m, 1, lse[1], 1, lse[0], 1);
        counts++;
    }
    CHECK(bad_values + bad_ids + bad_lse == 0,
          "softmax_topk V %d K %d: %llu values, %llu ids, %llu lse differ over %d row counts",
          vocab, k, bad_values, bad_ids, bad_lse, counts);
    fprintf(stderr, "  softmax_topk V %d K %d: %d row counts to %d, %llu differ\n", vocab, k,
            counts, M, bad_values + bad_ids + bad_lse);
    for (int i = 0; i < 2; i++) {
        CUDA_OK(cudaFree(vals[i]));
        CUDA_OK(cudaFree(ids[i]));
        CUDA_OK(cudaFree(lse[i]));
    }
    CUDA_OK(cudaFree(logits));
    CUDA_OK(cudaFree(ws));
    CUDA_OK(cudaFree(d_excluded));
}

/* Rows 5 a sentence (a beam), sentences of random lengths up to max_src. */
static void check_attention(int hidden, int max_src)
{
    const int M = g_max_rows, beam = 5, sentences = (M + beam - 1) / beam;
    float *keys = (float *)random_device((size_t)sentences * max_src * hidden, 0.5f, 0);
    float *memory = (float *)random_device((size_t)sentences * max_src * hidden, 1.0f, 0);
    float *query = (float *)random_device((size_t)M * hidden, 0.5f, 0);
    int32_t *row_sentence = (int32_t *)host_alloc((size_t)M * sizeof(int32_t));
    int32_t *len = (int32_t *)host_alloc((size_t)sentences * sizeof(int32_t));
    for (int r = 0; r < M; r++)
        row_sentence[r] = r / beam;
    for (int s = 0; s < sentences; s++)
        len[s] = 1 + rand() % max_src;
    int32_t *d_rows = (int32_t *)dev_upload(row_sentence, (size_t)M * sizeof(int32_t));
    int32_t *d_len = (int32_t *)dev_upload(len, (size_t)sentences * sizeof(int32_t));
    float *ctx_out[2], *weights[2];
    int32_t *argmax[2];
    for (int i = 0; i < 2; i++) {
        ctx_out[i] = (float *)dev_output((size_t)M * hidden * sizeof(float), POISON_F32);
        weights[i] = (float *)dev_output((size_t)M * max_src * sizeof(float), POISON_F32);
        argmax[i] = (int32_t *)dev_output((size_t)M * sizeof(int32_t), POISON_I32);
    }
    nmt_error err = {};
    const auto run = [&](int m, int i) {
        CHECK(nmt_cuda_attention(m, hidden, max_src, d_rows, d_len, keys, memory, query, hidden,
                                 ctx_out[i], hidden, NULL, weights[i], argmax[i], NULL,
                                 &err) == NMT_STATUS_OK,
              "attention: %s", err.message);
        CUDA_OK(cudaDeviceSynchronize());
    };
    run(M, 0);
    unsigned long long bad = 0;
    int counts = 0;
    for (int m = 1; m <= M; m = next_rows(m)) {
        CUDA_OK(cudaMemset(ctx_out[1], POISON_F32, (size_t)m * hidden * sizeof(float)));
        run(m, 1);
        bad += differing(m, hidden, ctx_out[1], hidden, ctx_out[0], hidden) +
               differing(m, max_src, weights[1], max_src, weights[0], max_src) +
               differing(m, 1, argmax[1], 1, argmax[0], 1);
        counts++;
    }
    CHECK(bad == 0, "attention H %d S %d: %llu outputs differ over %d row counts", hidden,
          max_src, bad, counts);
    fprintf(stderr, "  attention H %d S %d: %d row counts to %d, %llu differ\n", hidden, max_src,
            counts, M, bad);
    for (int i = 0; i < 2; i++) {
        CUDA_OK(cudaFree(ctx_out[i]));
        CUDA_OK(cudaFree(weights[i]));
        CUDA_OK(cudaFree(argmax[i]));
    }
    CUDA_OK(cudaFree(keys));
    CUDA_OK(cudaFree(memory));
    CUDA_OK(cudaFree(query));
    CUDA_OK(cudaFree(d_rows));
    CUDA_OK(cudaFree(d_len));
    free(row_sentence);
    free(len);
}

int main(void)
{
    gpu_test_require_device("test_gpu_invariance");
    if (getenv("NMT_TEST_SMALL"))
        g_max_rows = 300;
    srand((unsigned)time(NULL));
    nmt_cuda_ctx *ctx = NULL;
    nmt_error err = {};
    if (nmt_cuda_ctx_create(0, &ctx, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "ctx: %s\n", err.message);
        return 1;
    }
    CHECK(nmt_cuda_ctx_batch_invariant(ctx) == 1, "a new context is batch-invariant");
    CUDA_OK(cudaMalloc(&g_bad, sizeof *g_bad));
    /* The shipped model's GEMMs (E 256, H 512, V 4778), the encoder's
     * recurrence (4 x H/2 outputs over H/2), odd shapes (k not a multiple of
     * 16, n not of 16). */
    static const gemm_shape shapes[] = {
        {2048, 1280, 0, "layer0"}, {512, 1024, 0, "attn_c"}, {4778, 512, 1, "output"},
        {1024, 256, 0, "enc_rec"}, {2048, 768, 1, "enc_in"}, {37, 45, 1, "odd"},
    };
    for (int type = 0; type < 3; type++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            check_gemm(ctx, &shapes[i], type);
    /* Few rows run the row kernel, many the warp kernel (one (m, d) tree);
     * K + excluded ids over 64 the warp kernel alone, K over 64 atomic. */
    check_softmax(4778, 10, 4800);
    check_softmax(4779, 10, 4779);
    check_softmax(30001, 10, 30001);
    check_softmax(30001, 64, 30016);
    check_softmax(777, 100, 800);
    check_attention(512, 40);
    check_attention(1000, 17);
    CUDA_OK(cudaFree(g_bad));
    nmt_cuda_ctx_free(ctx);
    return test_finish("test_gpu_invariance");
}
