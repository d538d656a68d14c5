/* test_gpu_memory.c: the CUDA backend's measure of its device memory
 * (nmt_cuda_backend_device_bytes, which max_memory caps) against what
 * create really takes: cudaMemGetInfo's use before and after
 * nmt_translator_create, for a few (batch, beam, max_src): what the measure
 * leaves out must not grow with the sizes (check_creates); nmt_stats' device_memory_bytes equal to the measure after
 * create and device_memory_used filled after translating; max_memory halves
 * the batch size to what fits and the lines translate as uncapped; with LSH
 * the shrink wing counted (check_shrink). Exit 77 without a GPU. */
#include "nmt.h"
#include "backend.h"
#include "cuda_ok.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_LINES = 10 };
static const char *const lines[N_LINES] = {
    "ein mann", "zwei kinder spielen im park", "eine frau", "ein hund läuft",
    "der ball ist rot", "ein haus", "zwei hunde spielen", "eine frau und ein mann",
    "kinder", "ein roter ball im haus"};

static long long used_now(void)
{
    size_t free_bytes = 0, total = 0;
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
    return (long long)(total - free_bytes);
}

static nmt_options gpu_options(int batch, int beam, int max_src)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CUDA;
    o.batch_size = batch;
    o.beam_size = beam;
    o.max_src_tokens = max_src;
    o.warmup = 0;
    o.cuda_graphs = 0;
    o.collect_stats = 1;
    return o;
}

static size_t measure_shrunk(const nmt_model *model, const nmt_options *o,
                             const nmt_shrink *shrink)
{
    const nmt_backend_config config = {.max_sentences = o->batch_size,
                                       .beam = o->beam_size,
                                       .max_src = o->max_src_tokens,
                                       .shrink = shrink,
                                       .collect_stats = o->collect_stats,
                                       .cuda_graphs = o->cuda_graphs,
                                       .warmup = o->warmup,
                                       .check_every = o->check_every,
                                       .precision = o->precision,
                                       .batch_invariant = o->batch_invariant};
    size_t bytes = 0;
    nmt_error err = {0};
    CHECK(nmt_cuda_backend_device_bytes(model, &config, &bytes, &err) == NMT_STATUS_OK,
          "measure: %s", err.message);
    return bytes;
}

static size_t measure(const nmt_model *model, const nmt_options *o)
{
    return measure_shrunk(model, o, NULL);
}

static long long create_taking(const nmt_model *model, const nmt_options *o,
                               nmt_translator **t, nmt_stats *stats)
{
    nmt_error err = {0};
    const long long before = used_now();
    CHECK(nmt_translator_create(model, o, t, &err) == NMT_STATUS_OK, "create: %s",
          err.message);
    const long long taken = used_now() - before;
    memset(stats, 0, sizeof *stats);
    if (*t)
        nmt_translator_stats(*t, stats, &err);
    return taken;
}

/* LSH (the automatic lists: two-step below 128 rows a step, direct from
 * there): the shrink wing's arena counts in the stats once created, as much
 * as cudaMemGetInfo sees it take beyond the same translator without LSH
 * (within its 2 MiB granules), and the measure with the shrink (what
 * max_memory caps) is at least the stats. At batch 8 and 256 (40 and 1,280
 * rows). The test model's 32 words leave no room for a dense prefix, so
 * the side context is not created here. */
