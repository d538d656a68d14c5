/* pipeline.c: the host pipeline (nmt.h's nmt_pipeline; pipeline.h has the
 * window's states) at work: its pool of host threads, the translators'
 * threads, the reader's hand-over and the consumer's side (next, release);
 * pipeline_create.c makes and frees it.
 *
 * Why a pool and parts: tokenizing costs the host microseconds a line and
 * one GPU decodes 100,000 lines a second (docs/performance.md), so one
 * reader thread that tokenizes starves every GPU after the first. Each
 * window's stages are cut into parts of part_lines lines that any pool
 * thread takes, oldest window first, so the host's work spreads over its
 * cores whatever the window size, and the translators find windows ready.
 * Windows in flight: two a translator (one decoding, one ready), one being
 * read, one being given, and enough more that every pool thread has a part
 * of its own. */
#define _POSIX_C_SOURCE 200809L /* pthread, clock_gettime */

#include "pipeline.h"

#include "clock.h"
#include "error.h"

#include <errno.h>
#include <time.h>

/* ---- stages ----------------------------------------------------------------- */

/* Starts a stage of parts on w (under the lock). */
static void begin_stage(nmt_pipeline *p, pipe_window *w, int state)
{
    w->state = state;
    w->next_part = 0;
    w->parts_done = 0;
    pthread_cond_broadcast(&p->work);
}

/* Every translator added has failed, and no more will come. */
static int no_translator_left(const nmt_pipeline *p)
{
    return p->n_translators > 0 && p->n_failed == p->n_translators &&
           p->n_translators >= p->o.translators;
}

static void to_done(nmt_pipeline *p, pipe_window *w)
{
    w->state = PIPE_DONE;
    pthread_cond_broadcast(&p->done);
}

/* After decoding or echoing: the output bytes, if any, then done. */
static void to_format(nmt_pipeline *p, pipe_window *w)
{
    if (w->view.status == NMT_STATUS_OK && (p->o.format || p->o.output != NMT_PIPELINE_OUTPUT_NONE))
        begin_stage(p, w, PIPE_FORMAT);
    else
        to_done(p, w);
}

/* The error of the translator that failed last, on a window no translator
 * can take. */
static void fail_for_translators(nmt_pipeline *p, pipe_window *w)
{
    const pipe_translator *last = &p->translators[p->last_failed];
    nmt_pipe_fail_window(w, last->error.status, &last->error, last->index);
    to_done(p, w);
}

/* A prepared window: to the translators (or, when none is left, failed;
 * in a dry run, echoed). */
static void to_ready(nmt_pipeline *p, pipe_window *w)
{
    if (w->view.status != NMT_STATUS_OK)
        to_done(p, w);
    else if (p->o.dry_run)
        begin_stage(p, w, PIPE_ECHO);
    else if (no_translator_left(p))
        fail_for_translators(p, w);
    else {
        w->state = PIPE_READY;
        pthread_cond_broadcast(&p->work);
    }
}

/* The last part of w's stage is done (the lock held on entry and return;
 * the stage's own end runs outside it: no one else touches w then). */
static void end_stage(nmt_pipeline *p, pipe_window *w)
{
    const int state = w->state;
    pthread_mutex_unlock(&p->lock);
    nmt_pipe_finish_stage(p, w, state);
    pthread_mutex_lock(&p->lock);
    if (state == PIPE_PREPARE)
        to_ready(p, w);
    else if (state == PIPE_ECHO)
        to_format(p, w);
    else if (state == PIPE_FORMAT)
        to_done(p, w);
    else if (state == PIPE_CLEAR) {
        w->state = PIPE_FREE;
        pthread_cond_broadcast(&p->room);
    }
}

static int has_parts(const pipe_window *w)
{
    return (w->state == PIPE_PREPARE || w->state == PIPE_ECHO || w->state == PIPE_FORMAT ||
            w->state == PIPE_CLEAR) &&
           w->next_part < w->n_parts;
}

/* The oldest window with a part to take: windows given and not yet free
 * first (their clearing frees room), then the rest in input order. */
