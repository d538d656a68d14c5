/* graph_cache.c: see graph_cache.h. A small array searched linearly: the
 * backend holds a few dozen keys at most, and a lookup (a memcmp per entry)
 * costs far less than the launches it saves. Entries and their key buffers
 * are allocated once at create. */
#include "graph_cache.h"

#include "cuda_check.h"

#include <stdlib.h>
#include <string.h>

typedef struct graph_entry {
    size_t key_bytes;      /* 0: free */
    int32_t seen;          /* times run */
    int capture_failed;    /* never try again */
    uint64_t last_used;
    cudaGraphExec_t exec;  /* NULL until captured */
    unsigned char key[NMT_GRAPH_KEY_MAX];
} graph_entry;

struct nmt_graph_cache {
    graph_entry *entries;
    int32_t capacity;
    uint64_t clock;
    int64_t counts[4]; /* eager, captured, replayed, failed */
};

nmt_status nmt_graph_cache_create(int32_t capacity, nmt_graph_cache **cache, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_graph_cache *c = NULL;
    if (!cache || capacity < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "graph cache: capacity %d",
                             capacity);
    NMT_ALLOC(c, 1);
    NMT_ALLOC(c->entries, capacity);
    c->capacity = capacity;
    *cache = c;
    return NMT_STATUS_OK;
cleanup:
    nmt_graph_cache_free(c);
    return status;
}

static void entry_clear(graph_entry *e)
{
    if (e->exec)
        cudaGraphExecDestroy(e->exec);
    memset(e, 0, sizeof *e);
}

void nmt_graph_cache_free(nmt_graph_cache *cache)
{
    if (!cache)
        return;
    if (cache->entries)
        for (int32_t i = 0; i < cache->capacity; i++)
            entry_clear(&cache->entries[i]);
    free(cache->entries);
    free(cache);
}

void nmt_graph_cache_counts(const nmt_graph_cache *cache, int64_t counts[4])
{
    for (int i = 0; i < 4; i++)
        counts[i] = cache ? cache->counts[i] : 0;
}

/* The entry of key, or a free / least recently used one reset to it. */
static graph_entry *find_entry(nmt_graph_cache *c, const void *key, size_t key_bytes)
{
    graph_entry *victim = &c->entries[0];
    for (int32_t i = 0; i < c->capacity; i++) {
        graph_entry *e = &c->entries[i];
        if (e->key_bytes == key_bytes && !memcmp(e->key, key, key_bytes))
            return e;
        if (e->key_bytes == 0 || (victim->key_bytes != 0 && e->last_used < victim->last_used))
            victim = e;
    }
    entry_clear(victim);
    victim->key_bytes = key_bytes;
    memcpy(victim->key, key, key_bytes);
    return victim;
}

/* Captures body into e->exec. On failure the stream is left out of capture
 * and the error cleared: the caller runs the body eagerly instead. */
static int capture(graph_entry *e, cudaStream_t stream, nmt_graph_body body, void *arg)
{
    cudaGraph_t graph = NULL;
    nmt_error ignored = {0};
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const nmt_status body_status = body(arg, &ignored);
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    int ok = body_status == NMT_STATUS_OK && end == cudaSuccess && graph;
    if (ok && cudaGraphInstantiate(&e->exec, graph, 0) != cudaSuccess) {
        e->exec = NULL;
        ok = 0;
    }
    if (graph)
        cudaGraphDestroy(graph);
    if (!ok)
        (void)cudaGetLastError();
    return ok;
}

nmt_status nmt_graph_cache_run(nmt_graph_cache *cache, const void *key, size_t key_bytes,
                               void *stream, nmt_graph_body body, void *arg, nmt_graph_run *how,
                               nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    cudaStream_t s = (cudaStream_t)stream;
    nmt_graph_run ran = NMT_GRAPH_EAGER;
    graph_entry *e = NULL;
    if (cache && key_bytes > 0 && key_bytes <= NMT_GRAPH_KEY_MAX) {
        e = find_entry(cache, key, key_bytes);
        e->last_used = ++cache->clock;
        e->seen++;
    }
    if (e && !e->exec && !e->capture_failed && e->seen >= NMT_GRAPH_CAPTURE_AT) {
        if (capture(e, s, body, arg)) {
            ran = NMT_GRAPH_CAPTURED;
        } else {
            e->capture_failed = 1;
            cache->counts[3]++;
        }
    } else if (e && e->exec) {
        ran = NMT_GRAPH_REPLAYED;
    }
    if (ran == NMT_GRAPH_EAGER) {
        NMT_TRY(body(arg, err));
    } else {
        NMT_CUDA_TRY(cudaGraphLaunch(e->exec, s));
    }
    if (cache)
        cache->counts[ran]++;
    if (how)
        *how = ran;
cleanup:
    return status;
}