static void check_shrink(const nmt_model *model)
{
    static const int batches[] = {8, 256};
    for (int i = 0; i < 2; i++) {
        nmt_options plain = gpu_options(batches[i], 5, 64), lsh = plain;
        lsh.shrink.mode = NMT_SHRINK_LSH;
        lsh.shrink.top = 10;
        const int32_t V = model->hp.tgt_vocab;
        const nmt_shrink shrink = {NMT_SHRINK_LSH, lsh.shrink.share,
                                   4 + lsh.shrink.top < V ? 4 + lsh.shrink.top : V,
                                   lsh.shrink.threshold,
                                   {lsh.shrink.k, lsh.shrink.u, lsh.shrink.w, lsh.shrink.seed},
                                   NULL, lsh.shrink.lists};
        const size_t est_plain = measure(model, &plain);
        const size_t est_lsh = measure_shrunk(model, &lsh, &shrink);
        nmt_translator *a = NULL, *b = NULL;
        nmt_stats sa, sb;
        const long long taken_plain = create_taking(model, &plain, &a, &sa);
        const long long taken_lsh = create_taking(model, &lsh, &b, &sb);
        const long long counted = (long long)(sb.device_memory_bytes - sa.device_memory_bytes);
        const long long seen = taken_lsh - taken_plain;
        printf("batch %d: LSH counted %lld bytes, cudaMemGetInfo %lld, measure %zu -> %zu\n",
               batches[i], counted, seen, est_plain, est_lsh);
        CHECK(counted > 0 && llabs(seen - counted) <= (8LL << 20) + counted / 20,
              "batch %d: the stats count %lld bytes for LSH, cudaMemGetInfo saw %lld",
              batches[i], counted, seen);
        CHECK(est_lsh >= (size_t)sb.device_memory_bytes && est_plain < est_lsh,
              "batch %d: measure with LSH %zu, stats %lld", batches[i], est_lsh,
              (long long)sb.device_memory_bytes);
        nmt_translator_free(a);
        nmt_translator_free(b);
    }
}

/* Creates translators of growing sizes, all kept alive, and compares what
 * each one adds to cudaMemGetInfo's use with the measure. A create also
 * takes memory the measure leaves out and that does not grow with the
 * sizes (cuBLAS's handle memory, the kernels loaded for its first use,
 * streams and events): that overhead, taken - measure, must be the same for
 * every size within the allocator's granules (2 MiB an allocation) and 5%
 * of the measure, so the measure follows every size-dependent allocation.
 * The overhead itself is printed. */
static void check_creates(const nmt_model *model)
{
    static const int sizes[][3] = {{8, 5, 64}, {64, 5, 128}, {256, 10, 256}};
    enum { N = sizeof sizes / sizeof sizes[0] };
    nmt_translator *t[N] = {NULL};
    long long overhead[N] = {0};
    size_t est[N] = {0};
    nmt_error err = {0};
    for (int i = 0; i < N; i++) {
        const int batch = sizes[i][0], beam = sizes[i][1], max_src = sizes[i][2];
        const nmt_options o = gpu_options(batch, beam, max_src);
        est[i] = measure(model, &o);
        const long long before = used_now();
        if (nmt_translator_create(model, &o, &t[i], &err) != NMT_STATUS_OK) {
            CHECK(0, "create batch %d beam %d: %s", batch, beam, err.message);
            break;
        }
        const long long taken = used_now() - before;
        overhead[i] = taken - (long long)est[i];
        printf("batch %4d beam %2d max_src %4d: measured %zu bytes, cudaMemGetInfo %lld "
               "(overhead %+.1f MiB)\n", batch, beam, max_src, est[i], taken,
               (double)overhead[i] / (1 << 20));
        if (i > 0) {
            const long long slack = (16LL << 20) + (long long)est[i] / 20;
            const long long d = overhead[i] - overhead[0];
            CHECK(d >= -slack && d <= slack, "batch %d beam %d max_src %d: overhead %lld bytes, "
                  "%lld at the smallest size (the measure misses %lld bytes that grow)", batch,
                  beam, max_src, overhead[i], overhead[0], d);
        }
        nmt_stats stats;
        nmt_translator_stats(t[i], &stats, &err);
        CHECK(stats.device_memory_bytes <= (int64_t)est[i] &&
                  stats.device_memory_bytes >= (int64_t)est[i] - 4 * batch,
              "stats after create: %lld, measured %zu", (long long)stats.device_memory_bytes,
              est[i]);
        nmt_result results[N_LINES];
        CHECK(nmt_translate_batch(t[i], lines, N_LINES, results, &err) == NMT_STATUS_OK,
              "translate: %s", err.message);
        for (int k = 0; k < N_LINES; k++)
            nmt_result_clear(&results[k]);
        nmt_translator_stats(t[i], &stats, &err);
        CHECK(stats.device_memory_bytes >= (int64_t)est[i] - 4 * batch &&
                  stats.device_memory_used > 0,
              "stats after translating: %lld bytes, %lld used",
              (long long)stats.device_memory_bytes, (long long)stats.device_memory_used);
    }
    for (int i = 0; i < N; i++)
        nmt_translator_free(t[i]);
}

