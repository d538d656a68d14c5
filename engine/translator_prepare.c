/* translator_prepare.c: the host work before decoding (translator.h): each
 * line checked and tokenized, its source word ids looked up, and a call's
 * searched lines ordered longest first. nmt_translator_prepare does it for
 * one call; the pipeline (engine/pipeline.c) does the same in parts on
 * several threads (nmt_prepared_create, _fill on disjoint ranges, _order). */
#include "translator.h"

#include "error.h"
#include "sentencepiece.h"
#include "source_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nmt_status nmt_translator_tokenize(const nmt_translator *t, const char *line, size_t len,
                                   nmt_tokens *tokens, nmt_error *err)
{
    if (t->options.input_tokens)
        return nmt_tokenize_pretokenized(line, len, tokens, err);
    if (t->model->spm)
        return nmt_spm_encode(t->model->spm, line, len, tokens, err);
    return nmt_tokenize(line, len, tokens, err);
}

void nmt_translator_line_error(nmt_result *result, nmt_status status, const char *message)
{
    result->status = status;
    snprintf(result->message, sizeof result->message, "%s", message);
}

static nmt_status empty_line_result(nmt_result *result, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_ALLOC(result->hypotheses, 1);
    result->n_hypotheses = 1;
    NMT_ALLOC(result->hypotheses[0].text, 1);
    NMT_ALLOC(result->hypotheses[0].token_scores, 1); /* the EOS's 0: sums to log_prob */
cleanup:
    return status;
}

nmt_status nmt_translator_prepare_line(const nmt_translator *t, const char *line,
                                       nmt_tokens *tokens, nmt_result *result, int *searched,
                                       nmt_error *err)
{
    nmt_error line_err = {0};
    const size_t len = line ? strlen(line) : 0;
    char msg[128];
    *searched = 0;
    if (!line) {
        nmt_translator_line_error(result, NMT_STATUS_ERROR_ARGUMENT, "line is NULL");
    } else if (len > (size_t)t->options.max_line_bytes) {
        snprintf(msg, sizeof msg, "line too long: %zu bytes, the limit is %d", len,
                 t->options.max_line_bytes);
        nmt_translator_line_error(result, NMT_STATUS_ERROR_INPUT, msg);
    } else if (nmt_translator_tokenize(t, line, len, tokens, &line_err) != NMT_STATUS_OK) {
        if (line_err.status == NMT_STATUS_ERROR_MEMORY)
            return nmt_error_set(err, line_err.status, "%s", line_err.message);
        nmt_translator_line_error(result, line_err.status, line_err.message);
    } else if (tokens->n > t->options.max_src_tokens) {
        snprintf(msg, sizeof msg, "line has %d tokens, the limit is %d", tokens->n,
                 t->options.max_src_tokens);
        nmt_translator_line_error(result, NMT_STATUS_ERROR_INPUT, msg);
    } else if (tokens->n == 0) {
        return empty_line_result(result, err);
    } else {
        /* Here, on the preparing thread, not in the batch builder between
         * the decoder's batches. */
        nmt_source_word_ids(&t->source, tokens);
        *searched = 1;
    }
    return NMT_STATUS_OK;
}

void nmt_prepared_clear(nmt_prepared *p)
{
    for (int i = 0; p->tokens && i < p->n_lines; i++)
        nmt_tokens_clear(&p->tokens[i]);
    for (int i = 0; p->targets && i < p->n_lines; i++)
        nmt_line_target_clear(&p->targets[i]);
    for (int i = 0; p->results && i < p->n_lines; i++)
        nmt_result_clear(&p->results[i]);
    p->n_lines = 0;
    p->n_valid = 0;
}

void nmt_prepared_reset(nmt_prepared *p, int n_lines)
{
    nmt_prepared_clear(p);
    memset(p->searched, 0, (size_t)n_lines);
    p->n_lines = n_lines;
    p->used = 0;
}

void nmt_prepared_free(nmt_prepared *p)
{
    if (!p)
        return;
    nmt_prepared_clear(p);
    free(p->tokens);
    free(p->targets);
    free(p->results);
    free(p->searched);
    free(p->order);
    free(p->scratch);
    free(p->line_keys);
    free(p);
}

nmt_status nmt_prepared_set_line_keys(nmt_prepared *p, const uint64_t *keys, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!p || (!keys && p->n_lines > 0) || p->used)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "prepared_set_line_keys: no lines, no keys, or translated already");
    if (!p->line_keys)
        NMT_ALLOC(p->line_keys, p->capacity > 0 ? p->capacity : 1);
    memcpy(p->line_keys, keys, sizeof *keys * (size_t)p->n_lines);
