/* service_worker.c: the service's batching worker (service_impl.h): its
 * translators and batch scratch, and its loop: take the queued requests
 * with the first one's search options (after the batching delay), translate
 * them as one batch, complete them; or hand over to a continuous-batching
 * stream (engine/service_stream.c). */
#define _POSIX_C_SOURCE 200809L /* pthread, clock_gettime */

#include "service_impl.h"

#include "clock.h"
#include "error.h"
#include "translator.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Under the lock: waits for work and takes a batch into w->batch; returns its
 * size, 0 when the worker should stop. */
static int take_batch_locked(service_worker *w)
{
    nmt_service *s = w->service;
    const int cap = s->options.translator.batch_size;
    for (;;) {
        if (s->queue.count > 0 && !(s->closing && !s->drain)) {
            nmt_request *first = s->queue.head;
            const double due = first->submitted + 1e-6 * s->options.max_delay_us;
            if (s->queue.count < cap && !s->closing && nmt_clock_seconds() < due) {
                struct timespec until = nmt_request_timespec(due);
                pthread_cond_timedwait(&s->work, &s->lock, &until);
                continue;
            }
            int n = 0;
            int64_t tokens = 0;
            const int max_tokens = s->options.max_batch_tokens;
            for (nmt_request *r = s->queue.head; r && n < cap;) {
                nmt_request *next = r->next;
                if (nmt_request_same_search(r, first)) {
                    if (max_tokens > 0 && n > 0 && tokens + r->tokens > max_tokens)
                        break; /* in arrival order: the next batch starts with it */
                    tokens += r->tokens;
                    nmt_request_queue_remove(&s->queue, r);
                    pthread_mutex_lock(&r->lock);
                    r->state = NMT_REQUEST_RUNNING;
                    pthread_mutex_unlock(&r->lock);
                    w->batch[n++] = r;
                }
                r = next;
            }
            s->stats.queued = s->queue.count;
            s->stats.running += n;
            if (s->closing)
                s->shutdown_finished += n;
            return n;
        }
        if (s->closing)
            return 0;
        pthread_cond_wait(&s->work, &s->lock);
    }
}

/* Translates w->batch[0..n) (all with the same search options): the ones
 * whose deadline has passed are not translated. */
static void run_batch(service_worker *w, int n)
{
    const nmt_request *first = w->batch[0];
    nmt_translator *t = first->shrink ? w->shrunk : w->full;
    const double now = nmt_clock_seconds();
    int m = 0, targets = 0; /* targets: a request of the batch has one */
    for (int i = 0; i < n; i++) {
        nmt_request *r = w->batch[i];
        if (r->deadline > 0.0 && now > r->deadline) {
            nmt_service_status_result(&w->results[i], NMT_STATUS_DEADLINE,
                          "the deadline passed before the translation started");
            continue;
        }
        w->line_keys[m] = r->line_key;
        w->targets[m] = r->target;
        targets |= r->target != NULL;
        w->lines[m++] = r->line;
    }
    nmt_result *out = w->results + n; /* [m]: the translated ones, then moved */
    nmt_error err = {0};
    const nmt_run_args args = {.lines = w->lines, .targets = targets ? w->targets : NULL,
                               .n_lines = m, .score = first->score,
                               .overrides = &first->search, .line_keys = w->line_keys};
    const nmt_status status = m > 0 ? nmt_translator_run(t, &args, out, &err) : NMT_STATUS_OK;
    const double end = nmt_clock_seconds();
    for (int i = 0, k = 0; i < n; i++) {
        nmt_request *r = w->batch[i];
        if (r->deadline > 0.0 && now > r->deadline)
            continue;
        nmt_result *res = &out[k++];
        if (status != NMT_STATUS_OK && res->status == NMT_STATUS_OK)
            nmt_service_status_result(res, status, err.message); /* defensive: run marks every line */
        if (r->deadline > 0.0 && end > r->deadline) {
            nmt_result_clear(res);
            nmt_service_status_result(res, NMT_STATUS_DEADLINE, "the translation ended after the deadline");
        }
        w->results[i] = *res;
        memset(res, 0, sizeof *res);
    }
    pthread_mutex_lock(&w->service->lock);
    nmt_service *s = w->service;
    s->stats.batches++;
    s->stats.batch_sentences += m;
    s->stats.running -= n;
    for (int i = 0; i < n; i++) {
        nmt_request *r = w->batch[i];
        pthread_mutex_lock(&r->lock);
        const int cancel = r->cancel;
        pthread_mutex_unlock(&r->lock);
        if (cancel) {
            nmt_result_clear(&w->results[i]);
            nmt_service_status_result(&w->results[i], NMT_STATUS_CANCELLED, "cancelled while translated");
        }
        nmt_service_complete_locked(s, r, &w->results[i]);
    }
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < n; i++)
        nmt_service_after_complete(w->batch[i]);
}

