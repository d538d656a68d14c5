/* test_gpu_lsh.cu: the CUDA LSH kernels (kernels/lsh.h) and the candidate
 * softmax + top-K (softmax_topk.h) against their CPU oracles, over an index
 * built by nmt_lsh_index_build from a random W_out and uploaded.
 *
 * Shapes reach 1 row, vocab 1, 7, 333, 3000, 5000, 35000, odd dims (3, 33)
 * and K = dim, W from 1 to 70, groups of 1, 3, 5 rows and of all rows (16-
 * and 64-row GEMM tiles), float4 and scalar loads, dead rows, and the fused
 * (one and two slots), split and atomic softmax variants. Per shape:
 *  - codes identical; hits identical for both lookups (NAIVE on top of a
 *    random base: hits accumulate);
 *  - candidate lists and counts identical, entries past the count untouched,
 *    hits zero afterwards; on the LSH hits and on dense random hits (long
 *    lists across many chunks); the workspace starts as garbage;
 *  - logits of GEMM, SDDMM and AUTO within the rigorous bound of any fp32
 *    summation order, |err| <= (dim + 2) u sum|x_k w_k| + u |ref| (u = 2^-24),
 *    against the double CPU result; entries past the count untouched (poison),
 *    and the lists' entries past the count are garbage that must not be read;
 *  - softmax + top-K over the candidates: quantized logits (many exact ties,
 *    which both sides must give to the lower word), excluded words, K > count,
 *    logits past the count NaN (must not be read); max_count = vocab (split
 *    plans cut in the kernel) and the tight bound; ids identical, values and
 *    lse to ~1e-5;
 *  - recall statistics identical (accumulated on a nonzero start).
 * NMT_TEST_SMALL=1 (under compute-sanitizer) keeps the small shapes only. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "lsh.h"
#include "lsh_index.h"
#include "softmax_topk.h"
#include "test_util.h"

typedef struct {
    int vocab, dim, k, u, w;  /* output layer and WTA parameters */
    int rows, rows_per_group; /* rows_per_group == rows: one group */
    int threshold, n_always;
    int pad;   /* ldx = dim + pad; logits and lists get vocab + pad */
    int dead;  /* every 4th row (from row 1) is dead */
    int top_k; /* softmax K */
    int bias;  /* out_b or NULL */
    const char *what;
} shape;

static const shape shapes[] = {
    {1, 3, 2, 1, 1, 1, 1, 1, 4, 0, 0, 5, 1, "vocab 1, 1 row"},
    {7, 3, 3, 2, 4, 3, 1, 1, 4, 1, 1, 10, 1, "vocab 7, K = dim = 3, top-K > count"},
    {333, 33, 8, 2, 16, 5, 3, 2, 10, 1, 1, 8, 1, "groups of 3, dim 33"},
    {333, 33, 33, 1, 7, 7, 7, 1, 4, 0, 0, 100, 0, "K = dim = 33, all rows, no bias, K 100"},
    {3000, 24, 6, 2, 24, 2, 1, 2, 30, 0, 1, 40, 1, "2 rows: split, two slots a lane"},
    {333, 16, 4, 2, 1, 33, 33, 1, 4, 0, 0, 3, 1, "W = 1, 33 rows: 64-row tiles"},
    {5000, 2, 2, 3, 8, 40, 5, 4, 4, 0, 1, 3, 1, "dim 2: buckets of ~600 words"},
    {5000, 500, 16, 2, 64, 12, 5, 3, 100, 0, 1, 5, 1, "W = 64, groups of 5, dim 500"},
    {5000, 64, 8, 3, 70, 100, 100, 4, 50, 4, 1, 100, 1, "W = 70, 100 rows one group, K 100"},
    {1000, 12, 2, 2, 12, 300, 1, 1, 990, 0, 1, 5, 1, "300 per-row lists: blocks loop tiles"},
    {35000, 256, 16, 2, 32, 6, 1, 2, 200, 3, 0, 10, 1, "per-row lists, ldx % 4 != 0"},
    {35000, 500, 8, 2, 20, 1, 1, 2, 4, 0, 0, 64, 1, "1 row, vocab 35000, K 64"},
    {3000, 32, 8, 2, 40, 24, 12, 2, 1000, 1, 1, 24, 1, "top 1000 of 3000: walks skip prefixes"},
    {20000, 64, 8, 3, 50, 48, 12, 3, 5000, 0, 1, 24, 1, "top 5000 of 20000, sentence groups"},
    {3000, 16, 4, 2, 8, 200, 10, 2, 50, 0, 1, 62, 1, "200 rows, K 62 + 3 excluded: fused"},
    {500, 1100, 40, 3, 10, 9, 3, 2, 20, 0, 1, 5, 1, "dim 1100, K 40, u 3"},
    {120, 3100, 8, 2, 6, 5, 5, 1, 10, 0, 0, 5, 1, "dim 3100, 5 rows"},
};

