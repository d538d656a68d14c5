/* test_gpu_lsh_logits.cu: the CUDA candidate logits (nmt_cuda_lsh_logits,
 * every variant) and the softmax + top-K over candidate lists
 * (nmt_cuda_softmax_topk_candidates and every variant by name) against their
 * CPU oracles, on the lists the CPU builds from an uploaded index's hits (the
 * shapes and the set-up: lsh_test_fixture.h). Per shape:
 *  - logits of GEMM, SDDMM, WARP and AUTO within the rigorous bound of any
 *    fp32 summation order, |err| <= (dim + 2) u sum|x_k w_k| + u |ref|
 *    (u = 2^-24), against the double CPU result, from column 0 and past the
 *    always-kept prefix; entries past the count untouched (poison), and the
 *    lists' entries past the count are garbage that must not be read;
 *  - softmax + top-K over the candidates: quantized logits (many exact ties,
 *    which both sides must give to the lower word), excluded words, K > count,
 *    logits past the count NaN (must not be read); max_count = vocab (split
 *    plans cut in the kernel) and the tight bound; ids identical, values and
 *    lse to ~1e-5; through the launcher (AUTO) and every variant that can take
 *    the call, each variant at least once over the table (SORT refused).
 * NMT_TEST_SMALL=1 (under compute-sanitizer) keeps the small shapes only. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "lsh.h"
#include "lsh_test_fixture.h"
#include "softmax_topk.h"
#include "test_util.h"

static void *g_topk_ws;
static size_t g_topk_ws_bytes;

static const nmt_softmax_topk_variant kVariants[] = {
    NMT_SOFTMAX_TOPK_AUTO,  NMT_SOFTMAX_TOPK_ROW,    NMT_SOFTMAX_TOPK_FUSED,
    NMT_SOFTMAX_TOPK_SPLIT, NMT_SOFTMAX_TOPK_ATOMIC, NMT_SOFTMAX_TOPK_SORT,
    NMT_SOFTMAX_TOPK_WARP};
enum { N_VARIANTS = sizeof kVariants / sizeof kVariants[0] };
static int g_ran[N_VARIANTS]; /* calls each variant took */

/* ---- logits ---------------------------------------------------------------- */

/* Entries first <= j < count against the CPU's (host: the oracle's call,
 * whose logits hold its answer); the rest must stay poison. on_device: the
 * same call on the device copies (garbage past the counts), run with `first`
 * into fresh poisoned logits. */
static int check_logits(const nmt_lsh_logits_args *host, const nmt_lsh_logits_args *on_device,
                        const double *bound, nmt_lsh_logits_kernel variant, int32_t first,
                        int32_t max_count, const char *what)
{
    const size_t n = (size_t)host->n_rows * host->ld;
    const float *want = host->logits;
    float *d_logits = (float *)dev_output(n * sizeof(float), POISON_F32);
    nmt_error err = {};
    nmt_lsh_logits_args args = *on_device;
    args.first = first;
    args.logits = d_logits;
    nmt_status st = nmt_cuda_lsh_logits(&args, max_count, variant, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "%s: logits status %d: %s", what, (int)st, err.message);
    float *got = alloc_f32(n);
    int ok = dev_download(got, d_logits, n * sizeof(float), POISON_F32, what);
    double max_err = 0, max_ratio = 0;
    size_t bad = 0, touched = 0;
    for (int r = 0; r < host->n_rows; r++) {
        int32_t cnt = host->lists.count[r / host->lists.rows_per_group];
        for (int64_t j = 0; j < host->ld; j++) {
            size_t i = (size_t)r * host->ld + j;
            if (j >= cnt || j < first) {
                uint32_t bits;
                memcpy(&bits, &got[i], 4);
                touched += bits != 0xFFFFFFFFu;
                continue;
            }
            double e = fabs((double)got[i] - (double)want[i]);
            double ratio = e / bound[i];
            if (!(ratio <= 1.0)) { /* NaN fails too */
                if (bad < 5)
                    fprintf(stderr, "  logits[%d, %lld]: got %.9g want %.9g (bound %.3g)\n", r,
                            (long long)j, got[i], want[i], bound[i]);
                bad++;
            }
            max_err = e > max_err ? e : max_err;
            max_ratio = ratio > max_ratio ? ratio : max_ratio;
        }
    }
    if (touched)
        fprintf(stderr, "  logits: %zu entries below %d or past the count were written\n",
                touched, first);
    ok &= bad == 0 && touched == 0;
    fprintf(stderr, "  logits %s: max abs error %.3g, max error / bound %.3g\n", what, max_err,
            max_ratio);
    CHECK(ok, "logits %s", what);
    CUDA_OK(cudaFree(d_logits));
    free(got);
    return ok;
}

