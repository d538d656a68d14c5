/* test_lsh_cpu.c: the CPU LSH ops (kernels/lsh.h; the oracles of the CUDA
 * kernels) against restatements of their definitions that share no code with
 * them: WTA codes by a max pass then a first-equal pass, hit counts by
 * comparing band codes directly (no hashing), candidate lists by marking
 * words row by row, logits through nmt_cpu_linear on gathered rows, and the
 * candidate softmax through nmt_cpu_softmax_topk on the compacted row. */
#include "linear.h"
#include "lsh.h"
#include "lsh_index.h"
#include "softmax_topk.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POISON_I32 ((int32_t)0xDEADBEEF)

static nmt_lsh_index *build_index(const float *out_w, int32_t vocab, int32_t dim, int32_t k,
                                  int32_t u, int32_t w)
{
    nmt_lsh_index_config config = {.k = k, .u = u, .w = w, .seed = test_rand_u64()};
    nmt_lsh_index *index = NULL;
    nmt_error err = {0};
    CHECK(nmt_lsh_index_build(out_w, vocab, dim, &config, &index, &err) == NMT_STATUS_OK,
          "build: %s", err.message);
    return index;
}

/* I_p: the largest non-NaN value by fmaxf (which skips NaN), then its first
 * position; 0 when nothing exceeds -inf. Code: Horner from the last index. */
static int32_t brute_code(const float *x, const int32_t *perm, int32_t k, int32_t u,
                          int32_t band)
{
    int32_t code = 0;
    for (int32_t i = u - 1; i >= 0; i--) {
        const int32_t *p = perm + ((int64_t)band * u + i) * k;
        float max_value = -INFINITY;
        for (int32_t j = 0; j < k; j++)
            max_value = fmaxf(max_value, x[p[j]]);
        int32_t first = 0;
        if (max_value > -INFINITY)
            while (!(x[p[first]] == max_value))
                first++;
        code = code * k + first;
    }
    return code;
}

static void test_codes(int32_t k, int32_t u, int32_t w, int32_t dim, int32_t n_rows, int ties)
{
    int32_t vocab = 5, ldx = dim + 3;
    float *out_w = malloc((size_t)vocab * dim * sizeof *out_w);
    float *x = malloc((size_t)n_rows * ldx * sizeof *x);
    int32_t *codes = malloc((size_t)n_rows * w * sizeof *codes);
    test_fill_uniform(out_w, (size_t)vocab * dim, -1.0f, 1.0f);
    test_fill_uniform(x, (size_t)n_rows * ldx, -1.0f, 1.0f);
    if (ties) /* a few levels: equal maxima everywhere; and some NaN, -inf */
        for (int64_t i = 0; i < (int64_t)n_rows * ldx; i++) {
            x[i] = roundf(x[i] * 1.5f);
            int32_t roll = test_rand_int(0, 20);
            x[i] = roll == 0 ? NAN : roll == 1 ? -INFINITY : x[i];
        }
    if (ties && n_rows > 1) /* a row with nothing above -inf */
        for (int32_t j = 0; j < dim; j++)
            x[ldx + j] = j % 2 ? NAN : -INFINITY;
    nmt_lsh_index *index = build_index(out_w, vocab, dim, k, u, w);
    if (index) {
        const nmt_lsh_tables *t = nmt_lsh_index_tables(index);
        test_poison_i32(codes, (size_t)n_rows * w);
        nmt_cpu_lsh_codes(n_rows, x, ldx, t, codes);
        int bad = 0;
        for (int32_t r = 0; r < n_rows; r++)
            for (int32_t b = 0; b < w; b++) {
                int32_t want = brute_code(x + (int64_t)r * ldx, t->perm, k, u, b);
                if (codes[(int64_t)r * w + b] != want && bad++ < 5)
                    fprintf(stderr, "  codes[%d, %d] = %d, want %d\n", r, b,
                            codes[(int64_t)r * w + b], want);
            }
        CHECK(bad == 0, "codes K=%d u=%d W=%d dim=%d rows=%d ties=%d: %d wrong", k, u, w, dim,
              n_rows, ties, bad);
    }
    nmt_lsh_index_free(index);
    free(out_w);
    free(x);
    free(codes);
}

