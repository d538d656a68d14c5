/* translator_finish.c: a call's search results turned into its lines'
 * results on a thread of its own (translator.h, nmt_finisher), while the
 * calling thread decodes the next batch.
 *
 * Why: between two batches the GPU waits for the host, and turning a batch's
 * search results into text (token ids to pieces, detokenizing, the
 * alignment and score arrays: a few allocations a line) is a visible share
 * of a fast 16-bit decode (docs/perf/steps.md, "Host time between the
 * kernels"). The search's host thread mostly waits on the GPU, so the work
 * moves beside it.
 *
 * One batch in flight: submit waits until the thread is done with the
 * previous batch, hands this one over and returns; the translator decodes
 * into the other of its two result buffers meanwhile. The thread only reads
 * the translator (options, model, vocabularies) and writes the results of
 * its batch's lines, which no one else touches until the call returns. */
#define _POSIX_C_SOURCE 200809L /* pthread */

#include "translator.h"

#include "error.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct nmt_finisher {
    const nmt_translator *t;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    /* The batch in hand (count 0: none) and whether to stop after it. */
    nmt_search_result *found;
    const nmt_call_lines *call;
    const int32_t *lines;
    int32_t count;
    nmt_result *results;
    int stop;
    /* The first failure of any batch (fill_result: out of memory, or an id
     * outside the vocabulary); later batches are cleared unread. */
    nmt_status status;
    nmt_error err;
};

/* Fills results[lines[k]] from found[k] and clears found[k], k < count. */
static void finish_batch(nmt_finisher *f, nmt_search_result *found,
                         const nmt_call_lines *call, const int32_t *lines, int32_t count,
                         nmt_result *results)
{
    nmt_error err = {0};
    pthread_mutex_lock(&f->lock);
    const int failed = f->status != NMT_STATUS_OK;
    pthread_mutex_unlock(&f->lock);
    const nmt_status status =
        nmt_translator_fill_batch(f->t, found, call, lines, count, !failed, results, &err);
    if (status != NMT_STATUS_OK) {
        pthread_mutex_lock(&f->lock);
        if (f->status == NMT_STATUS_OK) {
            f->status = status;
            f->err = err;
        }
        pthread_mutex_unlock(&f->lock);
    }
}

static void *finisher_main(void *arg)
{
    nmt_finisher *f = (nmt_finisher *)arg;
    pthread_mutex_lock(&f->lock);
    for (;;) {
        while (f->count == 0 && !f->stop)
            pthread_cond_wait(&f->changed, &f->lock);
        if (f->count == 0) /* stop, nothing left */
            break;
        nmt_search_result *found = f->found;
        const nmt_call_lines *call = f->call;
        const int32_t *lines = f->lines;
        const int32_t count = f->count;
        nmt_result *results = f->results;
        pthread_mutex_unlock(&f->lock);
        finish_batch(f, found, call, lines, count, results);
        pthread_mutex_lock(&f->lock);
        f->count = 0;
        pthread_cond_broadcast(&f->changed);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

nmt_status nmt_finisher_start(const nmt_translator *t, nmt_finisher **finisher, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_finisher *f = NULL;
    *finisher = NULL;
    NMT_ALLOC(f, 1);
    f->t = t;
    if (pthread_mutex_init(&f->lock, NULL) != 0) {
        free(f);
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "finisher: no mutex");
    }
    if (pthread_cond_init(&f->changed, NULL) != 0) {
        pthread_mutex_destroy(&f->lock);
        free(f);
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "finisher: no condition variable");
    }
    if (pthread_create(&f->thread, NULL, finisher_main, f) != 0) {
        pthread_cond_destroy(&f->changed);
        pthread_mutex_destroy(&f->lock);
        free(f);
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "finisher: no thread");
    }
    *finisher = f;
cleanup:
    return status;
}

/* Waits, with the lock held, until the thread has no batch. */
static void wait_idle(nmt_finisher *f)
{
    while (f->count != 0)
        pthread_cond_wait(&f->changed, &f->lock);
}

nmt_status nmt_finisher_submit(nmt_finisher *f, nmt_search_result *found,
                               const nmt_call_lines *call, const int32_t *lines, int32_t count,
                               nmt_result *results, nmt_error *err)
{
    if (count <= 0)
        return NMT_STATUS_OK;
    pthread_mutex_lock(&f->lock);
    wait_idle(f);
    const nmt_status status = f->status;
    if (status != NMT_STATUS_OK) {
        if (err)
            *err = f->err;
        pthread_mutex_unlock(&f->lock);
        for (int32_t k = 0; k < count; k++)
            nmt_search_result_clear(&found[k]);
        return status;
    }
    f->found = found;
    f->call = call;
    f->lines = lines;
    f->count = count;
    f->results = results;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
    return NMT_STATUS_OK;
}

nmt_status nmt_finisher_stop(nmt_finisher *f, nmt_error *err)
{
    if (!f)
        return NMT_STATUS_OK;
    pthread_mutex_lock(&f->lock);
    wait_idle(f);
    f->stop = 1;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
    pthread_join(f->thread, NULL);
    const nmt_status status = f->status;
    if (status != NMT_STATUS_OK && err)
        *err = f->err;
    pthread_cond_destroy(&f->changed);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return status;
}
