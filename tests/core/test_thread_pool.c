/* test_thread_pool.c: core/thread_pool.h. Over thousands of jobs of 1 to
 * 8 parts, on 1 to 4 threads (more parts than threads among them): each
 * part runs exactly once a job, with the job's part count, and the call
 * returns only after all of them (the counts are read right after it,
 * unsynchronized); a NULL pool runs every part in the caller; bad thread
 * counts are refused. */
#include "thread_pool.h"
#include "test_util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

enum { MAX_PARTS = 8, JOBS = 20000 };

typedef struct job {
    atomic_int runs[MAX_PARTS];
    atomic_int wrong_parts;
    int want_parts;
    long payload[MAX_PARTS]; /* plain writes the caller reads after the call */
} job;

static void run_part(void *arg, int part, int parts)
{
    job *j = arg;
    if (parts != j->want_parts)
        atomic_fetch_add(&j->wrong_parts, 1);
    if (part >= 0 && part < MAX_PARTS) {
        atomic_fetch_add(&j->runs[part], 1);
        for (volatile int spin = 0; spin < (part * 37) % 200; spin++)
            ;
        j->payload[part] += part + 1;
    }
}

int main(void)
{
    test_seed();
    nmt_thread_pool *pool = NULL;
    nmt_error err = {0};
    CHECK(nmt_thread_pool_create(0, &pool, &err) == NMT_STATUS_ERROR_ARGUMENT && !pool,
          "0 threads refused");
    CHECK(strstr(err.message, "0 threads") != NULL, "message names the count: %s", err.message);
    CHECK(nmt_thread_pool_threads(NULL) == 1, "NULL pool: 1 thread");
    nmt_thread_pool_free(NULL);
    for (int threads = 1; threads <= 4; threads++) {
        CHECK(nmt_thread_pool_create(threads, &pool, NULL) == NMT_STATUS_OK, "create %d",
              threads);
        if (!pool)
            continue;
        CHECK(nmt_thread_pool_threads(pool) == threads, "threads %d", threads);
        int bad = 0;
        for (int i = 0; i < JOBS; i++) {
            job j;
            memset(&j, 0, sizeof j);
            const int asked = test_rand_int(0, MAX_PARTS + 1);
            const int parts = asked < 1 ? 1 : asked;
            j.want_parts = parts;
            nmt_thread_pool_run(pool, asked, run_part, &j);
            for (int p = 0; p < MAX_PARTS; p++) {
                const int want = p < parts;
                if (atomic_load(&j.runs[p]) != want || j.payload[p] != want * (p + 1))
                    bad++;
            }
            bad += atomic_load(&j.wrong_parts);
        }
        CHECK(bad == 0, "%d threads: %d parts ran other than once or with a wrong count",
              threads, bad);
        nmt_thread_pool_free(pool);
        pool = NULL;
    }
    job j;
    memset(&j, 0, sizeof j);
    j.want_parts = 5;
    nmt_thread_pool_run(NULL, 5, run_part, &j);
    CHECK(atomic_load(&j.runs[0]) == 1 && atomic_load(&j.runs[4]) == 1 &&
          atomic_load(&j.runs[5]) == 0 && !atomic_load(&j.wrong_parts),
          "NULL pool: every part in the caller");
    return test_finish("test_thread_pool");
}