/* Hits from band codes directly: no table, no bucket. Rows are near copies
 * of output rows so that many bands match. */
static void test_hits(int32_t k, int32_t u, int32_t w, int32_t vocab, int32_t dim,
                      int32_t n_rows)
{
    float *out_w = malloc((size_t)vocab * dim * sizeof *out_w);
    float *x = malloc((size_t)n_rows * dim * sizeof *x);
    int32_t *codes = malloc((size_t)n_rows * w * sizeof *codes);
    int32_t *live = malloc((size_t)n_rows * sizeof *live);
    int32_t *near = malloc((size_t)n_rows * sizeof *near);
    int32_t *hits = malloc((size_t)n_rows * vocab * sizeof *hits);
    int32_t *want = malloc((size_t)n_rows * vocab * sizeof *want);
    test_fill_uniform(out_w, (size_t)vocab * dim, -1.0f, 1.0f);
    for (int32_t r = 0; r < n_rows; r++) {
        near[r] = test_rand_int(0, vocab);
        float noise = r % 3 == 0 ? 0.0f : 0.2f;
        for (int32_t j = 0; j < dim; j++)
            x[(int64_t)r * dim + j] = out_w[(int64_t)near[r] * dim + j] +
                                      test_rand_uniform(-noise, noise);
        live[r] = r % 4 != 1;
    }
    nmt_lsh_index *index = build_index(out_w, vocab, dim, k, u, w);
    if (index) {
        const nmt_lsh_tables *t = nmt_lsh_index_tables(index);
        int32_t *word_codes = malloc((size_t)vocab * w * sizeof *word_codes);
        nmt_cpu_lsh_codes(vocab, out_w, dim, t, word_codes);
        nmt_cpu_lsh_codes(n_rows, x, dim, t, codes);
        for (int pass = 0; pass < 2; pass++) {
            const int32_t *row_live = pass == 0 ? live : NULL;
            /* Accumulates onto what is there. */
            for (int64_t i = 0; i < (int64_t)n_rows * vocab; i++)
                hits[i] = want[i] = test_rand_int(0, 3);
            for (int32_t r = 0; r < n_rows; r++) {
                if (row_live && !row_live[r])
                    continue;
                for (int32_t v = 0; v < vocab; v++)
                    for (int32_t b = 0; b < w; b++)
                        want[(int64_t)r * vocab + v] +=
                            codes[(int64_t)r * w + b] == word_codes[(int64_t)v * w + b];
            }
            nmt_cpu_lsh_hits(n_rows, codes, row_live, t, hits);
            int bad = 0;
            for (int64_t i = 0; i < (int64_t)n_rows * vocab; i++)
                if (hits[i] != want[i] && bad++ < 5)
                    fprintf(stderr, "  hits[%lld] = %d, want %d\n", (long long)i, hits[i],
                            want[i]);
            CHECK(bad == 0, "hits K=%d u=%d W=%d vocab=%d rows=%d live=%s: %d wrong", k, u, w,
                  vocab, n_rows, row_live ? "mask" : "all", bad);
            /* A live exact copy of a word's row matches it in every band. */
            for (int32_t r = 0; r < n_rows; r += 3)
                if (!row_live || row_live[r])
                    CHECK(hits[(int64_t)r * vocab + near[r]] >= w,
                          "row %d copies word %d: %d hits of %d bands", r, near[r],
                          hits[(int64_t)r * vocab + near[r]], w);
        }
        free(word_codes);
    }
    nmt_lsh_index_free(index);
    free(out_w);
    free(x);
    free(codes);
    free(live);
    free(near);
    free(hits);
    free(want);
}