static pipe_window *window_with_part(nmt_pipeline *p)
{
    for (int s = 0; s < p->n_slots; s++) {
        pipe_window *w = &p->windows[(p->given + s) % p->n_slots];
        if (has_parts(w))
            return w;
    }
    return NULL;
}

void *nmt_pipe_pool_main(void *arg)
{
    nmt_pipeline *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        pipe_window *w = window_with_part(p);
        if (!w) {
            pthread_cond_wait(&p->work, &p->lock);
            continue;
        }
        const int state = w->state, k = w->next_part++;
        pthread_mutex_unlock(&p->lock);
        nmt_pipe_run_part(p, w, state, k);
        pthread_mutex_lock(&p->lock);
        if (++w->parts_done == w->n_parts)
            end_stage(p, w);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* ---- translators ------------------------------------------------------------- */

static pipe_window *oldest_ready(nmt_pipeline *p)
{
    for (int64_t k = p->given; k < p->submitted; k++) {
        pipe_window *w = &p->windows[k % p->n_slots];
        if (w->state == PIPE_READY)
            return w;
    }
    return NULL;
}

/* NMT_TEST_PIPELINE_HOLD: a translator's first window waits (at most 10 s)
 * until every translator has taken one. */
static void hold_first_window(nmt_pipeline *p, pipe_translator *t)
{
    if (!p->hold || t->windows > 1)
        return;
    p->held++;
    pthread_cond_broadcast(&p->work);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (p->held < p->o.translators && !p->stopping &&
           pthread_cond_timedwait(&p->work, &p->lock, &until) != ETIMEDOUT) {
    }
}

/* NMT_TEST_TRANSLATOR_FAIL says t fails on w, which it has just taken
 * (under the lock). */
static int injected_failure(nmt_pipeline *p, const pipe_translator *t, const pipe_window *w)
{
    if (p->fail_translator == PIPE_FAIL_ANY)
        return w->seq == p->fail_window && !p->fail_fired++;
    return t->index == p->fail_translator && t->windows - 1 == p->fail_window;
}

/* Decodes w on t's thread (outside the lock), or fails it (fail). */
static nmt_status decode_window(pipe_translator *t, pipe_window *w, int fail, nmt_error *err)
{
    nmt_status status;
    if (fail) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_CUDA,
                               "injected failure (NMT_TEST_TRANSLATOR_FAIL)");
        for (int i = 0; i < w->n; i++)
            nmt_translator_line_error(&w->results[i], status, err->message);
    } else {
        status = nmt_translate_prepared(t->translator, w->prepared, w->results, err);
    }
    nmt_prepared_clear(w->prepared); /* its tokens; its room stays the window's */
    return status;
}

/* t failed on w (the lock held): t takes no more; w goes back to be
 * prepared again for the others, or fails when none is left. */
static void translator_failed(nmt_pipeline *p, pipe_translator *t, pipe_window *w,
                              const nmt_error *err)
{
    t->failed = 1;
    t->error = *err;
    p->n_failed++;
    p->last_failed = t->index;
    w->view.translator = t->index;
    if (no_translator_left(p)) {
        fail_for_translators(p, w);
        for (int64_t k = p->given; k < p->submitted; k++) /* and every window waiting */
            if (p->windows[k % p->n_slots].state == PIPE_READY)
                fail_for_translators(p, &p->windows[k % p->n_slots]);
        return;
    }
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < w->n; i++)
        nmt_result_clear(&w->results[i]);
    nmt_prepared_reset(w->prepared, w->n);
    pthread_mutex_lock(&p->lock);
    begin_stage(p, w, PIPE_PREPARE);
}

