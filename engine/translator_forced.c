/* translator_forced.c: target tokens in the translator (translator.h):
 * target prefixes, alternatives and scoring (docs/decoding.md, "Target
 * prefixes" and "Scoring"). A line's target is tokenized as its source is
 * and looked up in the target vocabulary; a batch hands the search its
 * lines' tokens as forced tokens (decoder/forced_tokens.h). With
 * return_alternatives a line is searched as n_best sentences, sentence k
 * taking the k-th word at the first free position (CTranslate2 expands the
 * one state instead: the same words, the same continuations), and the n_best
 * bests become the line's hypotheses in rank order. */
#include "translator.h"

#include "error.h"
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nmt_line_target_clear(nmt_line_target *target)
{
    if (!target)
        return;
    nmt_tokens_clear(&target->tokens);
    free(target->ids);
    target->ids = NULL;
}

static void target_error(nmt_result *result, nmt_status status, const char *what,
                         const char *why)
{
    char message[sizeof result->message];
    snprintf(message, sizeof message, "%s: %s", what, why);
    nmt_translator_line_error(result, status, message);
}

nmt_status nmt_translator_prepare_target(const nmt_translator *t, const char *text, int score,
                                         nmt_line_target *target, nmt_result *result,
                                         int *searched, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const char *what = score ? "target" : "target prefix";
    char why[160];
    nmt_error line_err = {0};
    memset(target, 0, sizeof *target);
    if (!*searched) {
        if (score && result->status == NMT_STATUS_OK) { /* an empty source's empty line */
            nmt_result_clear(result);
            nmt_translator_line_error(result, NMT_STATUS_ERROR_INPUT,
                                      "the source is empty: nothing to score against");
        }
        return NMT_STATUS_OK;
    }
    *searched = 0;
    if (!text) {
        if (score)
            target_error(result, NMT_STATUS_ERROR_ARGUMENT, what, "none given");
        else
            *searched = 1;
        return NMT_STATUS_OK;
    }
    const size_t len = strlen(text);
    if (len > (size_t)t->options.max_line_bytes) {
        snprintf(why, sizeof why, "too long: %zu bytes, the limit is %d", len,
                 t->options.max_line_bytes);
        target_error(result, NMT_STATUS_ERROR_INPUT, what, why);
        return NMT_STATUS_OK;
    }
    if (nmt_translator_tokenize(t, text, len, &target->tokens, &line_err) != NMT_STATUS_OK) {
        if (line_err.status == NMT_STATUS_ERROR_MEMORY)
            return nmt_error_set(err, line_err.status, "%s", line_err.message);
        target_error(result, line_err.status, what, line_err.message);
        return NMT_STATUS_OK;
    }
    const int32_t n = target->tokens.n, most = nmt_translator_max_target_tokens(t);
    if (n > most) {
        snprintf(why, sizeof why, "%d tokens, the limit is %d (a translation of max_src_tokens "
                 "tokens at most)", n, most);
        target_error(result, NMT_STATUS_ERROR_INPUT, what, why);
        nmt_line_target_clear(target);
        return NMT_STATUS_OK;
    }
    NMT_ALLOC(target->ids, n > 0 ? n : 1);
    for (int32_t i = 0; i < n; i++) {
        const char *piece = target->tokens.tokens[i].text;
        const int32_t id = nmt_vocab_lookup(t->model->tgt_vocab, piece, strlen(piece),
                                            NMT_UNK_ID);
        if (id == NMT_PAD_ID || id == NMT_BOS_ID || id == NMT_EOS_ID) {
            snprintf(why, sizeof why, "token %d \"%.40s\" is a special token", i + 1, piece);
            target_error(result, NMT_STATUS_ERROR_INPUT, what, why);
            nmt_line_target_clear(target);
            return NMT_STATUS_OK;
        }
        target->ids[i] = id;
    }
    *searched = 1;
    return NMT_STATUS_OK;
cleanup:
    nmt_line_target_clear(target);
    return status;
}

int32_t nmt_translator_max_target_tokens(const nmt_translator *t)
{
    const int32_t longest = nmt_search_max_length(&t->search, t->options.max_src_tokens) - 1;
    return longest > t->options.max_src_tokens ? longest : t->options.max_src_tokens;
}

