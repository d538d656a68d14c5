/* service_stream.c: the service's continuous-batching worker (service_impl.h,
 * nmt_service_options.continuous). Instead of taking a batch, waiting for it
 * and taking the next, the worker runs one stream on its translator
 * (engine/translator_stream.c): the queue is the stream's source, and a
 * request leaves the queue when the running search has a free row for it,
 * at the next check point, without waiting for other requests to finish or
 * for a batch to fill (so no batching delay).
 *
 * A stream has one set of search options: it takes the queue's head while
 * that request has the stream's options, in arrival order, and ends (after
 * finishing what it holds) when the head has other options; the worker then
 * starts a stream for those. Requests whose deadline passed while queued
 * are completed with NMT_STATUS_DEADLINE instead of joining; a translation
 * that ends after the deadline is discarded the same way, and a request
 * cancelled while it runs is completed as cancelled, as in the batching
 * worker. */
#include "service_impl.h"

#include "clock.h"
#include "error.h"

#include <string.h>

typedef struct stream_source {
    service_worker *w;
    nmt_search_params search;
    int shrink;
    int64_t pulled;
} stream_source;

/* The stream's pull: the head of the queue while it has the stream's
 * options. Expired requests are completed here (after the lock). */
static int source_pull(void *self, int room, int wait, const char **lines, void **tags)
{
    stream_source *src = (stream_source *)self;
    service_worker *w = src->w;
    nmt_service *s = w->service;
    int n = 0, n_expired = 0;
    nmt_request **expired = w->batch; /* scratch, batch_size long */
    pthread_mutex_lock(&s->lock);
    for (;;) {
        const double now = nmt_clock_seconds();
        while (n < room && n_expired < s->options.translator.batch_size && s->queue.head &&
               !(s->closing && !s->drain) && nmt_request_has_search(s->queue.head, &src->search, src->shrink)) {
            nmt_request *r = s->queue.head;
            nmt_request_queue_remove(&s->queue, r);
            if (r->deadline > 0.0 && now > r->deadline) {
                nmt_result result;
                nmt_service_status_result(&result, NMT_STATUS_DEADLINE,
                                          "the deadline passed before the translation started");
                nmt_service_complete_locked(s, r, &result);
                expired[n_expired++] = r;
                continue;
            }
            pthread_mutex_lock(&r->lock);
            r->state = NMT_REQUEST_RUNNING;
            pthread_mutex_unlock(&r->lock);
            lines[n] = r->line;
            tags[n] = r;
            n++;
        }
        /* Wait only when nothing else can come: the queue is empty and open. */
        if (n > 0 || !wait || n_expired > 0 || s->queue.head || s->closing)
            break;
        pthread_cond_wait(&s->work, &s->lock);
    }
    s->stats.queued = s->queue.count;
    s->stats.running += n;
    if (n > 0) {
        s->stats.batches++; /* a join: the sentences that entered the search together */
        s->stats.batch_sentences += n;
    }
    if (s->closing)
        s->shutdown_finished += n;
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < n_expired; i++)
        nmt_service_after_complete(expired[i]);
    if (n == 0 && wait && n_expired > 0)
        return source_pull(self, room, wait, lines, tags); /* expired only: wait on */
    src->pulled += n;
    return n;
}

/* The stream's deliver: the request completes (callback, waiters). */
static void source_deliver(void *self, void *tag, nmt_result *result)
{
    stream_source *src = (stream_source *)self;
    nmt_service *s = src->w->service;
    nmt_request *r = (nmt_request *)tag;
    if (r->deadline > 0.0 && nmt_clock_seconds() > r->deadline) {
        nmt_result_clear(result);
        nmt_service_status_result(result, NMT_STATUS_DEADLINE,
                                  "the translation ended after the deadline");
    }
    pthread_mutex_lock(&s->lock);
    s->stats.running--;
    pthread_mutex_lock(&r->lock);
    const int cancel = r->cancel;
    pthread_mutex_unlock(&r->lock);
    if (cancel) {
        nmt_result_clear(result);
        nmt_service_status_result(result, NMT_STATUS_CANCELLED, "cancelled while translated");
    }
    nmt_service_complete_locked(s, r, result);
    pthread_mutex_unlock(&s->lock);
    nmt_service_after_complete(r);
}

/* The stream's line_key: the request's. */
static uint64_t source_line_key(void *self, void *tag)
{
    (void)self;
    return ((const nmt_request *)tag)->line_key;
}

void nmt_service_stream_run(service_worker *w, const nmt_search_params *search, int shrink)
{
    stream_source src = {w, *search, shrink, 0};
    const nmt_line_stream lines = {&src, source_pull, source_deliver,
                                   w->service->options.join_every, source_line_key};
    nmt_translator *t = shrink ? w->shrunk : w->full;
    nmt_error err = {0};
    /* A failed search has delivered its error to every request it held;
     * the worker goes on with the next stream (a broken device fails those
     * too, each with the reason). One refused before taking anything (a
     * configuration the stream does not run) would be refused forever: the
     * worker batches from then on, and the batch path answers each request. */
    if (nmt_translator_stream(t, search, &lines, &err) != NMT_STATUS_OK && src.pulled == 0)
        w->streams = 0;
}
