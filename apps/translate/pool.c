/* pool.c: translate's windows in flight (pool.h). The ring's slots are used
 * in order: `read` counts the windows submitted, `taken` those a worker took,
 * `written` those released; the reader's next slot is free when fewer than
 * n_slots windows are in flight. One lock and one condition variable: every
 * change is rare next to a window's translation. */
#include "pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SLOT_FREE = 0, SLOT_READY, SLOT_RUNNING, SLOT_DONE };

typedef struct pool_worker {
    chunk_pool *pool;
    nmt_translator *translator;
    int index;
    int fail; /* NMT_TRANSLATE_INJECT_FAILURE names it */
    int took; /* has taken a window */
    pthread_t thread;
    int started;
} pool_worker;

struct chunk_pool {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    chunk_slot *slots;
    int n_slots;
    long read, written, taken; /* windows submitted, released, taken by workers */
    int ended;                 /* the reader submits no more */
    int closed;                /* the writer gave up: no slots, no more windows taken */
    int stopping;              /* chunk_pool_free: the workers leave */
    int chunk;                 /* lines a slot holds */
    pool_worker *workers;
    int n_workers;
    int inline_worker;         /* no worker threads: chunk_pool_oldest translates */
    int decoding;              /* windows being translated now */
    double decoding_since;     /* when `decoding` last rose from 0 */
    double decode_seconds;     /* wall time while `decoding` > 0 */
    int hold;                  /* NMT_TRANSLATE_HOLD (pool.h) */
    int took;                  /* workers that have taken a window */
    translate_target target;   /* the lines' second file's role */
};

double translate_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void translate_slot(const pool_worker *w, chunk_slot *slot)
{
    slot->err = (nmt_error){NMT_STATUS_OK, ""};
    slot->worker = w->index;
    if (w->fail) {
        for (int i = 0; i < slot->n; i++)
            slot->results[i] = (nmt_result){0};
        slot->status = NMT_STATUS_ERROR_CUDA;
        snprintf(slot->err.message, sizeof slot->err.message,
                 "injected failure (NMT_TRANSLATE_INJECT_FAILURE)");
    } else if (w->pool->target == TRANSLATE_TARGET_SCORE) {
        slot->status = nmt_score_batch(w->translator, slot->texts, slot->targets, slot->n,
                                       slot->results, &slot->err);
    } else if (w->pool->target == TRANSLATE_TARGET_PREFIX) {
        slot->status = nmt_translate_batch_prefix(w->translator, slot->texts, slot->targets,
                                                  slot->n, slot->results, &slot->err);
    } else if (slot->prepared) {
        slot->status = nmt_translate_prepared(w->translator, slot->prepared, slot->results,
                                              &slot->err);
    } else {
        slot->status = nmt_translate_batch(w->translator, slot->texts, slot->n, slot->results,
                                           &slot->err);
    }
    nmt_prepared_free(slot->prepared);
    slot->prepared = NULL;
}

/* Translates a taken slot, the pool's lock held on entry and on return
 * (not during the translation), and counts the wall time while any window
 * is being translated. */
static void run_slot(const pool_worker *w, chunk_slot *slot)
{
    chunk_pool *p = w->pool;
    slot->state = SLOT_RUNNING;
    if (p->decoding++ == 0)
        p->decoding_since = translate_now_seconds();
    pthread_mutex_unlock(&p->lock);
    translate_slot(w, slot);
    pthread_mutex_lock(&p->lock);
    if (--p->decoding == 0)
        p->decode_seconds += translate_now_seconds() - p->decoding_since;
    slot->state = SLOT_DONE;
}

/* NMT_TRANSLATE_HOLD: a worker's first window waits (at most 10 s) until
 * every worker has taken one, so a test sees which windows exist, not which
 * worker woke first. */
static void hold_first_window(chunk_pool *p)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (p->hold && p->took < p->n_workers && !p->stopping && !p->closed &&
           pthread_cond_timedwait(&p->changed, &p->lock, &until) != ETIMEDOUT) {
    }
}

