/* pipeline_work.c: what the host pipeline's threads do to a window
 * (pipeline.h): its stages' parts, each over lines [k * part_lines, ...),
 * and the end of each stage. Parts of one stage touch disjoint lines, so
 * they need no lock; a failure (out of memory) is recorded under it. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include "pipeline.h"

#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FIRST_BYTES = 1 << 16 };

int nmt_pipe_lines_init(pipe_lines *l, int capacity)
{
    if (capacity == 0)
        return 0;
    l->cap_bytes = FIRST_BYTES;
    l->bytes = malloc(l->cap_bytes);
    l->offsets = calloc((size_t)capacity, sizeof *l->offsets);
    l->lengths = calloc((size_t)capacity, sizeof *l->lengths);
    l->refused = calloc((size_t)capacity, sizeof *l->refused);
    l->texts = calloc((size_t)capacity, sizeof *l->texts);
    return l->bytes && l->offsets && l->lengths && l->refused && l->texts ? 0 : -1;
}

void nmt_pipe_lines_destroy(pipe_lines *l)
{
    free(l->bytes);
    free(l->offsets);
    free(l->lengths);
    free(l->refused);
    free(l->texts);
    memset(l, 0, sizeof *l);
}

int nmt_pipe_window_init(pipe_window *w, const nmt_translator *host, int capacity,
                         nmt_targets targets, int max_parts)
{
    nmt_error err;
    if (nmt_prepared_create(host, capacity, targets, &w->prepared, &err) != NMT_STATUS_OK)
        return -1;
    w->prepared->line_keys = calloc(capacity > 0 ? (size_t)capacity : 1, sizeof(uint64_t));
    if (!w->prepared->line_keys)
        return -1;
    w->capacity = capacity;
    w->results = calloc((size_t)capacity, sizeof *w->results);
    w->part_text = calloc((size_t)max_parts, sizeof *w->part_text);
    w->part_bytes = calloc((size_t)max_parts, sizeof *w->part_bytes);
    if (nmt_pipe_lines_init(&w->src, capacity) != 0 ||
        nmt_pipe_lines_init(&w->tgt, targets != NMT_TARGETS_NONE ? capacity : 0) != 0)
        return -1;
    return w->results && w->part_text && w->part_bytes ? 0 : -1;
}

static void free_text(pipe_window *w)
{
    for (int k = 0; w->part_text && k < w->n_parts; k++) {
        if (w->part_text[k] != w->text)
            free(w->part_text[k]);
        w->part_text[k] = NULL;
    }
    free(w->text);
    w->text = NULL;
    w->text_bytes = 0;
}

void nmt_pipe_window_destroy(pipe_window *w)
{
    for (int i = 0; w->results && i < w->n; i++)
        nmt_result_clear(&w->results[i]);
    nmt_prepared_free(w->prepared);
    free_text(w);
    nmt_pipe_lines_destroy(&w->src);
    nmt_pipe_lines_destroy(&w->tgt);
    free(w->results);
    free(w->part_text);
    free(w->part_bytes);
    memset(w, 0, sizeof *w);
}

void nmt_pipe_fail_window(pipe_window *w, nmt_status status, const nmt_error *err,
                          int translator)
{
    w->view.status = status;
    w->view.error = *err;
    w->view.translator = translator;
    nmt_prepared_clear(w->prepared);
    for (int i = 0; i < w->n; i++) {
        nmt_result_clear(&w->results[i]);
        nmt_translator_line_error(&w->results[i], status, err->message);
    }
}

/* The first failure of a window's parts. */
static void part_failed(nmt_pipeline *p, pipe_window *w, const nmt_error *err)
{
    pthread_mutex_lock(&p->lock);
    if (w->view.status == NMT_STATUS_OK) {
        w->view.status = err->status;
        w->view.error = *err;
    }
    pthread_mutex_unlock(&p->lock);
}

/* A line the reader refused gets its reason instead of the answer that its
 * "" was prepared to, and no search; `target` names its target line when
 * that was the one refused (NULL: the input's line). */
static void refuse_line(const nmt_pipeline *p, const pipe_lines *lines, const char *target,
                        int i, nmt_prepared *prepared)
{
    char message[160];
    if (lines->refused[i] == PIPE_LINE_MISSING)
        snprintf(message, sizeof message, "%s: none (the file has fewer lines than the input)",
                 target);
    else if (lines->refused[i] == PIPE_LINE_TOO_LONG)
        snprintf(message, sizeof message, "%s too long: %zu bytes, the limit is %zu",
                 target ? target : "line", lines->lengths[i], p->max_line_bytes);
    else
        snprintf(message, sizeof message, "%s%scontains a NUL byte", target ? target : "",
                 target ? " " : "");
    nmt_result_clear(&prepared->results[i]);
    nmt_translator_line_error(&prepared->results[i], NMT_STATUS_ERROR_INPUT, message);
    prepared->searched[i] = 0;
}

static nmt_status prepare_part(nmt_pipeline *p, pipe_window *w, int first, int count,
                               nmt_error *err)
{
    const int targets = p->o.targets != NMT_TARGETS_NONE;
    const nmt_status status = nmt_prepared_fill(p->host, w->prepared, w->src.texts,
                                                targets ? w->tgt.texts : NULL, first, count, err);
    /* A line's sampling key is its number in the input: its samples depend
     * on nothing else (windows, batches, translators, shards). */
    for (int i = first; status == NMT_STATUS_OK && w->prepared->line_keys && i < first + count;
         i++)
        w->prepared->line_keys[i] = (uint64_t)(w->first_line + i);
    for (int i = first; status == NMT_STATUS_OK && i < first + count; i++) {
        if (w->src.refused[i])
            refuse_line(p, &w->src, NULL, i, w->prepared);
        else if (targets && w->tgt.refused[i])
            refuse_line(p, &w->tgt, p->target_name, i, w->prepared);
    }
    return status;
}

