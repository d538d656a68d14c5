/* service.c: the thread-safe asynchronous service (include/nmt.h,
 * "the service"): a bounded FIFO of requests, worker threads that each own
 * translators (full softmax, and with the service's shrinking when it has
 * one) and batch the queued requests with the same search options, and
 * request handles completed once, with a callback or for wait/poll.
 *
 * Locking: the service's mutex guards the queue and the counters, `work`
 * wakes the workers; each request has its own mutex and condition for its
 * state (engine/service_request.h), so a handle outlives the service.
 * Translations and callbacks run outside every mutex.
 *
 * Batching: a worker takes the oldest queued request, waits (max_delay_us
 * after that request's arrival) while fewer than batch_size requests are
 * queued, then takes every queued request with the same options, in order,
 * up to batch_size sentences and max_batch_tokens source tokens (counted at
 * submit, on the caller's thread). Requests whose deadline passed are completed with
 * NMT_STATUS_DEADLINE instead of translated; a translation that ends after
 * the deadline is discarded the same way. */
#define _POSIX_C_SOURCE 200809L /* pthread, clock_gettime */

#include "service_impl.h"

#include "clock.h"
#include "cuda_ctx.h"
#include "error.h"
#include "forced_search.h"
#include "model.h"
#include "tokenizer.h"
#include "translator.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The source tokens of a line as the translators count them (only
 * max_batch_tokens needs them); 0 for a line the tokenizer refuses. */
static int source_tokens(const nmt_service *s, const char *line)
{
    nmt_tokens tokens = {0, NULL, NULL};
    nmt_error ignored;
    const nmt_status st =
        nmt_translator_tokenize(s->workers[0].full, line, strlen(line), &tokens, &ignored);
    const int n = st == NMT_STATUS_OK ? tokens.n : 0;
    nmt_tokens_clear(&tokens);
    return n;
}

void nmt_service_options_init(nmt_service_options *options)
{
    memset(options, 0, sizeof *options);
    nmt_options_init(&options->translator);
    /* A closed loop of 256 clients fills it; two workers of 256 decode
     * 1.2x one of 256 on an H200 (docs/perf/service.md, "Workers"). */
    options->translator.batch_size = 256;
    options->workers_per_device = 2;
    options->cpu_workers = 1;
    options->queue_capacity = 4096;
    options->max_delay_us = 100; /* docs/perf/service.md, "Batching delay" */
    /* Batching stays the default: it measured the lower latency at moderate
     * load and the same throughput (docs/perf/service.md, "Continuous
     * batching"). */
    options->continuous = 0;
    options->join_every = 4; /* the better of 4 and 8 in the closed loop (same section) */
}

void nmt_request_options_init(nmt_request_options *options)
{
    options->beam_size = 0;
    options->n_best = 0;
    options->alpha = -1.0f;
    options->max_len_a = -1.0f;
    options->max_len_b = -1;
    options->shrink = -1;
    options->deadline_ms = 0.0;
    options->target_prefix = NULL;
    options->return_alternatives = -1;
    options->target = NULL;
    options->sampling_topk = -1;
    options->sampling_topp = -1.0f;
    options->sampling_temperature = -1.0f;
    options->seed = -1;
    options->line_key = 0;
    options->min_length = -1;
    options->no_repeat_ngram_size = -1;
    options->repetition_penalty = -1.0f;
    options->ban_unk = -1;
    options->suppress = NULL;
    options->coverage_penalty = -1;
    options->coverage_beta = -1.0f;
}

/* ---- completing requests ----------------------------------------------------- */

/* Under the service's lock: marks r complete with `result` (moved in) and
 * counts it. */
void nmt_service_complete_locked(nmt_service *s, nmt_request *r, nmt_result *result)
{
    pthread_mutex_lock(&r->lock);
    r->result = *result;
    memset(result, 0, sizeof *result);
    r->state = NMT_REQUEST_DONE;
    const nmt_status status = r->result.status;
    pthread_mutex_unlock(&r->lock);
    s->stats.completed++;
    if (status == NMT_STATUS_CANCELLED)
        s->stats.cancelled++;
    else if (status == NMT_STATUS_DEADLINE)
        s->stats.expired++;
    else if (status != NMT_STATUS_OK)
        s->stats.failed++;
}

/* After complete_locked, outside every lock: the callback, then the waiters
 * wake and the service's reference goes. */
