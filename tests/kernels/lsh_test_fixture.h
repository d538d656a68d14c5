/* lsh_test_fixture.h: the common setup of the GPU LSH tests (test_gpu_lsh.cu:
 * codes, hits, candidate lists, recall; test_gpu_lsh_logits.cu: candidate
 * logits and softmax + top-K over the lists), header only, static.
 *
 * The shape table reaches 1 row, vocab 1, 7, 333, 3000, 5000, 35000, odd dims
 * (3, 33) and K = dim, W from 1 to 70, groups of 1, 3, 5 rows and of all rows
 * (16- and 64-row GEMM tiles), float4 and scalar loads, dead rows, and the
 * softmax variants. Per shape, lsh_case_make builds, from fresh random
 * inputs: a random W_out and b_out, its index (nmt_lsh_index_build) on the
 * host and the device, attentional states (half near an output row, half
 * random; the padding NaN, never to be read), dead rows, and the CPU
 * oracle's codes, hits and candidate lists, which the later steps start from
 * so that one failure does not cascade. */
#ifndef NMT_LSH_TEST_FIXTURE_H
#define NMT_LSH_TEST_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "lsh.h"
#include "lsh_index.h"
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


/* ---- one shape's inputs and CPU results -------------------------------------- */

typedef struct {
    const shape *s;
    int vocab, dim, rows, rpg, ldx, groups;
    int64_t cand_ld, ld;  /* lists and logits: vocab + pad */
    char what[200];       /* the shape, for messages */
    float *out_w, *out_b; /* host */
    nmt_lsh_index *index;
    const nmt_lsh_tables *tables; /* host */
    dev_tables dt;
    float *x;      /* [rows, ldx] */
    int32_t *live; /* [rows] or NULL */
    float *d_x, *d_w, *d_b;
    int32_t *d_live;
    int32_t *codes;         /* CPU [rows, w] */
    int32_t *hits;          /* CPU [rows, vocab] */
    int32_t *cand, *count;  /* CPU lists from the hits [groups, cand_ld] (POISON_WORD past
                               the count), [groups] */
    int32_t max_count;      /* the largest count, at least 1 */
} lsh_case;

/* The shape's inputs, uploaded, and the CPU oracle's codes, hits and lists;
 * 0 (a failed CHECK counted) when the index cannot be built. */
static int lsh_case_make(const shape *s, lsh_case *c)
{
    memset(c, 0, sizeof *c);
    c->s = s;
    c->vocab = s->vocab;
    c->dim = s->dim;
    c->rows = s->rows;
    c->rpg = s->rows_per_group;
    c->ldx = s->dim + s->pad;
    c->groups = (s->rows + s->rows_per_group - 1) / s->rows_per_group;
    c->cand_ld = c->ld = s->vocab + s->pad;
    snprintf(c->what, sizeof c->what, "V %d dim %d K %d u %d W %d rows %d/%d (%s)", s->vocab,
             s->dim, s->k, s->u, s->w, s->rows, s->rows_per_group, s->what);
    const int vocab = c->vocab, dim = c->dim, rows = c->rows, ldx = c->ldx;

    /* The output layer and its index. */
    c->out_w = alloc_f32((size_t)vocab * dim);
    c->out_b = alloc_f32(vocab);
    test_fill_uniform(c->out_w, (size_t)vocab * dim, -1.0f, 1.0f);
    test_fill_uniform(c->out_b, vocab, -0.5f, 0.5f);
    nmt_lsh_index_config config = {s->k, s->u, s->w, test_rand_u64()};
    nmt_error err = {};
    nmt_status st = nmt_lsh_index_build(c->out_w, vocab, dim, &config, &c->index, &err);
    CHECK(st == NMT_STATUS_OK, "index build: %s", err.message);
    if (st != NMT_STATUS_OK) {
        free(c->out_w);
        free(c->out_b);
        return 0;
    }
    c->tables = nmt_lsh_index_tables(c->index);
    c->dt = upload_tables(c->tables);

    /* Attentional states: half near an output row (many shared codes), half
     * random; the padding is NaN and must never be read. */
    c->x = alloc_f32((size_t)rows * ldx);
    for (int r = 0; r < rows; r++) {
        float *xr = c->x + (size_t)r * ldx;
        int near = test_rand_int(0, 2);
        const float *wr = c->out_w + (size_t)test_rand_int(0, vocab) * dim;
        for (int p = 0; p < dim; p++)
            xr[p] = near ? wr[p] + test_rand_uniform(-0.05f, 0.05f) : test_rand_uniform(-1, 1);
        for (int p = dim; p < ldx; p++)
            xr[p] = NAN;
    }
    if (s->dead) {
        c->live = alloc_i32(rows);
        for (int r = 0; r < rows; r++)
            c->live[r] = r % 4 != 1;
    }
    c->d_x = (float *)dev_upload(c->x, (size_t)rows * ldx * sizeof(float));
    c->d_w = (float *)dev_upload(c->out_w, (size_t)vocab * dim * sizeof(float));
    c->d_b = (float *)dev_upload(c->out_b, vocab * sizeof(float));
    c->d_live = c->live ? (int32_t *)dev_upload(c->live, rows * sizeof(int32_t)) : NULL;

    /* The CPU oracle: codes, hits, and the lists of those hits. */
    c->codes = alloc_i32((size_t)rows * s->w);
    nmt_cpu_lsh_codes(rows, c->x, ldx, c->tables, c->codes);
    const size_t n_hits = (size_t)rows * vocab;
    c->hits = alloc_i32(n_hits);
    memset(c->hits, 0, n_hits * sizeof(int32_t));
    nmt_cpu_lsh_hits(rows, c->codes, c->live, c->tables, c->hits);
    int32_t *h = alloc_i32(n_hits); /* read and reset by the candidates */
    memcpy(h, c->hits, n_hits * sizeof(int32_t));
    c->cand = alloc_i32((size_t)c->groups * c->cand_ld);
    c->count = alloc_i32(c->groups);
    memset(c->cand, POISON_I32, (size_t)c->groups * c->cand_ld * sizeof(int32_t));
    const nmt_cand_lists lists = {
        .words = c->cand,
        .ld = c->cand_ld,
        .count = c->count,
        .rows_per_group = c->rpg,
    };
    nmt_cpu_lsh_candidates(rows, vocab, h, s->threshold, s->n_always, lists);
    free(h);
    c->max_count = 1;
    for (int g = 0; g < c->groups; g++)
        c->max_count = c->count[g] > c->max_count ? c->count[g] : c->max_count;
    return 1;
}

static void lsh_case_free(lsh_case *c)
{
    free_tables(&c->dt);
    nmt_lsh_index_free(c->index);
    CUDA_OK(cudaFree(c->d_x));
    CUDA_OK(cudaFree(c->d_w));
    CUDA_OK(cudaFree(c->d_b));
    if (c->d_live)
        CUDA_OK(cudaFree(c->d_live));
    free(c->out_w);
    free(c->out_b);
    free(c->x);
    free(c->live);
    free(c->codes);
    free(c->hits);
    free(c->cand);
    free(c->count);
}

/* NMT_TEST_SMALL=1 (under compute-sanitizer) keeps the small shapes only. */
static int shape_is_small(const shape *s)
{
    return (size_t)s->vocab * s->dim <= 400000 && (size_t)s->rows * s->vocab <= 300000;
}

static int test_small(void)
{
    const char *small = getenv("NMT_TEST_SMALL");
    return small && *small == '1';
}

#endif /* NMT_LSH_TEST_FIXTURE_H */
