/* test_service.c: the service object of nmt.h on the CPU backend.
 *
 * Determinism under concurrency: client threads submit every line, in
 * different orders and with mixed per-request options (the service's, a
 * smaller beam with n-best 2 and another alpha, shrinking off), through
 * handles and through fire-and-forget callbacks, to a service with two
 * workers that batch them as they arrive; every answer must equal, text and
 * scores bit for bit, what nmt_translate_batch gives a translator with the
 * same options for the same line (a bad line: the same error). Then the
 * service's contract, each part with a service whose workers wait a long
 * batching window so that requests stay queued: BUSY at capacity, cancel of
 * a queued request, a deadline that passes in the queue, shutdown with and
 * without draining, CLOSED after it, options refused at submit, a handle
 * outliving its service, and counters that add up.
 *
 * tests/engine/test_gpu_service.c includes this file with TEST_SERVICE_GPU 1:
 * the determinism part on a CUDA worker with continuous batching (on) (requests
 * join and leave one running search; kinds with other options end a stream
 * and start another). There too every answer must equal nmt_translate_batch's
 * bit for bit: batch invariance (docs/decoding.md) makes the stream's rows
 * add in the batch's order; the first answer that differs is printed. */
#include "nmt.h"
#include "cuda_ctx.h"
#include "test_util.h"


#ifndef TEST_SERVICE_GPU
#define TEST_SERVICE_GPU 0
#endif

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

enum { N_LINES = 30, N_CLIENTS = 4, N_KINDS = 3, BEAM = 3 };

static const char *const words[] = {"ein", "mann", "frau", "hund", "spielt", "im", "park",
                                    "Haus", "rot", "Ball", ".", "!", "Zwei", "kind", "läuft"};
static char text[N_LINES][256];
static const char *lines[N_LINES];
static nmt_model *model;
/* ref[kind][line]: nmt_translate_batch's answer for the request kind. */
static nmt_result ref[N_KINDS][N_LINES];

static nmt_options base_options(void)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = TEST_SERVICE_GPU ? NMT_DEVICE_CUDA : NMT_DEVICE_CPU;
    o.warmup = 0;
    o.beam_size = BEAM;
    o.n_best = 1;
    o.batch_size = 6;
    o.max_len_b = 8;
    o.max_line_bytes = 200;
    o.shrink.mode = NMT_SHRINK_LSH;
    o.shrink.k = 8, o.shrink.u = 2, o.shrink.w = 16, o.shrink.top = 20;
    o.shrink.threshold = 2;
    return o;
}

/* Request kinds: 0 the service's options (with LSH), 1 beam 2, n-best 2,
 * alpha 0.6 (with LSH), 2 the service's search without shrinking. */
static nmt_request_options kind_options(int kind)
{
    nmt_request_options r;
    nmt_request_options_init(&r);
    if (kind == 1) {
        r.beam_size = 2;
        r.n_best = 2;
        r.alpha = 0.6f;
    } else if (kind == 2) {
        r.shrink = 0;
    }
    return r;
}

static nmt_options kind_translator(int kind)
{
    nmt_options o = base_options();
    if (kind == 1) {
        o.beam_size = 2;
        o.n_best = 2;
        o.alpha = 0.6f;
    } else if (kind == 2) {
        o.shrink.mode = NMT_SHRINK_NONE;
    }
    return o;
}

static int same_hypotheses(const nmt_result *a, const nmt_result *b)
{
    if (a->status != b->status || a->n_hypotheses != b->n_hypotheses)
        return 0;
    if (a->status != NMT_STATUS_OK)
        return strcmp(a->message, b->message) == 0;
    for (int h = 0; h < a->n_hypotheses; h++) {
        const nmt_hypothesis *x = &a->hypotheses[h], *y = &b->hypotheses[h];
        if (strcmp(x->text, y->text) != 0 || memcmp(&x->score, &y->score, sizeof x->score) ||
            memcmp(&x->log_prob, &y->log_prob, sizeof x->log_prob) || x->n_tokens != y->n_tokens)
            return 0;
        for (int t = 0; t < x->n_tokens; t++)
            if (!x->alignment || !y->alignment || x->alignment[t] != y->alignment[t])
                return 0;
    }
    return 1;
}

