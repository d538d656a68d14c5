/* pipeline_create.c: the host pipeline's life (nmt.h's nmt_pipeline;
 * pipeline.h): its options checked, the ring of windows and the part size
 * fitted to the window and the host's cores, the pool started, and free,
 * stats and a translator's failure for the caller. */
#define _POSIX_C_SOURCE 200809L /* pthread, sysconf */

#include "pipeline.h"

#include "clock.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { DEFAULT_WINDOW_CAP = 65536, MAX_WINDOW = 1 << 20, MIN_PART_LINES = 256 };

void nmt_pipeline_options_init(nmt_pipeline_options *o)
{
    memset(o, 0, sizeof *o);
    o->translators = 1;
    o->output = NMT_PIPELINE_OUTPUT_TEXT;
}

/* NMT_TEST_TRANSLATOR_FAIL (pipeline.h). */
static void read_test_hooks(nmt_pipeline *p)
{
    p->fail_translator = p->fail_window = -1;
    const char *fail = getenv("NMT_TEST_TRANSLATOR_FAIL");
    int w = -1, k = 0;
    if (fail && fail[0] == '*' && sscanf(fail, "*,%d", &k) == 1 && k >= 0) {
        p->fail_translator = PIPE_FAIL_ANY;
        p->fail_window = k;
    } else if (fail && sscanf(fail, "%d,%d", &w, &k) >= 1 && w >= 0) {
        p->fail_translator = w;
        p->fail_window = k >= 0 ? k : 0;
    }
    const char *hold = getenv("NMT_TEST_PIPELINE_HOLD");
    p->hold = hold && atoi(hold) == 1;
    const char *slots = getenv("NMT_TEST_PIPELINE_SLOTS");
    if (slots && atoi(slots) >= 1 && atoi(slots) < p->n_slots)
        p->n_slots = atoi(slots);
}

static int host_cores(void)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? (int)cores : 1;
}

nmt_status nmt_pipeline_create(const nmt_model *model, const nmt_options *options,
                               const nmt_pipeline_options *pipeline_options,
                               nmt_pipeline **pipeline, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_pipeline *p = NULL;
    if (!model || !pipeline)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "pipeline_create: NULL argument");
    *pipeline = NULL;
    nmt_pipeline_options po;
    nmt_pipeline_options_init(&po);
    if (pipeline_options)
        po = *pipeline_options;
    if (po.window_lines < 0 || po.window_lines > MAX_WINDOW || po.host_threads < -1 ||
        po.host_threads > 1024 || po.translators < 0 || po.translators > PIPE_MAX_TRANSLATORS ||
        (po.dry_run != 0 && po.dry_run != 1) || po.output < NMT_PIPELINE_OUTPUT_NONE ||
        po.output > NMT_PIPELINE_OUTPUT_SCORES || po.targets < NMT_TARGETS_NONE ||
        po.targets > NMT_TARGETS_SCORE)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "pipeline_create: window_lines "
                             "0..%d, host_threads -1..1024, translators 0..%d, dry_run 0 or 1, "
                             "output NONE, TEXT or SCORES, targets NONE, PREFIX or SCORE",
                             MAX_WINDOW, PIPE_MAX_TRANSLATORS);
    if (po.dry_run && po.targets != NMT_TARGETS_NONE)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "pipeline_create: a dry run has "
                             "no targets (it decodes nothing to continue or score)");
    NMT_ALLOC(p, 1);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    pthread_cond_init(&p->room, NULL);
    p->o = po;
    if (p->o.translators == 0)
        p->o.translators = 1;
    nmt_options host_options;
    if (options)
        host_options = *options;
    else
        nmt_options_init(&host_options);
    host_options.unk_replace = 1; /* a dry run's echo: every token is an unknown word */
    snprintf(p->target_name, sizeof p->target_name, "%s",
             po.target_name ? po.target_name : "target line");
    NMT_TRY(nmt_translator_create_host(model, &host_options, &p->host, err));
    NMT_TRY(nmt_translator_prefixes_usable(p->host, po.targets == NMT_TARGETS_PREFIX, err));
    p->max_line_bytes = (size_t)p->host->options.max_line_bytes;
    if (po.window_lines > 0) {
        p->window_lines = po.window_lines;
    } else {
        const long lines = 8L * p->host->options.batch_size;
        p->window_lines = lines < DEFAULT_WINDOW_CAP ? (int)lines : DEFAULT_WINDOW_CAP;
    }
    p->n_threads = po.host_threads == -1 ? 0 : po.host_threads > 0 ? po.host_threads
                                                                      : host_cores();
    const int threads = p->n_threads > 0 ? p->n_threads : 1;
    p->part_lines = (p->window_lines + threads - 1) / threads;
    if (p->part_lines < MIN_PART_LINES)
        p->part_lines = MIN_PART_LINES;
    p->max_parts = (p->window_lines + p->part_lines - 1) / p->part_lines;
    /* Two a translator, one read, one given, and a window's parts for every thread. */
    p->n_slots = 2 * p->o.translators + 2 + (threads + p->max_parts - 1) / p->max_parts;
    read_test_hooks(p);
    NMT_ALLOC(p->windows, (size_t)p->n_slots);
    for (int s = 0; s < p->n_slots; s++) {
        p->windows[s].part_lines = p->part_lines;
        if (nmt_pipe_window_init(&p->windows[s], p->host, p->window_lines, po.targets,
                                 p->max_parts) != 0) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                                   "pipeline_create: out of memory for %d windows of %d lines",
                                   p->n_slots, p->window_lines);
            goto cleanup;
        }
    }
    NMT_ALLOC(p->threads, (size_t)threads);
    for (int i = 0; i < p->n_threads; i++) {
        if (pthread_create(&p->threads[i], NULL, nmt_pipe_pool_main, p) != 0) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                                   "pipeline_create: cannot start host thread %d", i);
            goto cleanup;
        }
        p->threads_started++;
    }
    *pipeline = p;
    return NMT_STATUS_OK;
cleanup:
    nmt_pipeline_free(p);
    return status;
}

void nmt_pipeline_free(nmt_pipeline *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->work);
    pthread_cond_broadcast(&p->room);
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->lock);
    nmt_pipe_reader_stop(p);
    for (int i = 0; i < p->threads_started; i++)
        pthread_join(p->threads[i], NULL);
    for (int i = 0; i < p->n_translators; i++)
        if (p->translators[i].started)
            pthread_join(p->translators[i].thread, NULL);
    for (int s = 0; p->windows && s < p->n_slots; s++)
        nmt_pipe_window_destroy(&p->windows[s]);
    free(p->windows);
    free(p->threads);
    nmt_translator_free(p->host);
    pthread_cond_destroy(&p->room);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

void nmt_pipeline_stats_get(nmt_pipeline *p, nmt_pipeline_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    s->lines_read = p->lines_read;
    s->windows = p->submitted;
    s->decode_seconds = p->decode_seconds +
                        (p->decoding > 0 ? nmt_clock_seconds() - p->decoding_since : 0.0);
    s->translators = p->n_translators;
    s->translators_failed = p->n_failed;
    s->host_threads = p->n_threads;
    s->input_ended = p->input_ended;
    pthread_mutex_unlock(&p->lock);
}

int nmt_pipeline_translator_failed(nmt_pipeline *p, int i, nmt_error *err)
{
    if (!p || i < 0)
        return 0;
    pthread_mutex_lock(&p->lock);
    const int failed = i < p->n_translators && p->translators[i].failed;
    if (failed && err)
        *err = p->translators[i].error;
    pthread_mutex_unlock(&p->lock);
    return failed;
}
