/* test_gpu_softmax_topk.cu: nmt_cuda_softmax_topk against nmt_cpu_softmax_topk
 * over a shape table that reaches every variant the launcher can pick: row
 * (few rows, 1..32 warps), fused (1..8 warps, one and two slots a lane),
 * warp (a row a warp: from 8 rows an SM), auto-invariant (the row kernel
 * with the warp kernel's (m, d) for few rows, else warp),
 * split (rows << SMs, K x V past the row kernel's bound), atomic
 * (64 < K <= 512), sort (K > 512); K > V, V = 1, odd and padded ld,
 * excluded ids, quantized logits (exact ties), k = 0 and lse = NULL. Each
 * shape runs through the launcher (AUTO, its pick logged) and then through
 * every variant by name (nmt_cuda_softmax_topk_variant) that can take it;
 * each variant must have run somewhere. One workspace, zeroed once, serves
 * every call in turn, so the split variant's per-row counters must come back
 * to zero after each call; a workspace too small is refused.
 * Ids must match exactly: both sides rank by the float logit, then the lower
 * id; values (z - lse) and lse to ~1e-5. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_test_util.h"
#include "softmax_topk.h"
#include "test_util.h"

typedef struct {
    int rows, vocab, k, pad, ties, n_excluded, with_lse;
    const char *variant; /* what the launcher should pick, for the log */
} shape;

/* Labels are the H100's picks (132 SMs): the row kernel while rows x ~V/16
 * threads fit about one 1024-thread block an SM and k' = K + excluded ids
 * <= 64 with k' x (words a thread) in its candidate buffer; warp from 8
 * rows an SM (1,056); fused between; split where the row kernel's bound
 * fails with rows < SMs. */
static const shape shapes[] = {
    {1, 1, 1, 0, 0, 0, 1, "row V=1"},
    {1, 1, 5, 0, 0, 0, 1, "row K>V"},
    {7, 7, 3, 1, 0, 1, 1, "row"},
    {3, 333, 10, 3, 0, 2, 1, "row"},
    {5, 1000, 64, 0, 0, 3, 1, "fused K=64 + 3 excluded (k' = 67)"},
    {5, 400, 64, 1, 0, 0, 1, "row one warp, K=64 (no warp floor)"},
    {3, 2000, 62, 1, 1, 2, 1, "row k' = 64, ties"},
    {2, 1001, 33, 1, 1, 2, 1, "row ties"},
    {4, 1000, 0, 0, 0, 0, 1, "k=0 (lse only)"},
    {1, 50, 200, 0, 0, 2, 1, "row K>V"},
    {333, 2049, 7, 2, 1, 2, 0, "row, lse NULL, ties"},
    {1000, 777, 8, 0, 0, 2, 1, "row short rows"},
    {1, 10240, 1, 0, 0, 2, 1, "row K=1"},
    {3, 20000, 5, 1, 0, 2, 1, "row 1024 threads"},
    {2, 4096, 40, 0, 1, 2, 1, "row ties"},
    {4, 30001, 61, 3, 1, 3, 1, "row k' = 64, 470 ties a value"},
    {120, 50000, 10, 0, 0, 2, 1, "row 120 rows"},
    {12, 50000, 5, 0, 0, 2, 1, "row"},
    {1, 100003, 10, 1, 0, 2, 1, "row odd V"},
    {60, 32000, 50, 0, 1, 3, 1, "row K=50 ties"},
    {5000, 40, 3, 1, 0, 2, 1, "warp many rows"},
    {3000, 777, 8, 2, 1, 2, 1, "warp short rows, ties"},
    {2500, 1000, 40, 0, 0, 3, 1, "warp 2 slots"},
    {1101, 4778, 10, 1, 1, 2, 1, "warp the decoder's V, rows not a block multiple"},
    {5000, 30, 40, 3, 0, 2, 1, "warp K>V"},
    {4500, 50, 60, 0, 1, 1, 0, "warp K>V 2 slots, lse NULL"},
    {4400, 3, 2, 0, 0, 2, 1, "warp V<4 (head words only)"},
    {200, 50000, 10, 0, 0, 2, 1, "fused large V"},
    {1, 100003, 64, 1, 0, 2, 1, "split (row bound: 64 x 101 words)"},
    {3, 90001, 50, 0, 1, 2, 1, "split 2 slots ties"},
    {1, 100003, 64, 3, 0, 1, 1, "split again (counters reset)"},
    {4, 5000, 100, 0, 0, 2, 1, "atomic"},
    {3, 2000, 300, 3, 1, 2, 1, "atomic ties"},
    {2, 3000, 600, 0, 0, 2, 1, "sort"},
    {2, 700, 1000, 1, 0, 2, 1, "sort K>V"},
};

