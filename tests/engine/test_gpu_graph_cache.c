/* test_gpu_graph_cache.c: engine/cuda/graph_cache.c, the CUDA graph cache
 * behind the backend's replayed steps. A body that fills a device buffer with
 * its key's value must give the same buffer however it ran: eagerly for a
 * key's first NMT_GRAPH_CAPTURE_AT - 1 runs, captured at the next, replayed
 * after (the body itself no longer called). A body that breaks its capture
 * (a stream synchronize) falls back to eager runs; the least recently used
 * key is dropped when the cache is full. Exit 77 without a GPU. */
#include "graph_cache.h"
#include "cuda_ctx.h"
#include "test_util.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 4099 };

typedef struct fill_work {
    cudaStream_t stream;
    int *buf;
    int value;
    int calls;      /* host effect: how often the body ran */
    int break_it;   /* synchronize inside the body: not capturable */
} fill_work;

static nmt_status fill_body(void *arg, nmt_error *err)
{
    fill_work *w = (fill_work *)arg;
    w->calls++;
    if (cudaMemsetAsync(w->buf, w->value, sizeof(int) * N, w->stream) != cudaSuccess)
        return nmt_error_set(err, NMT_STATUS_ERROR_CUDA, "memset");
    if (w->break_it && cudaStreamSynchronize(w->stream) != cudaSuccess)
        return nmt_error_set(err, NMT_STATUS_ERROR_CUDA, "synchronize during capture");
    return NMT_STATUS_OK;
}

/* Poisons the buffer, runs the key, returns how it ran (-1 on error) and
 * checks every byte came from this run. */
static int run_once(nmt_graph_cache *cache, fill_work *w)
{
    static int host[N];
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_graph_run how = NMT_GRAPH_EAGER;
    if (cudaMemsetAsync(w->buf, 0xA5, sizeof(int) * N, w->stream) != cudaSuccess)
        return -1;
    const int key = w->value;
    nmt_status st = nmt_graph_cache_run(cache, &key, sizeof key, w->stream, fill_body, w, &how,
                                        &err);
    CHECK(st == NMT_STATUS_OK, "key %d: %s", key, err.message);
    if (st != NMT_STATUS_OK || cudaStreamSynchronize(w->stream) != cudaSuccess ||
        cudaMemcpy(host, w->buf, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess)
        return -1;
    int expect;
    memset(&expect, w->value, sizeof expect);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += host[i] != expect;
    CHECK(bad == 0, "key %d (ran %d): %d of %d words wrong", key, (int)how, bad, N);
    return (int)how;
}

int main(void)
{
    if (nmt_cuda_device_count() == 0) {
        fprintf(stderr, "skipped: no GPU\n");
        return NMT_TEST_SKIP;
    }
    nmt_graph_cache *cache = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    cudaStream_t stream;
    int *buf = NULL;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc((void **)&buf, sizeof(int) * N) != cudaSuccess ||
        nmt_graph_cache_create(2, &cache, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "set-up failed: %s\n", err.message);
        return 1;
    }

    /* One key: eager, eager, captured, then replayed without calling the body. */
    fill_work a = {stream, buf, 0x11, 0, 0};
    for (int i = 1; i <= NMT_GRAPH_CAPTURE_AT + 2; i++) {
        const int how = run_once(cache, &a);
        const int want = i < NMT_GRAPH_CAPTURE_AT    ? NMT_GRAPH_EAGER
                         : i == NMT_GRAPH_CAPTURE_AT ? NMT_GRAPH_CAPTURED
                                                     : NMT_GRAPH_REPLAYED;
        CHECK(how == want, "run %d of key a: ran %d, want %d", i, how, want);
    }
    CHECK(a.calls == NMT_GRAPH_CAPTURE_AT, "the body ran %d times, want %d", a.calls,
          NMT_GRAPH_CAPTURE_AT);

    /* A body that cannot be captured: eager every time, the failure counted
     * once. Not under NMT_TEST_SMALL (gpu-check's compute-sanitizer runs),
     * where memcheck would count the three API errors it provokes on purpose. */
    const char *small = getenv("NMT_TEST_SMALL");
    const int provoke = !(small && *small == '1');
    fill_work broken = {stream, buf, 0x22, 0, 1};
    for (int i = 1; provoke && i <= NMT_GRAPH_CAPTURE_AT + 2; i++)
        CHECK(run_once(cache, &broken) == NMT_GRAPH_EAGER, "broken body, run %d not eager", i);
    int64_t counts[4];
    nmt_graph_cache_counts(cache, counts);
    CHECK(counts[3] == provoke, "%lld failed captures, want %d", (long long)counts[3], provoke);
    CHECK(counts[NMT_GRAPH_REPLAYED] == 2, "%lld replays, want 2",
          (long long)counts[NMT_GRAPH_REPLAYED]);

    /* Capacity 2, full (a, then the same key 0x22 as broken's): key a, the
     * least recently used, is dropped for key c. */
    fill_work plain = {stream, buf, 0x22, 0, 0};
    CHECK(run_once(cache, &plain) == NMT_GRAPH_EAGER, "key 0x22 not eager");
    fill_work c = {stream, buf, 0x33, 0, 0};
    CHECK(run_once(cache, &c) == NMT_GRAPH_EAGER, "key c's first run not eager");
    CHECK(run_once(cache, &a) == NMT_GRAPH_EAGER, "key a not dropped: it replayed");

    nmt_graph_cache_free(cache);
    cudaFree(buf);
    cudaStreamDestroy(stream);
    return test_finish("test_gpu_graph_cache");
}
