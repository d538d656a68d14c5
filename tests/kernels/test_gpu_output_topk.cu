/* test_gpu_output_topk.cu: the fused output layer (kernels/output_topk.h)
 * on random shapes (V below, at and past the 128-word chunk and the 32
 * parts, k not a multiple of the 32-wide stage, K past V, excluded words),
 * ties (repeated W rows: equal logits, lower id first), -inf biases and rows
 * whose every logit is -inf, fp16 and bf16, against
 *  - its CPU oracle (z in double): lse and the top values within a
 *    tolerance, ids equal unless the two words' logits are a near tie;
 *  - the unfused layer on the GPU (nmt_cuda_linear_half, batch invariant,
 *    then softmax + top-K AUTO_INVARIANT): the same ids in the same order;
 *  - the batch-invariant chain kernel (nmt_cuda_linear_chain): the kept
 *    logit bit for bit (the same mma chain; cuBLASLt's own pick for an odd
 *    V such as 30,001 may end rows in other bits, so it is not the judge);
 *  - itself on fewer rows: each row alone and a slice of the batch give the
 *    bits they have in the whole batch; and with every ring and row tile
 *    of its policy (3, 4, 5 stages; 32, 64, 128 rows): the same bits.
 * Outputs NaN-poisoned, with guards. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "half.h"
#include "linear.h"
#include "output_topk.h"
#include "softmax_topk.h"

static nmt_cuda_ctx *ctx;
static void *stream;

typedef struct shape {
    int32_t rows, vocab, k, top_k, n_excluded;
    nmt_half_kind kind;
    int ties;    /* every 5th W row repeats the one before */
    int neg_inf; /* 1: some biases -inf; 2: all of them */
} shape;


typedef struct outputs {
    float *values, *lse, *keep;
    int32_t *ids;
} outputs;

/* The fused layer on rows [r0, r0 + n) of the device inputs. */
static void run_fused(const shape *s, const uint16_t *d_x, int32_t ldx, const uint16_t *d_w,
                      const float *d_bias, const int32_t *d_excluded, int32_t r0, int32_t n,
                      void *ws, size_t ws_bytes, outputs *host, const char *what,
                      nmt_output_topk_policy policy)
{
    const int32_t K = s->top_k;
    float *d_values = (float *)dev_output((size_t)n * K * sizeof(float), POISON_F32);
    int32_t *d_ids = (int32_t *)dev_output((size_t)n * K * sizeof(int32_t), POISON_I32);
    float *d_lse = (float *)dev_output((size_t)n * sizeof(float), POISON_F32);
    float *d_keep = (float *)dev_output((size_t)n * s->vocab * sizeof(float), POISON_F32);
    const nmt_output_topk_args a = {
        .kind = s->kind, .n_rows = n, .vocab = s->vocab, .k = s->k,
        .x = d_x + (size_t)r0 * ldx, .ldx = ldx, .w = d_w, .ldw = ldx, .bias = d_bias,
        .top_k = K, .excluded = d_excluded, .n_excluded = s->n_excluded,
        .top_values = d_values, .top_ids = d_ids, .lse = d_lse,
        .keep = d_keep, .ld_keep = s->vocab, .keep_word = s->vocab > 3 ? 3 : 0,
        .workspace = ws, .workspace_bytes = ws_bytes,
    };
    nmt_error err = {};
    const nmt_status st = nmt_cuda_output_topk_policy(&a, &policy, stream, &err);
    CHECK(st == NMT_STATUS_OK, "%s: status %d: %s", what, (int)st, err.message);
    dev_download(host->values, d_values, (size_t)n * K * sizeof(float), POISON_F32, what);
    dev_download(host->ids, d_ids, (size_t)n * K * sizeof(int32_t), POISON_I32, what);
    dev_download(host->lse, d_lse, (size_t)n * sizeof(float), POISON_F32, what);
    dev_download(host->keep, d_keep, (size_t)n * s->vocab * sizeof(float), POISON_F32, what);
    CUDA_OK(cudaFree(d_values));
    CUDA_OK(cudaFree(d_ids));
    CUDA_OK(cudaFree(d_lse));
    CUDA_OK(cudaFree(d_keep));
}

