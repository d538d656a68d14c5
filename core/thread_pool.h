/* thread_pool.h: a fixed set of threads that run one function in parts,
 * for the CPU kernels' intra-op threads (--threads). The caller and the
 * workers claim the parts one at a time, so a thread the machine does not
 * run leaves its share to the others; the caller returns when every part
 * is done. The parts are the caller's split of the work, so a result never
 * depends on which thread ran a part. Workers spin briefly for the next
 * call, then sleep. */
#ifndef NMT_THREAD_POOL_H
#define NMT_THREAD_POOL_H

#include "nmt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_thread_pool nmt_thread_pool;

/* Part `part` of `parts` of a job. */
typedef void (*nmt_parallel_fn)(void *arg, int part, int parts);

/* threads >= 1 (the caller counts as one; threads - 1 are started). */
nmt_status nmt_thread_pool_create(int threads, nmt_thread_pool **pool, nmt_error *err);
void nmt_thread_pool_free(nmt_thread_pool *pool);

/* The threads a call may use: 1 for NULL. */
int nmt_thread_pool_threads(const nmt_thread_pool *pool);

/* fn(arg, p, parts) once for every p in [0, parts) (parts >= 1), on
 * whichever thread claims it; one caller at a time. */
void nmt_thread_pool_run(nmt_thread_pool *pool, int parts, nmt_parallel_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* NMT_THREAD_POOL_H */