/* same_hypotheses, printing the first answer that is not (a: the service's). */
static int same_result(const nmt_result *a, const nmt_result *b)
{
    static atomic_flag printed = ATOMIC_FLAG_INIT;
    if (same_hypotheses(a, b))
        return 1;
    if (!atomic_flag_test_and_set(&printed)) {
        fprintf(stderr, "an answer differs: status %d vs %d (%s / %s), %d vs %d hypotheses\n",
                (int)a->status, (int)b->status, a->message, b->message, a->n_hypotheses,
                b->n_hypotheses);
        for (int h = 0; h < a->n_hypotheses && h < b->n_hypotheses; h++)
            fprintf(stderr, "  hyp %d: [%.6f / %.6f] %s\n    vs [%.6f / %.6f] %s\n", h,
                    a->hypotheses[h].score, a->hypotheses[h].log_prob, a->hypotheses[h].text,
                    b->hypotheses[h].score, b->hypotheses[h].log_prob, b->hypotheses[h].text);
    }
    return 0;
}

/* ---- determinism under concurrency ---------------------------------------- */

typedef struct client {
    nmt_service *service;
    int id;
    int mismatches, failures;
    char message[600];
} client;

static atomic_int callbacks_done, callback_mismatches;

static void on_done(nmt_request *request, const nmt_result *result, void *user)
{
    (void)request;
    const intptr_t code = (intptr_t)user; /* kind * N_LINES + line */
    if (!same_result(result, &ref[code / N_LINES][code % N_LINES]))
        atomic_fetch_add(&callback_mismatches, 1);
    atomic_fetch_add(&callbacks_done, 1);
}

static int run_client(void *arg)
{
    client *c = arg;
    nmt_request *handles[N_LINES];
    int kinds[N_LINES];
    static const int coprime[N_CLIENTS] = {1, 7, 11, 13}; /* to N_LINES: permutations */
    for (int k = 0; k < N_LINES; k++) {
        const int line = (k * coprime[c->id] + c->id) % N_LINES;
        kinds[line] = (line + c->id) % N_KINDS;
        const nmt_request_options o = kind_options(kinds[line]);
        nmt_error err = {0};
        nmt_status st;
        do { /* BUSY is not expected at this capacity, but is the caller's to retry */
            st = nmt_service_submit(c->service, lines[line], &o, NULL, NULL, &handles[line], &err);
        } while (st == NMT_STATUS_BUSY);
        if (st != NMT_STATUS_OK) {
            snprintf(c->message, sizeof c->message, "submit line %d: %s", line, err.message);
            c->failures++;
            handles[line] = NULL;
        }
        /* and a fire-and-forget copy, answered through the callback */
        const intptr_t code = (intptr_t)kinds[line] * N_LINES + line;
        if (nmt_service_submit(c->service, lines[line], &o, on_done, (void *)code, NULL, &err) !=
            NMT_STATUS_OK)
            c->failures++;
    }
    for (int line = 0; line < N_LINES; line++) {
        if (!handles[line])
            continue;
        if (!nmt_request_wait(handles[line], -1.0))
            c->failures++;
        else if (!same_result(nmt_request_result(handles[line]), &ref[kinds[line]][line]))
            c->mismatches++;
        nmt_request_free(handles[line]);
    }
    return 0;
}

