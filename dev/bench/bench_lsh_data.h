/* bench_lsh_data.h: the inputs of bench_lsh.cu (header only, static, included
 * by that one program): random Gaussian weights and decoder states made on
 * the device, the LSH index built on the host and copied to the device
 * (copies for the L2 rotation), bucket statistics, and the candidate lists of
 * the fixed-fraction and sharing parts, drawn on the host.
 *
 * Decoder states: row r of copy c is base[c, r / beam] + 0.3 * noise[c, r],
 * all entries N(0, 1): the beam hypotheses of one sentence are near each
 * other, as in a real decode, so their band codes mostly agree. */
#ifndef NMT_BENCH_LSH_DATA_H
#define NMT_BENCH_LSH_DATA_H

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "align.h"
#include "bench_util.h"
#include "lsh.h"
#include "lsh_index.h"

/* ---- random numbers ----------------------------------------------------- */

static __host__ __device__ inline uint64_t bench_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull; /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* N(0, 1) at index i of stream `seed` (Box-Muller on one 64-bit hash). */
static __device__ inline float bench_gauss(uint64_t i, uint64_t seed)
{
    uint64_t h = bench_mix64(i ^ bench_mix64(seed));
    float u1 = ((float)(h >> 40) + 0.5f) / 16777216.0f;
    float u2 = (float)((h >> 8) & 0xffffff) / 16777216.0f;
    return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

static __global__ void fill_gauss(float *x, size_t n, float scale, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = scale * bench_gauss(i, seed);
}

/* copies x [rows, dim] blocks of decoder states (see the top). */
static __global__ void fill_states(float *x, int copies, int rows, int dim, int beam,
                                   uint64_t seed)
{
    size_t n = (size_t)copies * rows * dim;
    int sentences = (rows + beam - 1) / beam;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t c = i / ((size_t)rows * dim);
        int r = (int)(i / dim % rows), j = (int)(i % dim);
        size_t base = ((size_t)c * sentences + r / beam) * dim + j;
        x[i] = bench_gauss(base, seed) + 0.3f * bench_gauss(i, seed + 1);
    }
}

static void make_states(float *x, int copies, int rows, int dim, int beam, uint64_t seed,
                        cudaStream_t stream)
{
    fill_states<<<1024, 256, 0, stream>>>(x, copies, rows, dim, beam, seed);
    CUDA_OK(cudaGetLastError());
}

/* Host generator for the candidate lists. */
static uint64_t rng_next(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return bench_mix64(*state);
}

/* ---- the index on the device ------------------------------------------- */

typedef struct {
    int copies;
    nmt_lsh_tables *tables; /* [copies], device pointers: copy c reads only block c */
    char **blocks;
    size_t bytes; /* one copy */
} dev_index;

/* Copies enough to rotate over more than 2x L2 (at most 16). */
static void dev_index_upload(const nmt_lsh_tables *h, dev_index *d)
{
    size_t n_perm = (size_t)h->u * h->w * h->k, n_slots = (size_t)h->w << h->table_bits;
    size_t n_hash = (size_t)h->w * 4, n_words = (size_t)h->w * h->vocab;
    size_t o_slots = nmt_align_up(n_perm * sizeof(int32_t), 256);
    size_t o_hash = o_slots + nmt_align_up(n_slots * sizeof(nmt_lsh_slot), 256);
    size_t o_words = o_hash + nmt_align_up(n_hash * sizeof(uint32_t), 256);
    d->bytes = o_words + nmt_align_up(n_words * sizeof(int32_t), 256);
    d->copies = bench_copies(d->bytes);
    d->copies = d->copies > 16 ? 16 : d->copies;
    d->tables = (nmt_lsh_tables *)malloc(d->copies * sizeof(nmt_lsh_tables));
    d->blocks = (char **)malloc(d->copies * sizeof(char *));
    for (int c = 0; c < d->copies; c++) {
        char *b;
        CUDA_OK(cudaMalloc(&b, d->bytes));
        if (c == 0) {
            CUDA_OK(cudaMemcpy(b, h->perm, n_perm * sizeof(int32_t), cudaMemcpyHostToDevice));
            CUDA_OK(cudaMemcpy(b + o_slots, h->slots, n_slots * sizeof(nmt_lsh_slot),
                               cudaMemcpyHostToDevice));
            CUDA_OK(cudaMemcpy(b + o_hash, h->hash, n_hash * sizeof(uint32_t),
                               cudaMemcpyHostToDevice));
            CUDA_OK(cudaMemcpy(b + o_words, h->bucket_words, n_words * sizeof(int32_t),
                               cudaMemcpyHostToDevice));
        } else {
            CUDA_OK(cudaMemcpy(b, d->blocks[0], d->bytes, cudaMemcpyDeviceToDevice));
        }
        d->blocks[c] = b;
        d->tables[c] = *h;
        d->tables[c].perm = (const int32_t *)b;
        d->tables[c].slots = (const nmt_lsh_slot *)(b + o_slots);
        d->tables[c].hash = (const uint32_t *)(b + o_hash);
        d->tables[c].bucket_words = (const int32_t *)(b + o_words);
    }
}

