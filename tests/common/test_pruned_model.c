/* test_pruned_model.c: see test_pruned_model.h. */
#include "test_pruned_model.h"

#include "model.h"
#include "model_file.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_TENSORS = 128, MAX_VOCAB = 4096 };

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

static int prune(float *v, size_t n, double sparsity, float gain)
{
    float *sorted = malloc(n * sizeof *sorted);
    if (!sorted)
        return 0;
    memcpy(sorted, v, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, compare_abs);
    float threshold = fabsf(sorted[(size_t)(sparsity * (double)n)]);
    for (size_t i = 0; i < n; i++)
        v[i] = fabsf(v[i]) < threshold ? 0.0f : v[i] * gain;
    free(sorted);
    return 1;
}

/* The copy both writers make: pruned by sparsity, and with one token renamed
 * (renamed: NULL none, else its vocabulary's token `id` becomes `word`). */
typedef struct model_copy {
    double sparsity;
    int sparse, fp16;
    int rename_target; /* 1: the target vocabulary's token, 0: the source's */
    int32_t id;
    const char *word;
} model_copy;

static int write_copy(const nmt_model *m, const char *path, const model_copy *c)
{
    const double sparsity = c->sparsity;
    const int sparse = c->sparse, fp16 = c->fp16;
    static nmt_write_tensor t[MAX_TENSORS];
    static nmt_model_tensor info[MAX_TENSORS];
    static const char *src[MAX_VOCAB], *tgt[MAX_VOCAB];
    float *values[MAX_TENSORS] = {0};
    int32_t n = nmt_model_tensor_count(m), ok = 0;
    CHECK(n <= MAX_TENSORS && m->hp.src_words <= MAX_VOCAB && m->hp.tgt_vocab <= MAX_VOCAB &&
              sparsity >= 0.0 && sparsity < 1.0,
          "pruned model: %d tensors, vocabularies %d / %d, sparsity %g", n, m->hp.src_words,
          m->hp.tgt_vocab, sparsity);
    if (n > MAX_TENSORS || m->hp.src_words > MAX_VOCAB || m->hp.tgt_vocab > MAX_VOCAB ||
        sparsity < 0.0 || sparsity >= 1.0)
        return 0;
    for (int32_t i = 0; i < m->hp.src_words; i++)
        src[i] = nmt_vocab_token(m->src_vocab, i);
    for (int32_t i = 0; i < m->hp.tgt_vocab; i++)
        tgt[i] = nmt_vocab_token(m->tgt_vocab, i);
    if (c->word && c->id >= 0 && c->id < (c->rename_target ? m->hp.tgt_vocab : m->hp.src_words))
        (c->rename_target ? tgt : src)[c->id] = c->word;
    memset(t, 0, sizeof t);
    for (int32_t i = 0; i < n; i++) {
        nmt_model_tensor_at(m, i, &info[i]);
        size_t elems = (size_t)info[i].dims[0] * (size_t)(info[i].ndim == 2 ? info[i].dims[1] : 1);
        values[i] = malloc(elems * sizeof(float));
        CHECK(values[i] != NULL, "pruned model: out of memory");
        if (!values[i])
            goto done;
        memcpy(values[i], info[i].data, elems * sizeof(float));
        t[i].name = info[i].name;
        t[i].ndim = info[i].ndim;
        for (int d = 0; d < info[i].ndim; d++)
            t[i].dims[d] = (uint64_t)info[i].dims[d];
        t[i].values = values[i];
        if (sparse_allowed(&info[i])) {
            if (!prune(values[i], elems, sparsity, (float)pow(1.0 - sparsity, -0.6)))
                goto done;
            t[i].sparse = sparse;
        }
    }
    nmt_write_options opt = {.dtype = fp16 ? NMT_DTYPE_F16 : NMT_DTYPE_F32};
    nmt_error err = {0};
    ok = nmt_model_file_write(path, &m->hp, src, m->hp.src_words, tgt, m->hp.tgt_vocab, t, n,
                              &opt, &err) == NMT_STATUS_OK;
    CHECK(ok, "write %s: %s", path, err.message);
done:
    for (int32_t i = 0; i < n; i++)
        free(values[i]);
    return ok;
}

int test_write_pruned_model(const nmt_model *m, const char *path, double sparsity, int sparse,
                            int fp16)
{
    const model_copy c = {.sparsity = sparsity, .sparse = sparse, .fp16 = fp16};
    return write_copy(m, path, &c);
}

int test_write_renamed_model(const nmt_model *m, const char *path, int target, int32_t id,
                             const char *word)
{
    const model_copy c = {.rename_target = target, .id = id, .word = word};
    return write_copy(m, path, &c);
}
