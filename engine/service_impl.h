/* service_impl.h: private to engine/: the service's state (engine/service.c)
 * and what its two kinds of worker share: the batching worker
 * (engine/service_worker.c) and the continuous-batching one
 * (engine/service_stream.c). */
#ifndef NMT_SERVICE_IMPL_H
#define NMT_SERVICE_IMPL_H

#include "service_request.h"

#include <pthread.h>

typedef struct service_worker {
    nmt_service *service;
    pthread_t thread;
    int started; /* set once at create */
    int joined;  /* under the service's shutdown_lock */
    nmt_translator *full, *shrunk; /* shrunk: NULL unless the service shrinks */
    int device_index;              /* CUDA */
    int streams;                   /* decodes by continuous batching (options.continuous and
                                      a backend that streams) */
    /* Batch scratch, sized batch_size once. */
    nmt_request **batch;
    const char **lines;
    const char **targets; /* the batch's requests' targets (NULL: none) */
    uint64_t *line_keys;
    nmt_result *results;
} service_worker;

struct nmt_service {
    nmt_service_options options;
    nmt_ensemble models;           /* every worker's translators decode with these */
    pthread_mutex_t shutdown_lock; /* one nmt_service_shutdown at a time (it joins) */
    pthread_mutex_t lock;
    pthread_cond_t work;
    nmt_request_queue queue;
    int closing, drain, n_workers;
    service_worker *workers;
    nmt_search_params defaults;
    int default_shrink;
    const nmt_model *model;    /* requests' suppressed sequences are its target tokens */
    nmt_service_stats stats;
    int64_t shutdown_finished, shutdown_cancelled;
    int cuda;                  /* the workers run on CUDA devices */
};

/* Under the service's lock: marks r complete with `result` (moved in) and
 * counts it. */
void nmt_service_complete_locked(nmt_service *s, nmt_request *r, nmt_result *result);
/* After nmt_service_complete_locked, outside every lock: the callback, then
 * the waiters wake and the service's reference goes. */
void nmt_service_after_complete(nmt_request *r);
/* *result = only a status and its message. */
void nmt_service_status_result(nmt_result *result, nmt_status status, const char *message);

/* A worker of s on device (device_index: CUDA's) with its translators
 * and batch scratch; its release (the thread already joined); its thread's
 * loop (arg the worker), which returns at shutdown (engine/service_worker.c). */
nmt_status nmt_service_worker_create(nmt_service *s, service_worker *w, nmt_device device,
                                     int device_index, nmt_error *err);
void nmt_service_worker_free(service_worker *w);
void *nmt_service_worker_main(void *arg);

/* Runs w's continuous batching for the requests with these search options
 * and shrinking (the queue head's when it starts) until the queue's head
 * has others, or is empty at shutdown (engine/service_stream.c). */
void nmt_service_stream_run(service_worker *w, const nmt_search_params *search, int shrink);

#endif /* NMT_SERVICE_IMPL_H */
