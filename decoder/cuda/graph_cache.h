/* graph_cache.h: private to engine/cuda/: replays a piece of launch work as a
 * CUDA graph once it has been seen a few times with the same key.
 *
 * A decoder step at a few rows is ~13 launches of a few microseconds each;
 * launched one by one, the host's launch overhead and the gaps between them
 * cost as much as the kernels (docs/perf/steps.md). Between compactions the
 * launches of a step are the same every other step (the row buffers swap),
 * and at batch 1 the same for every sentence of the same length, so the
 * backend keys each step (and each encoder pass) by everything its launches
 * depend on and replays a captured graph instead.
 *
 * The body's launches on `stream` must be a function of the key alone (device
 * data may differ; host values baked into launches must be in the key), and
 * the body must be safe to run again: its host-side effects a function of its
 * argument (the cache re-runs it eagerly when a capture fails). A key seen
 * fewer than NMT_GRAPH_CAPTURE_AT times runs eagerly: a graph pays its
 * instantiation only where it will be replayed. */
#ifndef NMT_GRAPH_CACHE_H
#define NMT_GRAPH_CACHE_H

#include "error.h"
#include "nmt_status.h"

#include <stddef.h>
#include <stdint.h>

enum { NMT_GRAPH_CAPTURE_AT = 3, NMT_GRAPH_KEY_MAX = 1152 };

typedef struct nmt_graph_cache nmt_graph_cache;
typedef nmt_status (*nmt_graph_body)(void *arg, nmt_error *err);

/* How nmt_graph_cache_run ran the body. */
typedef enum nmt_graph_run {
    NMT_GRAPH_EAGER = 0,    /* launched one by one */
    NMT_GRAPH_CAPTURED = 1, /* captured now, then the graph launched */
    NMT_GRAPH_REPLAYED = 2  /* the cached graph launched; the body did not run */
} nmt_graph_run;

/* capacity: graphs kept (least recently used ones are dropped). */
nmt_status nmt_graph_cache_create(int32_t capacity, nmt_graph_cache **cache, nmt_error *err);
void nmt_graph_cache_free(nmt_graph_cache *cache);

/* Runs body(arg) on stream (a cudaStream_t), eagerly, captured or replayed
 * (*how, may be NULL). A key longer than NMT_GRAPH_KEY_MAX always runs
 * eagerly. Callers zero their key structs before filling them (padding). */
nmt_status nmt_graph_cache_run(nmt_graph_cache *cache, const void *key, size_t key_bytes,
                               void *stream, nmt_graph_body body, void *arg, nmt_graph_run *how,
                               nmt_error *err);

/* Counters since create: bodies run eagerly, captures, replays, failed captures. */
void nmt_graph_cache_counts(const nmt_graph_cache *cache, int64_t counts[4]);

#endif /* NMT_GRAPH_CACHE_H */