static void test_determinism(void)
{
    for (int kind = 0; kind < N_KINDS; kind++) {
        const nmt_options o = kind_translator(kind);
        nmt_translator *t = NULL;
        nmt_error err = {0};
        CHECK(nmt_translator_create(model, &o, &t, &err) == NMT_STATUS_OK, "%s", err.message);
        if (!t)
            return;
        CHECK(nmt_translate_batch(t, lines, N_LINES, ref[kind], &err) == NMT_STATUS_OK, "%s",
              err.message);
        nmt_translator_free(t);
    }
    /* Each target token's alignment is a source token (at most one a byte). */
    for (int i = 0; i < N_LINES; i++)
        for (int h = 0; h < ref[1][i].n_hypotheses; h++)
            for (int t = 0; t < ref[1][i].hypotheses[h].n_tokens; t++) {
                const int a = ref[1][i].hypotheses[h].alignment[t];
                CHECK(a >= 0 && a < (int)strlen(lines[i]), "line %d hyp %d token %d aligned to "
                      "source token %d", i, h, t, a);
            }
    CHECK(ref[0][0].status == NMT_STATUS_ERROR_INPUT && ref[0][1].status == NMT_STATUS_ERROR_INPUT,
          "the bad lines are refused by the translator (%d, %d)", ref[0][0].status,
          ref[0][1].status);

    nmt_service_options so;
    nmt_service_options_init(&so);
    so.translator = base_options();
    so.cpu_workers = 2;
    so.max_delay_us = 2000;
    so.continuous = TEST_SERVICE_GPU; /* the GPU variant tests continuous batching */
    nmt_service *service = NULL;
    nmt_error err = {0};
    CHECK(nmt_service_create(model, &so, &service, &err) == NMT_STATUS_OK, "%s", err.message);
    if (!service)
        return;
    client clients[N_CLIENTS];
    thrd_t threads[N_CLIENTS];
    for (int i = 0; i < N_CLIENTS; i++) {
        clients[i] = (client){service, i, 0, 0, ""};
        CHECK(thrd_create(&threads[i], run_client, &clients[i]) == thrd_success, "thread %d", i);
    }
    for (int i = 0; i < N_CLIENTS; i++) {
        thrd_join(threads[i], NULL);
        CHECK(clients[i].failures == 0, "client %d: %d failures (%s)", i, clients[i].failures,
              clients[i].message);
        CHECK(clients[i].mismatches == 0, "client %d: %d answers differ from nmt_translate_batch",
              i, clients[i].mismatches);
    }
    int64_t finished = -1, cancelled = -1;
    nmt_service_shutdown(service, 1, &finished, &cancelled);
    CHECK(atomic_load(&callbacks_done) == N_CLIENTS * N_LINES, "%d callbacks, want %d",
          atomic_load(&callbacks_done), N_CLIENTS * N_LINES);
    CHECK(atomic_load(&callback_mismatches) == 0, "%d callback answers differ",
          atomic_load(&callback_mismatches));
    nmt_service_stats st;
    nmt_service_stats_get(service, &st);
    const int64_t total = 2 * N_CLIENTS * N_LINES;
    CHECK(st.submitted == total && st.completed == total && st.queued == 0 && st.running == 0,
          "submitted %lld completed %lld queued %lld running %lld, want %lld", (long long)st.submitted,
          (long long)st.completed, (long long)st.queued, (long long)st.running, (long long)total);
    CHECK(st.cancelled == 0 && st.expired == 0 && st.rejected == 0, "cancelled %lld expired %lld "
          "rejected %lld", (long long)st.cancelled, (long long)st.expired, (long long)st.rejected);
    /* the two bad lines of every client's two copies */
    CHECK(st.failed == 2 * 2 * N_CLIENTS, "failed %lld, want %d", (long long)st.failed,
          4 * N_CLIENTS);
    CHECK(st.batches > 0 && st.batch_sentences <= st.batches * so.translator.batch_size &&
              st.batch_sentences == total,
          "%lld batches of %lld sentences", (long long)st.batches, (long long)st.batch_sentences);
    printf("determinism (%s): %lld requests in %lld batches or joins (%.2f each), all equal to "
           "nmt_translate_batch\n", TEST_SERVICE_GPU ? "CUDA, continuous batching" : "CPU",
           (long long)total, (long long)st.batches,
           (double)st.batch_sentences / (double)st.batches);
    nmt_service_free(service);
}

/* ---- the contract, with requests held in the queue ------------------------ */