/* ---- softmax + top-K over candidates ----------------------------------------- */

/* One call of `variant`; 1 when it matched want_*, 0 when not, -1 when the
 * variant cannot take the call. */
static int check_softmax_variant(nmt_softmax_topk_variant variant, int rows, const float *d_z,
                                 int64_t ld, nmt_cand_lists d_lists, int32_t max_count,
                                 int top_k, const int32_t *d_excl, const float *want_v,
                                 const int32_t *want_i, const float *want_lse, const char *what)
{
    const size_t n_top = (size_t)rows * top_k;
    float *d_v = (float *)dev_output(n_top * sizeof(float), POISON_F32);
    int32_t *d_i = (int32_t *)dev_output(n_top * sizeof(int32_t), POISON_I32);
    float *d_lse = (float *)dev_output(rows * sizeof(float), POISON_F32);
    nmt_error err = {};
    nmt_status st =
        variant == NMT_SOFTMAX_TOPK_AUTO /* the library's entry point */
            ? nmt_cuda_softmax_topk_candidates(rows, d_z, ld, d_lists, max_count, top_k, d_excl,
                                               3, d_v, d_i, d_lse, g_topk_ws, g_topk_ws_bytes,
                                               NULL, &err)
            : nmt_cuda_softmax_topk_candidates_variant(
                  rows, d_z, ld, d_lists, max_count, top_k, d_excl, 3, d_v, d_i, d_lse,
                  g_topk_ws, g_topk_ws_bytes, variant, NULL, &err);
    int ok = -1;
    if (variant == NMT_SOFTMAX_TOPK_AUTO || st != NMT_STATUS_ERROR_UNSUPPORTED) {
        CHECK(st == NMT_STATUS_OK, "%s: softmax %s status %d: %s", what,
              nmt_cuda_softmax_topk_variant_name(variant), (int)st, err.message);
        float *got_v = alloc_f32(n_top), *got_lse = alloc_f32(rows);
        int32_t *got_i = alloc_i32(n_top);
        ok = dev_download(got_v, d_v, n_top * sizeof(float), POISON_F32, what);
        ok &= dev_download(got_i, d_i, n_top * sizeof(int32_t), POISON_I32, what);
        ok &= dev_download(got_lse, d_lse, rows * sizeof(float), POISON_F32, what);
        ok &= test_close_f32("lse", got_lse, want_lse, rows, 1e-5, 1e-6);
        ok &= test_close_f32("top_values", got_v, want_v, n_top, 2e-5, 1e-5);
        ok &= compare_i32("top_ids", got_i, want_i, n_top);
        CHECK(ok, "softmax_topk_candidates %s %s", nmt_cuda_softmax_topk_variant_name(variant),
              what);
        free(got_v);
        free(got_lse);
        free(got_i);
    }
    fprintf(stderr, "  softmax_topk_candidates %-6s %s: K %d, max_count %d: %s\n",
            nmt_cuda_softmax_topk_variant_name(variant), what, top_k, max_count,
            ok < 0 ? "n/a" : ok ? "ok" : "FAIL");
    CUDA_OK(cudaFree(d_v));
    CUDA_OK(cudaFree(d_i));
    CUDA_OK(cudaFree(d_lse));
    return ok;
}

/* Fresh quantized logits for the lists, the CPU's answer, then every variant. */
static void check_softmax(int rows, int vocab, int64_t ld, nmt_cand_lists lists,
                          nmt_cand_lists d_lists, int top_k, int32_t max_count, const char *what)
{
    const size_t n = (size_t)rows * ld, n_top = (size_t)rows * top_k;
    const int32_t *cand = lists.words, *count = lists.count;
    float *z = alloc_f32(n);
    for (int r = 0; r < rows; r++) {
        int32_t cnt = count[r / lists.rows_per_group];
        for (int64_t j = 0; j < ld; j++) {
            float v = floorf(test_rand_uniform(-8.0f, 8.0f) * 4.0f) / 4.0f; /* exact ties */
            z[(size_t)r * ld + j] = j < cnt ? v : NAN; /* past the count: never read */
        }
    }
    /* Excluded words: PAD (0), the best candidate of row 0, one out of range. */
    int32_t best = 0;
    for (int32_t j = 1; j < count[0]; j++)
        if (z[j] > z[best])
            best = j;
    int32_t excluded[3] = {0, cand[best], vocab + 5};
    float *want_v = alloc_f32(n_top), *want_lse = alloc_f32(rows);
    int32_t *want_i = alloc_i32(n_top);
    nmt_cpu_softmax_topk_candidates(rows, z, ld, lists, top_k, excluded, 3, want_v, want_i,
                                    want_lse);

    float *d_z = (float *)dev_upload(z, n * sizeof(float));
    int32_t *d_excl = (int32_t *)dev_upload(excluded, sizeof excluded);
    for (int v = 0; v < N_VARIANTS; v++) {
        size_t need = nmt_cuda_softmax_topk_variant_workspace_size(kVariants[v], rows, max_count,
                                                                   top_k);
        CHECK(kVariants[v] == NMT_SOFTMAX_TOPK_SORT || need <= g_topk_ws_bytes,
              "%s: workspace %zu > %zu", what, need, g_topk_ws_bytes);
        if (check_softmax_variant(kVariants[v], rows, d_z, ld, d_lists, max_count, top_k, d_excl,
                                  want_v, want_i, want_lse, what) >= 0)
            g_ran[v]++;
    }
    CUDA_OK(cudaFree(d_z));
    CUDA_OK(cudaFree(d_excl));
    free(z);
    free(want_v);
    free(want_lse);
    free(want_i);
}