/* max_memory between the measures at batch 8 and 16, batch 64 asked: the
 * translator runs at 8 and translates as the uncapped one. */
static void check_cap(const nmt_model *model)
{
    nmt_options o = gpu_options(64, 5, 64), at8 = gpu_options(8, 5, 64),
                at16 = gpu_options(16, 5, 64);
    const size_t m8 = measure(model, &at8), m16 = measure(model, &at16);
    nmt_translator *free_run = NULL, *capped = NULL;
    nmt_error err = {0};
    nmt_result a[N_LINES], b[N_LINES];
    CHECK(nmt_translator_create(model, &o, &free_run, &err) == NMT_STATUS_OK, "%s", err.message);
    o.max_memory = (int64_t)(m8 + (m16 - m8) / 2);
    CHECK(nmt_translator_create(model, &o, &capped, &err) == NMT_STATUS_OK, "%s", err.message);
    if (!free_run || !capped)
        goto done;
    nmt_stats stats;
    nmt_translator_stats(capped, &stats, &err);
    CHECK(stats.batch_size == 8, "capped batch %lld, expected 8", (long long)stats.batch_size);
    CHECK(nmt_translate_batch(free_run, lines, N_LINES, a, &err) == NMT_STATUS_OK, "%s",
          err.message);
    CHECK(nmt_translate_batch(capped, lines, N_LINES, b, &err) == NMT_STATUS_OK, "%s",
          err.message);
    for (int i = 0; i < N_LINES; i++) {
        CHECK(a[i].status == NMT_STATUS_OK && b[i].status == NMT_STATUS_OK &&
                  !strcmp(a[i].hypotheses[0].text, b[i].hypotheses[0].text),
              "line %d differs under the cap", i);
        nmt_result_clear(&a[i]);
        nmt_result_clear(&b[i]);
    }
    o.max_memory = (int64_t)measure(model, &(nmt_options){.batch_size = 1, .beam_size = 5,
                                                          .max_src_tokens = 64}) - 1;
    nmt_translator *refused = NULL;
    CHECK(nmt_translator_create(model, &o, &refused, &err) == NMT_STATUS_ERROR_MEMORY &&
              strstr(err.message, "max_memory"),
          "one sentence over the cap: %s", err.message);
    nmt_translator_free(refused);
done:
    nmt_translator_free(free_run);
    nmt_translator_free(capped);
}

int main(void)
{
    if (nmt_cuda_available() == 0) {
        printf("test_gpu_memory: skipped: no GPU\n");
        return 77;
    }
    nmt_model *model = NULL;
    nmt_error err = {0};
    if (nmt_model_load(NMT_TEST_MODEL, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "cannot load %s: %s\n", NMT_TEST_MODEL, err.message);
        return 1;
    }
    { /* the CUDA context and cuBLAS's first handle, outside the measures */
        nmt_options o = gpu_options(1, 1, 8);
        nmt_translator *t = NULL;
        if (nmt_translator_create(model, &o, &t, &err) != NMT_STATUS_OK) {
            fprintf(stderr, "create: %s\n", err.message);
            return 1;
        }
        nmt_translator_free(t);
    }
    check_creates(model);
    check_cap(model);
    check_shrink(model);
    nmt_model_free(model);
    return test_finish("test_gpu_memory");
}