void nmt_service_after_complete(nmt_request *r)
{
    if (r->callback)
        r->callback(r, &r->result, r->user);
    pthread_mutex_lock(&r->lock);
    pthread_cond_broadcast(&r->done);
    const int last = --r->refs == 0;
    pthread_mutex_unlock(&r->lock);
    if (last)
        nmt_request_destroy(r);
}

void nmt_service_status_result(nmt_result *result, nmt_status status, const char *message)
{
    memset(result, 0, sizeof *result);
    result->status = status;
    nmt_request_set_message(result, message);
}

/* ---- create, submit, shutdown ---------------------------------------------- */

nmt_status nmt_service_create(const nmt_model *model, const nmt_service_options *options,
                              nmt_service **service, nmt_error *err)
{
    return nmt_service_create_ensemble(&model, NULL, 1, options, service, err);
}

nmt_status nmt_service_create_ensemble(const nmt_model *const *models, const float *weights,
                                       int n_models, const nmt_service_options *options,
                                       nmt_service **service, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_service *s = NULL;
    nmt_ensemble ensemble;
    if (!models || !options || !service)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "service_create: NULL argument");
    *service = NULL;
    NMT_TRY(nmt_ensemble_make(models, weights, n_models, &ensemble, err));
    const nmt_options *o = &options->translator;
    const int cuda = o->device == NMT_DEVICE_CUDA ||
                     (o->device == NMT_DEVICE_AUTO && nmt_cuda_available());
    if (options->queue_capacity < 1 || options->max_delay_us < 0 || options->join_every < 1 ||
        options->join_every > 1000 ||
        options->max_batch_tokens < 0 ||
        options->max_delay_us > 10000000 || options->n_devices < -1 ||
        (cuda && (options->workers_per_device < 1 || options->workers_per_device > 16)) ||
        (options->n_devices > 0 && !options->devices) ||
        (!cuda && (options->cpu_workers < 1 || options->cpu_workers > 256)))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "service_create: queue_capacity %d (>= 1), max_delay_us %d "
                             "(0..10^7), join_every %d (1..1000), %d devices, "
                             "workers_per_device %d (1..16), cpu_workers %d (1..256)",
                             options->queue_capacity, options->max_delay_us,
                             options->join_every, options->n_devices,
                             options->workers_per_device, options->cpu_workers);
    NMT_ALLOC(s, 1);
    s->options = *options;
    s->options.devices = NULL;
    s->models = ensemble;
    pthread_mutex_init(&s->shutdown_lock, NULL);
    pthread_mutex_init(&s->lock, NULL);
    nmt_request_cond_init(&s->work);
    const int all = options->n_devices < 0 ? nmt_cuda_device_count() : 0;
    const int n_devices = all > 0 ? all : options->n_devices > 0 ? options->n_devices : 1;
    const int per_device = cuda ? options->workers_per_device : 1;
    const int n = !cuda ? options->cpu_workers : n_devices * per_device;
    NMT_ALLOC(s->workers, n);
    for (int i = 0; i < n; i++) {
        const int d = i % n_devices; /* round robin: each device's first workers first */
        const int index = !cuda ? o->device_index
                          : all > 0 ? d
                          : options->n_devices > 0 ? options->devices[d]
                                                   : o->device_index;
        s->n_workers = i + 1;
        NMT_TRY(nmt_service_worker_create(s, &s->workers[i],
                                          cuda ? NMT_DEVICE_CUDA : NMT_DEVICE_CPU, index, err));
    }
    s->cuda = cuda;
    s->model = models[0];
    s->defaults = nmt_translator_search(s->workers[0].full);
    s->default_shrink = o->shrink.mode != NMT_SHRINK_NONE;
    for (int i = 0; i < n; i++) {
        if (pthread_create(&s->workers[i].thread, NULL, nmt_service_worker_main,
                           &s->workers[i]) != 0) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                                   "service_create: cannot start worker thread %d", i);
            goto cleanup;
        }
        s->workers[i].started = 1;
    }
    *service = s;
    return NMT_STATUS_OK;
cleanup:
    nmt_service_free(s);
    return status;
}