/* ---- one shape ----------------------------------------------------------------- */

static void run_shape(const shape *s)
{
    lsh_case c;
    fprintf(stderr, "V %d dim %d K %d u %d W %d rows %d/%d (%s)\n", s->vocab, s->dim, s->k, s->u,
            s->w, s->rows, s->rows_per_group, s->what);
    const int failures_before = test_failures;
    if (!lsh_case_make(s, &c))
        return;
    const char *what = c.what;
    const int vocab = c.vocab, dim = c.dim, rows = c.rows, rpg = c.rpg, ldx = c.ldx;
    const int64_t cand_ld = c.cand_ld, ld = c.ld;
    const float *x = c.x, *out_w = c.out_w, *out_b = c.out_b;
    const int32_t *cand = c.cand, *count = c.count;
    const int32_t max_count = c.max_count;
    /* Device lists with garbage past the count: a kernel reading it would
     * use 0xA5A5A5A5 as a word id and fault. */
    int32_t *d_cand = (int32_t *)dev_upload(cand, (size_t)c.groups * cand_ld * sizeof(int32_t));
    int32_t *d_count = (int32_t *)dev_upload(count, c.groups * sizeof(int32_t));

    /* Logits */
    const size_t n_logits = (size_t)rows * ld;
    float *want = alloc_f32(n_logits);
    memset(want, POISON_F32, n_logits * sizeof(float));
    const float *bias = s->bias ? out_b : NULL;
    const nmt_lsh_logits_args oracle = { /* the CPU call: its answer in want */
        .n_rows = rows,
        .dim = dim,
        .x = x,
        .ldx = ldx,
        .out_w = out_w,
        .out_b = bias,
        .lists = {.words = c.cand, .ld = cand_ld, .count = c.count, .rows_per_group = rpg},
        .first = 0,
        .logits = want,
        .ld = ld,
    };
    nmt_cpu_lsh_logits(&oracle);
    double *bound = (double *)host_alloc(n_logits * sizeof(double));
    const double u = ldexp(1.0, -24);
    for (int r = 0; r < rows; r++) {
        const int g = r / rpg;
        for (int32_t j = 0; j < count[g]; j++) {
            const float *wr = out_w + (size_t)cand[(size_t)g * cand_ld + j] * dim;
            double mag = bias ? fabs((double)bias[cand[(size_t)g * cand_ld + j]]) : 0.0;
            for (int p = 0; p < dim; p++)
                mag += fabs((double)x[(size_t)r * ldx + p] * wr[p]);
            const size_t i = (size_t)r * ld + j;
            bound[i] = (dim + 2) * u * mag + u * fabs((double)want[i]) + 1e-30;
        }
    }
    nmt_lsh_logits_args on_device = oracle; /* the same call on the device copies */
    on_device.x = c.d_x;
    on_device.out_w = c.d_w;
    on_device.out_b = bias ? c.d_b : NULL;
    on_device.lists.words = d_cand;
    on_device.lists.count = d_count;
    const nmt_lsh_logits_args *cpu = &oracle, *gpu = &on_device;
    check_logits(cpu, gpu, bound, NMT_LSH_LOGITS_GEMM, 0, vocab, "GEMM, max_count = vocab");
    check_logits(cpu, gpu, bound, NMT_LSH_LOGITS_SDDMM, 0, max_count, "SDDMM, tight max_count");
    check_logits(cpu, gpu, bound, NMT_LSH_LOGITS_WARP, 0, vocab, "WARP, max_count = vocab");
    check_logits(cpu, gpu, bound, NMT_LSH_LOGITS_AUTO, 0, max_count, "AUTO, tight max_count");
    /* The engine's call: the n_always prefix is its dense GEMM's. */
    check_logits(cpu, gpu, bound, NMT_LSH_LOGITS_GEMM, s->n_always, vocab,
                 "GEMM past the always-kept prefix");
    check_logits(cpu, gpu, bound, NMT_LSH_LOGITS_SDDMM, s->n_always, max_count,
                 "SDDMM past the always-kept prefix");
    check_logits(cpu, gpu, bound, NMT_LSH_LOGITS_WARP, s->n_always, max_count,
                 "WARP past the always-kept prefix");

    /* Softmax + top-K over the candidates */
    check_softmax(rows, vocab, ld, oracle.lists, on_device.lists, s->top_k, vocab,
                  "max_count = vocab");
    check_softmax(rows, vocab, ld, oracle.lists, on_device.lists, s->top_k, max_count,
                  "tight max_count");

    fprintf(stderr, "%s %s\n", test_failures == failures_before ? "ok  " : "FAIL", what);
    CUDA_OK(cudaFree(d_cand));
    CUDA_OK(cudaFree(d_count));
    free(want);
    free(bound);
    lsh_case_free(&c);
}