/* Expected lists: mark words row by row, then collect the marks. */
static void brute_candidates(int32_t n_rows, int32_t rpg, int32_t vocab, const int32_t *hits,
                             int32_t threshold, int32_t n_always, int32_t *cand, int64_t cand_ld,
                             int32_t *count)
{
    char *mark = malloc((size_t)vocab);
    for (int32_t g = 0; g * rpg < n_rows; g++) {
        for (int32_t v = 0; v < vocab; v++)
            mark[v] = v < n_always;
        for (int32_t r = g * rpg; r < n_rows && r < (g + 1) * rpg; r++)
            for (int32_t v = 0; v < vocab; v++)
                if (hits[(int64_t)r * vocab + v] >= threshold)
                    mark[v] = 1;
        count[g] = 0;
        for (int32_t v = 0; v < vocab; v++)
            if (mark[v])
                cand[(int64_t)g * cand_ld + count[g]++] = v;
    }
    free(mark);
}

static void test_candidates(int32_t vocab, int32_t w, int32_t n_rows)
{
    int64_t cand_ld = vocab + 5;
    size_t n_hits = (size_t)n_rows * vocab;
    int32_t *hits_in = malloc(n_hits * sizeof *hits_in);
    int32_t *hits = malloc(n_hits * sizeof *hits);
    int32_t *cand = malloc((size_t)n_rows * cand_ld * sizeof *cand);
    int32_t *want = malloc((size_t)n_rows * cand_ld * sizeof *want);
    int32_t *count = malloc((size_t)(n_rows + 1) * sizeof *count);
    int32_t *want_count = malloc((size_t)n_rows * sizeof *want_count);
    /* Sparse hits as after a real lookup: mostly 0, a few up to W. */
    for (size_t i = 0; i < n_hits; i++)
        hits_in[i] = test_rand_int(0, 4) ? 0 : test_rand_int(0, w + 1);
    const int32_t groups[] = {1, 3, n_rows};
    const int32_t always[] = {4, 9, vocab + 3};
    int bad = 0;
    for (int gi = 0; gi < 3; gi++)
        for (int ai = 0; ai < 3; ai++)
            for (int32_t threshold = 1; threshold <= w; threshold++) {
                int32_t rpg = groups[gi], n_groups = (n_rows + rpg - 1) / rpg;
                memcpy(hits, hits_in, n_hits * sizeof *hits);
                test_poison_i32(cand, (size_t)n_rows * cand_ld);
                test_poison_i32(count, (size_t)n_rows + 1);
                const nmt_cand_lists lists = {
                    .words = cand,
                    .ld = cand_ld,
                    .count = count,
                    .rows_per_group = rpg,
                };
                nmt_cpu_lsh_candidates(n_rows, vocab, hits, threshold, always[ai], lists);
                brute_candidates(n_rows, rpg, vocab, hits_in, threshold, always[ai], want,
                                 cand_ld, want_count);
                for (int32_t g = 0; g < n_groups; g++) {
                    int ok = count[g] == want_count[g];
                    for (int32_t j = 0; ok && j < count[g]; j++)
                        ok = cand[(int64_t)g * cand_ld + j] == want[(int64_t)g * cand_ld + j];
                    for (int64_t j = ok ? count[g] : cand_ld; j < cand_ld; j++)
                        ok = ok && cand[(int64_t)g * cand_ld + j] == POISON_I32;
                    if (!ok && bad++ < 5)
                        fprintf(stderr, "  group %d (rpg %d, t %d, always %d): count %d want %d\n",
                                g, rpg, threshold, always[ai], count[g], want_count[g]);
                }
                CHECK(count[n_groups] == POISON_I32, "count written past the last group");
                for (size_t i = 0; i < n_hits; i++)
                    if (hits[i] != 0) {
                        CHECK(0, "hits[%zu] = %d not reset", i, hits[i]);
                        break;
                    }
            }
    CHECK(bad == 0, "candidates vocab=%d W=%d rows=%d: %d groups wrong", vocab, w, n_rows, bad);
    free(hits_in);
    free(hits);
    free(cand);
    free(want);
    free(count);
    free(want_count);
}