static void dev_index_free(dev_index *d)
{
    for (int c = 0; c < d->copies; c++)
        CUDA_OK(cudaFree(d->blocks[c]));
    free(d->tables);
    free(d->blocks);
    memset(d, 0, sizeof *d);
}

/* Buckets over all bands: how many, the mean length, the mean length a
 * lookup lands in (a word's own bucket: sum len^2 / sum len), the largest. */
typedef struct {
    int64_t buckets;
    double mean, lookup_mean;
    int32_t max;
} bucket_stats;

static bucket_stats index_bucket_stats(const nmt_lsh_tables *h)
{
    bucket_stats s = {0, 0.0, 0.0, 0};
    double sum = 0.0, sum2 = 0.0;
    size_t n = (size_t)h->w << h->table_bits;
    for (size_t i = 0; i < n; i++) {
        if (h->slots[i].key < 0)
            continue;
        double len = h->slots[i].length;
        s.buckets++;
        sum += len;
        sum2 += len * len;
        s.max = h->slots[i].length > s.max ? h->slots[i].length : s.max;
    }
    s.mean = s.buckets ? sum / s.buckets : 0.0;
    s.lookup_mean = sum > 0 ? sum2 / sum : 0.0;
    return s;
}

/* ---- candidate lists ---------------------------------------------------- */

/* Marks m distinct words of [lo, vocab) that are not marked yet (a partial
 * Fisher-Yates over the unmarked ones; fewer when fewer are left). scratch:
 * [vocab]. Returns the number marked. */
static int32_t mark_random_words(uint8_t *mark, int32_t lo, int32_t vocab, int32_t m,
                                 uint64_t *rng, int32_t *scratch, int32_t *picked)
{
    int32_t free_n = 0;
    for (int32_t w = lo; w < vocab; w++)
        if (!mark[w])
            scratch[free_n++] = w;
    m = m < free_n ? m : free_n;
    for (int32_t i = 0; i < m; i++) {
        int32_t j = i + (int32_t)(rng_next(rng) % (uint64_t)(free_n - i));
        int32_t t = scratch[i];
        scratch[i] = scratch[j];
        scratch[j] = t;
        mark[scratch[i]] = 1;
        if (picked)
            picked[i] = scratch[i];
    }
    return m;
}

/* The marked words, ascending: the list; returns its length. */
static int32_t collect_marked(const uint8_t *mark, int32_t vocab, int32_t *list)
{
    int32_t n = 0;
    for (int32_t w = 0; w < vocab; w++)
        if (mark[w])
            list[n++] = w;
    return n;
}

/* One list of `count` words: 0 .. n_always - 1 and count - n_always random
 * others (the fixed-fraction part). list: [vocab]. */
static int32_t make_fixed_list(int32_t vocab, int32_t count, int32_t n_always, uint64_t seed,
                               int32_t *list)
{
    uint8_t *mark = (uint8_t *)calloc(vocab, 1);
    int32_t *scratch = (int32_t *)malloc(vocab * sizeof(int32_t));
    uint64_t rng = seed;
    for (int32_t w = 0; w < n_always && w < vocab; w++)
        mark[w] = 1;
    mark_random_words(mark, n_always, vocab, count - n_always, &rng, scratch, NULL);
    int32_t n = collect_marked(mark, vocab, list);
    free(mark);
    free(scratch);
    return n;
}

