/* ensemble.c: which models may decode together as an ensemble
 * (backend.h, nmt_ensemble_make), and what the backends get of it. The search scores one target vocabulary,
 * so the members must share it token for token; the translator builds one
 * source batch from the first model's vocabulary, features and tokenizer,
 * so every member must read the source the same way. The first difference
 * is named, with both models' values. */
#include "backend.h"

#include "error.h"

#include <string.h>

/* The first index at which the two vocabularies' tokens differ, or -1. */
static int32_t first_token_difference(const nmt_vocab *a, const nmt_vocab *b)
{
    const int32_t n = nmt_vocab_size(a);
    for (int32_t id = 0; id < n; id++)
        if (strcmp(nmt_vocab_token(a, id), nmt_vocab_token(b, id)))
            return id;
    return -1;
}

static nmt_status compare_vocab(const nmt_vocab *first, const nmt_vocab *other, int member,
                                const char *what, nmt_error *err)
{
    const int32_t n = nmt_vocab_size(first), m = nmt_vocab_size(other);
    if (n != m)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "ensemble: model %d's %s vocabulary has %d tokens, model 1's %d "
                             "(an ensemble's models share it)", member, what, m, n);
    const int32_t id = first_token_difference(first, other);
    if (id >= 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "ensemble: %s token %d is '%s' in model 1 and '%s' in model %d "
                             "(an ensemble's models share the %s vocabulary)", what, id,
                             nmt_vocab_token(first, id), nmt_vocab_token(other, id), member,
                             what);
    return NMT_STATUS_OK;
}

static const char *tokenizer_name(const nmt_hparams *hp)
{
    return hp->sentencepiece ? "sentencepiece" : hp->pretokenized ? "pretokenized" : "engine";
}

/* The source as the translator reads it: tokenizer, SentencePiece pieces,
 * vocabulary and feature rows. */
static nmt_status compare_source(const nmt_model *first, const nmt_model *other, int member,
                                 nmt_error *err)
{
    const nmt_hparams *a = &first->hp, *b = &other->hp;
    if (a->sentencepiece != b->sentencepiece || a->pretokenized != b->pretokenized)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "ensemble: model %d's tokenizer is %s, model 1's %s (an ensemble's "
                             "models read the source the same way)", member,
                             tokenizer_name(b), tokenizer_name(a));
    if (first->spm && other->spm) {
        const int32_t n = nmt_spm_piece_count(first->spm), m = nmt_spm_piece_count(other->spm);
        int32_t id = 0;
        while (id < n && n == m && !strcmp(nmt_spm_piece(first->spm, id),
                                           nmt_spm_piece(other->spm, id)))
            id++;
        if (n != m || id < n)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "ensemble: model %d's SentencePiece model differs from model "
                                 "1's (%d pieces against %d; the first difference at piece %d)",
                                 member, m, n, id);
    }
    nmt_status status = compare_vocab(first->src_vocab, other->src_vocab, member, "source", err);
    if (status != NMT_STATUS_OK)
        return status;
    int same = a->n_features == b->n_features && a->src_rows == b->src_rows;
    for (int32_t f = 0; same && f < a->n_features; f++)
        same = a->features[f].kind == b->features[f].kind &&
               a->features[f].first_row == b->features[f].first_row &&
               a->features[f].n_rows == b->features[f].n_rows;
    if (!same)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "ensemble: model %d's source features (%d kinds, %d rows) differ "
                             "from model 1's (%d kinds, %d rows)", member, b->n_features,
                             b->src_rows, a->n_features, a->src_rows);
    return NMT_STATUS_OK;
}

nmt_status nmt_ensemble_make(const nmt_model *const *models, const float *weights, int n,
                             nmt_ensemble *ensemble, nmt_error *err)
{
    if (!models || !ensemble)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "ensemble: NULL argument");
    if (n < 1 || n > NMT_MAX_ENSEMBLE_MODELS)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "ensemble: %d models, must be 1..%d", n, NMT_MAX_ENSEMBLE_MODELS);
    memset(ensemble, 0, sizeof *ensemble);
    for (int i = 0; i < n; i++) {
        if (!models[i])
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "ensemble: model %d is NULL",
                                 i + 1);
        ensemble->models[i] = models[i];
        ensemble->weights[i] = weights ? weights[i] : 1.0f / (float)n;
    }
    ensemble->n = n;
    nmt_status status = nmt_ensemble_check_weights(ensemble->weights, n, err);
    for (int i = 1; i < n && status == NMT_STATUS_OK; i++) {
        status = compare_vocab(models[0]->tgt_vocab, models[i]->tgt_vocab, i + 1, "target", err);
        if (status == NMT_STATUS_OK)
            status = compare_source(models[0], models[i], i + 1, err);
    }
    return status;
}

nmt_status nmt_ensemble_wrapped(const nmt_ensemble *e, nmt_shrink_mode shrink,
                                const nmt_ensemble **wrapped, nmt_error *err)
{
    *wrapped = e->n > 1 || e->weights[0] != 1.0f ? e : NULL;
    if (*wrapped && shrink != NMT_SHRINK_NONE)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "shrinking (LSH, TOP) with an ensemble: not supported (each "
                             "model would score other candidate words)");
    return NMT_STATUS_OK;
}

int nmt_ensemble_any_sparse(const nmt_ensemble *e)
{
    for (int32_t i = 0; i < e->n; i++)
        if (e->models[i]->n_sparse > 0)
            return 1;
    return 0;
}