static const nmt_softmax_topk_variant kVariants[] = {
    NMT_SOFTMAX_TOPK_AUTO,  NMT_SOFTMAX_TOPK_ROW,    NMT_SOFTMAX_TOPK_FUSED,
    NMT_SOFTMAX_TOPK_SPLIT, NMT_SOFTMAX_TOPK_ATOMIC, NMT_SOFTMAX_TOPK_SORT,
    NMT_SOFTMAX_TOPK_WARP,  NMT_SOFTMAX_TOPK_AUTO_INVARIANT};
enum { N_VARIANTS = sizeof kVariants / sizeof kVariants[0] };

static void *g_workspace;
static size_t g_workspace_bytes;
static int g_ran[N_VARIANTS]; /* shapes each variant took */

/* One call of `variant` against the CPU's answer (want_*); returns 1 when it
 * matched, 0 when it did not, -1 when the variant cannot take the shape. */
static int check_variant(const shape *s, nmt_softmax_topk_variant variant, const float *d_logits,
                         const int32_t *d_excl, const float *want_v, const int32_t *want_i,
                         const float *want_lse)
{
    const int rows = s->rows, vocab = s->vocab, k = s->k, ld = s->vocab + s->pad;
    const size_t n_top = (size_t)rows * k;
    float *d_v = (float *)dev_output(n_top * sizeof(float), POISON_F32);
    int32_t *d_i = (int32_t *)dev_output(n_top * sizeof(int32_t), POISON_I32);
    float *d_lse = s->with_lse ? (float *)dev_output(rows * sizeof(float), POISON_F32) : NULL;
    nmt_error err = {};
    nmt_status st =
        variant == NMT_SOFTMAX_TOPK_AUTO /* the library's entry point */
            ? nmt_cuda_softmax_topk(rows, vocab, d_logits, ld, k, d_excl, s->n_excluded,
                                    k ? d_v : NULL, k ? d_i : NULL, d_lse, g_workspace,
                                    g_workspace_bytes, NULL, &err)
            : nmt_cuda_softmax_topk_variant(rows, vocab, d_logits, ld, k, d_excl, s->n_excluded,
                                            k ? d_v : NULL, k ? d_i : NULL, d_lse, g_workspace,
                                            g_workspace_bytes, variant, NULL, &err);
    char what[200];
    snprintf(what, sizeof what, "%s: rows %d V %d K %d ld %d (%s)",
             nmt_cuda_softmax_topk_variant_name(variant), rows, vocab, k, ld, s->variant);
    if (variant != NMT_SOFTMAX_TOPK_AUTO && st == NMT_STATUS_ERROR_UNSUPPORTED) {
        fprintf(stderr, "n/a  %s\n", what);
        cudaFree(d_v);
        cudaFree(d_i);
        if (d_lse)
            cudaFree(d_lse);
        return -1;
    }
    CHECK(st == NMT_STATUS_OK, "%s: status %d: %s", what, (int)st, err.message);

    float *got_v = (float *)host_alloc(n_top * sizeof(float));
    int32_t *got_i = (int32_t *)host_alloc(n_top * sizeof(int32_t));
    float *got_lse = (float *)host_alloc(rows * sizeof(float));
    dev_download(got_v, d_v, n_top * sizeof(float), POISON_F32, what);
    dev_download(got_i, d_i, n_top * sizeof(int32_t), POISON_I32, what);
    int ok = 1;
    if (d_lse) {
        dev_download(got_lse, d_lse, rows * sizeof(float), POISON_F32, what);
        ok &= test_close_f32("lse", got_lse, want_lse, rows, 1e-5, 1e-6);
    }
    ok &= test_close_f32("top_values", got_v, want_v, n_top, 2e-5, 1e-5);
    size_t bad_ids = 0;
    for (size_t i = 0; i < n_top; i++) {
        if (got_i[i] != want_i[i]) {
            if (bad_ids < 5)
                fprintf(stderr, "  top_ids[row %zu, %zu]: got %d want %d (values %.9g / %.9g)\n",
                        i / k, i % k, got_i[i], want_i[i], got_v[i], want_v[i]);
            bad_ids++;
        }
    }
    if (bad_ids)
        fprintf(stderr, "top_ids: %zu of %zu differ\n", bad_ids, n_top);
    ok &= bad_ids == 0;
    CHECK(ok, "%s", what);
    fprintf(stderr, "%s %s\n", ok ? "ok  " : "FAIL", what);
    cudaFree(d_v);
    cudaFree(d_i);
    if (d_lse)
        cudaFree(d_lse);
    free(got_v);
    free(got_i);
    free(got_lse);
    return ok;
}

