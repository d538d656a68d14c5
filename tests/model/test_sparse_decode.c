/* test_sparse_decode.c: a model with sparse matrices decodes on the CPU
 * (issue #21): the shipped test model's decoder LSTM, attention and output
 * matrices pruned by magnitude to 80% zeros (the largest 20% of each kept),
 * written twice: once with them in section SPRS, once dense. Then
 * - the sparse file with sparse on (the CPU multiplies the CSR forms,
 *   kernels/cpu/spmm.c) translates every line to the same bytes as the dense
 *   file, scores within 1e-5 (the SpMM adds the same products in the same
 *   order, so they are in fact equal), n-best lists included;
 * - sparse off and sparse auto on the sparse file give the same again;
 * - sparse on is refused for a dense model (ARGUMENT) and with device cuda
 *   (UNSUPPORTED: no GPU sparse kernel yet). */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "nmt.h"
#include "model.h"
#include "model_file.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N_LINES = 12, MAX_TENSORS = 128 };

static const char *const words[] = {"ein", "mann", "frau", "hund", "spielt", "im", "park",
                                    "haus", "rot", "ball", "zwei", "kind"};
static char text[N_LINES][256];
static const char *lines[N_LINES];

static int sparse_allowed(const nmt_model_tensor *t)
{
    size_t len = strlen(t->name);
    return t->ndim == 2 && ((!strncmp(t->name, "decoder.", 8) && t->name[len - 4] == 'w') ||
                            !strcmp(t->name, "attention.w_a") ||
                            !strcmp(t->name, "attention.w_c") || !strcmp(t->name, "output.w"));
}

static int compare_abs(const void *a, const void *b)
{
    float x = fabsf(*(const float *)a), y = fabsf(*(const float *)b);
    return x < y ? -1 : x > y;
}

/* Zeroes the smallest `sparsity` of the values by magnitude and scales the
 * rest by `gain` = 1 / (1 - sparsity): the random test model, pruned alone,
 * ends every sentence at once (EOS first), which would leave nothing to
 * compare. */
static void prune(float *v, size_t n, double sparsity, float gain)
{
    float *sorted = malloc(n * sizeof *sorted);
    if (!sorted)
        return;
    memcpy(sorted, v, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, compare_abs);
    float threshold = fabsf(sorted[(size_t)(sparsity * (double)n)]);
    for (size_t i = 0; i < n; i++)
        v[i] = fabsf(v[i]) < threshold ? 0.0f : v[i] * gain;
    free(sorted);
}

/* Writes the pruned model to `path` with its matrices sparse or dense. */
static int write_pruned(const nmt_model *m, const char *path, int sparse)
{
    nmt_write_tensor t[MAX_TENSORS];
    nmt_model_tensor info[MAX_TENSORS];
    float *values[MAX_TENSORS] = {0};
    const char *src[4096], *tgt[4096];
    int32_t n = nmt_model_tensor_count(m), ok = 0;
    if (n > MAX_TENSORS || m->hp.src_words > 4096 || m->hp.tgt_vocab > 4096)
        return 0;
    for (int32_t i = 0; i < m->hp.src_words; i++)
        src[i] = nmt_vocab_token(m->src_vocab, i);
    for (int32_t i = 0; i < m->hp.tgt_vocab; i++)
        tgt[i] = nmt_vocab_token(m->tgt_vocab, i);
    memset(t, 0, sizeof t);
    for (int32_t i = 0; i < n; i++) {
        nmt_model_tensor_at(m, i, &info[i]);
        size_t elems = (size_t)info[i].dims[0] * (size_t)(info[i].ndim == 2 ? info[i].dims[1] : 1);
        values[i] = malloc(elems * sizeof(float));
        if (!values[i])
            goto done;
        memcpy(values[i], info[i].data, elems * sizeof(float));
        t[i].name = info[i].name;
        t[i].ndim = info[i].ndim;
        for (int d = 0; d < info[i].ndim; d++)
            t[i].dims[d] = (uint64_t)info[i].dims[d];
        t[i].values = values[i];
        if (sparse_allowed(&info[i])) {
            prune(values[i], elems, 0.8, 5.0f);
            t[i].sparse = sparse;
        }
    }
    nmt_write_options opt = {.dtype = NMT_DTYPE_F32};
    nmt_error err = {0};
    ok = nmt_model_file_write(path, &m->hp, src, m->hp.src_words, tgt, m->hp.tgt_vocab, t, n,
                              &opt, &err) == NMT_STATUS_OK;
    CHECK(ok, "write %s: %s", path, err.message);
done:
    for (int32_t i = 0; i < n; i++)
        free(values[i]);
    return ok;
}

static nmt_status translate(const nmt_model *m, nmt_sparse sparse, nmt_device device,
                            nmt_result *results, nmt_error *err)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = device;
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
    nmt_result ref[N_LINES], got[N_LINES];
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
    if (!write_pruned(base, sparse_path, 1) || !write_pruned(base, dense_path, 0))
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

    CHECK(translate(dense, NMT_SPARSE_AUTO, NMT_DEVICE_CPU, ref, &err) == NMT_STATUS_OK,
          "dense: %s", err.message);
    static const struct {
        nmt_sparse mode;
        nmt_device device;
        const char *what;
    } runs[] = {{NMT_SPARSE_ON, NMT_DEVICE_CPU, "sparse on, cpu"},
                {NMT_SPARSE_ON, NMT_DEVICE_AUTO, "sparse on, device auto"},
                {NMT_SPARSE_AUTO, NMT_DEVICE_CPU, "sparse auto"},
                {NMT_SPARSE_OFF, NMT_DEVICE_CPU, "sparse off"}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        nmt_status st = translate(sparse, runs[r].mode, runs[r].device, got, &err);
        CHECK(st == NMT_STATUS_OK, "%s: %s", runs[r].what, err.message);
        if (st == NMT_STATUS_OK)
            compare(ref, got, runs[r].what);
        for (int i = 0; i < N_LINES; i++)
            nmt_result_clear(&got[i]);
    }
    int non_empty = 0;
    for (int i = 0; i < N_LINES; i++)
        non_empty += ref[i].status == NMT_STATUS_OK && ref[i].hypotheses[0].text[0] != '\0';
    CHECK(non_empty >= N_LINES / 2, "only %d of %d translations are not empty", non_empty,
          N_LINES);
    fprintf(stderr, "line 1: '%s' -> '%s' (%.6f)\n", lines[1], ref[1].hypotheses[0].text,
            ref[1].hypotheses[0].score);

    nmt_status st = translate(dense, NMT_SPARSE_ON, NMT_DEVICE_CPU, got, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT && strstr(err.message, "stores no matrix sparse"),
          "sparse on, dense model: %d '%s'", st, err.message);
    st = translate(sparse, NMT_SPARSE_ON, NMT_DEVICE_CUDA, got, &err);
    CHECK(st == NMT_STATUS_ERROR_UNSUPPORTED && strstr(err.message, "no sparse kernels"),
          "sparse on, device cuda: %d '%s'", st, err.message);
done:
    for (int i = 0; i < N_LINES; i++)
        nmt_result_clear(&ref[i]);
    nmt_model_free(base);
    nmt_model_free(sparse);
    nmt_model_free(dense);
    unlink(sparse_path);
    unlink(dense_path);
    return test_finish("test_sparse_decode");
}
