/* thread_pool.c: core/thread_pool.h. Every job bumps a generation counter
 * that each worker acknowledges, needed or not, so no worker can lag a job
 * behind and the caller's fields stay fixed until every worker has read
 * them. Waiting spins first: a decode step's products come a few
 * microseconds apart, and a sleeping thread takes tens to wake. */
#include "thread_pool.h"

#include "error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Polls before sleeping: about 0.1-0.3 ms of pause instructions. */
enum { kSpin = 4096 };

typedef struct worker {
    nmt_thread_pool *pool;
    int index;
} worker;

struct nmt_thread_pool {
    int threads, started;
    pthread_t *handles;
    worker *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    atomic_uint generation;
    atomic_int pending; /* workers yet to acknowledge the current job */
    int stop;
    nmt_parallel_fn fn;
    void *arg;
    int parts;
};

static void *worker_main(void *p)
{
    const worker *self = p;
    nmt_thread_pool *pool = self->pool;
    unsigned seen = 0;
    for (;;) {
        for (int s = 0; s < kSpin && atomic_load_explicit(&pool->generation,
                                                          memory_order_acquire) == seen; s++)
            cpu_relax();
        if (atomic_load_explicit(&pool->generation, memory_order_acquire) == seen) {
            pthread_mutex_lock(&pool->lock);
            while (atomic_load(&pool->generation) == seen && !pool->stop)
                pthread_cond_wait(&pool->wake, &pool->lock);
            const int stop = pool->stop;
            pthread_mutex_unlock(&pool->lock);
            if (stop)
                return NULL;
        }
        seen++;
        if (self->index < pool->parts)
            pool->fn(pool->arg, self->index, pool->parts);
        if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
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
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->pending, 0);
    NMT_ALLOC(pool->handles, threads);
    NMT_ALLOC(pool->workers, threads);
    for (int i = 1; i < threads; i++) {
        pool->workers[i] = (worker){.pool = pool, .index = i};
        if (pthread_create(&pool->handles[i], NULL, worker_main, &pool->workers[i]) != 0) {
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
    free(pool->workers);
    free(pool);
}

int nmt_thread_pool_threads(const nmt_thread_pool *pool)
{
    return pool ? pool->threads : 1;
}

void nmt_thread_pool_run(nmt_thread_pool *pool, int parts, nmt_parallel_fn fn, void *arg)
{
    const int threads = nmt_thread_pool_threads(pool);
    parts = parts < 1 ? 1 : parts > threads ? threads : parts;
    if (parts == 1) {
        fn(arg, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    pool->parts = parts;
    atomic_store_explicit(&pool->pending, threads - 1, memory_order_relaxed);
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    fn(arg, 0, parts);
    for (int s = 0; s < kSpin && atomic_load_explicit(&pool->pending, memory_order_acquire); s++)
        cpu_relax();
    if (atomic_load_explicit(&pool->pending, memory_order_acquire)) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load(&pool->pending))
            pthread_cond_wait(&pool->done, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
    }
}