/* The sharing part's lists. Row r of sentence g = r / beam: the n_always
 * words, the sentence's pool P_g (m_s = round(overlap * (per_row - n_always))
 * random words, drawn once per sentence) and m_o = per_row - n_always - m_s
 * random words of its own outside P_g: per_row words exactly. A sentence's
 * list is the union of its rows' lists, the shared list the union of all.
 * Outputs (ld = vocab): row_cand [rows], sent_cand [sentences], shared_cand
 * [1], with their counts. */
typedef struct {
    int32_t rows, sentences, vocab;
    int32_t *row_cand, *row_count, *sent_cand, *sent_count, *shared_cand, shared_count;
} sharing_lists;

static void make_sharing_lists(int32_t rows, int32_t beam, int32_t vocab, int32_t per_row,
                               int32_t n_always, double overlap, uint64_t seed, sharing_lists *s)
{
    s->rows = rows;
    s->sentences = (rows + beam - 1) / beam;
    s->vocab = vocab;
    s->row_cand = (int32_t *)malloc((size_t)rows * vocab * sizeof(int32_t));
    s->row_count = (int32_t *)malloc(rows * sizeof(int32_t));
    s->sent_cand = (int32_t *)malloc((size_t)s->sentences * vocab * sizeof(int32_t));
    s->sent_count = (int32_t *)malloc(s->sentences * sizeof(int32_t));
    s->shared_cand = (int32_t *)malloc(vocab * sizeof(int32_t));
    uint8_t *row_mark = (uint8_t *)malloc(vocab), *sent_mark = (uint8_t *)malloc(vocab);
    uint8_t *all_mark = (uint8_t *)calloc(vocab, 1);
    int32_t *scratch = (int32_t *)malloc(vocab * sizeof(int32_t));
    int32_t *pool = (int32_t *)malloc(vocab * sizeof(int32_t));
    uint64_t rng = seed;
    n_always = n_always < per_row ? n_always : per_row;
    int32_t m_s = (int32_t)lround(overlap * (per_row - n_always));
    int32_t m_o = per_row - n_always - m_s;
    for (int32_t g = 0; g < s->sentences; g++) {
        memset(sent_mark, 0, vocab);
        for (int32_t w = 0; w < n_always; w++)
            sent_mark[w] = 1;
        int32_t n_pool = mark_random_words(sent_mark, n_always, vocab, m_s, &rng, scratch, pool);
        for (int32_t r = g * beam; r < rows && r < (g + 1) * beam; r++) {
            memset(row_mark, 0, vocab);
            for (int32_t w = 0; w < n_always; w++)
                row_mark[w] = 1;
            for (int32_t i = 0; i < n_pool; i++)
                row_mark[pool[i]] = 1;
            /* Own words outside the pool: the pool is marked already. */
            mark_random_words(row_mark, n_always, vocab, m_o, &rng, scratch, NULL);
            s->row_count[r] = collect_marked(row_mark, vocab, s->row_cand + (size_t)r * vocab);
            for (int32_t w = 0; w < vocab; w++)
                sent_mark[w] |= row_mark[w];
        }
        s->sent_count[g] = collect_marked(sent_mark, vocab, s->sent_cand + (size_t)g * vocab);
        for (int32_t w = 0; w < vocab; w++)
            all_mark[w] |= sent_mark[w];
    }
    s->shared_count = collect_marked(all_mark, vocab, s->shared_cand);
    free(row_mark);
    free(sent_mark);
    free(all_mark);
    free(scratch);
    free(pool);
}

static void sharing_lists_free(sharing_lists *s)
{
    free(s->row_cand);
    free(s->row_count);
    free(s->sent_cand);
    free(s->sent_count);
    free(s->shared_cand);
}

/* ---- the output layer and its index -------------------------------------- */

