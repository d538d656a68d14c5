/* invariance_service.c: test_invariance's service part (invariance.h): client
 * threads submit every line at random times to a service of several workers,
 * so that lines join batches (or a continuous stream) at random points, and
 * each answer must have the reference's bits. */
#include "invariance.h"

#include "test_results.h"
#include "test_util.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <threads.h>
#include <time.h>

enum { N_CLIENTS = 4 };

typedef struct client {
    nmt_service *service;
    int kind;
    uint64_t seed;
    int differ, failures;
} client;

/* Submits every line once, in a random order with pauses of 0-2 ms, so
 * that lines join batches at random times; then compares the answers. */
static int run_client(void *arg)
{
    client *c = arg;
    int order[MAX_LINES];
    nmt_request *handles[MAX_LINES] = {0};
    shuffled_lines(order, &c->seed);
    for (int k = 0; k < n_lines; k++) {
        const int line = order[k];
        nmt_error err = {NMT_STATUS_OK, ""};
        nmt_status st;
        nmt_request_options ro;
        nmt_request_options_init(&ro);
        ro.line_key = (uint64_t)line; /* as nmt_translate_batch keys the reference's */
        if (kind_call(c->kind) == CALL_PREFIX)
            ro.target_prefix = prefixes[line];
        else if (kind_call(c->kind) == CALL_SCORE)
            ro.target = targets[line];
        while ((st = nmt_service_submit(c->service, lines[line], &ro, NULL, NULL,
                                        &handles[line], &err)) == NMT_STATUS_BUSY)
            thrd_yield();
        if (st != NMT_STATUS_OK) {
            fprintf(stderr, "submit line %d: %s\n", line, err.message);
            c->failures++;
        }
        const long pause_us = (long)(test_rand_next(&c->seed) % 2000);
        if (pause_us < 1000) /* half of them at once */
            thrd_sleep(&(struct timespec){.tv_nsec = pause_us * 1000}, NULL);
    }
    for (int line = 0; line < n_lines; line++) {
        if (!handles[line])
            continue;
        nmt_request_wait(handles[line], -1.0);
        c->differ += report("service", c->kind, line, nmt_request_result(handles[line]));
        nmt_request_free(handles[line]);
    }
    return 0;
}

void run_service(int kind, int continuous, int max_delay_us)
{
    nmt_service_options so;
    nmt_service_options_init(&so);
    so.translator = kind_options(kind);
    so.translator.batch_size = 8;
    so.translator.warmup = 0;
    so.cpu_workers = 3;
    so.n_devices = -1; /* CUDA: every visible device */
    so.continuous = continuous;
    so.max_delay_us = max_delay_us;
    nmt_service *service = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    CHECK(nmt_service_create(model, &so, &service, &err) == NMT_STATUS_OK, "service: %s",
          err.message);
    if (!service)
        return;
    client clients[N_CLIENTS];
    thrd_t threads[N_CLIENTS];
    int started = 0;
    atomic_store(&printed, 0);
    for (int i = 0; i < N_CLIENTS; i++) {
        clients[i] = (client){.service = service, .kind = kind, .seed = test_rand_u64()};
        if (thrd_create(&threads[i], run_client, &clients[i]) == thrd_success)
            started++;
        else
            break;
    }
    CHECK(started == N_CLIENTS, "%d of %d client threads started", started, N_CLIENTS);
    int differ = 0, failures = 0;
    for (int i = 0; i < started; i++) {
        thrd_join(threads[i], NULL);
        differ += clients[i].differ;
        failures += clients[i].failures;
    }
    nmt_service_stats st;
    nmt_service_stats_get(service, &st);
    nmt_service_free(service);
    CHECK(differ == 0 && failures == 0, "service, kind %d: %d answers differ, %d failures",
          kind, differ, failures);
    printf("  service%-17s kind %d: %d of %d answers differ (%lld batches or joins)\n",
           continuous ? ", continuous" : "", kind, differ, started * n_lines,
           (long long)st.batches);
}