/* Random ascending subsets of [0, vocab) per group; some empty, some full. */
static void random_lists(int32_t n_groups, int32_t vocab, int32_t *cand, int64_t cand_ld,
                         int32_t *count)
{
    for (int32_t g = 0; g < n_groups; g++) {
        int32_t keep = g % 4 == 0 ? 0 : g % 4 == 1 ? 100 : test_rand_int(1, 100);
        count[g] = 0;
        for (int32_t v = 0; v < vocab; v++)
            if (test_rand_int(0, 100) < keep)
                cand[(int64_t)g * cand_ld + count[g]++] = v;
    }
}

/* first: candidate indices below it are left to the caller (untouched). */
static void test_logits(int32_t vocab, int32_t dim, int32_t n_rows, int32_t rpg, int with_bias,
                        int32_t first_cand)
{
    int32_t n_groups = (n_rows + rpg - 1) / rpg, ldx = dim + 1;
    int64_t cand_ld = vocab + 2, ld = vocab + 3;
    float *out_w = malloc((size_t)vocab * dim * sizeof *out_w);
    float *out_b = malloc((size_t)vocab * sizeof *out_b);
    float *x = malloc((size_t)n_rows * ldx * sizeof *x);
    int32_t *cand = malloc((size_t)n_groups * cand_ld * sizeof *cand);
    int32_t *count = malloc((size_t)n_groups * sizeof *count);
    float *logits = malloc((size_t)n_rows * ld * sizeof *logits);
    float *gathered_w = malloc((size_t)vocab * dim * sizeof *gathered_w);
    float *gathered_b = malloc((size_t)vocab * sizeof *gathered_b);
    float *want = malloc((size_t)rpg * vocab * sizeof *want);
    test_fill_uniform(out_w, (size_t)vocab * dim, -1.0f, 1.0f);
    test_fill_uniform(out_b, (size_t)vocab, -1.0f, 1.0f);
    test_fill_uniform(x, (size_t)n_rows * ldx, -1.0f, 1.0f);
    random_lists(n_groups, vocab, cand, cand_ld, count);
    test_poison_f32(logits, (size_t)n_rows * ld);
    const nmt_lsh_logits_args args = {
        .n_rows = n_rows,
        .dim = dim,
        .x = x,
        .ldx = ldx,
        .out_w = out_w,
        .out_b = with_bias ? out_b : NULL,
        .lists = {.words = cand, .ld = cand_ld, .count = count, .rows_per_group = rpg},
        .first = first_cand,
        .logits = logits,
        .ld = ld,
    };
    nmt_cpu_lsh_logits(&args);
    for (int32_t g = 0; g < n_groups; g++) {
        int32_t first = g * rpg, rows = n_rows - first < rpg ? n_rows - first : rpg, n = count[g];
        for (int32_t j = 0; j < n; j++) {
            int32_t v = cand[(int64_t)g * cand_ld + j];
            memcpy(gathered_w + (int64_t)j * dim, out_w + (int64_t)v * dim, dim * sizeof(float));
            gathered_b[j] = out_b[v];
        }
        nmt_cpu_linear(rows, n, dim, x + (int64_t)first * ldx, ldx, gathered_w, dim,
                       with_bias ? gathered_b : NULL, 0, want, n > 0 ? n : 1);
        for (int32_t r = 0; r < rows; r++) {
            const float *row = logits + (int64_t)(first + r) * ld;
            const int32_t j0 = first_cand < n ? first_cand : n;
            CHECK(test_close_f32("lsh logits", row + j0, want + (int64_t)r * n + j0,
                                 (size_t)(n - j0), 0, 0),
                  "group %d row %d", g, first + r);
            int untouched = 1;
            for (int64_t j = 0; j < ld; j++)
                if (j < j0 || j >= n)
                    untouched = untouched && isnan(row[j]);
            CHECK(untouched, "logits below %d or past count[%d] = %d written (row %d)", j0, g, n,
                  first + r);
        }
    }
    free(out_w);
    free(out_b);
    free(x);
    free(cand);
    free(count);
    free(logits);
    free(gathered_w);
    free(gathered_b);
    free(want);
}

/* Against the full softmax + top-K over the compacted row (candidate index
 * j), its ids mapped through the list and `excluded` mapped to indices. */