cleanup:
    return status;
}

nmt_status nmt_prepared_create(const nmt_translator *t, int n_lines, nmt_targets targets,
                               nmt_prepared **prepared, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_prepared *p = NULL;
    const size_t n = n_lines > 0 ? (size_t)n_lines : 1;
    *prepared = NULL;
    NMT_ALLOC(p, 1);
    p->model = t->model;
    p->max_line_bytes = t->options.max_line_bytes;
    p->max_src_tokens = t->options.max_src_tokens;
    p->input_tokens = t->options.input_tokens;
    p->n_lines = n_lines;
    p->capacity = n_lines;
    NMT_ALLOC(p->tokens, n);
    NMT_ALLOC(p->results, n);
    NMT_ALLOC(p->searched, n);
    NMT_ALLOC(p->order, n);
    NMT_ALLOC(p->scratch, n);
    if (targets != NMT_TARGETS_NONE)
        NMT_ALLOC(p->targets, n);
    p->score = targets == NMT_TARGETS_SCORE;
    *prepared = p;
    p = NULL;
cleanup:
    nmt_prepared_free(p);
    return status;
}

nmt_status nmt_prepared_fill(const nmt_translator *t, nmt_prepared *p, const char *const *lines,
                             const char *const *targets, int first, int count, nmt_error *err)
{
    for (int i = first; i < first + count; i++) {
        int searched = 0;
        nmt_status status =
            nmt_translator_prepare_line(t, lines[i], &p->tokens[i], &p->results[i], &searched, err);
        if (status == NMT_STATUS_OK && p->targets)
            status = nmt_translator_prepare_target(t, targets ? targets[i] : NULL, p->score,
                                                   &p->targets[i], &p->results[i], &searched,
                                                   err);
        if (status != NMT_STATUS_OK)
            return status;
        p->searched[i] = (unsigned char)searched;
    }
    return NMT_STATUS_OK;
}

/* Longest first, ties in input order. A bottom-up stable merge sort rather
 * than qsort: C11's qsort takes no context and is not stable. */
static void sort_by_length(int32_t *order, int32_t *scratch, int32_t n, const nmt_tokens *tokens)
{
    for (int32_t width = 1; width < n; width *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * width) {
            int32_t mid = lo + width < n ? lo + width : n;
            int32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int32_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                scratch[o++] = tokens[order[b]].n > tokens[order[a]].n ? order[b++] : order[a++];
            while (a < mid)
                scratch[o++] = order[a++];
            while (b < hi)
                scratch[o++] = order[b++];
        }
        memcpy(order, scratch, sizeof *order * (size_t)n);
    }
}

void nmt_prepared_order(nmt_prepared *p)
{
    p->n_valid = 0;
    for (int i = 0; i < p->n_lines; i++)
        if (p->searched[i])
            p->order[p->n_valid++] = i;
    sort_by_length(p->order, p->scratch, p->n_valid, p->tokens);
}

nmt_status nmt_translator_prepare_call(const nmt_translator *t, const char *const *lines,
                                       const char *const *targets, int n_lines, int score,
                                       nmt_prepared **prepared, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_prepared *p = NULL;
    if (!t || !prepared || (!lines && n_lines > 0) || n_lines < 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "translator_prepare: bad arguments");
    *prepared = NULL;
    const nmt_targets kind = score     ? NMT_TARGETS_SCORE
                             : targets ? NMT_TARGETS_PREFIX
                                       : NMT_TARGETS_NONE;
    NMT_TRY(nmt_prepared_create(t, n_lines, kind, &p, err));
    NMT_TRY(nmt_prepared_fill(t, p, lines, targets, 0, n_lines, err));
    nmt_prepared_order(p);
    *prepared = p;
    p = NULL;
cleanup:
    nmt_prepared_free(p);
    return status;
}

nmt_status nmt_translator_prepare(const nmt_translator *t, const char *const *lines, int n_lines,
                                  nmt_prepared **prepared, nmt_error *err)
{
    return nmt_translator_prepare_call(t, lines, NULL, n_lines, 0, prepared, err);
}

nmt_status nmt_translator_prepare_prefix(const nmt_translator *t, const char *const *lines,
                                         const char *const *target_prefixes, int n_lines,
                                         nmt_prepared **prepared, nmt_error *err)
{
    return nmt_translator_prepare_call(t, lines, target_prefixes, n_lines, 0, prepared, err);
}
