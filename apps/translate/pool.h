/* pool.h: translate's windows in flight (pool.c), a three-stage pipeline
 * over a ring of slots. A reader thread (reader.c) reads window after
 * window of input lines into the ring's free slots and tokenizes it
 * (nmt_translator_prepare); the workers, one thread a translator (a GPU
 * with --devices LIST, a CPU thread with --workers N, and one with one
 * translator), each take the oldest window read and decode it
 * (nmt_translate_prepared); the main thread writes the windows back in
 * input order. So with one translator the next window is read while the
 * current one is translated and the previous one written; with several,
 * they translate in parallel; the output is the same byte for byte, and
 * memory is bounded by the ring (2 windows a translator and one more),
 * whatever the input's length. */
#ifndef NMT_TRANSLATE_POOL_H
#define NMT_TRANSLATE_POOL_H

#include "nmt.h"
#include "options.h"

#include <pthread.h>
#include <stddef.h>

typedef struct input_line {
    char *text;
    size_t capacity;
    size_t bytes;      /* the line's length without "\n" / "\r\n", kept or not */
    int too_long;      /* longer than --max-line-bytes: only a prefix was kept */
    int has_nul;       /* an embedded NUL byte: refused here, the library takes C strings */
    int missing;       /* a target line past the end of its file */
} input_line;

/* One window: its lines, what goes to the translator, the results. */
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
    nmt_prepared *prepared; /* its lines checked and tokenized by the reader
                               (nmt_translator_prepare); NULL: the worker does it */
    input_line *target_lines; /* with targets: line i's target line (its --score-target or
                                 --target-prefix line), else NULL */
    const char **targets;     /* what the translator gets of them */
} chunk_slot;

typedef struct chunk_pool chunk_pool;

/* n_translators translators (not owned), one worker thread each; slots of
 * `chunk` lines; with a target (TRANSLATE_TARGET_SCORE: nmt_score_batch,
 * _PREFIX: nmt_translate_batch_prefix) each line has its target line. inline_worker with one translator starts no thread:
 * chunk_pool_oldest translates the oldest window on the calling thread
 * (interactive use, where each hand-off between threads is a wake-up on the
 * path of every line's answer). For the tests: NMT_TRANSLATE_INJECT_FAILURE=W makes every
 * window worker W takes fail as a device error would
 * (NMT_TRANSLATE_INJECT_RANK=R: only in MPI rank R); NMT_TRANSLATE_SLOTS=1
 * leaves one slot, so each window is read, translated and written before the
 * next is read (the unpipelined order, to compare with); NMT_TRANSLATE_HOLD=1
 * holds each worker's first window until every worker has taken one (at
 * most 10 s), so that which worker translates what does not depend on which
 * thread woke first. Returns 0, or -1
 * out of memory or threads. */
int chunk_pool_create(nmt_translator **translators, int n_translators, int chunk,
                      int inline_worker, translate_target target, chunk_pool **pool);
/* Stops the workers (one in nmt_translate_batch finishes that window first)
 * and frees the slots. The reader must have stopped. */
void chunk_pool_free(chunk_pool *pool);

/* The reader: waits for the ring's next slot to be free and returns it
 * (NULL once the pool is closed); submit prepares its lines on the calling
 * thread (checked and tokenized, nmt_translator_prepare: so tokenizing
 * overlaps the workers' decoding) and hands it to the workers; end says
 * that no more windows come. */
chunk_slot *chunk_pool_acquire(chunk_pool *pool);
void chunk_pool_submit(chunk_pool *pool, chunk_slot *slot);
void chunk_pool_end(chunk_pool *pool);

/* The writer: waits for the oldest window submitted to be translated and
 * returns it (NULL when the reader has ended and every window is written);
 * release frees its slot for the reader once it is written. close gives up:
 * the reader gets no more slots and the workers take no more windows. */
chunk_slot *chunk_pool_oldest(chunk_pool *pool);
void chunk_pool_release(chunk_pool *pool, chunk_slot *slot);
void chunk_pool_close(chunk_pool *pool);

/* The translators, one a worker. */
int chunk_pool_translators(const chunk_pool *pool);
/* The wall time, in seconds, while at least one window was being
 * translated (the translators' own decode times, summed, count an overlap
 * once per translator). */
double chunk_pool_decode_seconds(chunk_pool *pool);
/* The monotonic clock, in seconds, that the pool and the progress line read. */
double translate_now_seconds(void);

#endif /* NMT_TRANSLATE_POOL_H */