int32_t nmt_translator_sentences_per_line(const nmt_search_config *search,
                                          const nmt_call_lines *call)
{
    return search->params.return_alternatives && !call->score ? search->params.n_best : 1;
}

void nmt_translator_forced_free(nmt_batch_forced *forced)
{
    free(forced->offset);
    free(forced->ids);
    free(forced->alternative);
    memset(forced, 0, sizeof *forced);
}

nmt_status nmt_translator_forced_batch(const nmt_call_lines *call, const int32_t *lines,
                                       int32_t count, int32_t per_line, nmt_batch_forced *forced,
                                       nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    memset(forced, 0, sizeof *forced);
    if (!call->targets && per_line == 1)
        return NMT_STATUS_OK;
    const size_t n = (size_t)count * (size_t)per_line;
    size_t total = 0;
    for (int32_t k = 0; call->targets && k < count; k++)
        total += (size_t)call->targets[lines[k]].tokens.n * (size_t)per_line;
    NMT_ALLOC(forced->offset, n + 1);
    NMT_ALLOC(forced->ids, total > 0 ? total : 1);
    if (per_line > 1)
        NMT_ALLOC(forced->alternative, n);
    size_t at = 0;
    for (int32_t k = 0; k < count; k++) {
        const nmt_line_target *target = call->targets ? &call->targets[lines[k]] : NULL;
        const int32_t len = target ? target->tokens.n : 0;
        for (int32_t j = 0; j < per_line; j++) {
            const size_t i = (size_t)k * (size_t)per_line + (size_t)j;
            forced->offset[i] = (int32_t)at;
            if (len > 0)
                memcpy(forced->ids + at, target->ids, sizeof(int32_t) * (size_t)len);
            at += (size_t)len;
            if (forced->alternative)
                forced->alternative[i] = j;
        }
    }
    forced->offset[n] = (int32_t)at;
    forced->view = (nmt_forced_tokens){forced->offset, forced->ids, forced->alternative};
    return NMT_STATUS_OK;
cleanup:
    nmt_translator_forced_free(forced);
    return status;
}

nmt_status nmt_translator_merge_alternatives(nmt_search_result *found, int32_t count,
                                             int32_t per_line, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_search_hypothesis *merged = NULL;
    int32_t k = 0;
    for (; k < count; k++) {
        nmt_search_result *ranks = found + (size_t)k * (size_t)per_line;
        int32_t n = 0;
        NMT_ALLOC(merged, per_line);
        for (int32_t j = 0; j < per_line; j++) {
            if (ranks[j].n_hypotheses > 0) { /* its best; a rank without any is skipped */
                merged[n++] = ranks[j].hypotheses[0];
                memset(&ranks[j].hypotheses[0], 0, sizeof ranks[j].hypotheses[0]);
            }
            nmt_search_result_clear(&ranks[j]);
        }
        /* found[k] is ranks[0] or a slot of an earlier line's ranks, both cleared. */
        found[k] = (nmt_search_result){n, merged};
        merged = NULL;
    }
cleanup:
    for (int32_t i = 0; status != NMT_STATUS_OK && i < count * per_line; i++)
        nmt_search_result_clear(&found[i]);
    return status;
}

nmt_status nmt_translate_batch_prefix(nmt_translator *t, const char *const *lines,
                                      const char *const *target_prefixes, int n_lines,
                                      nmt_result *results, nmt_error *err)
{
    const nmt_run_args args = {.lines = lines, .targets = target_prefixes, .n_lines = n_lines};
    return nmt_translator_run(t, &args, results, err);
}

nmt_status nmt_score_batch(nmt_translator *t, const char *const *sources,
                           const char *const *targets, int n_lines, nmt_result *results,
                           nmt_error *err)
{
    const nmt_run_args args = {
        .lines = sources, .targets = targets, .n_lines = n_lines, .score = 1};
    return nmt_translator_run(t, &args, results, err);
}

/* A shrunk output layer scores a list of words per row, which a forced
 * word need not be in (and on CUDA a logit's column is not its word). */
nmt_status nmt_translator_prefixes_usable(const nmt_translator *t, int prefixes, nmt_error *err)
{
    if (!prefixes || t->options.shrink.mode == NMT_SHRINK_NONE)
        return NMT_STATUS_OK;
    return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "target prefixes need the full "
                         "softmax: this translator shrinks its output layer (shrink none)");
}