/* One (H, V): W_out ~ N(0, 1/H), b_out ~ N(0, 0.01), rotated over copies. */
typedef struct {
    int dim, vocab, w_copies;
    float *w, *b;  /* [w_copies][vocab, dim], [w_copies][vocab] */
    float *host_w; /* copy 0, for the index builds */
} weights;

static void weights_make(int dim, int vocab, cudaStream_t stream, weights *wt)
{
    memset(wt, 0, sizeof *wt);
    wt->dim = dim;
    wt->vocab = vocab;
    size_t n = (size_t)vocab * dim;
    wt->w_copies = bench_copies(n * sizeof(float));
    wt->w_copies = wt->w_copies > 64 ? 64 : wt->w_copies;
    CUDA_OK(cudaMalloc(&wt->w, n * wt->w_copies * sizeof(float)));
    CUDA_OK(cudaMalloc(&wt->b, (size_t)vocab * wt->w_copies * sizeof(float)));
    uint64_t seed = (uint64_t)dim * 1000003u + vocab;
    fill_gauss<<<1024, 256, 0, stream>>>(wt->w, n, 1.0f / sqrtf((float)dim), seed);
    fill_gauss<<<256, 256, 0, stream>>>(wt->b, vocab, 0.1f, seed + 7);
    CUDA_OK(cudaGetLastError());
    for (int c = 1; c < wt->w_copies; c++) {
        CUDA_OK(cudaMemcpyAsync(wt->w + n * c, wt->w, n * sizeof(float),
                                cudaMemcpyDeviceToDevice, stream));
        CUDA_OK(cudaMemcpyAsync(wt->b + (size_t)vocab * c, wt->b, vocab * sizeof(float),
                                cudaMemcpyDeviceToDevice, stream));
    }
    wt->host_w = (float *)malloc(n * sizeof(float));
    CUDA_OK(cudaMemcpyAsync(wt->host_w, wt->w, n * sizeof(float), cudaMemcpyDeviceToHost,
                            stream));
    CUDA_OK(cudaStreamSynchronize(stream));
}

static void weights_free(weights *wt)
{
    CUDA_OK(cudaFree(wt->w));
    CUDA_OK(cudaFree(wt->b));
    free(wt->host_w);
    memset(wt, 0, sizeof *wt);
}

/* Builds the index of wt's W_out on the host (timed), prints its JSON line
 * and a line on stderr, and uploads it. */
static nmt_lsh_index *index_make(const weights *wt, const nmt_lsh_index_config *cfg,
                                 dev_index *d)
{
    nmt_lsh_index *index = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    NMT_OK(nmt_lsh_index_build(wt->host_w, wt->vocab, wt->dim, cfg, &index, &err));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double build_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    const nmt_lsh_tables *t = nmt_lsh_index_tables(index);
    nmt_lsh_index_info info = nmt_lsh_index_describe(index);
    bucket_stats s = index_bucket_stats(t);
    dev_index_upload(t, d);
    printf("{\"bench\":\"lsh\",\"part\":\"index\",\"H\":%d,\"V\":%d,\"K\":%d,\"u\":%d,\"W\":%d,"
           "\"build_s\":%.3f,\"bytes\":%lld,\"table_bits\":%d,\"rehashes\":%d,\"buckets\":%lld,"
           "\"mean_bucket\":%.2f,\"lookup_bucket\":%.2f,\"max_bucket\":%d,\"copies\":%d}\n",
           wt->dim, wt->vocab, cfg->k, cfg->u, cfg->w, build_s, (long long)info.bytes,
           t->table_bits, info.rehashes, (long long)s.buckets, s.mean, s.lookup_mean, s.max,
           d->copies);
    fflush(stdout);
    fprintf(stderr, "index {%d,%d,%d} of %d x %d: built in %.2f s, %.1f MB, buckets mean %.1f "
            "(a lookup's %.1f), max %d, %d copies\n", cfg->k, cfg->u, cfg->w, wt->vocab,
            wt->dim, build_s, (double)info.bytes / 1e6, s.mean, s.lookup_mean, s.max, d->copies);
    return index;
}

#endif /* NMT_BENCH_LSH_DATA_H */
