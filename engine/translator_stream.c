/* translator_stream.c: lines as a stream (translator.h, nmt_translator_stream):
 * the adapter between text lines that arrive at any time and the backend's
 * continuous batching (decoder/sentence_stream.h).
 *
 * A pulled line is validated and tokenized exactly as nmt_translate_batch
 * does it (nmt_translator_prepare_line): a bad or empty line gets its result
 * at once and never enters the search; a good one gets a context (its tag
 * and tokens) from a pool and joins the search. When the search delivers a
 * sentence, its hypotheses become text with the same code as a batch's
 * (nmt_translator_fill_result) and the context returns to the pool.
 *
 * The pool holds 2 * batch_size contexts, allocated once: the search holds
 * at most batch_size sentences, and at most as many more whose results are
 * on their way back. */
#include "translator.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

typedef struct line_context {
    void *tag; /* the caller's */
    nmt_tokens tokens;
} line_context;

typedef struct stream_adapter {
    nmt_translator *t;
    const nmt_line_stream *lines;
    line_context *contexts; /* [cap] */
    line_context **free_list;
    int32_t n_free, cap;
    const char **line_buf; /* [batch_size] */
    void **tag_buf;        /* [batch_size] */
    int64_t delivered;
} stream_adapter;

/* Answers a line with only an error. */
static void deliver_error(const stream_adapter *a, void *tag, nmt_status status,
                          const char *message)
{
    nmt_result result;
    memset(&result, 0, sizeof result);
    nmt_translator_line_error(&result, status, message ? message : "");
    a->lines->deliver(a->lines->self, tag, &result);
}

/* The search's pull: lines from the caller, the bad ones answered here. */
static nmt_status adapter_pull(void *self, int32_t room, int wait, nmt_source_batch *batch,
                               void **tags, int32_t *n_pulled, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    stream_adapter *a = (stream_adapter *)self;
    nmt_translator *t = a->t;
    int32_t k = 0, got = 0, i = 0;
    nmt_source_builder_reset(&t->source);
    if (room > t->options.batch_size)
        room = t->options.batch_size;
    if (room > a->n_free)
        room = a->n_free;
    for (;;) {
        const int32_t ask = room - k;
        got = ask > 0 ? a->lines->pull(a->lines->self, ask, wait, a->line_buf, a->tag_buf) : 0;
        if (got > ask)
            got = ask; /* defensive: never more than asked for */
        for (i = 0; i < got; i++) {
            nmt_result result;
            memset(&result, 0, sizeof result);
            line_context *c = a->free_list[a->n_free - 1];
            int searched = 0;
            NMT_TRY(nmt_translator_prepare_line(t, a->line_buf[i], &c->tokens, &result,
                                                &searched, err));
            if (!searched) {
                nmt_tokens_clear(&c->tokens);
                a->lines->deliver(a->lines->self, a->tag_buf[i], &result);
                continue;
            }
            const uint64_t key =
                a->lines->line_key ? a->lines->line_key(a->lines->self, a->tag_buf[i]) : 0;
            status = nmt_source_builder_add(&t->source, &c->tokens, key, err);
            if (status != NMT_STATUS_OK) {
                nmt_tokens_clear(&c->tokens);
                goto cleanup;
            }
            c->tag = a->tag_buf[i];
            a->n_free--;
            tags[k++] = c;
        }
        /* Only bad lines so far (answered, taking no room), and the caller
         * wants to wait: wait again. */
        if (k > 0 || !wait || got == 0)
            break;
    }
    *batch = nmt_source_builder_batch(&t->source);
    *n_pulled = k;
    return NMT_STATUS_OK;
cleanup:
    /* The search takes none of this pull: every line of it is answered. */
    for (int32_t j = 0; j < k; j++) {
        line_context *c = (line_context *)tags[j];
        deliver_error(a, c->tag, status, err ? err->message : NULL);
        nmt_tokens_clear(&c->tokens);
        a->free_list[a->n_free++] = c;
    }
    for (; i < got; i++)
        deliver_error(a, a->tag_buf[i], status, err ? err->message : NULL);
    *n_pulled = 0;
    return status;
}

/* The search's deliver: hypotheses to text, the context back to the pool. */
static void adapter_deliver(void *self, void *tag, nmt_search_result *found, nmt_status status,
                            const char *message)
{
    stream_adapter *a = (stream_adapter *)self;
    line_context *c = (line_context *)tag;
    nmt_result result;
    memset(&result, 0, sizeof result);
    if (found) {
        nmt_error e = {0};
        if (nmt_translator_fill_result(a->t, found, &c->tokens, NULL, &result, &e) !=
            NMT_STATUS_OK) {
            nmt_result_clear(&result);
            nmt_translator_line_error(&result, e.status, e.message);
        }
    } else {
        nmt_translator_line_error(&result, status, message ? message : "");
    }
    nmt_search_result_clear(found);
    a->lines->deliver(a->lines->self, c->tag, &result);
    nmt_tokens_clear(&c->tokens);
    a->free_list[a->n_free++] = c;
    a->delivered++;
}

int nmt_translator_can_stream(const nmt_translator *t)
{
    return t && t->backend->vtable->stream != NULL;
}

nmt_status nmt_translator_stream(nmt_translator *t, const nmt_search_params *overrides,
                                 const nmt_line_stream *lines, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    stream_adapter a;
    memset(&a, 0, sizeof a);
    if (!t || !lines || !lines->pull || !lines->deliver)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "translator stream: NULL argument");
    if (!nmt_translator_can_stream(t))
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "translator stream: the %s backend has no continuous batching",
                             t->backend->device == NMT_DEVICE_CPU ? "CPU" : "chosen");
    nmt_search_config search;
    NMT_TRY(nmt_translator_search_config(t, overrides, &search, err));
    const int32_t n = t->options.batch_size;
    a.t = t;
    a.lines = lines;
    a.cap = 2 * n;
    NMT_ALLOC(a.contexts, a.cap);
    NMT_ALLOC(a.free_list, a.cap);
    NMT_ALLOC(a.line_buf, n);
    NMT_ALLOC(a.tag_buf, n);
    memset(a.contexts, 0, sizeof *a.contexts * (size_t)a.cap);
    for (int32_t i = 0; i < a.cap; i++)
        a.free_list[i] = &a.contexts[i];
    a.n_free = a.cap;
    const nmt_sentence_stream source = {&a, adapter_pull, adapter_deliver, lines->check_every};
    status = t->backend->vtable->stream(t->backend, &search, &source, err);
    if (t->options.collect_stats)
        t->stats.sentences += a.delivered;
cleanup:
    free(a.contexts);
    free(a.free_list);
    free(a.line_buf);
    free(a.tag_buf);
    return status;
}
