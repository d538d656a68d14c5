/* pool.h: translate's chunks in flight (pool.c). One translator is one
 * worker (a CPU thread with --workers N, a GPU with --devices LIST); the main
 * thread reads chunk after chunk into a ring of slots, the workers translate
 * them in any order, and the main thread writes them back in input order,
 * so the output is the one worker's, byte for byte, and memory is bounded
 * by the ring. With one worker the pool runs no thread: each chunk is
 * translated where it is handed over, exactly as before. */
#ifndef NMT_TRANSLATE_POOL_H
#define NMT_TRANSLATE_POOL_H

#include "nmt.h"

#include <pthread.h>
#include <stddef.h>

typedef struct input_line {
    char *text;
    size_t capacity;
    size_t bytes;      /* the line's length without "\n" / "\r\n", kept or not */
    int too_long;      /* longer than --max-line-bytes: only a prefix was kept */
    int has_nul;       /* an embedded NUL byte: refused here, the library takes C strings */
} input_line;

/* One chunk: its lines, what goes to the translator, the results. */
typedef struct chunk_slot {
    input_line *lines;
    const char **texts;
    nmt_result *results;
    int n;
    long first_line;   /* 0-based number of its first line */
    int state;         /* pool.c: free, ready, running, done */
    nmt_status status; /* of the whole nmt_translate_batch call */
    nmt_error err;
    int worker;        /* which translator took it */
} chunk_slot;

typedef struct chunk_pool chunk_pool;

/* n_translators translators (not owned), slots of chunk lines each (2 per
 * worker, 1 with one worker). For the tests of the failure path, the
 * environment variable NMT_TRANSLATE_INJECT_FAILURE=W makes every chunk
 * worker W takes fail as a device error would (NMT_TRANSLATE_INJECT_RANK=R:
 * only in MPI rank R). */
int chunk_pool_create(nmt_translator **translators, int n_translators, int chunk,
                      chunk_pool **pool);
void chunk_pool_free(chunk_pool *pool);
int chunk_pool_capacity(const chunk_pool *pool);
/* The slot the next chunk is read into (the ring's next; it is free). */
chunk_slot *chunk_pool_next(chunk_pool *pool);
/* Hands the slot just read over: translated at once with one worker, else
 * queued for the workers. */
void chunk_pool_submit(chunk_pool *pool, chunk_slot *slot);
/* Waits for the oldest slot handed over and returns it (NULL when none is
 * in flight); chunk_pool_release frees it after it has been written. */
chunk_slot *chunk_pool_oldest(chunk_pool *pool);
void chunk_pool_release(chunk_pool *pool, chunk_slot *slot);

#endif /* NMT_TRANSLATE_POOL_H */