/* The request's search options from the caller's (NULL: the service's). */
static nmt_status resolve_options(const nmt_service *s, const nmt_request_options *o,
                                  nmt_request *r, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_request_options d;
    nmt_request_options_init(&d);
    if (!o)
        o = &d;
    r->search = s->defaults;
    r->shrink = s->default_shrink;
    const nmt_status rules = nmt_request_resolve_rules(s->model, o, r, err);
    if (rules != NMT_STATUS_OK)
        return rules;
    const int sampling = nmt_search_sampling(&r->search);
    if (o->beam_size != 0)
        r->search.beam_size = o->beam_size;
    else if (sampling) /* a sampling request's own beam: sampling takes 1 */
        r->search.beam_size = 1;
    if (o->n_best != 0)
        r->search.n_best = o->n_best;
    else if (!sampling && r->search.n_best > r->search.beam_size)
        r->search.n_best = r->search.beam_size;
    if (o->alpha >= 0.0f || isnan(o->alpha))
        r->search.alpha = o->alpha;
    if (o->max_len_a >= 0.0f || isnan(o->max_len_a))
        r->search.max_len_a = o->max_len_a;
    if (o->max_len_b >= 0)
        r->search.max_len_b = o->max_len_b;
    if (o->shrink < -1 || o->shrink > 1 || (o->shrink == 1 && !s->default_shrink))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "shrink %d: must be -1, 0 or 1 (1 only on a service with shrinking)",
                             o->shrink);
    if (o->shrink >= 0)
        r->shrink = o->shrink;
    if (!(o->deadline_ms >= 0.0) || o->deadline_ms > 1e9)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "deadline_ms %g: must be in 0..1e9", o->deadline_ms);
    r->deadline = o->deadline_ms > 0.0 ? r->submitted + 1e-3 * o->deadline_ms : 0.0;
    NMT_TRY(nmt_request_set_target(r, o, err));
    if (r->target)
        NMT_TRY(nmt_forced_params_check(&r->search, r->score, err));
    return nmt_translator_check_search(s->workers[0].full, &r->search, err);
cleanup:
    return status;
}

nmt_status nmt_service_submit(nmt_service *s, const char *line, const nmt_request_options *o,
                              nmt_request_callback callback, void *user,
                              nmt_request **request, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_request *r = NULL;
    if (request)
        *request = NULL;
    if (!s || !line)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "service_submit: NULL argument");
    NMT_TRY(nmt_request_create(line, callback, user, request ? 2 : 1, &r, err));
    r->service = s;
    if (s->options.max_batch_tokens > 0) /* on the caller's thread, not a worker's */
        r->tokens = source_tokens(s, line);
    NMT_TRY(resolve_options(s, o, r, err));
    pthread_mutex_lock(&s->lock);
    if (s->closing || s->queue.count >= s->options.queue_capacity) {
        const int closed = s->closing;
        if (!closed)
            s->stats.rejected++;
        pthread_mutex_unlock(&s->lock);
        status = closed ? nmt_error_set(err, NMT_STATUS_CLOSED, "the service is shut down")
                        : nmt_error_set(err, NMT_STATUS_BUSY,
                                        "the service's queue is full (%d requests)",
                                        s->options.queue_capacity);
        goto cleanup;
    }
    nmt_request_queue_push(&s->queue, r);
    s->stats.submitted++;
    s->stats.queued = s->queue.count;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
    if (request)
        *request = r;
    return NMT_STATUS_OK;
cleanup:
    nmt_request_destroy(r);
    return status;
}

int nmt_request_wait(nmt_request *r, double timeout_ms)
{
    const struct timespec until = nmt_request_timespec(nmt_clock_seconds() + 1e-3 * timeout_ms);
    pthread_mutex_lock(&r->lock);
    while (r->state != NMT_REQUEST_DONE) {
        if (timeout_ms < 0.0)
            pthread_cond_wait(&r->done, &r->lock);
        else if (pthread_cond_timedwait(&r->done, &r->lock, &until) != 0)
            break;
    }
    const int done = r->state == NMT_REQUEST_DONE;
    pthread_mutex_unlock(&r->lock);
    return done;
}

int nmt_request_done(const nmt_request *r)
{
    nmt_request *m = (nmt_request *)r; /* the lock is not part of the value */
    pthread_mutex_lock(&m->lock);
    const int done = r->state == NMT_REQUEST_DONE;
    pthread_mutex_unlock(&m->lock);
    return done;
}

const nmt_result *nmt_request_result(const nmt_request *r)
{
    return nmt_request_done(r) ? &r->result : NULL;
}