/* Under the lock: waits for a queued request the worker may take; returns
 * it (still queued), or NULL when the worker should stop. */
static nmt_request *wait_first_locked(service_worker *w)
{
    nmt_service *s = w->service;
    for (;;) {
        if (s->queue.count > 0 && !(s->closing && !s->drain))
            return s->queue.head;
        if (s->closing)
            return NULL;
        pthread_cond_wait(&s->work, &s->lock);
    }
}

void *nmt_service_worker_main(void *arg)
{
    service_worker *w = (service_worker *)arg;
    nmt_service *s = w->service;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        if (w->streams) {
            const nmt_request *first = wait_first_locked(w);
            if (!first) {
                pthread_mutex_unlock(&s->lock);
                return NULL;
            }
            /* A stream takes plain translations only: scoring, prefixes
             * and alternatives go in batches. Its options: first may
             * complete before the stream reads them. */
            if (nmt_request_has_search(first, &first->search, first->shrink)) {
                const nmt_search_params search = first->search;
                const int shrink = first->shrink;
                pthread_mutex_unlock(&s->lock);
                nmt_service_stream_run(w, &search, shrink);
                continue;
            }
        }
        const int n = take_batch_locked(w);
        pthread_mutex_unlock(&s->lock);
        if (n == 0)
            return NULL;
        run_batch(w, n);
    }
}

nmt_status nmt_service_worker_create(nmt_service *s, service_worker *w, nmt_device device,
                                     int device_index, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int cap = s->options.translator.batch_size;
    nmt_options o = s->options.translator;
    if (device == NMT_DEVICE_CPU && o.threads == 0) /* the cores shared by the workers */
        o.threads = nmt_cpu_default_threads(s->options.cpu_workers);
    o.device = device;
    o.device_index = device_index;
    w->service = s;
    w->device_index = device_index;
    const nmt_ensemble *m = &s->models;
    if (o.shrink.mode != NMT_SHRINK_NONE)
        NMT_TRY(nmt_translator_create_ensemble(m->models, m->weights, m->n, &o, &w->shrunk, err));
    o.shrink.mode = NMT_SHRINK_NONE;
    NMT_TRY(nmt_translator_create_ensemble(m->models, m->weights, m->n, &o, &w->full, err));
    w->streams = s->options.continuous && nmt_translator_can_stream(w->full);
    NMT_ALLOC(w->batch, cap);
    NMT_ALLOC(w->lines, cap);
    NMT_ALLOC(w->targets, cap);
    NMT_ALLOC(w->line_keys, cap);
    NMT_ALLOC(w->results, 2 * (size_t)cap);
cleanup:
    return status;
}

void nmt_service_worker_free(service_worker *w)
{
    nmt_translator_free(w->full);
    nmt_translator_free(w->shrunk);
    free(w->batch);
    free(w->lines);
    free(w->targets);
    free(w->line_keys);
    free(w->results);
}