static void test_softmax_candidates(int32_t vocab, int32_t n_rows, int32_t rpg, int32_t k)
{
    int32_t n_groups = (n_rows + rpg - 1) / rpg;
    int64_t cand_ld = vocab + 1, ld = vocab + 2;
    int32_t *cand = malloc((size_t)n_groups * cand_ld * sizeof *cand);
    int32_t *count = malloc((size_t)n_groups * sizeof *count);
    float *logits = malloc((size_t)n_rows * ld * sizeof *logits);
    float *values = malloc((size_t)n_rows * k * sizeof *values);
    int32_t *ids = malloc((size_t)n_rows * k * sizeof *ids);
    float *lse = malloc((size_t)n_rows * sizeof *lse);
    float want_values[64], want_lse;
    int32_t want_ids[64], excluded_idx[8];
    int32_t excluded[] = {0, 3, vocab / 2, vocab - 1, vocab + 5};
    int32_t n_excluded = 5;
    random_lists(n_groups, vocab, cand, cand_ld, count);
    test_fill_uniform(logits, (size_t)n_rows * ld, -4.0f, 4.0f);
    for (int64_t i = 0; i < (int64_t)n_rows * ld; i += 2)
        logits[i] = roundf(logits[i]); /* ties */
    test_poison_f32(values, (size_t)n_rows * k);
    test_poison_i32(ids, (size_t)n_rows * k);
    const nmt_cand_lists lists = {
        .words = cand,
        .ld = cand_ld,
        .count = count,
        .rows_per_group = rpg,
    };
    nmt_cpu_softmax_topk_candidates(n_rows, logits, ld, lists, k, excluded, n_excluded, values,
                                    ids, lse);
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t g = r / rpg, n = count[g];
        const int32_t *list = cand + (int64_t)g * cand_ld;
        int32_t n_idx = 0;
        for (int32_t e = 0; e < n_excluded; e++)
            for (int32_t j = 0; j < n; j++)
                if (list[j] == excluded[e])
                    excluded_idx[n_idx++] = j;
        nmt_cpu_softmax_topk(1, n, logits + (int64_t)r * ld, (int32_t)ld, k, excluded_idx, n_idx,
                             want_values, want_ids, &want_lse);
        for (int32_t i = 0; i < k; i++)
            want_ids[i] = want_ids[i] >= 0 ? list[want_ids[i]] : -1;
        CHECK(test_close_f32("cand values", values + (int64_t)r * k, want_values, (size_t)k, 0, 0),
              "row %d (count %d, k %d)", r, n, k);
        CHECK(memcmp(ids + (int64_t)r * k, want_ids, (size_t)k * sizeof(int32_t)) == 0,
              "row %d ids (count %d, k %d): first %d want %d", r, n, k, ids[(int64_t)r * k],
              want_ids[0]);
        CHECK(test_close_f32("cand lse", lse + r, &want_lse, 1, 0, 0), "row %d lse", r);
    }

    /* Hand case: list {0, 1, 2, 3, 7, 9}; 7 and 9 tie (lower word first),
     * 3 excluded but in the normalization; k = 8 > 6 gives a tail. */
    int32_t hand_list[] = {0, 1, 2, 3, 7, 9}, hand_count = 6, hand_excluded = 3;
    float hand_z[] = {-1.0f, 0.0f, -2.0f, 5.0f, 1.0f, 1.0f};
    float hand_values[8], hand_lse;
    int32_t hand_ids[8];
    const nmt_cand_lists hand = {
        .words = hand_list,
        .ld = 6,
        .count = &hand_count,
        .rows_per_group = 1,
    };
    nmt_cpu_softmax_topk_candidates(1, hand_z, 6, hand, 8, &hand_excluded, 1, hand_values,
                                    hand_ids, &hand_lse);
    double sum = 0.0;
    for (int i = 0; i < 6; i++)
        sum += exp((double)hand_z[i]);
    int32_t expect_ids[] = {7, 9, 1, 0, 2, -1, -1, -1};
    CHECK(memcmp(hand_ids, expect_ids, sizeof expect_ids) == 0, "hand ids %d %d %d %d %d %d",
          hand_ids[0], hand_ids[1], hand_ids[2], hand_ids[3], hand_ids[4], hand_ids[5]);
    CHECK(fabs(hand_lse - log(sum)) < 1e-6, "hand lse %g want %g", hand_lse, log(sum));
    CHECK(fabsf(hand_values[0] - (1.0f - hand_lse)) < 1e-6f && isinf(hand_values[5]) &&
              hand_values[5] < 0,
          "hand values");
    free(cand);
    free(count);
    free(logits);
    free(values);
    free(ids);
    free(lse);
}

