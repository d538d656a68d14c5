/* test_gpu_sparse.c: the CUDA engine's sparse matrices (issue #21;
 * model/cuda/gemm_sparse.c). The test model (NMT_TEST_MODEL) pruned by
 * magnitude (tests/common/test_pruned_model.h) to 80% zeros (fp32 values)
 * and to 96% (fp16 values), stored in section SPRS; random lines of 1..20
 * words. Against the CPU engine with sparse on (its CSR products equal the
 * dense ones bit for bit, test_sparse_decode):
 * - CUDA with sparse on at batch 1 (the SpMM's row kernel), 37 and 100
 *   (beam 5: 500 rows, the tile kernel): the same hypotheses on >= 99% of
 *   the lines, scores within 1e-3 (another summation order: near-ties may
 *   move one line);
 * - the same for CUDA with sparse off (the dense GEMM on the expansion), and
 *   sparse on under fp16 precision: >= 90% of the lines as the CPU's;
 * - CUDA sparse on with CUDA graphs and without: bit-identical (the SpMM has
 *   no atomics, so replays add in the same order);
 * - the stats count the matrices multiplied sparse: the decoder layers, W_c
 *   and W_out (L + 2) with sparse on, none with sparse off, and with sparse
 *   auto all of them at 96% zeros in fp32 (the measured break-even is far
 *   below that) and no more than sparse on otherwise.
 * Exit 77 without a GPU. NMT_TEST_SMALL=1 (under compute-sanitizer): 12
 * lines, batches 1 and 12. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "nmt.h"
#include "model.h"
#include "test_gpu_model.h"
#include "test_pruned_model.h"
#include "test_results.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_LINES 100
#define N_LINES_SMALL 12
static int n_lines = N_LINES;

static const char *const words[] = {
    "der", "die", "das", "und", "ist", "ein", "eine", "Haus", "katze", "Hund", "MANN", "frau",
    "kind", "sieht", "hat", "nicht", "sehr", "gro\xc3\x9f", "klein", "Heute", "wir", "ich",
    "mit", "auf", "gut", "Buch", "liest", "?", "Zebra", "xylophon", "kind.", "!"};

static nmt_options options(nmt_device device, nmt_sparse sparse, int batch)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = device;
    o.sparse = sparse;
    o.batch_size = batch;
    o.beam_size = 5;
    o.n_best = 2;
    o.warmup = 0;
    o.collect_stats = 1;
    return o;
}

/* Translates every line; *sparse_matrices from the stats. 0 on failure
 * (reported). */
static int run(const nmt_model *model, const nmt_options *o, const char *const *lines,
               nmt_result *results, int64_t *sparse_matrices)
{
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_translator_create(model, o, &t, &err);
    CHECK(st == NMT_STATUS_OK, "translator (device %d, sparse %d): %s", (int)o->device,
          (int)o->sparse, err.message);
    if (st == NMT_STATUS_OK)
        st = nmt_translate_batch(t, lines, n_lines, results, &err);
    CHECK(st == NMT_STATUS_OK, "translate (device %d, sparse %d, batch %d): %s", (int)o->device,
          (int)o->sparse, o->batch_size, err.message);
    nmt_stats stats;
    memset(&stats, 0, sizeof stats);
    if (st == NMT_STATUS_OK)
        st = nmt_translator_stats(t, &stats, &err);
    *sparse_matrices = stats.sparse_matrices;
    nmt_translator_free(t);
    return st == NMT_STATUS_OK;
}

static void clear(nmt_result *r)
{
    for (int i = 0; i < n_lines; i++)
        nmt_result_clear(&r[i]);
}

/* Runs b and holds it against the reference a: at most `max_differing`
 * lines differ by `same`. Returns the stats' sparse matrices (-1 on
 * failure). */
static int64_t check_against(const nmt_model *model, const nmt_result *a, const nmt_options *b,
                             test_line_compare same, int max_differing, const char *label,
                             const char *const *lines)
{
    static nmt_result rb[N_LINES];
    int64_t sparse = -1;
    if (run(model, b, lines, rb, &sparse)) {
        const int differing = test_count_differing(a, rb, n_lines, same, label, lines);
        fprintf(stderr, "%s: %d of %d lines differ, %lld matrices sparse\n", label, differing,
                n_lines, (long long)sparse);
        CHECK(differing <= max_differing, "%s: %d of %d lines differ (at most %d)", label,
              differing, n_lines, max_differing);
    } else {
        sparse = -1;
    }
    clear(rb);
    return sparse;
}

