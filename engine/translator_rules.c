/* translator_rules.c: the search a translator runs (translator.h): the
 * public options as the search's parameters, the one place their fields
 * meet (sampling_topk's public values included); suppressed sequences, one
 * a line of target tokens, into word ids; a request's search checked
 * against the translator. */
#include "translator.h"

#include "error.h"
#include "model.h"
#include "vocab.h"

#include <stdlib.h>
#include <string.h>

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

nmt_status nmt_suppress_parse(const nmt_model *model, const char *text, int32_t **ids,
                              int32_t *n_words, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    int32_t *out = NULL, n = 0;
    *ids = NULL;
    *n_words = 0;
    NMT_ALLOC(out, NMT_SUPPRESS_MAX_WORDS);
    int line = 1;
    for (const char *at = text; *at;) {
        const char *end = strchr(at, '\n');
        if (!end)
            end = at + strlen(at);
        int32_t length_at = -1; /* the sequence's length word, once it has a token */
        for (const char *p = at; p < end;) {
            while (p < end && is_space(*p))
                p++;
            const char *word = p;
            while (p < end && !is_space(*p))
                p++;
            if (p == word)
                break;
            if (n + (length_at < 0 ? 2 : 1) > NMT_SUPPRESS_MAX_WORDS) {
                status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                       "suppress: line %d: more than %d words in all", line,
                                       NMT_SUPPRESS_MAX_WORDS);
                goto cleanup;
            }
            if (length_at < 0) {
                length_at = n++;
                out[length_at] = 0;
            }
            const int32_t id = nmt_vocab_lookup(model->tgt_vocab, word, (size_t)(p - word), -1);
            if (id < 0) {
                status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                       "suppress: line %d: \"%.*s\" is not a target token", line,
                                       (int)(p - word) < 64 ? (int)(p - word) : 64, word);
                goto cleanup;
            }
            if (++out[length_at] > NMT_SUPPRESS_MAX_LENGTH) {
                status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                       "suppress: line %d: more than %d tokens", line,
                                       NMT_SUPPRESS_MAX_LENGTH);
                goto cleanup;
            }
            out[n++] = id;
        }
        at = *end ? end + 1 : end;
        line++;
    }
    if (n > 0) {
        *ids = out;
        *n_words = n;
        out = NULL;
    }
cleanup:
    free(out);
    return status;
}

nmt_search_params nmt_options_search_params(const nmt_options *o, const int32_t *suppress,
                                            int32_t suppress_words)
{
    return (nmt_search_params){
        .beam_size = o->beam_size,
        .n_best = o->n_best,
        .alpha = o->alpha,
        .max_len_a = o->max_len_a,
        .max_len_b = o->max_len_b,
        .return_alternatives = o->return_alternatives,
        .sampling_topk = nmt_sampling_topk_of(o->sampling_topk),
        .sampling_topp = o->sampling_topp,
        .sampling_temperature = o->sampling_temperature,
        .seed = o->seed,
        .min_length = o->min_length,
        .no_repeat_ngram_size = o->no_repeat_ngram_size,
        .repetition_penalty = o->repetition_penalty,
        .ban_unk = o->ban_unk,
        .suppress = suppress,
        .suppress_words = suppress_words,
        .coverage_penalty = o->coverage_penalty,
        .coverage_beta = o->coverage_beta,
    };
}

nmt_status nmt_translator_check_search(const nmt_translator *t, const nmt_search_params *o,
                                       nmt_error *err)
{
    /* A request's rows at most the translator's: its backend is sized for them. */
    nmt_status status = nmt_search_params_check(o, t->capacity, err);
    if (status == NMT_STATUS_OK)
        status = nmt_search_params_check_rules(o, t->search.rules, err);
    if (status != NMT_STATUS_OK)
        return status;
    if (o->return_alternatives && o->n_best > t->options.batch_size)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "return_alternatives: n_best %d is "
                             "above the batch size %d (one sentence an alternative)", o->n_best,
                             t->options.batch_size);
    if (t->options.shrink.mode != NMT_SHRINK_NONE &&
        (nmt_search_sampling(o) || nmt_search_has_logit_rules(o)))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "shrink: sampling and the logit "
                             "rules need the full output layer");
    if (o->coverage_penalty != NMT_COVERAGE_NONE && !t->attention_model)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "coverage_penalty: the translator "
                             "keeps no attention weights (create it with the coverage penalty "
                             "or attention_weights)");
    return NMT_STATUS_OK;
}