static void test_recall(void)
{
    /* rows 0, 1 share group 0; row 2 is group 1. */
    int32_t cand[] = {0, 1, 2, 3, 7, 9, -9, -9, 0, 1, 2, 3, 5, -9, -9, -9};
    int32_t count[] = {6, 5};
    int32_t top[] = {7, 9, /* both in: hit */ 9, 8, /* 8 missing */ 5, 0 /* both in */};
    int64_t stats[3] = {0, 0, 0};
    const nmt_cand_lists pairs = {.words = cand, .ld = 8, .count = count, .rows_per_group = 2};
    nmt_cpu_lsh_recall(3, NULL, top, 2, pairs, stats);
    CHECK(stats[0] == 3 && stats[1] == 2 && stats[2] == 17, "recall %lld %lld %lld",
          (long long)stats[0], (long long)stats[1], (long long)stats[2]);
    int32_t live[] = {0, 1, 1}; /* accumulates; dead row 0 skipped */
    nmt_cpu_lsh_recall(3, live, top, 2, pairs, stats);
    CHECK(stats[0] == 5 && stats[1] == 3 && stats[2] == 28, "recall live %lld %lld %lld",
          (long long)stats[0], (long long)stats[1], (long long)stats[2]);
    /* b = 1 with per-row groups: row 1's list is group 1's. */
    int64_t one[3] = {0, 0, 0};
    int32_t top1[] = {9, 5};
    const nmt_cand_lists singles = {.words = cand, .ld = 8, .count = count, .rows_per_group = 1};
    nmt_cpu_lsh_recall(2, NULL, top1, 1, singles, one);
    CHECK(one[0] == 2 && one[1] == 2 && one[2] == 11, "recall b=1 %lld %lld %lld",
          (long long)one[0], (long long)one[1], (long long)one[2]);
}

int main(void)
{
    test_seed();
    /* (K, u, W, dim, rows, ties) including K = dim and K^u = 2^30. */
    test_codes(2, 1, 1, 3, 1, 0);
    test_codes(3, 2, 7, 3, 7, 1);
    test_codes(8, 3, 50, 64, 12, 0);
    test_codes(8, 3, 50, 64, 12, 1);
    test_codes(33, 4, 5, 33, 7, 1);
    test_codes(2, 30, 3, 5, 7, 1);
    test_codes(32, 6, 4, 40, 3, 0);

    test_hits(4, 2, 16, 1, 5, 7);
    test_hits(8, 3, 50, 333, 64, 12);
    test_hits(3, 1, 20, 333, 3, 7);
    test_hits(16, 2, 24, 5000, 32, 5);

    test_candidates(1, 3, 7);
    test_candidates(7, 4, 7);
    test_candidates(333, 6, 12);
    test_candidates(333, 10, 1);

    test_logits(1, 3, 1, 1, 1, 0);
    test_logits(7, 5, 7, 3, 0, 0);
    test_logits(333, 64, 12, 1, 1, 0);
    test_logits(333, 33, 12, 12, 1, 0);
    test_logits(333, 17, 12, 5, 0, 0);
    test_logits(333, 17, 12, 5, 1, 40);   /* a dense prefix left to the caller */
    test_logits(7, 5, 7, 3, 1, 1000);     /* first past every count: nothing written */

    test_softmax_candidates(7, 7, 1, 3);
    test_softmax_candidates(7, 7, 3, 12);
    test_softmax_candidates(333, 12, 4, 5);
    test_softmax_candidates(333, 12, 12, 64);
    test_softmax_candidates(1, 3, 1, 2);

    test_recall();
    return test_finish("test_lsh_cpu");
}