/* Fresh logits for the shape, the CPU's answer, then every variant. */
static void run_shape(const shape *s)
{
    const int rows = s->rows, vocab = s->vocab, k = s->k, ld = s->vocab + s->pad;
    size_t n_logits = (size_t)rows * ld, n_top = (size_t)rows * k;
    float *logits = (float *)host_alloc(n_logits * sizeof(float));
    for (size_t i = 0; i < n_logits; i++) {
        float z = test_rand_uniform(-8.0f, 8.0f);
        logits[i] = s->ties ? floorf(z * 4.0f) / 4.0f : z; /* quantized: many exact ties */
    }
    /* Excluded: id 0, the row-0 argmax (a word that would surely be picked), out of range. */
    int32_t excluded[3] = {0, 0, vocab + 5};
    for (int w = 1; w < vocab; w++)
        if (logits[w] > logits[excluded[1]])
            excluded[1] = w;

    float *want_v = (float *)host_alloc(n_top * sizeof(float));
    int32_t *want_i = (int32_t *)host_alloc(n_top * sizeof(int32_t));
    float *want_lse = (float *)host_alloc(rows * sizeof(float));
    nmt_cpu_softmax_topk(rows, vocab, logits, ld, k, excluded, s->n_excluded, want_v, want_i,
                         want_lse);
    float *d_logits = (float *)dev_upload(logits, n_logits * sizeof(float));
    int32_t *d_excl = (int32_t *)dev_upload(excluded, sizeof excluded);
    fprintf(stderr, "rows %d V %d K %d: AUTO picks %s\n", rows, vocab, k,
            nmt_cuda_softmax_topk_variant_name(
                nmt_cuda_softmax_topk_pick(rows, vocab, k, s->n_excluded, 0)));
    for (int v = 0; v < N_VARIANTS; v++)
        if (check_variant(s, kVariants[v], d_logits, d_excl, want_v, want_i, want_lse) >= 0)
            g_ran[v]++;
    cudaFree(d_logits);
    cudaFree(d_excl);
    free(logits);
    free(want_v);
    free(want_i);
    free(want_lse);
}

/* NMT_TEST_SMALL=1 (under compute-sanitizer) keeps the small shapes only. */
static int shape_runs(const shape *s, const char *small)
{
    return !(small && *small == '1' && (size_t)s->rows * s->vocab > 300000);
}

int main(void)
{
    gpu_test_require_device("test_gpu_softmax_topk");
    test_seed();
    const char *small = getenv("NMT_TEST_SMALL");
    const size_t n_shapes = sizeof shapes / sizeof shapes[0];
    for (size_t i = 0; i < n_shapes; i++)
        for (int v = 0; v < N_VARIANTS && shape_runs(&shapes[i], small); v++) {
            size_t b = nmt_cuda_softmax_topk_variant_workspace_size(kVariants[v], shapes[i].rows,
                                                                    shapes[i].vocab, shapes[i].k);
            CHECK(b != SIZE_MAX, "workspace size for shape %zu", i);
            g_workspace_bytes = b != SIZE_MAX && b > g_workspace_bytes ? b : g_workspace_bytes;
        }
    CUDA_OK(cudaMalloc(&g_workspace, g_workspace_bytes));
    CUDA_OK(cudaMemset(g_workspace, 0, g_workspace_bytes));
    CUDA_OK(cudaDeviceSynchronize()); /* the code under test runs on a non-blocking stream */
    for (size_t i = 0; i < n_shapes; i++)
        if (shape_runs(&shapes[i], small))
            run_shape(&shapes[i]);
    for (int v = 0; v < N_VARIANTS; v++)
        CHECK(g_ran[v] > 0, "variant %s ran on no shape",
              nmt_cuda_softmax_topk_variant_name(kVariants[v]));

    /* Bad arguments are refused with a message, not launched. */
    nmt_error err = {};
    CHECK(nmt_cuda_softmax_topk(1, 0, NULL, 0, 1, NULL, 0, NULL, NULL, NULL, NULL, 0, NULL,
                                &err) == NMT_STATUS_ERROR_ARGUMENT, "vocab 0 accepted");
    /* The split variant (1 row of 100003, K = 64) with no workspace: refused, not launched. */
    float *d_logits = NULL, *d_v = NULL;
    int32_t *d_i = NULL;
    CUDA_OK(cudaMalloc(&d_logits, 100003 * sizeof(float)));
    CUDA_OK(cudaMalloc(&d_v, 64 * sizeof(float)));
    CUDA_OK(cudaMalloc(&d_i, 64 * sizeof(int32_t)));
    nmt_status st = nmt_cuda_softmax_topk(1, 100003, d_logits, 100003, 64, NULL, 0, d_v, d_i,
                                          NULL, NULL, 0, NULL, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "split without a workspace: status %d", (int)st);
    CUDA_OK(cudaFree(d_logits));
    CUDA_OK(cudaFree(d_v));
    CUDA_OK(cudaFree(d_i));
    CUDA_OK(cudaFree(g_workspace));
    return test_finish("test_gpu_softmax_topk");
}
