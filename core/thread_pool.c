/* thread_pool.c: core/thread_pool.h. A job is a generation number and a
 * count of parts; the caller and the workers claim parts one at a time
 * from one atomic word, (generation << 32) | next part, by compare and
 * swap. A claim succeeds only while the job is that generation's and has
 * parts left, so a worker that wakes late finds nothing and runs no part
 * of a newer job: the caller never waits for a thread that is not running
 * (an oversubscribed machine), only for parts being run. Before the next
 * job's fields are written the word moves to an odd generation, which has
 * no parts: a claim read against the old word then fails instead of
 * pairing it with the new fields. Open jobs have even generations.
 * Workers spin a while for the next job, then sleep. */
#include "thread_pool.h"

#include "error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Polls before sleeping: about 0.1-0.3 ms of pause instructions. */
enum { kSpin = 4096 };

struct nmt_thread_pool {
    int threads, started;
    pthread_t *handles;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    _Atomic uint64_t next; /* generation << 32 | the next part to claim */
    atomic_int finished;   /* parts of the current job run to their end */
    int stop;              /* under lock */
    /* The current job: written after the old job's word is closed and
     * before the new one opens. A late worker may read them while they are
     * written; having read a new value it also sees the word closed (release
     * stores, acquire loads), so its claim fails and it drops them. */
    _Atomic(nmt_parallel_fn) fn;
    _Atomic(void *) arg;
    atomic_int parts;
};

/* Claims and runs parts of the job `seen` (the value of next that
 * announced it) until none is left; returns the job's generation. */
static uint32_t run_parts(nmt_thread_pool *pool, uint64_t seen)
{
    const uint32_t generation = (uint32_t)(seen >> 32);
    uint64_t v = atomic_load_explicit(&pool->next, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(v >> 32) != generation || (generation & 1))
            return generation;
        const nmt_parallel_fn fn = atomic_load_explicit(&pool->fn, memory_order_acquire);
        void *arg = atomic_load_explicit(&pool->arg, memory_order_acquire);
        const int parts = atomic_load_explicit(&pool->parts, memory_order_acquire);
        const int part = (int)(uint32_t)v;
        if (part >= parts)
            return generation;
        if (!atomic_compare_exchange_weak_explicit(&pool->next, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue; /* v reloaded */
        fn(arg, part, parts);
        if (atomic_fetch_add_explicit(&pool->finished, 1, memory_order_acq_rel) + 1 == parts) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
        v = atomic_load_explicit(&pool->next, memory_order_acquire);
    }
}

static void *worker_main(void *p)
{
    nmt_thread_pool *pool = p;
    uint32_t seen = 0; /* the last generation worked on */
    for (;;) {
        uint64_t v = atomic_load_explicit(&pool->next, memory_order_acquire);
        for (int s = 0; s < kSpin && (uint32_t)(v >> 32) == seen; s++) {
            cpu_relax();
            v = atomic_load_explicit(&pool->next, memory_order_acquire);
        }
        if ((uint32_t)(v >> 32) == seen) {
            pthread_mutex_lock(&pool->lock);
            while ((uint32_t)((v = atomic_load(&pool->next)) >> 32) == seen && !pool->stop)
                pthread_cond_wait(&pool->wake, &pool->lock);
            const int stop = pool->stop;
            pthread_mutex_unlock(&pool->lock);
            if (stop)
                return NULL;
        }
        seen = run_parts(pool, v);
    }
}

nmt_status nmt_thread_pool_create(int threads, nmt_thread_pool **pool_out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_thread_pool *pool = NULL;
    *pool_out = NULL;
    if (threads < 1 || threads > 4096)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "thread pool: %d threads outside [1, 4096]", threads);
    NMT_ALLOC(pool, 1);
    pool->threads = threads;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    atomic_init(&pool->next, 0);
    atomic_init(&pool->finished, 0);
    NMT_ALLOC(pool->handles, threads);
    for (int i = 1; i < threads; i++) {
        if (pthread_create(&pool->handles[i], NULL, worker_main, pool) != 0) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                                   "thread pool: could not start thread %d of %d", i, threads);
            goto cleanup;
        }
        pool->started = i;
    }
    *pool_out = pool;
    return NMT_STATUS_OK;
cleanup:
    nmt_thread_pool_free(pool);
    return status;
}

void nmt_thread_pool_free(nmt_thread_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 1; i <= pool->started; i++)
        pthread_join(pool->handles[i], NULL);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    free(pool->handles);
    free(pool);
}

int nmt_thread_pool_threads(const nmt_thread_pool *pool)
{
    return pool ? pool->threads : 1;
}

void nmt_thread_pool_run(nmt_thread_pool *pool, int parts, nmt_parallel_fn fn, void *arg)
{
    parts = parts < 1 ? 1 : parts;
    if (nmt_thread_pool_threads(pool) == 1 || parts == 1) {
        for (int p = 0; p < parts; p++)
            fn(arg, p, parts);
        return;
    }
    /* The previous job is over (every part finished); close its word (an
     * odd generation), then write the new job and open it. */
    const uint64_t closed = ((atomic_load_explicit(&pool->next, memory_order_relaxed) >> 32) + 1)
                            & 0xffffffffu;
    atomic_store_explicit(&pool->next, closed << 32, memory_order_seq_cst);
    atomic_store_explicit(&pool->fn, fn, memory_order_release);
    atomic_store_explicit(&pool->arg, arg, memory_order_release);
    atomic_store_explicit(&pool->parts, parts, memory_order_release);
    atomic_store_explicit(&pool->finished, 0, memory_order_relaxed);
    const uint64_t start = ((closed + 1) & 0xffffffffu) << 32;
    pthread_mutex_lock(&pool->lock);
    atomic_store_explicit(&pool->next, start, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    run_parts(pool, start);
    for (int s = 0; s < kSpin && atomic_load_explicit(&pool->finished, memory_order_acquire) <
                                     parts; s++)
        cpu_relax();
    if (atomic_load_explicit(&pool->finished, memory_order_acquire) < parts) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load(&pool->finished) < parts)
            pthread_cond_wait(&pool->done, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
    }
}
