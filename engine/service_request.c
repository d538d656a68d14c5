/* service_request.c: requests, their queue and the service's clock
 * (engine/service_request.h), and a request's sampling and logit rules. */
#define _POSIX_C_SOURCE 200809L /* pthread, clock_gettime */

#include "service_request.h"

#include "clock.h"
#include "error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nmt_status nmt_request_create(const char *line, nmt_request_callback callback, void *user,
                              int refs, nmt_request **request, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_request *r = NULL;
    const size_t len = strlen(line);
    NMT_ALLOC(r, 1);
    NMT_ALLOC(r->line, len + 1);
    memcpy(r->line, line, len + 1);
    pthread_mutex_init(&r->lock, NULL);
    nmt_request_cond_init(&r->done);
    r->refs = refs;
    r->callback = callback;
    r->user = user;
    r->submitted = nmt_clock_seconds();
    *request = r;
    return NMT_STATUS_OK;
cleanup:
    free(r);
    return status;
}

void nmt_request_destroy(nmt_request *r)
{
    if (!r)
        return;
    nmt_result_clear(&r->result);
    pthread_cond_destroy(&r->done);
    pthread_mutex_destroy(&r->lock);
    free(r->line);
    free(r->target);
    free(r->suppress);
    free(r);
}

void nmt_request_queue_push(nmt_request_queue *q, nmt_request *r)
{
    r->next = NULL;
    r->prev = q->tail;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
    q->count++;
}

void nmt_request_queue_remove(nmt_request_queue *q, nmt_request *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        q->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        q->tail = r->prev;
    r->prev = r->next = NULL;
    q->count--;
}

nmt_status nmt_request_set_target(nmt_request *r, const nmt_request_options *o, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (o->return_alternatives < -1 || o->return_alternatives > 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "return_alternatives %d: must be -1, 0 or 1", o->return_alternatives);
    if (o->return_alternatives >= 0)
        r->search.return_alternatives = o->return_alternatives;
    if (o->target && o->target_prefix)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "a request scores a target or continues a target prefix, not both");
    const char *target = o->target ? o->target : o->target_prefix;
    if (!target)
        return NMT_STATUS_OK;
    if (o->target_prefix && o->shrink == 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "target prefixes need the full "
                             "softmax: shrink 1 was asked for");
    r->score = o->target != NULL;
    r->shrink = 0;
    const size_t len = strlen(target);
    NMT_ALLOC(r->target, len + 1);
    memcpy(r->target, target, len + 1);
cleanup:
    return status;
}

int nmt_request_has_search(const nmt_request *r, const nmt_search_params *y, int shrink)
{
    return r->shrink == shrink && nmt_search_params_equal(&r->search, y) && !r->target &&
           !r->search.return_alternatives;
}

int nmt_request_same_search(const nmt_request *a, const nmt_request *b)
{
    return a->shrink == b->shrink && nmt_search_params_equal(&a->search, &b->search) &&
           a->score == b->score;
}

struct timespec nmt_request_timespec(double seconds)
{
    struct timespec ts;
    if (seconds > 4e9)
        seconds = 4e9;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

void nmt_request_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

void nmt_request_set_message(nmt_result *result, const char *message)
{
    snprintf(result->message, sizeof result->message, "%s", message ? message : "");
}

/* A float option of a request: given unless negative (NaN is given, and
 * refused by the check). */
static int float_given(float value)
{
    return value >= 0.0f || isnan(value);
}

nmt_status nmt_request_resolve_rules(const nmt_model *model, const nmt_request_options *o,
                                     nmt_request *r, nmt_error *err)
{
    nmt_search_params *p = &r->search;
    if (o->sampling_topk != -1)
        p->sampling_topk = nmt_sampling_topk_of(o->sampling_topk);
    if (float_given(o->sampling_topp))
        p->sampling_topp = o->sampling_topp;
    if (float_given(o->sampling_temperature))
        p->sampling_temperature = o->sampling_temperature;
    if (o->seed >= 0)
        p->seed = (uint64_t)o->seed;
    r->line_key = o->line_key;
    if (o->min_length >= 0)
        p->min_length = o->min_length;
    if (o->no_repeat_ngram_size >= 0)
        p->no_repeat_ngram_size = o->no_repeat_ngram_size;
    if (float_given(o->repetition_penalty)) {
        if (!(o->repetition_penalty > 0.0f))
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "repetition_penalty %g: must "
                                 "be in (0, 100] (1: off)", o->repetition_penalty);
        p->repetition_penalty = o->repetition_penalty;
    }
    if (o->ban_unk >= 0)
        p->ban_unk = o->ban_unk;
    if (o->suppress) {
        nmt_status status = nmt_suppress_parse(model, o->suppress, &r->suppress,
                                               &p->suppress_words, err);
        if (status != NMT_STATUS_OK)
            return status;
        p->suppress = r->suppress;
    }
    if (o->coverage_penalty >= 0)
        p->coverage_penalty = (nmt_coverage_penalty)o->coverage_penalty;
    if (float_given(o->coverage_beta))
        p->coverage_beta = o->coverage_beta;
    return NMT_STATUS_OK;
}