static int g_small;
static void *g_topk_ws;
static size_t g_topk_ws_bytes;

#define POISON_WORD ((int32_t)0xA5A5A5A5) /* POISON_I32 as an int32 */

static int compare_i32(const char *what, const int32_t *got, const int32_t *want, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: got %d want %d\n", what, i, got[i], want[i]);
            bad++;
        }
    }
    if (bad)
        fprintf(stderr, "  %s: %zu of %zu differ\n", what, bad, n);
    return bad == 0;
}

static int32_t *alloc_i32(size_t n) { return (int32_t *)host_alloc(n * sizeof(int32_t)); }
static float *alloc_f32(size_t n) { return (float *)host_alloc(n * sizeof(float)); }

/* ---- device copy of the index's tables ------------------------------------ */

typedef struct {
    nmt_lsh_tables t; /* device pointers */
    void *buf[4];
} dev_tables;

static dev_tables upload_tables(const nmt_lsh_tables *h)
{
    dev_tables d;
    d.t = *h;
    size_t n_perm = (size_t)h->u * h->w * h->k, n_slots = (size_t)h->w << h->table_bits;
    d.buf[0] = dev_upload(h->perm, n_perm * sizeof(int32_t));
    d.buf[1] = dev_upload(h->slots, n_slots * sizeof(nmt_lsh_slot));
    d.buf[2] = dev_upload(h->hash, (size_t)h->w * 4 * sizeof(uint32_t));
    d.buf[3] = dev_upload(h->bucket_words, (size_t)h->w * h->vocab * sizeof(int32_t));
    d.t.perm = (const int32_t *)d.buf[0];
    d.t.slots = (const nmt_lsh_slot *)d.buf[1];
    d.t.hash = (const uint32_t *)d.buf[2];
    d.t.bucket_words = (const int32_t *)d.buf[3];
    return d;
}

static void free_tables(dev_tables *d)
{
    for (int i = 0; i < 4; i++)
        CUDA_OK(cudaFree(d->buf[i]));
}

/* ---- candidates ------------------------------------------------------------ */

/* Both builders on copies of `hits`; the CPU lists and counts come back in
 * cand_cpu / count_cpu (entries past the count: POISON_WORD). */
static int check_candidates(const char *what, int rows, int rpg, int vocab, const int32_t *hits,
                            int threshold, int n_always, int64_t cand_ld, int32_t *cand_cpu,
                            int32_t *count_cpu)
{
    const int groups = (rows + rpg - 1) / rpg;
    const size_t n_hits = (size_t)rows * vocab, n_cand = (size_t)groups * cand_ld;
    int32_t *h = alloc_i32(n_hits);
    memcpy(h, hits, n_hits * sizeof(int32_t));
    memset(cand_cpu, POISON_I32, n_cand * sizeof(int32_t));
    nmt_cpu_lsh_candidates(rows, rpg, vocab, h, threshold, n_always, cand_cpu, cand_ld,
                           count_cpu);

    int32_t *d_hits = (int32_t *)dev_output(n_hits * sizeof(int32_t), POISON_I32);
    CUDA_OK(cudaMemcpy(d_hits, hits, n_hits * sizeof(int32_t), cudaMemcpyHostToDevice));
    int32_t *d_cand = (int32_t *)dev_output(n_cand * sizeof(int32_t), POISON_I32);
    int32_t *d_count = (int32_t *)dev_output(groups * sizeof(int32_t), POISON_I32);
    size_t ws_bytes = nmt_cuda_lsh_candidates_workspace_size(groups, vocab);
    void *ws = NULL;
    CUDA_OK(cudaMalloc(&ws, ws_bytes));
    CUDA_OK(cudaMemset(ws, 0x5A, ws_bytes)); /* garbage: nothing may rely on zeros */
    CUDA_OK(cudaDeviceSynchronize()); /* the code under test runs on a non-blocking stream */
    nmt_error err = {};
    nmt_status st = nmt_cuda_lsh_candidates(rows, rpg, vocab, d_hits, threshold, n_always,
                                            d_cand, cand_ld, d_count, ws, ws_bytes, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "%s: candidates status %d: %s", what, (int)st, err.message);
    if (ws_bytes >= 4) { /* a workspace too small is refused */
        st = nmt_cuda_lsh_candidates(rows, rpg, vocab, d_hits, threshold, n_always, d_cand,
                                     cand_ld, d_count, ws, ws_bytes - 4, NULL, &err);
        CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "%s: small workspace: status %d", what, (int)st);
    }

    int32_t *got_cand = alloc_i32(n_cand), *got_count = alloc_i32(groups);
    int ok = dev_download(got_count, d_count, groups * sizeof(int32_t), POISON_I32, what);
    ok &= dev_download(got_cand, d_cand, n_cand * sizeof(int32_t), POISON_I32, what);
    dev_download(h, d_hits, n_hits * sizeof(int32_t), POISON_I32, what);
    ok &= compare_i32("count", got_count, count_cpu, groups);
    /* The whole row of each list: the words, then untouched poison. */
    ok &= compare_i32("cand (words, then poison)", got_cand, cand_cpu, n_cand);
    size_t nonzero = 0;
    for (size_t i = 0; i < n_hits; i++)
        nonzero += h[i] != 0;
    if (nonzero)
        fprintf(stderr, "  hits: %zu of %zu not reset to 0\n", nonzero, n_hits);
    ok &= nonzero == 0;
    int64_t total = 0;
    for (int g = 0; g < groups; g++)
        total += count_cpu[g];
    fprintf(stderr, "  candidates (%s): %d groups, %.1f words a group of %d\n", what, groups,
            (double)total / groups, vocab);

    CUDA_OK(cudaFree(d_hits));
    CUDA_OK(cudaFree(d_cand));
    CUDA_OK(cudaFree(d_count));
    CUDA_OK(cudaFree(ws));
    free(h);
    free(got_cand);
    free(got_count);
    CHECK(ok, "candidates: %s", what);
    return ok;
}