static nmt_status echo_part(nmt_pipeline *p, pipe_window *w, int first, int count,
                            nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_prepared *prepared = w->prepared;
    for (int i = first; i < first + count; i++) {
        if (prepared->searched[i] && status == NMT_STATUS_OK)
            status = nmt_translator_echo(p->host, &prepared->tokens[i], &w->results[i], err);
        else if (!prepared->searched[i]) { /* prepare's answer moves to the window */
            w->results[i] = prepared->results[i];
            memset(&prepared->results[i], 0, sizeof prepared->results[i]);
        }
        nmt_tokens_clear(&prepared->tokens[i]);
    }
    return status;
}

/* The built-in outputs (nmt_pipeline_output). */
static int format_builtin(nmt_pipeline_output output, const nmt_result *results, int n,
                          FILE *out)
{
    for (int i = 0; i < n; i++) {
        const nmt_result *r = &results[i];
        const int ok = r->status == NMT_STATUS_OK && r->n_hypotheses > 0;
        if (output == NMT_PIPELINE_OUTPUT_SCORES &&
            (ok ? fprintf(out, "%.9g\t", r->hypotheses[0].score) : fputs("-inf\t", out)) < 0)
            return -1;
        if ((ok && fputs(r->hypotheses[0].text, out) == EOF) || fputc('\n', out) == EOF)
            return -1;
    }
    return 0;
}

static nmt_status format_part(nmt_pipeline *p, pipe_window *w, int k, int first, int count,
                              nmt_error *err)
{
    char *bytes = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&bytes, &size);
    if (!out)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "pipeline: no memory for the output");
    const int written = p->o.format ? p->o.format(p->o.format_self, w->first_line + first,
                                                  w->results + first, count, out)
                                    : format_builtin(p->o.output, w->results + first, count, out);
    const int closed = fclose(out);
    w->part_text[k] = bytes;
    w->part_bytes[k] = size;
    if (written < 0 || closed != 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                             "pipeline: writing lines %lld-%lld of the output failed",
                             (long long)(w->first_line + first + 1),
                             (long long)(w->first_line + first + count));
    return NMT_STATUS_OK;
}

void nmt_pipe_run_part(nmt_pipeline *p, pipe_window *w, int state, int k)
{
    const int first = k * w->part_lines;
    const int count = w->n - first < w->part_lines ? w->n - first : w->part_lines;
    nmt_error err = {0};
    nmt_status status = NMT_STATUS_OK;
    if (count <= 0)
        return;
    if (state == PIPE_PREPARE)
        status = prepare_part(p, w, first, count, &err);
    else if (state == PIPE_ECHO)
        status = echo_part(p, w, first, count, &err);
    else if (state == PIPE_FORMAT)
        status = format_part(p, w, k, first, count, &err);
    else if (state == PIPE_CLEAR)
        for (int i = first; i < first + count; i++)
            nmt_result_clear(&w->results[i]);
    if (status != NMT_STATUS_OK)
        part_failed(p, w, &err);
}

/* FORMAT's parts as one text (one part: its own bytes). */
static nmt_status join_text(pipe_window *w, nmt_error *err)
{
    if (w->n_parts == 1) {
        w->text = w->part_text[0];
        w->text_bytes = w->part_bytes[0];
        return NMT_STATUS_OK;
    }
    size_t total = 0;
    for (int k = 0; k < w->n_parts; k++)
        total += w->part_bytes[k];
    char *text = malloc(total + 1);
    if (!text)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                             "pipeline: no memory for %zu bytes of output", total);
    size_t at = 0;
    for (int k = 0; k < w->n_parts; k++) {
        if (w->part_bytes[k])
            memcpy(text + at, w->part_text[k], w->part_bytes[k]);
        at += w->part_bytes[k];
        free(w->part_text[k]);
        w->part_text[k] = NULL;
    }
    text[total] = '\0';
    w->text = text;
    w->text_bytes = total;
    return NMT_STATUS_OK;
}

void nmt_pipe_finish_stage(nmt_pipeline *p, pipe_window *w, int state)
{
    nmt_error err = {0};
    if (state == PIPE_CLEAR) {
        free_text(w);
        nmt_prepared_clear(w->prepared);
        w->n = 0;
        w->src.n_bytes = 0;
        w->tgt.n_bytes = 0;
        w->view = (nmt_pipeline_window){0};
        return;
    }
    if (state == PIPE_FORMAT && w->view.status == NMT_STATUS_OK &&
        join_text(w, &err) != NMT_STATUS_OK)
        part_failed(p, w, &err);
    if (w->view.status != NMT_STATUS_OK) {
        free_text(w);
        const nmt_error failure = w->view.error;
        nmt_pipe_fail_window(w, failure.status, &failure, -1);
        return;
    }
    if (state == PIPE_PREPARE)
        nmt_prepared_order(w->prepared);
    else if (state == PIPE_ECHO)
        nmt_prepared_clear(w->prepared); /* its answers moved, its tokens cleared */
}