static void check_model(const nmt_model *model, const char *name, int dense_pays,
                        const int *batches, int n_batches, const char *const *lines)
{
    static nmt_result ref[N_LINES], graphs[N_LINES];
    const int64_t all = model->hp.dec_layers + 2, near_ties = (n_lines + 99) / 100;
    const nmt_options cpu = options(NMT_DEVICE_CPU, NMT_SPARSE_ON, 37);
    int64_t count = 0;
    char label[128];
    if (!run(model, &cpu, lines, ref, &count))
        return;
    int non_empty = 0;
    for (int i = 0; i < n_lines; i++)
        non_empty += ref[i].status == NMT_STATUS_OK && ref[i].hypotheses[0].text[0] != '\0';
    CHECK(4 * non_empty >= n_lines, "%s: only %d of %d CPU translations are not empty", name,
          non_empty, n_lines);
    for (int i = 0; i < n_batches; i++) {
        const nmt_options on = options(NMT_DEVICE_CUDA, NMT_SPARSE_ON, batches[i]);
        snprintf(label, sizeof label, "%s batch %d, cpu (a) vs cuda sparse on (b)", name,
                 batches[i]);
        count = check_against(model, ref, &on, test_same_line, (int)near_ties, label, lines);
        CHECK(count == all, "%s: sparse on: %lld matrices sparse, want %lld", label,
              (long long)count, (long long)all);
    }
    nmt_options off = options(NMT_DEVICE_CUDA, NMT_SPARSE_OFF, 37);
    snprintf(label, sizeof label, "%s batch 37, cpu (a) vs cuda sparse off (b)", name);
    count = check_against(model, ref, &off, test_same_line, (int)near_ties, label, lines);
    CHECK(count == 0, "%s: sparse off: %lld matrices sparse", label, (long long)count);

    nmt_options au = options(NMT_DEVICE_CUDA, NMT_SPARSE_AUTO, 37);
    snprintf(label, sizeof label, "%s batch 37, cpu (a) vs cuda sparse auto (b)", name);
    count = check_against(model, ref, &au, test_same_line, (int)near_ties, label, lines);
    CHECK(dense_pays ? count >= 0 && count <= all : count == all,
          "%s: sparse auto: %lld matrices sparse of %lld", label, (long long)count,
          (long long)all);

    nmt_options half = options(NMT_DEVICE_CUDA, NMT_SPARSE_ON, 37);
    half.precision = NMT_PRECISION_FP16;
    snprintf(label, sizeof label, "%s batch 37, cpu (a) vs cuda sparse on, fp16 (b)", name);
    check_against(model, ref, &half, test_same_line, n_lines / 10, label, lines);

    /* Graphs against plain launches: the same kernels, bit for bit. */
    nmt_options plain = options(NMT_DEVICE_CUDA, NMT_SPARSE_ON, 7);
    plain.cuda_graphs = 0;
    nmt_options with_graphs = plain;
    with_graphs.cuda_graphs = 1;
    if (run(model, &plain, lines, graphs, &count)) {
        snprintf(label, sizeof label, "%s batch 7, cuda sparse on: plain (a) vs graphs (b)",
                 name);
        check_against(model, graphs, &with_graphs, test_identical_line, 0, label, lines);
    }
    clear(graphs);
    clear(ref);
}

int main(void)
{
    nmt_model *base = NULL, *m80 = NULL, *m96 = NULL;
    const int opened = test_gpu_model_open(NMT_TEST_MODEL, &base);
    if (opened != 0)
        return opened;
    const char *small = getenv("NMT_TEST_SMALL");
    if (small && *small == '1')
        n_lines = N_LINES_SMALL;
    static char text[N_LINES][512];
    const char *lines[N_LINES];
    for (int i = 0; i < N_LINES; i++) {
        test_random_words(text[i], words, (int)(sizeof words / sizeof words[0]),
                          test_rand_int(1, 21));
        lines[i] = text[i];
    }
    char p80[] = "/tmp/nmt_gpu_sparse80_XXXXXX", p96[] = "/tmp/nmt_gpu_sparse96_XXXXXX";
    int fd = mkstemp(p80);
    if (fd >= 0)
        close(fd);
    fd = mkstemp(p96);
    if (fd >= 0)
        close(fd);
    nmt_error err = {NMT_STATUS_OK, ""};
    if (test_write_pruned_model(base, p80, 0.8, 1, 0) &&
        test_write_pruned_model(base, p96, 0.96, 1, 1)) {
        CHECK(nmt_model_load(p80, &m80, &err) == NMT_STATUS_OK, "%s: %s", p80, err.message);
        CHECK(nmt_model_load(p96, &m96, &err) == NMT_STATUS_OK, "%s: %s", p96, err.message);
    }
    static const int full[] = {1, 37, 100}, reduced[] = {1, 12};
    const int is_small = n_lines == N_LINES_SMALL;
    if (m80)
        check_model(m80, "80% fp32", 1, is_small ? reduced : full, is_small ? 2 : 3, lines);
    if (m96)
        check_model(m96, "96% fp16", 0, is_small ? reduced : full, is_small ? 2 : 3, lines);
    nmt_model_free(m80);
    nmt_model_free(m96);
    nmt_model_free(base);
    unlink(p80);
    unlink(p96);
    return test_finish("test_gpu_sparse");
}