/* Under the service's lock: a queued request leaves the queue and completes
 * as cancelled (returns 1: the caller runs after_complete), a running one is
 * marked (0). */
static int cancel_locked(nmt_service *s, nmt_request *r, const char *why)
{
    pthread_mutex_lock(&r->lock);
    const nmt_request_state state = r->state;
    if (state == NMT_REQUEST_RUNNING)
        r->cancel = 1;
    pthread_mutex_unlock(&r->lock);
    if (state != NMT_REQUEST_QUEUED)
        return 0;
    nmt_result result;
    nmt_request_queue_remove(&s->queue, r);
    s->stats.queued = s->queue.count;
    nmt_service_status_result(&result, NMT_STATUS_CANCELLED, why);
    nmt_service_complete_locked(s, r, &result);
    return 1;
}

void nmt_request_cancel(nmt_request *r)
{
    if (!r || nmt_request_done(r))
        return; /* a complete request may have outlived its service */
    nmt_service *s = r->service;
    pthread_mutex_lock(&s->lock);
    const int completed = cancel_locked(s, r, "cancelled by the caller");
    pthread_mutex_unlock(&s->lock);
    if (completed)
        nmt_service_after_complete(r);
}

void nmt_request_free(nmt_request *r)
{
    if (!r)
        return;
    nmt_request_cancel(r);
    pthread_mutex_lock(&r->lock);
    const int last = --r->refs == 0;
    pthread_mutex_unlock(&r->lock);
    if (last)
        nmt_request_destroy(r);
}

void nmt_service_stats_get(nmt_service *s, nmt_service_stats *stats)
{
    pthread_mutex_lock(&s->lock);
    *stats = s->stats;
    pthread_mutex_unlock(&s->lock);
    stats->device_memory_used = stats->device_memory_total = 0;
    for (int i = 0; s->cuda && i < s->n_workers; i++) {
        int seen = 0; /* each device once */
        for (int k = 0; k < i; k++)
            seen |= s->workers[k].device_index == s->workers[i].device_index;
        long long used = 0, total = 0;
        if (!seen)
            nmt_cuda_memory_info(s->workers[i].device_index, &used, &total);
        stats->device_memory_used += used;
        stats->device_memory_total += total;
    }
}

/* 1 when the calling thread is one of s's workers (a callback). */
static int on_worker(const nmt_service *s)
{
    for (int i = 0; i < s->n_workers; i++)
        if (s->workers[i].started && pthread_equal(pthread_self(), s->workers[i].thread))
            return 1;
    return 0;
}

void nmt_service_shutdown(nmt_service *s, int drain, int64_t *finished, int64_t *cancelled)
{
    if (!s)
        return;
    /* From a callback: stop intake only; joining would wait for this thread. */
    const int from_worker = on_worker(s);
    if (!from_worker)
        pthread_mutex_lock(&s->shutdown_lock);
    pthread_mutex_lock(&s->lock);
    const int first = !s->closing;
    if (first) {
        s->closing = 1;
        s->drain = drain;
        s->shutdown_finished = s->shutdown_cancelled = 0;
    }
    /* Without draining, what is queued is cancelled here, one at a time
     * (the callbacks run outside the lock). */
    while (first && !drain && s->queue.head) {
        nmt_request *r = s->queue.head;
        cancel_locked(s, r, "cancelled by the service's shutdown");
        s->shutdown_cancelled++;
        pthread_mutex_unlock(&s->lock);
        nmt_service_after_complete(r);
        pthread_mutex_lock(&s->lock);
    }
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->n_workers && !from_worker; i++)
        if (s->workers[i].started && !s->workers[i].joined) {
            pthread_join(s->workers[i].thread, NULL);
            s->workers[i].joined = 1;
        }
    if (!from_worker)
        pthread_mutex_unlock(&s->shutdown_lock);
    if (finished)
        *finished = s->shutdown_finished;
    if (cancelled)
        *cancelled = s->shutdown_cancelled;
}

void nmt_service_free(nmt_service *s)
{
    if (!s)
        return;
    nmt_service_shutdown(s, 0, NULL, NULL);
    for (int i = 0; i < s->n_workers; i++)
        nmt_service_worker_free(&s->workers[i]);
    free(s->workers);
    pthread_cond_destroy(&s->work);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->shutdown_lock);
    free(s);
}
