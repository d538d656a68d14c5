/* translator_result.c: a search result as the line's nmt_result
 * (translator.h, nmt_translator_fill_result), and its release
 * (nmt_result_clear). Each hypothesis's token ids become text: an unknown
 * word is replaced by the source token it attended most (model-v1), then
 * the pieces are detokenized, joined by the model's SentencePiece decoder,
 * or (output_tokens) joined by spaces. Every hypothesis carries its
 * alignment and token scores; with attention_weights also its attention
 * rows, its target tokens, and the line its source tokens, which a caller
 * needs to read the weights (docs/decoding.md, "Attention weights and token
 * scores"). */
#include "translator.h"

#include "error.h"
#include "model.h"
#include "sentencepiece.h"
#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>

static void free_strings(char **strings, int n)
{
    for (int i = 0; strings && i < n; i++)
        free(strings[i]);
    free(strings);
}

void nmt_result_clear(nmt_result *result)
{
    if (!result)
        return;
    for (int i = 0; i < result->n_hypotheses; i++) {
        nmt_hypothesis *h = &result->hypotheses[i];
        free(h->text);
        free(h->alignment);
        free(h->token_scores);
        free(h->attention);
        free_strings(h->tokens, h->n_tokens);
    }
    free(result->hypotheses);
    free_strings(result->src_tokens, result->n_src);
    memset(result, 0, sizeof *result);
}

/* output_tokens: the pieces joined by single spaces (malloc'ed). */
static nmt_status join_tokens(const char *const *pieces, int32_t n, char **text, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    size_t bytes = 1;
    for (int32_t i = 0; i < n; i++)
        bytes += strlen(pieces[i]) + 1;
    char *out = NULL;
    NMT_ALLOC(out, bytes);
    size_t at = 0;
    for (int32_t i = 0; i < n; i++) {
        const size_t len = strlen(pieces[i]);
        if (i)
            out[at++] = ' ';
        memcpy(out + at, pieces[i], len);
        at += len;
    }
    out[at] = '\0';
    *text = out;
cleanup:
    return status;
}

/* copies[0..n) = strdup(strings[i]) (calloc'ed array: a failure leaves the
 * rest NULL, which free_strings takes). */
static nmt_status copy_strings(const char *const *strings, int32_t n, char ***copies,
                               nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_ALLOC(*copies, n > 0 ? n : 1);
    for (int32_t i = 0; i < n; i++) {
        const size_t len = strlen(strings[i]);
        NMT_ALLOC((*copies)[i], len + 1);
        memcpy((*copies)[i], strings[i], len + 1);
    }
cleanup:
    return status;
}

/* Hypothesis token ids -> text (and, with tokens, a copy of its pieces),
 * replacing UNK by the most attended source token's original form; the
 * target's tokens (a prefix, or the translation scored) keep their own. */
static nmt_status hypothesis_to_text(const nmt_translator *t, const nmt_search_hypothesis *h,
                                     const nmt_tokens *source, const nmt_line_target *target,
                                     char **text, char ***tokens, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const char **pieces = NULL;
    const int32_t n_given = target ? target->tokens.n : 0;
    NMT_ALLOC(pieces, h->length + 1);
    for (int32_t i = 0; i < h->length; i++) {
        int32_t id = h->tokens[i];
        int32_t pos = h->attn_argmax ? h->attn_argmax[i] : -1;
        if (i < n_given && id == target->ids[i])
            pieces[i] = target->tokens.tokens[i].text;
        else if (id == NMT_UNK_ID && t->options.unk_replace && pos >= 0 && pos < source->n)
            pieces[i] = source->tokens[pos].text;
        else
            pieces[i] = nmt_vocab_token(t->model->tgt_vocab, id);
        if (!pieces[i]) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                                   "decoder produced token id %d outside the target vocabulary",
                                   id);
            goto cleanup;
        }
    }
    if (t->options.output_tokens)
        NMT_TRY(join_tokens(pieces, h->length, text, err));
    else if (t->model->spm)
        NMT_TRY(nmt_spm_decode(t->model->spm, pieces, h->length, text, err));
    else
        NMT_TRY(nmt_detokenize(pieces, h->length, text, err));
    if (tokens)
        NMT_TRY(copy_strings(pieces, h->length, tokens, err));
cleanup:
    free(pieces);
    return status;
}

/* The attention rows of a hypothesis, checked: the search gives one row of
 * the source's length per token. */
static nmt_status copy_attention(const nmt_search_hypothesis *h, int32_t n_src, float **out,
                                 nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!h->attention || h->n_src != n_src)
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "the search gave no attention "
                             "weights (or rows of %d, the line has %d tokens)", h->n_src, n_src);
    const size_t n = (size_t)h->length * (size_t)n_src;
    NMT_ALLOC(*out, n > 0 ? n : 1);
    memcpy(*out, h->attention, sizeof(float) * n);
