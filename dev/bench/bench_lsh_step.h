/* bench_lsh_step.h: one LSH decoder step as bench_lsh.cu times it (header
 * only, static, included by that one program): the program's settings, the
 * step's buffers (step_arg), one run_* function a timed call (each rotates
 * its inputs by the call index: x, W_out with b_out and the index over copies
 * bigger than 2x L2), the adaptive timing (time_us) and the set-up and
 * tear-down of a step's buffers. */
#ifndef NMT_BENCH_LSH_STEP_H
#define NMT_BENCH_LSH_STEP_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lsh_data.h"
#include "bench_util.h"
#include "cuda_ctx.h"
#include "linear.h"
#include "lsh.h"
#include "softmax_topk.h"

enum { MAX_LIST = 32, MAX_X_COPIES = 2048, COUNT_SAMPLES = 16 };
static const double kRunUs = 500.0; /* the length of one timed run (time_us) */
static const int32_t k_excluded[2] = {0, 2}; /* PAD and BOS, as the engine excludes them */

typedef struct {
    nmt_cuda_ctx *ctx;
    cudaStream_t stream;
    double copy_gbps;
    int32_t *excluded; /* device copy of k_excluded */
    nmt_lsh_index_config cfg;
    int threshold, top, tight;
} bench;

/* Everything one timed call needs; the run_* functions rotate by call. */
typedef struct {
    nmt_cuda_ctx *ctx;
    cudaStream_t stream;
    int rows, rows_per_group, dim, vocab, k;
    float *x;           /* [x_copies][rows, dim] */
    int32_t *codes_all; /* [x_copies][rows, w]: the codes of each x copy */
    int x_copies;
    const float *w, *b;
    int w_copies;
    const nmt_lsh_tables *tables;
    int t_copies;
    int32_t *codes, *hits;
    int32_t *hash_cand, *hash_count; /* written by candidates */
    int threshold, n_always;
    int32_t *cand, *count;       /* read by logits and softmax */
    int first, max_count;        /* logits: columns [first, count) */
    nmt_lsh_lookup lookup;
    nmt_lsh_logits_kernel kernel;
    float *logits, *top_v;
    int32_t *top_i;
    const int32_t *excluded;
    void *cand_ws, *sm_ws, *direct_ws;
    size_t cand_ws_bytes, sm_ws_bytes, direct_ws_bytes;
} step_arg;

/* The lists the candidates write (hash_*), and those logits and softmax read. */
static nmt_cand_lists lists_of(const step_arg *a, int32_t *words, int32_t *count)
{
    const nmt_cand_lists lists = {
        .words = words, .ld = a->vocab, .count = count, .rows_per_group = a->rows_per_group};
    return lists;
}
static nmt_cand_lists hash_lists(const step_arg *a)
{
    return lists_of(a, a->hash_cand, a->hash_count);
}
static nmt_cand_lists read_lists(const step_arg *a)
{
    return lists_of(a, a->cand, a->count);
}

static const float *x_at(const step_arg *a, int i)
{
    return a->x + (size_t)(i % a->x_copies) * a->rows * a->dim;
}
static const float *w_at(const step_arg *a, int i)
{
    return a->w + (size_t)(i % a->w_copies) * a->vocab * a->dim;
}
static const float *b_at(const step_arg *a, int i)
{
    return a->b + (size_t)(i % a->w_copies) * a->vocab;
}
static const nmt_lsh_tables *t_at(const step_arg *a, int i)
{
    return &a->tables[i % a->t_copies];
}

static void run_linear(void *p, int i)
{
    step_arg *a = (step_arg *)p;
    NMT_OK(nmt_cuda_linear(a->ctx, a->rows, a->vocab, a->dim, x_at(a, i), a->dim, w_at(a, i),
                           a->dim, b_at(a, i), 0, a->logits, a->vocab, &err));
}

static void run_full(void *p, int i)
{
    step_arg *a = (step_arg *)p;
    run_linear(p, i);
    NMT_OK(nmt_cuda_softmax_topk(a->rows, a->vocab, a->logits, a->vocab, a->k, a->excluded, 2,
                                 a->top_v, a->top_i, NULL, a->sm_ws, a->sm_ws_bytes, a->stream,
                                 &err));
}

static void run_codes(void *p, int i)
{
    step_arg *a = (step_arg *)p;
    NMT_OK(nmt_cuda_lsh_codes(a->rows, x_at(a, i), a->dim, t_at(a, i), a->codes, a->stream,
                              &err));
}