/* One worker that waits `delay_ms` for a batch to fill (batch_size 6). */
static nmt_service *slow_service(int capacity, int delay_ms, int shrink)
{
    nmt_service_options so;
    nmt_service_options_init(&so);
    so.translator = base_options();
    if (!shrink)
        so.translator.shrink.mode = NMT_SHRINK_NONE;
    so.queue_capacity = capacity;
    so.max_delay_us = delay_ms * 1000;
    nmt_service *service = NULL;
    nmt_error err = {0};
    CHECK(nmt_service_create(model, &so, &service, &err) == NMT_STATUS_OK, "%s", err.message);
    return service;
}

static nmt_status submit(nmt_service *s, const char *line, const nmt_request_options *o,
                         nmt_request **r)
{
    nmt_error err = {0};
    return nmt_service_submit(s, line, o, NULL, NULL, r, &err);
}

static void test_contract(void)
{
    nmt_service *s = slow_service(2, 800, 1);
    if (!s)
        return;
    nmt_request *a = NULL, *b = NULL, *c = NULL;
    CHECK(submit(s, lines[5], NULL, &a) == NMT_STATUS_OK, "first submit");
    CHECK(submit(s, lines[6], NULL, &b) == NMT_STATUS_OK, "second submit");
    CHECK(submit(s, lines[7], NULL, &c) == NMT_STATUS_BUSY && c == NULL,
          "a third request at capacity 2 is refused with BUSY");
    CHECK(!nmt_request_done(b) && nmt_request_result(b) == NULL, "b waits in the queue");
    nmt_request_cancel(b);
    CHECK(nmt_request_done(b) && nmt_request_result(b)->status == NMT_STATUS_CANCELLED,
          "a queued request completes at once when cancelled");
    CHECK(nmt_request_wait(a, 10000.0) && nmt_request_result(a)->status == NMT_STATUS_OK &&
              same_result(nmt_request_result(a), &ref[0][5]),
          "the other one is translated after the batching window");
    nmt_request_free(a);
    nmt_request_free(b);

    nmt_request_options o;
    nmt_request_options_init(&o);
    o.deadline_ms = 1.0;
    nmt_request *d = NULL;
    CHECK(submit(s, lines[8], &o, &d) == NMT_STATUS_OK, "deadline submit");
    CHECK(d && nmt_request_wait(d, 10000.0) &&
              nmt_request_result(d)->status == NMT_STATUS_DEADLINE,
          "a request whose 1 ms deadline passes in an 800 ms window expires");
    nmt_request_free(d);

    o.deadline_ms = 0.0;
    o.beam_size = BEAM + 1;
    CHECK(submit(s, lines[8], &o, &d) == NMT_STATUS_ERROR_ARGUMENT, "beam above the service's");
    o.beam_size = 2;
    o.n_best = 3;
    CHECK(submit(s, lines[8], &o, &d) == NMT_STATUS_ERROR_ARGUMENT, "n_best above the beam");
    nmt_request_options_init(&o);
    o.deadline_ms = -5.0;
    CHECK(submit(s, lines[8], &o, &d) == NMT_STATUS_ERROR_ARGUMENT, "negative deadline");

    /* Shutdown without draining cancels what is queued; later submits: CLOSED. */
    nmt_request *q[2] = {NULL, NULL};
    CHECK(submit(s, lines[9], NULL, &q[0]) == NMT_STATUS_OK, "queued 0");
    CHECK(submit(s, lines[10], NULL, &q[1]) == NMT_STATUS_OK, "queued 1");
    int64_t finished = -1, cancelled = -1;
    nmt_service_shutdown(s, 0, &finished, &cancelled);
    CHECK(finished == 0 && cancelled == 2, "shutdown without draining: %lld finished, %lld "
          "cancelled", (long long)finished, (long long)cancelled);
    for (int i = 0; i < 2; i++)
        CHECK(q[i] && nmt_request_done(q[i]) &&
                  nmt_request_result(q[i])->status == NMT_STATUS_CANCELLED,
              "queued %d is cancelled", i);
    CHECK(submit(s, lines[9], NULL, &d) == NMT_STATUS_CLOSED, "submit after shutdown");
    nmt_service_stats st;
    nmt_service_stats_get(s, &st);
    CHECK(st.submitted == 5 && st.completed == 5 && st.cancelled == 3 && st.expired == 1 &&
              st.rejected == 1,
          "submitted %lld completed %lld cancelled %lld expired %lld rejected %lld",
          (long long)st.submitted, (long long)st.completed, (long long)st.cancelled,
          (long long)st.expired, (long long)st.rejected);
    nmt_service_free(s);
    /* The handles outlive the service. */
    CHECK(nmt_request_result(q[0])->status == NMT_STATUS_CANCELLED, "handle after free");
    nmt_request_cancel(q[0]);
    nmt_request_free(q[0]);
    nmt_request_free(q[1]);

    /* Shutdown with draining translates what is queued. */
    s = slow_service(8, 5000, 0);
    if (!s)
        return;
    nmt_request_options_init(&o);
    o.shrink = 1;
    CHECK(submit(s, lines[2], &o, &d) == NMT_STATUS_ERROR_ARGUMENT,
          "shrinking asked of a service without it");
    nmt_request *r[3];
    for (int i = 0; i < 3; i++)
        CHECK(submit(s, lines[2 + i], NULL, &r[i]) == NMT_STATUS_OK, "drain submit %d", i);
    nmt_service_shutdown(s, 1, &finished, &cancelled);
    CHECK(finished == 3 && cancelled == 0, "shutdown with draining: %lld finished, %lld "
          "cancelled", (long long)finished, (long long)cancelled);
    for (int i = 0; i < 3; i++) {
        CHECK(nmt_request_done(r[i]) && same_result(nmt_request_result(r[i]), &ref[2][2 + i]),
              "drained request %d is translated as without shrinking", i);
        nmt_request_free(r[i]);
    }
    nmt_service_shutdown(s, 1, NULL, NULL); /* idempotent */
    nmt_service_free(s);
}