cleanup:
    return status;
}

nmt_status nmt_translator_fill_result(const nmt_translator *t, const nmt_search_result *found,
                                      const nmt_tokens *source, const nmt_line_target *target,
                                      nmt_result *result, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int weights = t->options.attention_weights;
    result->n_src = source->n;
    if (weights) {
        const char **texts = NULL;
        NMT_ALLOC(texts, source->n > 0 ? source->n : 1);
        for (int32_t i = 0; i < source->n; i++)
            texts[i] = source->tokens[i].text;
        status = copy_strings(texts, source->n, &result->src_tokens, err);
        free((void *)texts);
        NMT_TRY(status);
    }
    NMT_ALLOC(result->hypotheses, found->n_hypotheses);
    for (int32_t k = 0; k < found->n_hypotheses; k++) {
        const nmt_search_hypothesis *h = &found->hypotheses[k];
        nmt_hypothesis *out = &result->hypotheses[k];
        result->n_hypotheses = k + 1; /* from here on, clear frees it */
        out->n_tokens = h->length;    /* before tokens: clear frees that many */
        NMT_TRY(hypothesis_to_text(t, h, source, target, &out->text,
                                   weights ? &out->tokens : NULL, err));
        out->score = h->score;
        out->log_prob = h->log_prob;
        NMT_ALLOC(out->alignment, h->length > 0 ? h->length : 1);
        for (int32_t i = 0; i < h->length; i++)
            out->alignment[i] = h->attn_argmax ? h->attn_argmax[i] : -1;
        NMT_ALLOC(out->token_scores, (size_t)h->length + 1);
        if (h->token_scores)
            memcpy(out->token_scores, h->token_scores, sizeof(float) * ((size_t)h->length + 1));
        if (weights)
            NMT_TRY(copy_attention(h, source->n, &out->attention, err));
    }
    if (found->n_hypotheses == 0)
        nmt_translator_line_error(result, NMT_STATUS_ERROR_INTERNAL,
                                  "the search found no hypothesis");
    return NMT_STATUS_OK;
cleanup:
    return status;
}

nmt_status nmt_translator_fill_batch(const nmt_translator *t, nmt_search_result *found,
                                     const nmt_call_lines *call, const int32_t *lines,
                                     int32_t count, int fill, nmt_result *results,
                                     nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    for (int32_t k = 0; k < count && fill && status == NMT_STATUS_OK; k++) {
        const int32_t i = lines[k];
        status = nmt_translator_fill_result(t, &found[k], &call->tokens[i],
                                            call->targets ? &call->targets[i] : NULL,
                                            &results[i], err);
    }
    for (int32_t k = 0; k < count; k++)
        nmt_search_result_clear(&found[k]);
    return status;
}

nmt_status nmt_translator_echo(const nmt_translator *t, const nmt_tokens *source,
                               nmt_result *result, nmt_error *err)
{
    enum { ON_STACK = 64 }; /* most lines: no allocation but the result's own */
    nmt_status status = NMT_STATUS_OK;
    const int32_t n = source->n;
    int32_t stack_ids[ON_STACK], stack_positions[ON_STACK];
    float stack_zeros[ON_STACK + 1];
    int32_t *ids = stack_ids, *positions = stack_positions;
    float *zeros = stack_zeros, *attention = NULL;
    if (n > ON_STACK) {
        ids = positions = NULL;
        zeros = NULL;
        NMT_ALLOC(ids, n);
        NMT_ALLOC(positions, n);
        NMT_ALLOC(zeros, (size_t)n + 1);
    }
    if (t->options.attention_weights)
        NMT_ALLOC(attention, n > 0 ? (size_t)n * (size_t)n : 1);
    for (int32_t i = 0; i < n; i++) {
        ids[i] = NMT_UNK_ID; /* replaced by the source token at position i */
        positions[i] = i;
        zeros[i] = 0.0f;
        if (attention)
            attention[(size_t)i * (size_t)n + (size_t)i] = 1.0f;
    }
    zeros[n] = 0.0f;
    nmt_search_hypothesis h = {.length = n,
                               .tokens = ids,
                               .attn_argmax = positions,
                               .token_scores = zeros,
                               .n_src = n,
                               .attention = attention};
    const nmt_search_result found = {.n_hypotheses = 1, .hypotheses = &h};
    status = nmt_translator_fill_result(t, &found, source, NULL, result, err);
cleanup:
    if (ids != stack_ids) {
        free(ids);
        free(positions);
        free(zeros);
    }
    free(attention);
    return status;
}