/* The precomputed codes of the call's x copy. */
static const int32_t *codes_at(const step_arg *a, int i)
{
    return a->codes_all + (size_t)(i % a->x_copies) * a->rows * t_at(a, i)->w;
}

/* Alone: the hits of the precomputed codes. */
static void run_hits(void *p, int i)
{
    step_arg *a = (step_arg *)p;
    NMT_OK(nmt_cuda_lsh_hits(a->rows, codes_at(a, i), NULL, t_at(a, i), a->lookup, a->hits,
                             a->stream, &err));
}

/* Codes to lists in two steps: hits (a->lookup) + candidates, which leaves
 * hits at zero again. */
static void lists_two_step(step_arg *a, const int32_t *codes, int i)
{
    NMT_OK(nmt_cuda_lsh_hits(a->rows, codes, NULL, t_at(a, i), a->lookup, a->hits, a->stream,
                             &err));
    NMT_OK(nmt_cuda_lsh_candidates(a->rows, a->vocab, a->hits, a->threshold, a->n_always,
                                   hash_lists(a), a->cand_ws, a->cand_ws_bytes, a->stream,
                                   &err));
}

static void run_lists_two_step(void *p, int i)
{
    lists_two_step((step_arg *)p, codes_at((step_arg *)p, i), i);
}

/* ... or in one go without the hit matrix (lsh_direct.cu; its workspace in
 * direct_ws, zeroed once, left zeroed by every call). */
static void run_lists_direct(void *p, int i)
{
    step_arg *a = (step_arg *)p;
    NMT_OK(nmt_cuda_lsh_candidates_direct(a->rows, codes_at(a, i), NULL, t_at(a, i),
                                          a->threshold, a->n_always, hash_lists(a), a->direct_ws,
                                          a->direct_ws_bytes, a->stream, &err));
}

/* codes + hits + candidates. */
static void run_hashing(void *p, int i)
{
    step_arg *a = (step_arg *)p;
    run_codes(p, i);
    lists_two_step(a, a->codes, i);
}

static void run_logits(void *p, int i)
{
    step_arg *a = (step_arg *)p;
    const nmt_lsh_logits_args args = {
        .n_rows = a->rows,
        .dim = a->dim,
        .x = x_at(a, i),
        .ldx = a->dim,
        .out_w = w_at(a, i),
        .out_b = b_at(a, i),
        .lists = read_lists(a),
        .first = a->first,
        .logits = a->logits,
        .ld = a->vocab,
    };
    NMT_OK(nmt_cuda_lsh_logits(&args, a->max_count, a->kernel, a->stream, &err));
}

static void run_softmax(void *p, int i)
{
    step_arg *a = (step_arg *)p;
    (void)i;
    NMT_OK(nmt_cuda_softmax_topk_candidates(a->rows, a->logits, a->vocab, read_lists(a),
                                            a->max_count, a->k, a->excluded, 2, a->top_v,
                                            a->top_i, NULL, a->sm_ws, a->sm_ws_bytes, a->stream,
                                            &err));
}

/* The whole LSH step; logits and softmax read a->cand (the hashed list, or a
 * fixed one while the hashing still runs into its scratch list). */
static void run_lsh(void *p, int i)
{
    run_hashing(p, i);
    run_logits(p, i);
    run_softmax(p, i);
}

/* bench_util.h's timing with the batch cut so a run lasts about 0.5 ms: the
 * big cases (a 768 x 50000 x 512 GEMM is ~1 ms) time single calls, which
 * keeps the program near a minute; calls of 25 us or less keep the full
 * batch. Estimate: two calls after a warm-up call. */
static double time_us(bench_fn fn, void *arg, cudaStream_t stream)
{
    cudaEvent_t start, stop;
    float ms = 0.0f;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&stop));
    fn(arg, 0);
    CUDA_OK(cudaEventRecord(start, stream));
    fn(arg, 1);
    fn(arg, 2);
    CUDA_OK(cudaEventRecord(stop, stream));
    CUDA_OK(cudaEventSynchronize(stop));
    CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_OK(cudaEventDestroy(start));
    CUDA_OK(cudaEventDestroy(stop));
    double est_us = ms * 500.0;
    int batch = bench_batch();
    if (est_us * batch > kRunUs)
        batch = (int)(kRunUs / est_us) > 1 ? (int)(kRunUs / est_us) : 1;
    return bench_time_us_batch(fn, arg, stream, batch);
}

static int beam_for(int rows)
{
    return rows % 12 == 0 && rows % 5 != 0 ? 12 : 5;
}

static double floor_us(const bench *B, double words, int dim)
{
    return words * dim * sizeof(float) / (B->copy_gbps * 1e3);
}