static void *translator_main(void *arg)
{
    pipe_translator *t = arg;
    nmt_pipeline *p = t->pipeline;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        pipe_window *w = NULL;
        while (!p->stopping && !(w = oldest_ready(p)))
            pthread_cond_wait(&p->work, &p->lock);
        if (p->stopping)
            break;
        w->state = PIPE_DECODING;
        w->view.translator = t->index;
        t->windows++;
        hold_first_window(p, t);
        if (p->decoding++ == 0)
            p->decoding_since = nmt_clock_seconds();
        const int fail = injected_failure(p, t, w);
        pthread_mutex_unlock(&p->lock);
        nmt_error err = {0};
        const nmt_status status = decode_window(t, w, fail, &err);
        pthread_mutex_lock(&p->lock);
        if (--p->decoding == 0)
            p->decode_seconds += nmt_clock_seconds() - p->decoding_since;
        if (status != NMT_STATUS_OK) {
            translator_failed(p, t, w, &err);
            break;
        }
        p->windows_decoded++;
        to_format(p, w);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

nmt_status nmt_pipeline_add_translator(nmt_pipeline *p, nmt_translator *translator,
                                       nmt_error *err)
{
    if (!p || !translator)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "pipeline_add_translator: NULL");
    if (p->o.dry_run)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "pipeline_add_translator: a dry run has no translator");
    if (!nmt_translator_same_input(p->host, translator))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "pipeline_add_translator: the "
                             "translator has another model or other input options");
    if (nmt_translator_prefixes_usable(translator, p->o.targets == NMT_TARGETS_PREFIX, err) !=
        NMT_STATUS_OK)
        return err->status;
    pthread_mutex_lock(&p->lock);
    if (p->n_translators == PIPE_MAX_TRANSLATORS) {
        pthread_mutex_unlock(&p->lock);
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "pipeline_add_translator: at most %d translators",
                             PIPE_MAX_TRANSLATORS);
    }
    pipe_translator *t = &p->translators[p->n_translators];
    *t = (pipe_translator){.pipeline = p, .translator = translator, .index = p->n_translators};
    if (p->n_threads > 0) {
        if (pthread_create(&t->thread, NULL, translator_main, t) != 0) {
            pthread_mutex_unlock(&p->lock);
            return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                                 "pipeline_add_translator: cannot start a thread");
        }
        t->started = 1;
    }
    p->n_translators++;
    pthread_mutex_unlock(&p->lock);
    return NMT_STATUS_OK;
}

/* ---- the reader's side --------------------------------------------------------- */

pipe_window *nmt_pipe_acquire(nmt_pipeline *p, int wait)
{
    pipe_window *w = &p->windows[p->submitted % p->n_slots];
    pthread_mutex_lock(&p->lock);
    /* A window being cleared is free soon, whatever the consumer does. */
    while (!p->stopping && w->state != PIPE_FREE && (wait || w->state == PIPE_CLEAR))
        pthread_cond_wait(&p->room, &p->lock);
    if (p->stopping || w->state != PIPE_FREE)
        w = NULL;
    else
        w->state = PIPE_FILLING;
    pthread_mutex_unlock(&p->lock);
    return w;
}

void nmt_pipe_submit(nmt_pipeline *p, pipe_window *w)
{
    for (int i = 0; i < w->n; i++) {
        w->src.texts[i] = w->src.refused[i] ? "" : w->src.bytes + w->src.offsets[i];
        if (w->tgt.texts)
            w->tgt.texts[i] = w->tgt.refused[i] ? "" : w->tgt.bytes + w->tgt.offsets[i];
    }
    w->view = (nmt_pipeline_window){.first_line = p->lines_read, .n_lines = w->n,
                                    .results = w->results, .translator = -1};
    w->first_line = p->lines_read;
    w->seq = p->submitted;
    w->n_parts = (w->n + w->part_lines - 1) / w->part_lines;
    nmt_prepared_reset(w->prepared, w->n);
    pthread_mutex_lock(&p->lock);
    p->lines_read += w->n;
    p->submitted++;
    begin_stage(p, w, PIPE_PREPARE);
    pthread_mutex_unlock(&p->lock);
}

void nmt_pipe_end_input(nmt_pipeline *p, nmt_status status, const nmt_error *err)
{
    pthread_mutex_lock(&p->lock);
    if (!p->input_ended) {
        p->input_ended = 1;
        p->input_status = status;
        if (err)
            p->input_error = *err;
    }
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->lock);
}

/* ---- the consumer's side ------------------------------------------------------- */

/* Every part of w's stage on the calling thread (no pool: host_threads
 * -1), the lock held on entry and return. */