/* The direct builder (no hit matrix) from the codes, twice on one workspace
 * (the first call must leave it zeroed for the second), against the CPU
 * lists made from the CPU hits (cand_cpu, count_cpu: check_candidates'). */
static int check_direct(const char *what, int rows, int rpg, const int32_t *d_codes,
                        const int32_t *d_live, const nmt_lsh_tables *dt, int threshold,
                        int n_always, int64_t cand_ld, const int32_t *cand_cpu,
                        const int32_t *count_cpu)
{
    const int groups = (rows + rpg - 1) / rpg;
    const size_t n_cand = (size_t)groups * cand_ld;
    size_t ws_bytes = nmt_cuda_lsh_direct_workspace_size(groups, dt->vocab);
    void *ws = NULL;
    CUDA_OK(cudaMalloc(&ws, ws_bytes));
    CUDA_OK(cudaMemset(ws, 0, ws_bytes)); /* zeroed once, as the contract says */
    CUDA_OK(cudaDeviceSynchronize()); /* the code under test runs on a non-blocking stream */
    int32_t *got_cand = alloc_i32(n_cand), *got_count = alloc_i32(groups);
    int ok = 1;
    for (int call = 0; call < 2; call++) {
        int32_t *d_cand = (int32_t *)dev_output(n_cand * sizeof(int32_t), POISON_I32);
        int32_t *d_count = (int32_t *)dev_output(groups * sizeof(int32_t), POISON_I32);
        nmt_error err = {};
        nmt_status st = nmt_cuda_lsh_candidates_direct(rows, rpg, d_codes, d_live, dt, threshold,
                                                       n_always, d_cand, cand_ld, d_count, ws,
                                                       ws_bytes, NULL, &err);
        CHECK(st == NMT_STATUS_OK, "%s: direct status %d: %s", what, (int)st, err.message);
        ok &= dev_download(got_count, d_count, groups * sizeof(int32_t), POISON_I32, what);
        ok &= dev_download(got_cand, d_cand, n_cand * sizeof(int32_t), POISON_I32, what);
        ok &= compare_i32(call ? "direct count (2nd call)" : "direct count", got_count, count_cpu,
                          groups);
        ok &= compare_i32(call ? "direct cand (2nd call)" : "direct cand", got_cand, cand_cpu,
                          n_cand);
        CUDA_OK(cudaFree(d_cand));
        CUDA_OK(cudaFree(d_count));
    }
    CUDA_OK(cudaFree(ws));
    free(got_cand);
    free(got_count);
    CHECK(ok, "direct candidates: %s", what);
    return ok;
}

/* The direct builder on the packed buckets (nmt_lsh_pack) of words >= below:
 * packed when n_always >= below, the int32 walk otherwise; the same lists. */