/* ---- max_batch_tokens ---------------------------------------------------- */

static void test_max_batch_tokens(void)
{
    nmt_service_options so;
    nmt_service_options_init(&so);
    so.translator = base_options();
    so.translator.shrink.mode = NMT_SHRINK_NONE;
    so.max_delay_us = 300000; /* the 8 requests queue up before the first batch */
    so.max_batch_tokens = 7;
    nmt_service *s = NULL;
    nmt_error err = {0};
    CHECK(nmt_service_create(model, &so, &s, &err) == NMT_STATUS_OK, "%s", err.message);
    if (!s)
        return;
    /* 3 tokens each: at most 2 a batch under 7 tokens, so 4 batches of 2. */
    nmt_request *r[8];
    for (int i = 0; i < 8; i++)
        CHECK(submit(s, "ein mann läuft", NULL, &r[i]) == NMT_STATUS_OK, "tokens submit %d", i);
    for (int i = 0; i < 8; i++) {
        CHECK(nmt_request_wait(r[i], 20000.0) &&
                  nmt_request_result(r[i])->status == NMT_STATUS_OK, "tokens request %d", i);
        nmt_request_free(r[i]);
    }
    nmt_service_stats st;
    nmt_service_stats_get(s, &st);
    CHECK(st.batches == 4 && st.batch_sentences == 8, "max_batch_tokens 7: %lld batches of %lld "
          "sentences, want 4 of 2", (long long)st.batches, (long long)st.batch_sentences);
    nmt_service_free(s);
    so.max_batch_tokens = -1;
    CHECK(nmt_service_create(model, &so, &s, &err) == NMT_STATUS_ERROR_ARGUMENT && !s,
          "max_batch_tokens -1 is refused");
    so.max_batch_tokens = 0;
    so.join_every = 0;
    CHECK(nmt_service_create(model, &so, &s, &err) == NMT_STATUS_ERROR_ARGUMENT && !s &&
              strstr(err.message, "join_every"),
          "join_every 0 is refused, naming it (%s)", err.message);
    /* On the CPU, continuous batching asked for falls back to batches. */
    so.join_every = 4;
    so.continuous = 1;
    CHECK(nmt_service_create(model, &so, &s, &err) == NMT_STATUS_OK, "continuous on the CPU: %s",
          err.message);
    nmt_request *one = NULL;
    CHECK(s && submit(s, lines[5], NULL, &one) == NMT_STATUS_OK && nmt_request_wait(one, 20000.0) &&
              same_result(nmt_request_result(one), &ref[2][5]),
          "continuous on the CPU answers as nmt_translate_batch");
    nmt_request_free(one);
    nmt_service_free(s);
}