int main(void)
{
    gpu_test_require_device("test_gpu_lsh_logits");
    test_seed();
    const int small = test_small();
    const size_t n_shapes = sizeof shapes / sizeof shapes[0];

    /* One softmax workspace, zeroed once, for every call (the split counters
     * must come back to zero); max_count <= vocab needs no more than vocab. */
    for (size_t i = 0; i < n_shapes; i++)
        for (int v = 0; v < N_VARIANTS; v++) {
            size_t b = nmt_cuda_softmax_topk_variant_workspace_size(
                kVariants[v], shapes[i].rows, shapes[i].vocab, shapes[i].top_k);
            if (kVariants[v] != NMT_SOFTMAX_TOPK_SORT) /* not with candidates */
                g_topk_ws_bytes = b > g_topk_ws_bytes ? b : g_topk_ws_bytes;
        }
    CUDA_OK(cudaMalloc(&g_topk_ws, g_topk_ws_bytes));
    CUDA_OK(cudaMemset(g_topk_ws, 0, g_topk_ws_bytes));
    CUDA_OK(cudaDeviceSynchronize()); /* the code under test runs on a non-blocking stream */

    for (size_t i = 0; i < n_shapes; i++)
        if (!small || shape_is_small(&shapes[i]))
            run_shape(&shapes[i]);
    for (int v = 0; v < N_VARIANTS; v++) {
        const int sort = kVariants[v] == NMT_SOFTMAX_TOPK_SORT; /* no candidate mapping */
        CHECK(sort ? g_ran[v] == 0 : g_ran[v] > 0, "softmax variant %s ran on %d shapes",
              nmt_cuda_softmax_topk_variant_name(kVariants[v]), g_ran[v]);
    }

    /* Refusals: K > 512 with candidates; bad logits variant; first < 0. */
    nmt_error err = {};
    int32_t *d_one = NULL;
    float *d_f = NULL;
    CUDA_OK(cudaMalloc(&d_one, 1024 * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&d_f, 1024 * sizeof(float)));
    const nmt_cand_lists one_list = {
        .words = d_one,
        .ld = 1000,
        .count = d_one,
        .rows_per_group = 1,
    };
    nmt_status st = nmt_cuda_softmax_topk_candidates(1, d_f, 1000, one_list, 1000, 513, NULL, 0,
                                                     d_f, d_one, NULL, g_topk_ws, g_topk_ws_bytes,
                                                     NULL, &err);
    CHECK(st == NMT_STATUS_ERROR_UNSUPPORTED, "K = 513 with candidates: status %d", (int)st);
    nmt_lsh_logits_args args = {
        .n_rows = 1,
        .dim = 4,
        .x = d_f,
        .ldx = 4,
        .out_w = d_f,
        .out_b = NULL,
        .lists = one_list,
        .first = 0,
        .logits = d_f,
        .ld = 10,
    };
    st = nmt_cuda_lsh_logits(&args, 10, (nmt_lsh_logits_kernel)7, NULL, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "logits variant 7: status %d", (int)st);
    args.first = -1;
    st = nmt_cuda_lsh_logits(&args, 10, NMT_LSH_LOGITS_GEMM, NULL, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "logits first -1: status %d", (int)st);
    CUDA_OK(cudaFree(d_one));
    CUDA_OK(cudaFree(d_f));
    CUDA_OK(cudaFree(g_topk_ws));
    return test_finish("test_gpu_lsh_logits");
}