static void *worker_main(void *arg)
{
    pool_worker *w = arg;
    chunk_pool *p = w->pool;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stopping && !p->closed && p->taken == p->read)
            pthread_cond_wait(&p->changed, &p->lock);
        if (p->stopping || p->closed)
            break;
        chunk_slot *slot = &p->slots[p->taken++ % p->n_slots];
        if (!w->took) {
            w->took = 1;
            p->took++;
            pthread_cond_broadcast(&p->changed);
            hold_first_window(p);
        }
        run_slot(w, slot);
        pthread_cond_broadcast(&p->changed);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int chunk_pool_create(nmt_translator **translators, int n_translators, int chunk,
                      int inline_worker, translate_target target, chunk_pool **out)
{
    chunk_pool *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return -1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    /* Each translator busy with one window and one waiting for it, and one
     * being read or written: 3 with one translator. */
    p->n_slots = 2 * n_translators + 1;
    const char *slots = getenv("NMT_TRANSLATE_SLOTS");
    if (slots && atoi(slots) >= 1 && atoi(slots) < p->n_slots)
        p->n_slots = atoi(slots);
    p->chunk = chunk;
    p->target = target;
    p->slots = calloc((size_t)p->n_slots, sizeof *p->slots);
    p->workers = calloc((size_t)n_translators, sizeof *p->workers);
    if (!p->slots || !p->workers) {
        chunk_pool_free(p);
        return -1;
    }
    for (int s = 0; s < p->n_slots; s++) {
        chunk_slot *slot = &p->slots[s];
        slot->lines = calloc((size_t)chunk, sizeof *slot->lines);
        slot->texts = calloc((size_t)chunk, sizeof *slot->texts);
        slot->results = calloc((size_t)chunk, sizeof *slot->results);
        if (target != TRANSLATE_TARGET_NONE) {
            slot->target_lines = calloc((size_t)chunk, sizeof *slot->target_lines);
            slot->targets = calloc((size_t)chunk, sizeof *slot->targets);
        }
        if (!slot->lines || !slot->texts || !slot->results ||
            (target != TRANSLATE_TARGET_NONE && (!slot->target_lines || !slot->targets))) {
            chunk_pool_free(p);
            return -1;
        }
    }
    p->n_workers = n_translators;
    /* NMT_TRANSLATE_INJECT_RANK limits it to one MPI rank (Open MPI's). */
    const char *inject = getenv("NMT_TRANSLATE_INJECT_FAILURE");
    const char *inject_rank = getenv("NMT_TRANSLATE_INJECT_RANK");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (inject_rank && *inject_rank && (!rank || strcmp(rank, inject_rank)))
        inject = NULL;
    for (int i = 0; i < n_translators; i++) {
        p->workers[i].pool = p;
        p->workers[i].translator = translators[i];
        p->workers[i].index = i;
        p->workers[i].fail = inject && *inject && atoi(inject) == i;
    }
    const char *hold = getenv("NMT_TRANSLATE_HOLD");
    p->hold = hold && atoi(hold) == 1;
    p->inline_worker = inline_worker && n_translators == 1;
    for (int i = 0; i < n_translators && !p->inline_worker; i++) {
        if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]) != 0) {
            chunk_pool_free(p);
            return -1;
        }
        p->workers[i].started = 1;
    }
    *out = p;
    return 0;
}

void chunk_pool_free(chunk_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_workers; i++)
        if (p->workers[i].started)
            pthread_join(p->workers[i].thread, NULL);
    for (int s = 0; p->slots && s < p->n_slots; s++) {
        chunk_slot *slot = &p->slots[s];
        for (int i = 0; slot->results && i < slot->n; i++)
            nmt_result_clear(&slot->results[i]);
        nmt_prepared_free(slot->prepared); /* a window no worker took */
        for (int i = 0; slot->lines && i < p->chunk; i++) /* every buffer ever read into */
            free(slot->lines[i].text);
        for (int i = 0; slot->target_lines && i < p->chunk; i++)
            free(slot->target_lines[i].text);
        free(slot->lines);
        free(slot->texts);
        free(slot->target_lines);
        free(slot->targets);
        free(slot->results);
    }
    free(p->slots);
    free(p->workers);
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

chunk_slot *chunk_pool_acquire(chunk_pool *p)
{
    pthread_mutex_lock(&p->lock);
    while (!p->closed && p->read - p->written >= p->n_slots)
        pthread_cond_wait(&p->changed, &p->lock);
    chunk_slot *slot = p->closed ? NULL : &p->slots[p->read % p->n_slots];
    pthread_mutex_unlock(&p->lock);
    return slot;
}

void chunk_pool_submit(chunk_pool *p, chunk_slot *slot)
{
    /* Any translator's input options are everyone's; a failure (out of
     * memory) leaves the work to the worker's nmt_translate_batch. */
    nmt_error err = {NMT_STATUS_OK, ""};
    if (p->n_workers > 0 && p->target == TRANSLATE_TARGET_NONE &&
        nmt_translator_prepare(p->workers[0].translator, slot->texts, slot->n, &slot->prepared,
                               &err) != NMT_STATUS_OK)
        slot->prepared = NULL;
    pthread_mutex_lock(&p->lock);
    slot->state = SLOT_READY;
    p->read++;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

void chunk_pool_end(chunk_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->ended = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

chunk_slot *chunk_pool_oldest(chunk_pool *p)
{
    pthread_mutex_lock(&p->lock);
    chunk_slot *slot = NULL;
    for (;;) {
        if (p->written < p->read) {
            slot = &p->slots[p->written % p->n_slots];
            if (p->inline_worker && !p->closed && slot->state == SLOT_READY) {
                /* No thread to hand it to: translate it here. */
                p->taken++;
                run_slot(&p->workers[0], slot);
            }
            if (slot->state == SLOT_DONE)
                break;
        } else if (p->ended) {
            slot = NULL;
            break;
        }
        pthread_cond_wait(&p->changed, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return slot;
}

void chunk_pool_release(chunk_pool *p, chunk_slot *slot)
{
    pthread_mutex_lock(&p->lock);
    slot->state = SLOT_FREE;
    slot->n = 0; /* its results were cleared as they were written */
    p->written++;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

void chunk_pool_close(chunk_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->closed = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

int chunk_pool_translators(const chunk_pool *p)
{
    return p->n_workers;
}

double chunk_pool_decode_seconds(chunk_pool *p)
{
    pthread_mutex_lock(&p->lock);
    const double seconds = p->decode_seconds;
    pthread_mutex_unlock(&p->lock);
    return seconds;
}