static void *dev_alloc(size_t bytes)
{
    void *p;
    CUDA_OK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

/* ---- setup shared by the parts ------------------------------------------ */

/* The rows' states (x copies) and, given an index, their codes. */
static void states_make(const bench *B, step_arg *a, int rows, int beam, uint64_t seed)
{
    a->rows = rows;
    a->x_copies = bench_copies((size_t)rows * a->dim * sizeof(float));
    a->x_copies = a->x_copies > MAX_X_COPIES ? MAX_X_COPIES : a->x_copies;
    a->x = (float *)dev_alloc((size_t)a->x_copies * rows * a->dim * sizeof(float));
    make_states(a->x, a->x_copies, rows, a->dim, beam, seed, B->stream);
}

static void codes_make(step_arg *a, const dev_index *d)
{
    a->tables = d->tables;
    a->t_copies = d->copies;
    if (a->codes_all)
        CUDA_OK(cudaFree(a->codes_all));
    if (a->codes)
        CUDA_OK(cudaFree(a->codes));
    a->codes_all = (int32_t *)dev_alloc((size_t)a->x_copies * a->rows * d->tables[0].w *
                                        sizeof(int32_t));
    a->codes = (int32_t *)dev_alloc((size_t)a->rows * d->tables[0].w * sizeof(int32_t));
    NMT_OK(nmt_cuda_lsh_codes(a->rows * a->x_copies, a->x, a->dim, &d->tables[0], a->codes_all,
                              a->stream, &err));
}

/* Step buffers for rows x vocab with n_groups candidate lists. */
static void step_alloc(const bench *B, const weights *wt, step_arg *a, int rows, int n_groups)
{
    a->ctx = B->ctx;
    a->stream = B->stream;
    a->dim = wt->dim;
    a->vocab = wt->vocab;
    a->w = wt->w;
    a->b = wt->b;
    a->w_copies = wt->w_copies;
    a->excluded = B->excluded;
    a->threshold = B->threshold;
    a->lookup = NMT_LSH_LOOKUP_WARP;
    a->kernel = NMT_LSH_LOGITS_AUTO;
    a->max_count = wt->vocab;
    a->k = 2 * beam_for(rows);
    a->rows = rows;
    a->hits = (int32_t *)dev_alloc((size_t)rows * wt->vocab * sizeof(int32_t));
    CUDA_OK(cudaMemset(a->hits, 0, (size_t)rows * wt->vocab * sizeof(int32_t)));
    CUDA_OK(cudaDeviceSynchronize());
    a->hash_cand = (int32_t *)dev_alloc((size_t)n_groups * wt->vocab * sizeof(int32_t));
    a->hash_count = (int32_t *)dev_alloc(n_groups * sizeof(int32_t));
    a->logits = (float *)dev_alloc((size_t)rows * wt->vocab * sizeof(float));
    a->top_v = (float *)dev_alloc((size_t)rows * a->k * sizeof(float));
    a->top_i = (int32_t *)dev_alloc((size_t)rows * a->k * sizeof(int32_t));
    a->cand_ws_bytes = nmt_cuda_lsh_candidates_workspace_size(n_groups, wt->vocab);
    a->cand_ws = dev_alloc(a->cand_ws_bytes);
    a->sm_ws_bytes = nmt_cuda_softmax_topk_workspace_size(rows, wt->vocab, a->k);
    if (a->sm_ws_bytes == SIZE_MAX) {
        fprintf(stderr, "bench_lsh: no softmax workspace size for %d x %d\n", rows, wt->vocab);
        exit(1);
    }
    a->sm_ws = dev_alloc(a->sm_ws_bytes);
    CUDA_OK(cudaMemset(a->sm_ws, 0, a->sm_ws_bytes));
    CUDA_OK(cudaDeviceSynchronize());
    a->direct_ws_bytes = nmt_cuda_lsh_direct_workspace_size(n_groups, wt->vocab);
    a->direct_ws = dev_alloc(a->direct_ws_bytes);
    CUDA_OK(cudaMemset(a->direct_ws, 0, a->direct_ws_bytes));
    CUDA_OK(cudaDeviceSynchronize());
}

static void step_free(step_arg *a)
{
    void *bufs[] = {a->x,      a->codes_all, a->codes,   a->hits,  a->hash_cand, a->hash_count,
                    a->logits, a->top_v,     a->top_i,   a->cand_ws, a->sm_ws, a->direct_ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            CUDA_OK(cudaFree(bufs[i]));
    memset(a, 0, sizeof *a);
}

#endif /* NMT_BENCH_LSH_STEP_H */