static void check_packed(const char *what, const nmt_lsh_tables *h, const nmt_lsh_tables *dt,
                         int below, int rows, int rpg, const int32_t *d_codes,
                         const int32_t *d_live, int threshold, int n_always, int64_t cand_ld,
                         const int32_t *cand_cpu, const int32_t *count_cpu)
{
    const int64_t vectors = nmt_lsh_pack_vectors(h, below);
    CHECK(vectors >= 0, "%s: cannot pack (vocab %d)", what, h->vocab);
    if (vectors < 0)
        return;
    const size_t slot_bytes = ((size_t)h->w << h->table_bits) * sizeof(nmt_lsh_slot);
    const size_t word_bytes = (size_t)vectors * 8 * sizeof(uint16_t);
    nmt_lsh_slot *slots = (nmt_lsh_slot *)host_alloc(slot_bytes);
    uint16_t *words = (uint16_t *)host_alloc(word_bytes + 16);
    nmt_lsh_pack(h, below, slots, words);
    nmt_lsh_tables pt = *dt;
    void *d_slots = dev_upload(slots, slot_bytes);
    void *d_words = dev_upload(words, word_bytes + 16); /* a vector even when empty */
    pt.packed_slots = (const nmt_lsh_slot *)d_slots;
    pt.packed_words = (const uint16_t *)d_words;
    pt.packed_below = below;
    check_direct(what, rows, rpg, d_codes, d_live, &pt, threshold, n_always, cand_ld, cand_cpu,
                 count_cpu);
    CUDA_OK(cudaFree(d_slots));
    CUDA_OK(cudaFree(d_words));
    free(slots);
    free(words);
}

/* ---- logits ---------------------------------------------------------------- */

typedef struct {
    int rows, rpg, dim, ldx;
    const float *x, *out_w, *out_b;         /* host */
    const float *d_x, *d_w, *d_b;           /* device */
    const int32_t *cand, *count;            /* host (CPU lists) */
    const int32_t *d_cand, *d_count;        /* device copies, garbage past the count */
    int64_t cand_ld, ld;
} logits_case;

