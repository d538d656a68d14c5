/* translator_rules.c: the text of the logit rules' options as the search
 * takes them (translator.h): suppressed sequences, one a line of target
 * tokens, into word ids. */
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