static void run_stage_here(nmt_pipeline *p, pipe_window *w)
{
    const int state = w->state;
    pthread_mutex_unlock(&p->lock);
    for (int k = 0; k < w->n_parts; k++)
        nmt_pipe_run_part(p, w, state, k);
    pthread_mutex_lock(&p->lock);
    w->next_part = w->parts_done = w->n_parts;
    end_stage(p, w);
}

/* host_threads -1: window w's stages on the calling thread. */
static void run_inline(nmt_pipeline *p, pipe_window *w)
{
    while (w->state != PIPE_DONE) {
        const int state = w->state;
        if (state == PIPE_READY) {
            if (p->n_translators == 0) {
                nmt_error none;
                nmt_error_set(&none, NMT_STATUS_ERROR_ARGUMENT,
                              "pipeline: no translator was added");
                nmt_pipe_fail_window(w, none.status, &none, -1);
                to_done(p, w);
                continue;
            }
            pipe_translator *t = &p->translators[0];
            w->state = PIPE_DECODING;
            w->view.translator = 0;
            t->windows++;
            const int fail = injected_failure(p, t, w);
            pthread_mutex_unlock(&p->lock);
            nmt_error err = {0};
            const double started = nmt_clock_seconds();
            const nmt_status status = decode_window(t, w, fail, &err);
            pthread_mutex_lock(&p->lock);
            p->decode_seconds += nmt_clock_seconds() - started;
            if (status != NMT_STATUS_OK)
                translator_failed(p, t, w, &err);
            else {
                p->windows_decoded++;
                to_format(p, w);
            }
            continue;
        }
        run_stage_here(p, w);
    }
}

nmt_status nmt_pipeline_next(nmt_pipeline *p, int wait, nmt_pipeline_window **window,
                             nmt_error *err)
{
    if (!p || !window)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "pipeline_next: NULL");
    *window = NULL;
    if (!p->reader && !p->pushing)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "pipeline_next: no input (nmt_pipeline_read_fd or _push first)");
    nmt_status status = NMT_STATUS_OK;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        pipe_window *w = &p->windows[p->given % p->n_slots];
        if (p->given < p->submitted && w->state == PIPE_DONE) {
            w->state = PIPE_TAKEN;
            p->given++;
            *window = &w->view;
            w->view.text = w->text;
            w->view.text_bytes = w->text_bytes;
            break;
        }
        if (p->given < p->submitted && p->n_threads == 0) {
            run_inline(p, w);
            continue;
        }
        if (p->given == p->submitted && p->input_ended) {
            status = p->input_status;
            if (status != NMT_STATUS_OK && err)
                *err = p->input_error;
            break;
        }
        if (p->given == p->submitted && (p->n_threads == 0 || p->pushing) && !p->input_ended) {
            /* Nothing in flight: read on this thread, or the caller pushes more. */
            if (p->n_threads == 0 && p->reader) {
                pthread_mutex_unlock(&p->lock);
                nmt_pipe_reader_step(p);
                pthread_mutex_lock(&p->lock);
                continue;
            }
            status = nmt_error_set(err, NMT_STATUS_BUSY, "pipeline_next: no line in flight");
            break;
        }
        if (!wait) {
            status = nmt_error_set(err, NMT_STATUS_BUSY, "pipeline_next: not translated yet");
            break;
        }
        pthread_cond_wait(&p->done, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return status;
}

void nmt_pipeline_release(nmt_pipeline *p, nmt_pipeline_window *view)
{
    if (!p || !view)
        return;
    pipe_window *w = NULL;
    for (int s = 0; s < p->n_slots && !w; s++)
        if (&p->windows[s].view == view)
            w = &p->windows[s];
    if (!w)
        return;
    pthread_mutex_lock(&p->lock);
    if (w->state == PIPE_TAKEN) {
        w->n_parts = w->n > 0 ? (w->n + w->part_lines - 1) / w->part_lines : 1;
        begin_stage(p, w, PIPE_CLEAR);
        if (p->n_threads == 0)
            run_stage_here(p, w);
    }
    pthread_mutex_unlock(&p->lock);
}