/* Entries first <= j < count against the CPU; the rest must stay poison. */
static int check_logits(const logits_case *c, const float *want, const double *bound,
                        nmt_lsh_logits_kernel variant, int32_t first, int32_t max_count,
                        const char *what)
{
    const size_t n = (size_t)c->rows * c->ld;
    float *d_logits = (float *)dev_output(n * sizeof(float), POISON_F32);
    nmt_error err = {};
    nmt_status st = nmt_cuda_lsh_logits(c->rows, c->rpg, c->dim, c->d_x, c->ldx, c->d_w, c->d_b,
                                        c->d_cand, c->cand_ld, c->d_count, first, max_count,
                                        d_logits, c->ld, variant, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "%s: logits status %d: %s", what, (int)st, err.message);
    float *got = alloc_f32(n);
    int ok = dev_download(got, d_logits, n * sizeof(float), POISON_F32, what);
    double max_err = 0, max_ratio = 0;
    size_t bad = 0, touched = 0;
    for (int r = 0; r < c->rows; r++) {
        int32_t cnt = c->count[r / c->rpg];
        for (int64_t j = 0; j < c->ld; j++) {
            size_t i = (size_t)r * c->ld + j;
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

static int check_softmax(int rows, int rpg, int vocab, int64_t ld, const int32_t *cand,
                         const int32_t *d_cand, int64_t cand_ld, const int32_t *count,
                         const int32_t *d_count, int top_k, int32_t max_count, const char *what)
{
    const size_t n = (size_t)rows * ld, n_top = (size_t)rows * top_k;
    float *z = alloc_f32(n);
    for (int r = 0; r < rows; r++) {
        int32_t cnt = count[r / rpg];
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
    nmt_cpu_softmax_topk_candidates(rows, rpg, z, ld, cand, cand_ld, count, top_k, excluded, 3,
                                    want_v, want_i, want_lse);

    float *d_z = (float *)dev_upload(z, n * sizeof(float));
    int32_t *d_excl = (int32_t *)dev_upload(excluded, sizeof excluded);
    float *d_v = (float *)dev_output(n_top * sizeof(float), POISON_F32);
    int32_t *d_i = (int32_t *)dev_output(n_top * sizeof(int32_t), POISON_I32);
    float *d_lse = (float *)dev_output(rows * sizeof(float), POISON_F32);
    size_t need = nmt_cuda_softmax_topk_workspace_size(rows, max_count, top_k);
    CHECK(need <= g_topk_ws_bytes, "%s: workspace %zu > %zu", what, need, g_topk_ws_bytes);
    nmt_error err = {};
    nmt_status st = nmt_cuda_softmax_topk_candidates(
        rows, rpg, d_z, ld, d_cand, cand_ld, d_count, max_count, top_k, d_excl, 3, d_v, d_i, d_lse,
        g_topk_ws, g_topk_ws_bytes, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "%s: softmax status %d: %s", what, (int)st, err.message);

    float *got_v = alloc_f32(n_top), *got_lse = alloc_f32(rows);
    int32_t *got_i = alloc_i32(n_top);
    int ok = dev_download(got_v, d_v, n_top * sizeof(float), POISON_F32, what);
    ok &= dev_download(got_i, d_i, n_top * sizeof(int32_t), POISON_I32, what);
    ok &= dev_download(got_lse, d_lse, rows * sizeof(float), POISON_F32, what);
    ok &= test_close_f32("lse", got_lse, want_lse, rows, 1e-5, 1e-6);
    ok &= test_close_f32("top_values", got_v, want_v, n_top, 2e-5, 1e-5);
    ok &= compare_i32("top_ids", got_i, want_i, n_top);
    fprintf(stderr, "  softmax_topk_candidates %s: K %d, max_count %d: %s\n", what, top_k,
            max_count, ok ? "ok" : "FAIL");
    CHECK(ok, "softmax_topk_candidates %s", what);

    CUDA_OK(cudaFree(d_z));
    CUDA_OK(cudaFree(d_excl));
    CUDA_OK(cudaFree(d_v));
    CUDA_OK(cudaFree(d_i));
    CUDA_OK(cudaFree(d_lse));
    free(z);
    free(want_v);
    free(want_lse);
    free(want_i);
    free(got_v);
    free(got_lse);
    free(got_i);
    return ok;
}

/* ---- one shape ----------------------------------------------------------------- */

static void run_shape(const shape *s)
{
    const int vocab = s->vocab, dim = s->dim, rows = s->rows, rpg = s->rows_per_group;
    const int ldx = dim + s->pad, groups = (rows + rpg - 1) / rpg;
    const int64_t cand_ld = vocab + s->pad, ld = vocab + s->pad;
    char what[200];
    snprintf(what, sizeof what, "V %d dim %d K %d u %d W %d rows %d/%d (%s)", vocab, dim, s->k,
             s->u, s->w, rows, rpg, s->what);
    fprintf(stderr, "%s\n", what);
    const int failures_before = test_failures;

    /* The output layer and its index. */
    float *out_w = alloc_f32((size_t)vocab * dim), *out_b = alloc_f32(vocab);
    test_fill_uniform(out_w, (size_t)vocab * dim, -1.0f, 1.0f);
    test_fill_uniform(out_b, vocab, -0.5f, 0.5f);
    nmt_lsh_index_config config = {s->k, s->u, s->w, test_rand_u64()};
    nmt_lsh_index *index = NULL;
    nmt_error err = {};
    nmt_status st = nmt_lsh_index_build(out_w, vocab, dim, &config, &index, &err);
    CHECK(st == NMT_STATUS_OK, "index build: %s", err.message);
    if (st != NMT_STATUS_OK) {
        free(out_w);
        free(out_b);
        return;
    }
    const nmt_lsh_tables *tables = nmt_lsh_index_tables(index);
    dev_tables dt = upload_tables(tables);

    /* Attentional states: half near an output row (many shared codes), half
     * random; the padding is NaN and must never be read. */
    float *x = alloc_f32((size_t)rows * ldx);
    for (int r = 0; r < rows; r++) {
        float *xr = x + (size_t)r * ldx;
        int near = test_rand_int(0, 2);
        const float *wr = out_w + (size_t)test_rand_int(0, vocab) * dim;
        for (int p = 0; p < dim; p++)
            xr[p] = near ? wr[p] + test_rand_uniform(-0.05f, 0.05f) : test_rand_uniform(-1, 1);
        for (int p = dim; p < ldx; p++)
            xr[p] = NAN;
    }
    int32_t *live = NULL;
    if (s->dead) {
        live = alloc_i32(rows);
        for (int r = 0; r < rows; r++)
            live[r] = r % 4 != 1;
    }
    float *d_x = (float *)dev_upload(x, (size_t)rows * ldx * sizeof(float));
    float *d_w = (float *)dev_upload(out_w, (size_t)vocab * dim * sizeof(float));
    float *d_b = (float *)dev_upload(out_b, vocab * sizeof(float));
    int32_t *d_live = live ? (int32_t *)dev_upload(live, rows * sizeof(int32_t)) : NULL;

    /* 1. codes */
    const size_t n_codes = (size_t)rows * s->w;
    int32_t *codes = alloc_i32(n_codes), *got_codes = alloc_i32(n_codes);
    nmt_cpu_lsh_codes(rows, x, ldx, tables, codes);
    int32_t *d_codes = (int32_t *)dev_output(n_codes * sizeof(int32_t), POISON_I32);
    st = nmt_cuda_lsh_codes(rows, d_x, ldx, &dt.t, d_codes, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "codes status %d: %s", (int)st, err.message);
    int ok = dev_download(got_codes, d_codes, n_codes * sizeof(int32_t), POISON_I32, "codes");
    ok &= compare_i32("codes", got_codes, codes, n_codes);
    CHECK(ok, "codes: %s", what);
    /* Later steps start from the CPU codes so that one failure does not cascade. */
    CUDA_OK(cudaMemcpy(d_codes, codes, n_codes * sizeof(int32_t), cudaMemcpyHostToDevice));

    /* 2. hits: WARP from zero, NAIVE on a random base (+=). */
    const size_t n_hits = (size_t)rows * vocab;
    int32_t *hits = alloc_i32(n_hits), *base = alloc_i32(n_hits), *got = alloc_i32(n_hits);
    memset(hits, 0, n_hits * sizeof(int32_t));
    nmt_cpu_lsh_hits(rows, codes, live, tables, hits);
    for (size_t i = 0; i < n_hits; i++)
        base[i] = test_rand_int(0, 3);
    const nmt_lsh_lookup lookups[2] = {NMT_LSH_LOOKUP_WARP, NMT_LSH_LOOKUP_NAIVE};
    for (int v = 0; v < 2; v++) {
        int32_t *d_hits = (int32_t *)dev_output(n_hits * sizeof(int32_t), POISON_I32);
        if (v == 0)
            CUDA_OK(cudaMemset(d_hits, 0, n_hits * sizeof(int32_t)));
        else
            CUDA_OK(cudaMemcpy(d_hits, base, n_hits * sizeof(int32_t), cudaMemcpyHostToDevice));
        CUDA_OK(cudaDeviceSynchronize()); /* the code under test runs on a non-blocking stream */
        st = nmt_cuda_lsh_hits(rows, d_codes, d_live, &dt.t, lookups[v], d_hits, NULL, &err);
        CHECK(st == NMT_STATUS_OK, "hits status %d: %s", (int)st, err.message);
        ok = dev_download(got, d_hits, n_hits * sizeof(int32_t), POISON_I32, "hits");
        if (v == 1)
            for (size_t i = 0; i < n_hits; i++)
                got[i] -= base[i];
        ok &= compare_i32(v == 0 ? "hits (warp)" : "hits (naive, minus the base)", got, hits,
                          n_hits);
        CHECK(ok, "hits %s: %s", v == 0 ? "warp" : "naive", what);
        CUDA_OK(cudaFree(d_hits));
    }
    size_t nonzero = 0;
    for (size_t i = 0; i < n_hits; i++)
        nonzero += hits[i] != 0;
    fprintf(stderr, "  hits: %zu of %zu counters nonzero\n", nonzero, n_hits);

    /* 3. candidates: on dense random hits (long lists), then on the LSH hits,
     * whose lists the later steps use. */
    const size_t n_cand = (size_t)groups * cand_ld;
    int32_t *cand = alloc_i32(n_cand), *count = alloc_i32(groups);
    for (size_t i = 0; i < n_hits; i++)
        base[i] = test_rand_int(0, 4);
    check_candidates("dense hits, threshold 3", rows, rpg, vocab, base, 3, s->n_always, cand_ld,
                     cand, count);
    check_candidates("LSH hits", rows, rpg, vocab, hits, s->threshold, s->n_always, cand_ld,
                     cand, count);
    check_direct(what, rows, rpg, d_codes, d_live, &dt.t, s->threshold, s->n_always, cand_ld,
                 cand, count);
    if (s->n_always > 0) {
        /* The engine's tables: each slot's skip below n_always stored at set-up. */
        nmt_lsh_tables skipped = dt.t;
        st = nmt_cuda_lsh_slots_skip(&dt.t, (nmt_lsh_slot *)dt.buf[1], s->n_always, NULL, &err);
        CHECK(st == NMT_STATUS_OK, "slots skip status %d: %s", (int)st, err.message);
        skipped.skip_below = s->n_always;
        check_direct("stored skips", rows, rpg, d_codes, d_live, &skipped, s->threshold,
                     s->n_always, cand_ld, cand, count);
        /* Stored for another n_always: the search, the same lists. */
        skipped.skip_below = s->n_always + 1;
        check_direct("skips stored for another n_always", rows, rpg, d_codes, d_live, &skipped,
                     s->threshold, s->n_always, cand_ld, cand, count);
    }
    check_packed("packed for n_always", tables, &dt.t, s->n_always, rows, rpg, d_codes, d_live,
                 s->threshold, s->n_always, cand_ld, cand, count);
    check_packed("packed for n_always / 2", tables, &dt.t, s->n_always / 2, rows, rpg, d_codes,
                 d_live, s->threshold, s->n_always, cand_ld, cand, count);
    check_packed("packed for n_always + 1 (not used)", tables, &dt.t, s->n_always + 1, rows, rpg,
                 d_codes, d_live, s->threshold, s->n_always, cand_ld, cand, count);
    int32_t max_count = 1;
    for (int g = 0; g < groups; g++)
        max_count = count[g] > max_count ? count[g] : max_count;
    /* Device lists with garbage past the count: a kernel reading it would
     * use 0xA5A5A5A5 as a word id and fault. */
    int32_t *d_cand = (int32_t *)dev_upload(cand, n_cand * sizeof(int32_t));
    int32_t *d_count = (int32_t *)dev_upload(count, groups * sizeof(int32_t));

    /* 4. logits */
    const size_t n_logits = (size_t)rows * ld;
    float *want = alloc_f32(n_logits);
    memset(want, POISON_F32, n_logits * sizeof(float));
    const float *bias = s->bias ? out_b : NULL;
    nmt_cpu_lsh_logits(rows, rpg, dim, x, ldx, out_w, bias, cand, cand_ld, count, 0, want, ld);
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
    logits_case lc = {rows, rpg, dim, ldx, x, out_w, bias, d_x, d_w, bias ? d_b : NULL,
                      cand, count, d_cand, d_count, cand_ld, ld};
    check_logits(&lc, want, bound, NMT_LSH_LOGITS_GEMM, 0, vocab, "GEMM, max_count = vocab");
    check_logits(&lc, want, bound, NMT_LSH_LOGITS_SDDMM, 0, max_count, "SDDMM, tight max_count");
    check_logits(&lc, want, bound, NMT_LSH_LOGITS_WARP, 0, vocab, "WARP, max_count = vocab");
    check_logits(&lc, want, bound, NMT_LSH_LOGITS_AUTO, 0, max_count, "AUTO, tight max_count");
    /* The engine's call: the n_always prefix is its dense GEMM's. */
    check_logits(&lc, want, bound, NMT_LSH_LOGITS_GEMM, s->n_always, vocab,
                 "GEMM past the always-kept prefix");
    check_logits(&lc, want, bound, NMT_LSH_LOGITS_SDDMM, s->n_always, max_count,
                 "SDDMM past the always-kept prefix");
    check_logits(&lc, want, bound, NMT_LSH_LOGITS_WARP, s->n_always, max_count,
                 "WARP past the always-kept prefix");

    /* 5. softmax + top-K over the candidates */
    check_softmax(rows, rpg, vocab, ld, cand, d_cand, cand_ld, count, d_count, s->top_k, vocab,
                  "max_count = vocab");
    check_softmax(rows, rpg, vocab, ld, cand, d_cand, cand_ld, count, d_count, s->top_k,
                  max_count, "tight max_count");

    /* 6. recall: the full top-3, some in the list, some random, some -1 */
    const int b = 3;
    int32_t *top = alloc_i32((size_t)rows * b);
    for (int r = 0; r < rows; r++) {
        const int g = r / rpg;
        for (int i = 0; i < b; i++) {
            int pick = test_rand_int(0, 10);
            top[r * b + i] = pick < 6   ? cand[(size_t)g * cand_ld + test_rand_int(0, count[g])]
                             : pick < 9 ? test_rand_int(0, vocab)
                                        : -1;
        }
    }
    int64_t want_stats[3] = {5, 2, 100};
    unsigned long long got_stats[3] = {5, 2, 100};
    nmt_cpu_lsh_recall(rows, rpg, live, top, b, cand, cand_ld, count, want_stats);
    int32_t *d_top = (int32_t *)dev_upload(top, (size_t)rows * b * sizeof(int32_t));
    unsigned long long *d_stats = (unsigned long long *)dev_upload(got_stats, sizeof got_stats);
    st = nmt_cuda_lsh_recall(rows, rpg, d_live, d_top, b, d_cand, cand_ld, d_count, d_stats, NULL,
                             &err);
    CHECK(st == NMT_STATUS_OK, "recall status %d: %s", (int)st, err.message);
    CUDA_OK(cudaMemcpy(got_stats, d_stats, sizeof got_stats, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 3; i++)
        CHECK(got_stats[i] == (unsigned long long)want_stats[i], "recall stats[%d]: got %llu "
              "want %lld (%s)", i, got_stats[i], (long long)want_stats[i], what);

    fprintf(stderr, "%s %s\n", test_failures == failures_before ? "ok  " : "FAIL", what);

    free_tables(&dt);
    nmt_lsh_index_free(index);
    CUDA_OK(cudaFree(d_x));
    CUDA_OK(cudaFree(d_w));
    CUDA_OK(cudaFree(d_b));
    if (d_live)
        CUDA_OK(cudaFree(d_live));
    CUDA_OK(cudaFree(d_codes));
    CUDA_OK(cudaFree(d_cand));
    CUDA_OK(cudaFree(d_count));
    CUDA_OK(cudaFree(d_top));
    CUDA_OK(cudaFree(d_stats));
    free(out_w);
    free(out_b);
    free(x);
    free(live);
    free(codes);
    free(got_codes);
    free(hits);
    free(base);
    free(got);
    free(cand);
    free(count);
    free(want);
    free(bound);
    free(top);
}

static int shape_is_small(const shape *s)
{
    return (size_t)s->vocab * s->dim <= 400000 && (size_t)s->rows * s->vocab <= 300000;
}

int main(void)
{
    gpu_test_require_device("test_gpu_lsh");
    test_seed();
    const char *small = getenv("NMT_TEST_SMALL");
    g_small = small && *small == '1';
    const size_t n_shapes = sizeof shapes / sizeof shapes[0];

    /* One softmax workspace, zeroed once, for every call (the split counters
     * must come back to zero); max_count <= vocab needs no more than vocab. */
    for (size_t i = 0; i < n_shapes; i++) {
        size_t b = nmt_cuda_softmax_topk_workspace_size(shapes[i].rows, shapes[i].vocab,
                                                        shapes[i].top_k);
        g_topk_ws_bytes = b > g_topk_ws_bytes ? b : g_topk_ws_bytes;
    }
    CUDA_OK(cudaMalloc(&g_topk_ws, g_topk_ws_bytes));
    CUDA_OK(cudaMemset(g_topk_ws, 0, g_topk_ws_bytes));
    CUDA_OK(cudaDeviceSynchronize()); /* the code under test runs on a non-blocking stream */

    for (size_t i = 0; i < n_shapes; i++)
        if (!g_small || shape_is_small(&shapes[i]))
            run_shape(&shapes[i]);

    /* Refusals: K > 512 with candidates; rows_per_group 0. */
    nmt_error err = {};
    int32_t *d_one = NULL;
    float *d_f = NULL;
    CUDA_OK(cudaMalloc(&d_one, 1024 * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&d_f, 1024 * sizeof(float)));
    nmt_status st = nmt_cuda_softmax_topk_candidates(1, 1, d_f, 1000, d_one, 1000, d_one, 1000,
                                                     513, NULL, 0, d_f, d_one, NULL, g_topk_ws,
                                                     g_topk_ws_bytes, NULL, &err);
    CHECK(st == NMT_STATUS_ERROR_UNSUPPORTED, "K = 513 with candidates: status %d", (int)st);
    st = nmt_cuda_lsh_candidates(1, 0, 10, d_one, 1, 4, d_one, 10, d_one, d_f, 4096, NULL, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "rows_per_group 0: status %d", (int)st);
    st = nmt_cuda_lsh_logits(1, 1, 4, d_f, 4, d_f, NULL, d_one, 10, d_one, 0, 10, d_f, 10,
                             (nmt_lsh_logits_kernel)7, NULL, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "logits variant 7: status %d", (int)st);
    st = nmt_cuda_lsh_logits(1, 1, 4, d_f, 4, d_f, NULL, d_one, 10, d_one, -1, 10, d_f, 10,
                             NMT_LSH_LOGITS_GEMM, NULL, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "logits first -1: status %d", (int)st);
    CUDA_OK(cudaFree(d_one));
    CUDA_OK(cudaFree(d_f));
    CUDA_OK(cudaFree(g_topk_ws));
    return test_finish("test_gpu_lsh");
}