/* ---- shutdown from several threads at once, and from a callback --------- */

static int shutdown_thread(void *arg)
{
    int64_t finished = -1, cancelled = -1;
    nmt_service_shutdown(arg, 1, &finished, &cancelled);
    return finished >= 0 && cancelled == 0 ? 0 : 1;
}

static atomic_int stopped_from_callback;

static void stop_in_callback(nmt_request *request, const nmt_result *result, void *user)
{
    (void)request;
    (void)result;
    nmt_service_shutdown(user, 1, NULL, NULL); /* returns at once on a worker */
    atomic_store(&stopped_from_callback, 1);
}

static void test_shutdown_races(void)
{
    nmt_service *s = slow_service(64, 1, 0);
    if (!s)
        return;
    nmt_request *r[8];
    for (int i = 0; i < 8; i++)
        CHECK(submit(s, lines[2 + i], NULL, &r[i]) == NMT_STATUS_OK, "race submit %d", i);
    thrd_t t[4];
    for (int i = 0; i < 4; i++)
        thrd_create(&t[i], shutdown_thread, s);
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        int rc = 1;
        thrd_join(t[i], &rc);
        bad += rc;
    }
    CHECK(bad == 0, "%d of 4 concurrent shutdowns saw wrong counts", bad);
    for (int i = 0; i < 8; i++) {
        CHECK(nmt_request_done(r[i]) && same_result(nmt_request_result(r[i]), &ref[2][2 + i]),
              "request %d after concurrent draining shutdowns", i);
        nmt_request_free(r[i]);
    }
    nmt_service_free(s);

    s = slow_service(64, 1, 0);
    if (!s)
        return;
    nmt_error err = {0};
    CHECK(nmt_service_submit(s, lines[3], NULL, stop_in_callback, s, NULL, &err) ==
              NMT_STATUS_OK, "%s", err.message);
    for (int i = 0; i < 500 && !atomic_load(&stopped_from_callback); i++)
        thrd_sleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    CHECK(atomic_load(&stopped_from_callback), "the callback's shutdown returned");
    nmt_request *late = NULL;
    CHECK(submit(s, lines[4], NULL, &late) == NMT_STATUS_CLOSED, "closed after it");
    nmt_service_free(s); /* joins the workers */
}

int main(void)
{
    if (TEST_SERVICE_GPU && nmt_cuda_device_count() == 0) {
        fprintf(stderr, "skipped: no GPU\n");
        return NMT_TEST_SKIP;
    }
    test_seed();
    nmt_error err = {0};
    if (nmt_model_load(NMT_TEST_MODEL, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "model: %s\n", err.message);
        return 1;
    }
    /* Two bad lines (invalid UTF-8, too long), then random sentences. */
    snprintf(text[0], sizeof text[0], "ein \xff hund");
    memset(text[1], 'a', 220);
    text[1][220] = '\0';
    for (int i = 2; i < N_LINES; i++) {
        const int n = test_rand_int(1, 12);
        size_t at = 0;
        for (int k = 0; k < n; k++)
            at += (size_t)snprintf(text[i] + at, sizeof text[i] - at, "%s%s", k ? " " : "",
                                   words[test_rand_int(0, (int32_t)(sizeof words / sizeof *words))]);
    }
    for (int i = 0; i < N_LINES; i++)
        lines[i] = text[i];
    test_determinism();
    if (!TEST_SERVICE_GPU) {
        test_contract();
        test_shutdown_races();
        test_max_batch_tokens();
    }
    for (int k = 0; k < N_KINDS; k++)
        for (int i = 0; i < N_LINES; i++)
            nmt_result_clear(&ref[k][i]);
    nmt_model_free(model);
    return test_finish("service");
}
