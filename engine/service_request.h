/* service_request.h: private to engine/: a service request (the public
 * nmt_request), the service's FIFO of them, and the clock the service keeps
 * deadlines and batching delays by (engine/service_request.c).
 *
 * A request is shared by the service (until it is complete and its callback
 * returned) and by its handle (until nmt_request_free): refs counts them and
 * the last one destroys it. Its own mutex guards state, refs, cancel and
 * result; the service's mutex guards the queue links. Lock order: the
 * service's, then a request's. */
#ifndef NMT_SERVICE_REQUEST_H
#define NMT_SERVICE_REQUEST_H

#include "nmt.h"
#include "translator.h"

#include <pthread.h>
#include <time.h>

typedef enum nmt_request_state {
    NMT_REQUEST_QUEUED = 0,
    NMT_REQUEST_RUNNING = 1,
    NMT_REQUEST_DONE = 2
} nmt_request_state;

struct nmt_request {
    nmt_service *service;         /* valid while the request is not complete */
    pthread_mutex_t lock;
    pthread_cond_t done;
    nmt_request_state state;
    int refs;
    int cancel;                   /* asked while running */
    nmt_result result;            /* once DONE */
    char *line;                   /* owned copy */
    nmt_search_params search;  /* resolved: what the translation uses */
    int32_t *suppress;            /* owned: the request's own suppressed sequences, which
                                     search points to (NULL: the service's) */
    uint64_t line_key;            /* sampling: its random streams' key besides the seed */
    int shrink;                   /* 1: the service's shrinking */
    char *target;                 /* owned copy, NULL: none; the translation to score (score)
                                     or the prefix to continue */
    int score;                    /* 1: score target instead of translating */
    int tokens;                   /* source tokens, counted only under max_batch_tokens
                                     (0 for a line the tokenizer refuses) */
    double submitted, deadline;   /* nmt_clock_seconds() seconds; deadline 0: none */
    nmt_request_callback callback;
    void *user;
    nmt_request *prev, *next;     /* the queue's links (service mutex) */
};

typedef struct nmt_request_queue {
    nmt_request *head, *tail;
    int count;
} nmt_request_queue;

nmt_status nmt_request_create(const char *line, nmt_request_callback callback, void *user,
                              int refs, nmt_request **request, nmt_error *err);
void nmt_request_destroy(nmt_request *request);

void nmt_request_queue_push(nmt_request_queue *queue, nmt_request *request);
void nmt_request_queue_remove(nmt_request_queue *queue, nmt_request *request);

/* r's target (o->target to score, or o->target_prefix to continue; copied)
 * and return_alternatives; its shrink 0 with a target: scoring runs the
 * full softmax, and so does a prefix unless shrinking is asked for by
 * name (then refused: a forced word need not be a candidate). */
nmt_status nmt_request_set_target(nmt_request *r, const nmt_request_options *o, nmt_error *err);

/* Requests that may share a batch: the same search options and shrinking,
 * both scoring or both translating. */
int nmt_request_same_search(const nmt_request *a, const nmt_request *b);
/* r is a plain translation (no target, no alternatives) with these search
 * options and shrinking: a stream's (service_stream.c). */
int nmt_request_has_search(const nmt_request *r, const nmt_search_params *search, int shrink);

/* The CLOCK_MONOTONIC time point of nmt_clock_seconds() value `seconds`
 * (for condition variables created with that clock). */
struct timespec nmt_request_timespec(double seconds);
/* A condition variable on CLOCK_MONOTONIC. */
void nmt_request_cond_init(pthread_cond_t *cond);

/* The request's sampling and logit rules from the caller's options, over
 * r->search (the service's): the public values mapped (nmt_sampling_topk_of),
 * a suppress text parsed against model into r->suppress, r->line_key set;
 * NMT_STATUS_ERROR_ARGUMENT for a value the check cannot see refused. */
nmt_status nmt_request_resolve_rules(const nmt_model *model, const nmt_request_options *options,
                                     nmt_request *r, nmt_error *err);

/* result's message (truncated to fit). */
void nmt_request_set_message(nmt_result *result, const char *message);

#endif /* NMT_SERVICE_REQUEST_H */
