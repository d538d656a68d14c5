/* test_sparse_decode.c: a model with sparse matrices decodes on the CPU
 * (issue #21): the shipped test model's decoder LSTM, attention and output
 * matrices pruned by magnitude to 80% zeros (the largest 20% of each kept),
 * written twice: once with them in section SPRS, once dense. Then
 * - the sparse file with sparse on (the CPU multiplies the CSR forms,
 *   kernels/cpu/spmm.c) translates every line to the same bytes as the dense
 *   file, scores within 1e-5 (the SpMM adds the same products in the same
 *   order, so they are in fact equal), n-best lists included; both with
 *   the reference kernels, whose arithmetic the CSR products share;
 * - sparse off and sparse auto on the sparse file give the same again, on
 *   the reference kernels and on the default ones (fast: dense products
 *   for both, compared with the dense file's on the same kernels);
 * - sparse on is refused for a dense model (ARGUMENT).
 * The CUDA engine's SpMM path: tests/engine/test_gpu_sparse.c. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "nmt.h"
#include "model.h"
#include "model_file.h"
#include "test_pruned_model.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N_LINES = 12 };

static const char *const words[] = {"ein", "mann", "frau", "hund", "spielt", "im", "park",
                                    "haus", "rot", "ball", "zwei", "kind"};
static char text[N_LINES][256];
static const char *lines[N_LINES];

static nmt_status translate(const nmt_model *m, nmt_sparse sparse, nmt_cpu_kernels kernels,
                            nmt_result *results, nmt_error *err)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CPU;
    o.cpu_kernels = kernels;
    o.sparse = sparse;
    o.beam_size = 4;
    o.n_best = 2;
    o.batch_size = 5;
    nmt_translator *t = NULL;
    nmt_status status = nmt_translator_create(m, &o, &t, err);
    if (status == NMT_STATUS_OK)
        status = nmt_translate_batch(t, lines, N_LINES, results, err);
    nmt_translator_free(t);
    return status;
}

static void compare(const nmt_result *ref, const nmt_result *got, const char *what)
{
    for (int i = 0; i < N_LINES; i++) {
        CHECK(got[i].status == NMT_STATUS_OK && got[i].n_hypotheses == ref[i].n_hypotheses,
              "%s: line %d: status %d, %d hypotheses", what, i, got[i].status,
              got[i].n_hypotheses);
        for (int h = 0; h < got[i].n_hypotheses && h < ref[i].n_hypotheses; h++) {
            const nmt_hypothesis *a = &ref[i].hypotheses[h], *b = &got[i].hypotheses[h];
            CHECK(!strcmp(a->text, b->text), "%s: line %d hypothesis %d: '%s', dense '%s'",
                  what, i, h, b->text, a->text);
            CHECK(fabsf(a->score - b->score) <= 1e-5f, "%s: line %d hypothesis %d: score %.9g, "
                  "dense %.9g", what, i, h, b->score, a->score);
        }
    }
}

int main(void)
{
    test_seed();
    for (int i = 0; i < N_LINES; i++) {
        int len = 1 + i % 7, at = 0;
        for (int w = 0; w < len; w++)
            at += snprintf(text[i] + at, sizeof text[i] - (size_t)at, "%s%s", w ? " " : "",
                           words[(i * 5 + w * 3) % 12]);
        lines[i] = text[i];
    }
    nmt_model *base = NULL, *sparse = NULL, *dense = NULL;
    nmt_error err = {0};
    nmt_result ref[2][N_LINES], got[N_LINES];
    memset(ref, 0, sizeof ref);
    memset(got, 0, sizeof got);
    char sparse_path[] = "/tmp/nmt_sparse_XXXXXX", dense_path[] = "/tmp/nmt_dense_XXXXXX";
    int fd1 = mkstemp(sparse_path), fd2 = mkstemp(dense_path);
    if (fd1 >= 0)
        close(fd1);
    if (fd2 >= 0)
        close(fd2);
    if (nmt_model_load(NMT_TEST_MODEL, &base, &err) != NMT_STATUS_OK) {
        CHECK(0, "load the test model: %s", err.message);
        goto done;
    }
    if (!test_write_pruned_model(base, sparse_path, 0.8, 1, 0) ||
        !test_write_pruned_model(base, dense_path, 0.8, 0, 0))
        goto done;
    CHECK(nmt_model_load(sparse_path, &sparse, &err) == NMT_STATUS_OK, "sparse: %s", err.message);
    CHECK(nmt_model_load(dense_path, &dense, &err) == NMT_STATUS_OK, "dense: %s", err.message);
    if (!sparse || !dense)
        goto done;
    int64_t nnz = 0, entries = 0;
    for (int32_t i = 0; i < sparse->n_sparse; i++) {
        nnz += sparse->sparse[i].nnz;
        entries += (int64_t)sparse->sparse[i].rows * sparse->sparse[i].cols;
    }
    CHECK(sparse->n_sparse == 2 * sparse->hp.dec_layers + 3 && nnz * 4 < entries,
          "%d sparse matrices, %lld of %lld entries nonzero", sparse->n_sparse, (long long)nnz,
          (long long)entries);
    fprintf(stderr, "%s\n", nmt_model_summary(sparse));

    /* ref[0]: the reference kernels, ref[1]: the default ones. */
    CHECK(translate(dense, NMT_SPARSE_AUTO, NMT_CPU_KERNELS_REFERENCE, ref[0], &err) ==
              NMT_STATUS_OK, "dense, reference: %s", err.message);
    CHECK(translate(dense, NMT_SPARSE_AUTO, NMT_CPU_KERNELS_AUTO, ref[1], &err) ==
              NMT_STATUS_OK, "dense, auto: %s", err.message);
    static const struct {
        nmt_sparse mode;
        int auto_kernels;
        const char *what;
    } runs[] = {{NMT_SPARSE_ON, 0, "sparse on, reference"},
                {NMT_SPARSE_AUTO, 0, "sparse auto, reference"},
                {NMT_SPARSE_OFF, 0, "sparse off, reference"},
                {NMT_SPARSE_AUTO, 1, "sparse auto, kernels auto"},
                {NMT_SPARSE_OFF, 1, "sparse off, kernels auto"}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        const int a = runs[r].auto_kernels;
        nmt_status st = translate(sparse, runs[r].mode,
                                  a ? NMT_CPU_KERNELS_AUTO : NMT_CPU_KERNELS_REFERENCE, got, &err);
        CHECK(st == NMT_STATUS_OK, "%s: %s", runs[r].what, err.message);
        if (st == NMT_STATUS_OK)
            compare(ref[a], got, runs[r].what);
        for (int i = 0; i < N_LINES; i++)
            nmt_result_clear(&got[i]);
    }
    int non_empty = 0;
    for (int i = 0; i < N_LINES; i++)
        non_empty += ref[0][i].status == NMT_STATUS_OK && ref[0][i].hypotheses[0].text[0] != '\0';
    CHECK(non_empty >= N_LINES / 2, "only %d of %d translations are not empty", non_empty,
          N_LINES);
    fprintf(stderr, "line 1: '%s' -> '%s' (%.6f)\n", lines[1], ref[0][1].hypotheses[0].text,
            ref[0][1].hypotheses[0].score);

    /* The stats count the matrices multiplied in CSR form: all 2L + 3 with
     * sparse on, none with sparse off. */
    for (int on = 0; on < 2; on++) {
        nmt_options o;
        nmt_options_init(&o);
        o.device = NMT_DEVICE_CPU;
        o.sparse = on ? NMT_SPARSE_ON : NMT_SPARSE_OFF;
        o.collect_stats = 1;
        nmt_translator *t = NULL;
        nmt_stats stats;
        memset(&stats, 0, sizeof stats);
        CHECK(nmt_translator_create(sparse, &o, &t, &err) == NMT_STATUS_OK &&
                  nmt_translator_stats(t, &stats, &err) == NMT_STATUS_OK,
              "stats: %s", err.message);
        CHECK(stats.sparse_matrices == (on ? sparse->n_sparse : 0),
              "sparse %s: %lld matrices in CSR form, want %d", on ? "on" : "off",
              (long long)stats.sparse_matrices, on ? sparse->n_sparse : 0);
        nmt_translator_free(t);
    }

    nmt_status st = translate(dense, NMT_SPARSE_ON, NMT_CPU_KERNELS_AUTO, got, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT && strstr(err.message, "stores no matrix sparse"),
          "sparse on, dense model: %d '%s'", st, err.message);
done:
    for (int i = 0; i < N_LINES; i++)
        nmt_result_clear(&ref[0][i]), nmt_result_clear(&ref[1][i]);
    nmt_model_free(base);
    nmt_model_free(sparse);
    nmt_model_free(dense);
    unlink(sparse_path);
    unlink(dense_path);
    return test_finish("test_sparse_decode");
}
