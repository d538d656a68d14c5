/* test_gpu_lsh.cu: the CUDA LSH steps 1-3 and the recall statistics
 * (kernels/lsh.h) against their CPU oracles, over an index built by
 * nmt_lsh_index_build from a random W_out and uploaded (the shapes and the
 * set-up: lsh_test_fixture.h; the logits and the softmax over the lists:
 * test_gpu_lsh_logits.cu). Per shape:
 *  - codes identical; hits identical for both lookups (NAIVE on top of a
 *    random base: hits accumulate);
 *  - candidate lists and counts identical, entries past the count untouched,
 *    hits zero afterwards; on the LSH hits and on dense random hits (long
 *    lists across many chunks); the workspace starts as garbage;
 *  - the direct builder's lists identical, twice on one workspace, with the
 *    slots' stored skips (for this n_always and for another) and on the
 *    packed buckets (used or not, by their packed_below);
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
#include "lsh_test_fixture.h"
#include "test_util.h"

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
    const nmt_cand_lists cpu_lists = {
        .words = cand_cpu, .ld = cand_ld, .count = count_cpu, .rows_per_group = rpg};
    nmt_cpu_lsh_candidates(rows, vocab, h, threshold, n_always, cpu_lists);

    int32_t *d_hits = (int32_t *)dev_output(n_hits * sizeof(int32_t), POISON_I32);
    dev_fill(d_hits, hits, n_hits * sizeof(int32_t));
    int32_t *d_cand = (int32_t *)dev_output(n_cand * sizeof(int32_t), POISON_I32);
    int32_t *d_count = (int32_t *)dev_output(groups * sizeof(int32_t), POISON_I32);
    size_t ws_bytes = nmt_cuda_lsh_candidates_workspace_size(groups, vocab);
    void *ws = NULL;
    CUDA_OK(cudaMalloc(&ws, ws_bytes));
    CUDA_OK(cudaMemset(ws, 0x5A, ws_bytes)); /* garbage: nothing may rely on zeros */
    CUDA_OK(cudaDeviceSynchronize()); /* the code under test runs on a non-blocking stream */
    nmt_error err = {};
    nmt_cand_lists lists = cpu_lists; /* the same layout on the device */
    lists.words = d_cand;
    lists.count = d_count;
    nmt_status st = nmt_cuda_lsh_candidates(rows, vocab, d_hits, threshold, n_always, lists, ws,
                                            ws_bytes, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "%s: candidates status %d: %s", what, (int)st, err.message);
    if (ws_bytes >= 4) { /* a workspace too small is refused */
        st = nmt_cuda_lsh_candidates(rows, vocab, d_hits, threshold, n_always, lists, ws,
                                     ws_bytes - 4, NULL, &err);
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
        const nmt_cand_lists lists = {
            .words = d_cand,
            .ld = cand_ld,
            .count = d_count,
            .rows_per_group = rpg,
        };
        nmt_status st = nmt_cuda_lsh_candidates_direct(rows, d_codes, d_live, dt, threshold,
                                                       n_always, lists, ws, ws_bytes, NULL, &err);
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
    const int vocab = c.vocab, rows = c.rows, rpg = c.rpg, ldx = c.ldx, groups = c.groups;
    const int64_t cand_ld = c.cand_ld;
    const nmt_lsh_tables *tables = c.tables;
    dev_tables dt = c.dt;
    const int32_t *live = c.live, *d_live = c.d_live;
    nmt_error err = {};
    nmt_status st;

    /* 1. codes */
    const size_t n_codes = (size_t)rows * s->w;
    const int32_t *codes = c.codes;
    int32_t *got_codes = alloc_i32(n_codes);
    int32_t *d_codes = (int32_t *)dev_output(n_codes * sizeof(int32_t), POISON_I32);
    st = nmt_cuda_lsh_codes(rows, c.d_x, ldx, &dt.t, d_codes, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "codes status %d: %s", (int)st, err.message);
    int ok = dev_download(got_codes, d_codes, n_codes * sizeof(int32_t), POISON_I32, "codes");
    ok &= compare_i32("codes", got_codes, codes, n_codes);
    CHECK(ok, "codes: %s", what);
    /* Later steps start from the CPU codes so that one failure does not cascade. */
    dev_fill(d_codes, codes, n_codes * sizeof(int32_t));

    /* 2. hits: WARP from zero, NAIVE on a random base (+=). */
    const size_t n_hits = (size_t)rows * vocab;
    const int32_t *hits = c.hits;
    int32_t *base = alloc_i32(n_hits), *got = alloc_i32(n_hits);
    for (size_t i = 0; i < n_hits; i++)
        base[i] = test_rand_int(0, 3);
    const nmt_lsh_lookup lookups[2] = {NMT_LSH_LOOKUP_WARP, NMT_LSH_LOOKUP_NAIVE};
    for (int v = 0; v < 2; v++) {
        int32_t *d_hits = (int32_t *)dev_output(n_hits * sizeof(int32_t), POISON_I32);
        if (v == 0)
            CUDA_OK(cudaMemset(d_hits, 0, n_hits * sizeof(int32_t)));
        else
            dev_fill(d_hits, base, n_hits * sizeof(int32_t));
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

    /* 3. candidates: on dense random hits (long lists), then on the LSH hits. */
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

    /* 4. recall: the full top-3, some in the list, some random, some -1 */
    int32_t *d_cand = (int32_t *)dev_upload(cand, n_cand * sizeof(int32_t));
    int32_t *d_count = (int32_t *)dev_upload(count, groups * sizeof(int32_t));
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
    const nmt_cand_lists cpu_lists = {
        .words = cand, .ld = cand_ld, .count = count, .rows_per_group = rpg};
    nmt_cpu_lsh_recall(rows, live, top, b, cpu_lists, want_stats);
    int32_t *d_top = (int32_t *)dev_upload(top, (size_t)rows * b * sizeof(int32_t));
    unsigned long long *d_stats = (unsigned long long *)dev_upload(got_stats, sizeof got_stats);
    nmt_cand_lists lists = cpu_lists; /* the same lists on the device */
    lists.words = d_cand;
    lists.count = d_count;
    st = nmt_cuda_lsh_recall(rows, d_live, d_top, b, lists, d_stats, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "recall status %d: %s", (int)st, err.message);
    CUDA_OK(cudaMemcpy(got_stats, d_stats, sizeof got_stats, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 3; i++)
        CHECK(got_stats[i] == (unsigned long long)want_stats[i], "recall stats[%d]: got %llu "
              "want %lld (%s)", i, got_stats[i], (long long)want_stats[i], what);

    fprintf(stderr, "%s %s\n", test_failures == failures_before ? "ok  " : "FAIL", what);

    CUDA_OK(cudaFree(d_codes));
    CUDA_OK(cudaFree(d_cand));
    CUDA_OK(cudaFree(d_count));
    CUDA_OK(cudaFree(d_top));
    CUDA_OK(cudaFree(d_stats));
    free(got_codes);
    free(base);
    free(got);
    free(cand);
    free(count);
    free(top);
    lsh_case_free(&c);
}

int main(void)
{
    gpu_test_require_device("test_gpu_lsh");
    test_seed();
    const int small = test_small();
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!small || shape_is_small(&shapes[i]))
            run_shape(&shapes[i]);

    /* Refusals: rows_per_group 0. */
    nmt_error err = {};
    int32_t *d_one = NULL;
    float *d_f = NULL;
    CUDA_OK(cudaMalloc(&d_one, 1024 * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&d_f, 1024 * sizeof(float)));
    const nmt_cand_lists no_groups = {
        .words = d_one,
        .ld = 10,
        .count = d_one,
        .rows_per_group = 0,
    };
    nmt_status st = nmt_cuda_lsh_candidates(1, 10, d_one, 1, 4, no_groups, d_f, 4096, NULL, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "rows_per_group 0: status %d", (int)st);
    CUDA_OK(cudaFree(d_one));
    CUDA_OK(cudaFree(d_f));
    return test_finish("test_gpu_lsh");
}