static int same_or_nan(float a, float b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static void test_shape(const shape *s)
{
    const int32_t R = s->rows, V = s->vocab, H = s->k, K = s->top_k;
    const int32_t ldx = (H + 7) / 8 * 8 + (H % 32 == 0 ? 8 : 0); /* padded rows, 16-byte steps */
    char what[160];
    snprintf(what, sizeof what, "%s rows %d V %d k %d K %d excluded %d%s%s",
             s->kind == NMT_HALF_BF16 ? "bf16" : "fp16", R, V, H, K, s->n_excluded,
             s->ties ? " ties" : "", s->neg_inf == 2 ? " all -inf" : s->neg_inf ? " -inf" : "");
    uint16_t *x = (uint16_t *)host_alloc((size_t)R * ldx * sizeof(uint16_t));
    uint16_t *w = (uint16_t *)host_alloc((size_t)V * ldx * sizeof(uint16_t));
    float *xf = (float *)host_alloc((size_t)R * ldx * sizeof(float));
    float *bias = (float *)host_alloc((size_t)V * sizeof(float));
    for (size_t i = 0; i < (size_t)R * ldx; i++) {
        x[i] = nmt_half_bits(s->kind, test_rand_uniform(-1.0f, 1.0f));
        xf[i] = nmt_half_widen(s->kind, x[i]); /* what linear_half rounds back to x */
    }
    for (int32_t j = 0; j < V; j++) {
        for (int32_t p = 0; p < ldx; p++)
            w[(size_t)j * ldx + p] = s->ties && j % 5 == 4
                                         ? w[(size_t)(j - 1) * ldx + p]
                                         : nmt_half_bits(s->kind, test_rand_uniform(-0.25f, 0.25f));
        bias[j] = s->ties && j % 5 == 4 ? bias[j - 1] : test_rand_uniform(-2.0f, 2.0f);
        if (s->neg_inf == 2 || (s->neg_inf == 1 && j % 7 == 1))
            bias[j] = -INFINITY;
    }
    int32_t excluded[NMT_OUTPUT_TOPK_MAX_EXCLUDED];
    for (int32_t e = 0; e < s->n_excluded; e++)
        excluded[e] = (e * 37 + 2) % V;

    /* The oracle. */
    outputs want = {(float *)host_alloc((size_t)R * K * sizeof(float)),
                    (float *)host_alloc((size_t)R * sizeof(float)),
                    (float *)host_alloc((size_t)R * V * sizeof(float)),
                    (int32_t *)host_alloc((size_t)R * K * sizeof(int32_t))};
    float *z = (float *)host_alloc((size_t)R * V * sizeof(float));
    const nmt_output_topk_args cpu = {
        .kind = s->kind, .n_rows = R, .vocab = V, .k = H, .x = x, .ldx = ldx, .w = w,
        .ldw = ldx, .bias = bias, .top_k = K, .excluded = excluded,
        .n_excluded = s->n_excluded, .top_values = want.values, .top_ids = want.ids,
        .lse = want.lse, .keep = z, .ld_keep = V, .keep_word = 0,
    };
    for (int32_t r = 0; r < R; r++) { /* row by row: z[r] is the oracle's whole row */
        nmt_output_topk_args one = cpu;
        one.n_rows = 1;
        one.x = x + (size_t)r * ldx;
        one.top_values = want.values + (size_t)r * K;
        one.top_ids = want.ids + (size_t)r * K;
        one.lse = want.lse + r;
        one.keep = NULL;
        nmt_cpu_output_topk(&one, z + (size_t)r * V);
    }

    uint16_t *d_x = (uint16_t *)dev_upload(x, (size_t)R * ldx * sizeof(uint16_t));
    uint16_t *d_w = (uint16_t *)dev_upload(w, (size_t)V * ldx * sizeof(uint16_t));
    float *d_xf = (float *)dev_upload(xf, (size_t)R * ldx * sizeof(float));
    float *d_bias = (float *)dev_upload(bias, (size_t)V * sizeof(float));
    int32_t *d_excluded = (int32_t *)dev_upload(excluded, sizeof excluded);
    const size_t ws_bytes = nmt_cuda_output_topk_workspace_size(R, V, K);
    void *ws = NULL;
    CUDA_OK(cudaMalloc(&ws, ws_bytes));
    outputs got = {(float *)host_alloc((size_t)R * K * sizeof(float)),
                   (float *)host_alloc((size_t)R * sizeof(float)),
                   (float *)host_alloc((size_t)R * V * sizeof(float)),
                   (int32_t *)host_alloc((size_t)R * K * sizeof(int32_t))};
    run_fused(s, d_x, ldx, d_w, d_bias, d_excluded, 0, R, ws, ws_bytes, &got, what,
              (nmt_output_topk_policy){0});

    /* Against the oracle. */
    int bad = 0;
    const double tol = 2e-5 * sqrt((double)H) + 1e-6 * log((double)V + 1.0);
    for (int32_t r = 0; r < R; r++) {
        const double lw = want.lse[r], lg = got.lse[r];
        const int lse_ok = isinf(lw) ? lg == lw : fabs(lg - lw) <= tol * (1.0 + fabs(lw));
        if (!lse_ok && bad++ < 3)
            fprintf(stderr, "  %s: row %d lse %.9g, the oracle %.9g\n", what, r, lg, lw);
        for (int32_t t = 0; t < K; t++) {
            const size_t i = (size_t)r * K + t;
            const float vw = want.values[i], vg = got.values[i];
            const int32_t iw = want.ids[i], ig = got.ids[i];
            int ok = isnan(vw) || isinf(vw) ? same_or_nan(vg, vw)
                                            : fabs((double)vg - vw) <= tol * (1.0 + fabs(vw));
            if (ig != iw) /* only at a near tie of the two words' logits */
                ok = ok && ig >= 0 && iw >= 0 && ig < V && iw < V &&
                     fabs((double)z[(size_t)r * V + ig] - z[(size_t)r * V + iw]) <= 2 * tol;
            if (!ok && bad++ < 3)
                fprintf(stderr, "  %s: row %d rank %d: word %d %.9g, the oracle's %d %.9g\n",
                        what, r, t, ig, vg, iw, vw);
        }
    }
    snprintf(what + strlen(what), sizeof what - strlen(what), ": vs the oracle");
    report_check(bad == 0, what);
    what[strlen(what) - strlen(": vs the oracle")] = '\0';

    /* Against the unfused layer on the GPU. */
    float *d_logits = (float *)dev_output((size_t)R * V * sizeof(float), POISON_F32);
    uint16_t *d_x16 = (uint16_t *)dev_output((size_t)R * H * sizeof(uint16_t), 0);
    nmt_error err = {};
    CHECK(nmt_cuda_linear_half(ctx, s->kind, R, V, H, d_xf, ldx, d_w, ldx, d_bias, d_logits, V,
                               d_x16, &err) == NMT_STATUS_OK,
          "%s: linear_half: %s", what, err.message);
    const size_t tws_bytes =
        nmt_cuda_softmax_topk_variant_workspace_size(NMT_SOFTMAX_TOPK_AUTO_INVARIANT, R, V, K);
    void *tws = NULL;
    CUDA_OK(cudaMalloc(&tws, tws_bytes));
    CUDA_OK(cudaMemset(tws, 0, tws_bytes));
    float *d_values = (float *)dev_output((size_t)R * K * sizeof(float), POISON_F32);
    int32_t *d_ids = (int32_t *)dev_output((size_t)R * K * sizeof(int32_t), POISON_I32);
    float *d_lse = (float *)dev_output((size_t)R * sizeof(float), POISON_F32);
    CHECK(nmt_cuda_softmax_topk_variant(R, V, d_logits, V, K, d_excluded, s->n_excluded,
                                        d_values, d_ids, d_lse, tws, tws_bytes,
                                        NMT_SOFTMAX_TOPK_AUTO_INVARIANT, stream,
                                        &err) == NMT_STATUS_OK,
          "%s: softmax_topk: %s", what, err.message);
    outputs unf = {(float *)host_alloc((size_t)R * K * sizeof(float)),
                   (float *)host_alloc((size_t)R * sizeof(float)),
                   (float *)host_alloc((size_t)R * V * sizeof(float)),
                   (int32_t *)host_alloc((size_t)R * K * sizeof(int32_t))};
    dev_download(unf.values, d_values, (size_t)R * K * sizeof(float), POISON_F32, what);
    dev_download(unf.ids, d_ids, (size_t)R * K * sizeof(int32_t), POISON_I32, what);
    dev_download(unf.keep, d_logits, (size_t)R * V * sizeof(float), POISON_F32, what);
    /* The chain's logits, for the kept column. */
    CHECK(nmt_cuda_linear_chain(ctx, R, V, H, d_xf, ldx,
                                s->kind == NMT_HALF_BF16 ? NMT_SKINNY_X_BF16 : NMT_SKINNY_X_FP16,
                                d_w, s->kind == NMT_HALF_BF16 ? NMT_WEIGHT_BF16 : NMT_WEIGHT_FP16,
                                ldx, d_bias, 0, d_logits, V, &err) == NMT_STATUS_OK,
          "%s: linear_chain: %s", what, err.message);
    dev_download(unf.keep, d_logits, (size_t)R * V * sizeof(float), POISON_F32, what);
    int ids_differ = 0, keep_differ = 0;
    const int32_t kw = V > 3 ? 3 : 0;
    for (int32_t r = 0; r < R; r++) {
        for (int32_t t = 0; t < K; t++)
            ids_differ += got.ids[(size_t)r * K + t] != unf.ids[(size_t)r * K + t];
        keep_differ += !same_or_nan(got.keep[(size_t)r * V + kw], unf.keep[(size_t)r * V + kw]);
    }
    /* (Rows of only -inf logits: the oracle decides; the unfused kernels may
     * list no word there.) */
    CHECK(ids_differ == 0 || s->neg_inf == 2, "%s: %d top ids differ from the unfused layer's",
          what, ids_differ);
    CHECK(keep_differ == 0, "%s: the kept logit differs from the chain kernel's in %d rows",
          what, keep_differ);

    /* Each of the first rows alone, and a slice, give the batch's bits. */
    outputs part = {(float *)host_alloc((size_t)R * K * sizeof(float)),
                    (float *)host_alloc((size_t)R * sizeof(float)),
                    (float *)host_alloc((size_t)R * V * sizeof(float)),
                    (int32_t *)host_alloc((size_t)R * K * sizeof(int32_t))};
    int moved = 0;
    const int32_t r0s[3] = {0, R > 1 ? 1 : 0, R > 3 ? R / 3 : 0};
    const int32_t ns[3] = {1, 1, R - (R > 3 ? R / 3 : 0)};
    for (int c = 0; c < 3; c++) {
        run_fused(s, d_x, ldx, d_w, d_bias, d_excluded, r0s[c], ns[c], ws, ws_bytes, &part, what,
                  (nmt_output_topk_policy){0});
        for (int32_t r = 0; r < ns[c]; r++) {
            const size_t a = (size_t)r * K, b = (size_t)(r0s[c] + r) * K;
            moved += memcmp(part.values + a, got.values + b, (size_t)K * sizeof(float)) != 0 ||
                     memcmp(part.ids + a, got.ids + b, (size_t)K * sizeof(int32_t)) != 0 ||
                     !same_or_nan(part.lse[r], got.lse[r0s[c] + r]);
        }
    }
    CHECK(moved == 0, "%s: %d rows changed bits with the rows around them", what, moved);
    for (int stages = 3; stages <= 5; stages++) /* the policy's choices: the same bits */
        for (int row_tile = 32; row_tile <= 128; row_tile *= 2) {
            const nmt_output_topk_policy policy = {.stages = stages, .row_tile = row_tile};
            run_fused(s, d_x, ldx, d_w, d_bias, d_excluded, 0, R, ws, ws_bytes, &part, what,
                      policy);
            CHECK(!memcmp(part.values, got.values, (size_t)R * K * sizeof(float)) &&
                      !memcmp(part.ids, got.ids, (size_t)R * K * sizeof(int32_t)) &&
                      !memcmp(part.lse, got.lse, (size_t)R * sizeof(float)),
                  "%s: %d stages, row tile %d give other bits", what, stages, row_tile);
        }

    CUDA_OK(cudaFree(d_x));
    CUDA_OK(cudaFree(d_w));
    CUDA_OK(cudaFree(d_xf));
    CUDA_OK(cudaFree(d_bias));
    CUDA_OK(cudaFree(d_excluded));
    CUDA_OK(cudaFree(ws));
    CUDA_OK(cudaFree(tws));
    CUDA_OK(cudaFree(d_logits));
    CUDA_OK(cudaFree(d_x16));
    CUDA_OK(cudaFree(d_values));
    CUDA_OK(cudaFree(d_ids));
    CUDA_OK(cudaFree(d_lse));
    outputs *all[3] = {&want, &got, &unf};
    for (int i = 0; i < 3; i++) {
        free(all[i]->values);
        free(all[i]->lse);
        free(all[i]->keep);
        free(all[i]->ids);
    }
    free(part.values);
    free(part.lse);
    free(part.keep);
    free(part.ids);
    free(x);
    free(w);
    free(xf);
    free(bias);
    free(z);
}

int main(void)
{
    ctx = gpu_test_start("test_gpu_output_topk");
    nmt_cuda_ctx_set_batch_invariant(ctx, 1);
    stream = nmt_cuda_ctx_stream(ctx);
    const nmt_half_kind F = NMT_HALF_FP16, B = NMT_HALF_BF16;
    const shape shapes[] = {
        {.rows = 1, .vocab = 1, .k = 16, .top_k = 1, .kind = F},
        {.rows = 5, .vocab = 4778, .k = 512, .top_k = 10, .n_excluded = 2, .kind = F},
        {.rows = 7, .vocab = 7, .k = 48, .top_k = 10, .kind = F},   /* K past V */
        {.rows = 64, .vocab = 128, .k = 32, .top_k = 5, .n_excluded = 1, .kind = B},
        {.rows = 65, .vocab = 129, .k = 64, .top_k = 32, .n_excluded = 3, .kind = F, .ties = 1},
        {.rows = 130, .vocab = 5000, .k = 256, .top_k = 20, .n_excluded = 2, .kind = B},
        {.rows = 300, .vocab = 4778, .k = 512, .top_k = 10, .n_excluded = 2, .kind = F},
        {.rows = 33, .vocab = 4200, .k = 80, .top_k = 12, .kind = F, .ties = 1, .neg_inf = 1},
        {.rows = 9, .vocab = 300, .k = 32, .top_k = 4, .kind = F, .neg_inf = 2},
        {.rows = 70, .vocab = 30001, .k = 128, .top_k = 10, .n_excluded = 2, .kind = F},
    };
    /* NMT_TEST_SMALL=1 (under compute-sanitizer): the shapes of at most
     * 300,000 logits, edge cases all among them. */
    const char *small = getenv("NMT_TEST_SMALL");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!(small && *small == '1' && (size_t)shapes[i].rows * shapes[i].vocab > 300000))
            test_shape(&shapes[i]);

    /* What the kernel does not take is refused, and said. */
    nmt_error err = {};
    uint16_t *d = (uint16_t *)dev_output(1024, 0);
    nmt_output_topk_args a = {.kind = F, .n_rows = 2, .vocab = 8, .k = 24, .x = d, .ldx = 24,
                              .w = d, .ldw = 24, .top_k = 4};
    CHECK(!nmt_cuda_output_topk_supports(&a) &&
              nmt_cuda_output_topk(&a, stream, &err) == NMT_STATUS_ERROR_UNSUPPORTED,
          "k 24 accepted");
    a.k = 16, a.ldx = 16, a.ldw = 16, a.top_k = NMT_OUTPUT_TOPK_MAX_K + 1;
    CHECK(!nmt_cuda_output_topk_supports(&a), "top_k %d accepted", a.top_k);
    const nmt_output_topk_policy two = {.stages = 2};
    a.top_k = 4;
    a.bias = (const float *)d, a.top_values = (float *)d, a.top_ids = (int32_t *)d;
    a.lse = (float *)d, a.workspace = d, a.workspace_bytes = 1 << 20;
    CHECK(nmt_cuda_output_topk_policy(&a, &two, stream, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "a ring of 2 stages accepted");
    const nmt_output_topk_policy odd_tile = {.row_tile = 48};
    CHECK(nmt_cuda_output_topk_policy(&a, &odd_tile, stream, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "a row tile of 48 accepted");
    a.workspace_bytes = 8;
    CHECK(nmt_cuda_output_topk(&a, stream, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "a small workspace accepted");
    CUDA_OK(cudaFree(d));
    nmt_cuda_ctx_free(ctx);
    return test_finish("test_gpu_output_topk");
}
