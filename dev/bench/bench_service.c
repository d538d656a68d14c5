/* bench_service: the load generator for the service object (nmt_service of
 * nmt.h, docs/service.md), driven directly from C. dev/eval/loadgen drives
 * nmt-server the same way over HTTP.
 *
 *   bench_service -m MODEL -i FILE [--device cpu|cuda] [--beam B] [--batch-size N]
 *                 [--workers N] [--max-delay-us U] [--continuous 0|1] [--join-every J]
 *                 [--queue N] [--lines N]
 *                 (--closed C | --open RATE) [--requests N] [--cancel P]
 *                 [--deadline-ms D] [--seed S] [--warmup N] [--offline-batch N]
 *                 [--reference-batch N] [--precision fp32|bf16|fp16|auto] [--devices 0,1]
 *                 [--workers-per-device N]
 *
 * First the offline reference: one translator with the same options
 * translates the lines (nmt_translate_batch, --reference-batch sentences a
 * call, default 1: batch invariance makes every batching give its bits;
 * 0: --batch-size), and again timed (at --offline-batch sentences a call when given: offline's best
 * batch size may exceed what the service's clients keep in flight).
 * Then the service gets --requests requests (default: one per line), line
 * i % lines each:
 *   --closed C   C client threads, each submitting one sentence and waiting
 *                for it before the next (the MLPerf "Server" closed loop);
 *   --open RATE  Poisson arrivals at RATE requests/s from one thread, each
 *                completed through its callback (open loop).
 * --cancel P cancels a fraction P of the requests right after submitting
 * them (a queued one completes as cancelled, a running one when its batch
 * ends; either way it completes once); --deadline-ms gives each request a
 * deadline. --warmup N first sends N requests one at a time (line i % lines,
 * untimed, unchecked): a service that has run a while has seen its
 * sentence lengths, so its batch-1 steps replay CUDA graphs (the open loop
 * at 1 request/s measures that, not first-seen lengths). Every answer is checked
 * against the offline translation of its line: lost (never completed),
 * duplicated (completed twice), different (OK but another text, or a score or
 * log-probability with other bits). Prints one
 * JSON line: throughput, p50/p90/p99 latency, batch fill, the checks and
 * the offline throughput measured in the same run; exit 1 when any check
 * fails. */
#define _GNU_SOURCE /* getline */
#include "nmt.h"

#include "bench_lines.h"

#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct bench {
    nmt_model *model;
    nmt_service *service;
    char **lines;
    char **ref; /* offline translations; NULL entries: refused lines */
    float *ref_score, *ref_log_prob; /* their scores, compared bit for bit */
    int n_lines;
    int64_t n_requests;
    double cancel, deadline_ms;
    uint64_t seed;
    /* per request */
    double *submitted, *latency;
    atomic_int *completions;
    atomic_int different, cancelled, expired, failed, rejected;
    atomic_llong next;
} bench;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t key)
{
    return (double)(mix(key) >> 11) * (1.0 / 9007199254740992.0);
}

/* Checks one completed request's result against the offline translation. */
static void account(bench *b, int64_t k, const nmt_result *r)
{
    const int line = (int)(k % b->n_lines);
    if (atomic_fetch_add(&b->completions[k], 1) > 0)
        return; /* a duplicate: counted from completions */
    b->latency[k] = now_s() - b->submitted[k];
    if (r->status == NMT_STATUS_CANCELLED)
        atomic_fetch_add(&b->cancelled, 1);
    else if (r->status == NMT_STATUS_DEADLINE)
        atomic_fetch_add(&b->expired, 1);
    else if (r->status != NMT_STATUS_OK)
        atomic_fetch_add(&b->failed, b->ref[line] == NULL ? 0 : 1);
    else if (!b->ref[line] || strcmp(r->hypotheses[0].text, b->ref[line]) != 0 ||
             memcmp(&r->hypotheses[0].score, &b->ref_score[line], sizeof(float)) != 0 ||
             memcmp(&r->hypotheses[0].log_prob, &b->ref_log_prob[line], sizeof(float)) != 0)
        atomic_fetch_add(&b->different, 1);
}

static nmt_request_options request_options(const bench *b)
{
    nmt_request_options o;
    nmt_request_options_init(&o);
    o.deadline_ms = b->deadline_ms;
    return o;
}

/* Submits request k, retrying while the queue is full. */
static nmt_status submit(bench *b, int64_t k, nmt_request_callback cb, nmt_request **handle)
{
    const nmt_request_options o = request_options(b);
    nmt_error err = {0};
    b->submitted[k] = now_s();
    for (;;) {
        const nmt_status st = nmt_service_submit(b->service, b->lines[k % b->n_lines], &o, cb,
                                                 (void *)(intptr_t)k, handle, &err);
        if (st != NMT_STATUS_BUSY)
            return st;
        atomic_fetch_add(&b->rejected, 1);
        const struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
}

static void *closed_client(void *arg)
{
    bench *b = arg;
    for (;;) {
        const int64_t k = atomic_fetch_add(&b->next, 1);
        if (k >= b->n_requests)
            return NULL;
        nmt_request *r = NULL;
        if (submit(b, k, NULL, &r) != NMT_STATUS_OK)
            continue; /* never completes: counted as lost */
        if (b->cancel > 0.0 && uniform(b->seed ^ (uint64_t)k) < b->cancel)
            nmt_request_cancel(r);
        nmt_request_wait(r, -1.0);
        account(b, k, nmt_request_result(r));
        nmt_request_free(r);
    }
}

static bench *g_open; /* the open loop's callbacks find the bench here */

static void open_done(nmt_request *request, const nmt_result *result, void *user)
{
    (void)request;
    account(g_open, (int64_t)(intptr_t)user, result);
}

static double percentile(double *sorted, int64_t n, double p)
{
    if (n == 0)
        return NAN;
    int64_t i = (int64_t)ceil(p * (double)n) - 1;
    return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --warmup: n requests one after another, their answers dropped. */
static void warm_up(bench *b, int64_t n)
{
    const nmt_request_options o = request_options(b);
    for (int64_t i = 0; i < n; i++) {
        nmt_request *r = NULL;
        nmt_error err = {0};
        if (nmt_service_submit(b->service, b->lines[i % b->n_lines], &o, NULL, NULL, &r, &err) !=
            NMT_STATUS_OK)
            continue;
        nmt_request_wait(r, -1.0);
        nmt_request_free(r);
    }
}

/* The offline reference and its throughput (sentences/s). */
static double offline(bench *b, const nmt_options *o, int timed_only)
{
    nmt_translator *t = NULL;
    nmt_error err = {0};
    if (nmt_translator_create(b->model, o, &t, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "bench_service: translator: %s\n", err.message);
        exit(2);
    }
    nmt_result *res = calloc((size_t)b->n_lines, sizeof *res);
    const double t0 = now_s();
    if (!res || nmt_translate_batch(t, (const char *const *)b->lines, b->n_lines, res, &err) !=
                    NMT_STATUS_OK) {
        fprintf(stderr, "bench_service: offline: %s\n", err.message);
        exit(2);
    }
    const double seconds = now_s() - t0;
    for (int i = 0; i < b->n_lines && !timed_only; i++) {
        const int ok = res[i].status == NMT_STATUS_OK;
        b->ref[i] = ok ? strdup(res[i].hypotheses[0].text) : NULL;
        b->ref_score[i] = ok ? res[i].hypotheses[0].score : 0.0f;
        b->ref_log_prob[i] = ok ? res[i].hypotheses[0].log_prob : 0.0f;
    }
    for (int i = 0; i < b->n_lines; i++)
        nmt_result_clear(&res[i]);
    free(res);
    nmt_translator_free(t);
    return (double)b->n_lines / seconds;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", 1, 0, 'm'}, {"input", 1, 0, 'i'}, {"device", 1, 0, 'd'},
        {"beam", 1, 0, 'b'}, {"batch-size", 1, 0, 'B'}, {"workers", 1, 0, 'w'},
        {"max-delay-us", 1, 0, 'D'}, {"queue", 1, 0, 'q'}, {"lines", 1, 0, 'l'},
        {"closed", 1, 0, 'c'}, {"open", 1, 0, 'o'}, {"requests", 1, 0, 'n'},
        {"cancel", 1, 0, 'x'}, {"deadline-ms", 1, 0, 't'}, {"seed", 1, 0, 's'},
        {"continuous", 1, 0, 'C'}, {"join-every", 1, 0, 'J'}, {"warmup", 1, 0, 'W'},
        {"offline-batch", 1, 0, 'O'}, {"reference-batch", 1, 0, 'R'},
        {"precision", 1, 0, 'P'}, {"devices", 1, 0, 'G'}, {"workers-per-device", 1, 0, 'K'},
        {0, 0, 0, 0}};
    const char *model_path = NULL, *input = NULL;
    nmt_service_options so;
    nmt_service_options_init(&so);
    int closed = 0, max_lines = 0;
    int64_t warmup = 0;
    int offline_batch = 0, reference_batch = 1;
    int devices[16];
    double rate = 0.0;
    bench b = {0};
    b.seed = 1;
    b.n_requests = -1;
    int c;
    while ((c = getopt_long(argc, argv, "m:i:", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model_path = optarg; break;
        case 'i': input = optarg; break;
        case 'd':
            so.translator.device = !strcmp(optarg, "cpu") ? NMT_DEVICE_CPU : NMT_DEVICE_CUDA;
            break;
        case 'b': so.translator.beam_size = atoi(optarg); break;
        case 'B': so.translator.batch_size = atoi(optarg); break;
        case 'w': so.cpu_workers = atoi(optarg); break;
        case 'D': so.max_delay_us = atoi(optarg); break;
        case 'C': so.continuous = atoi(optarg); break;
        case 'J': so.join_every = atoi(optarg); break;
        case 'q': so.queue_capacity = atoi(optarg); break;
        case 'l': max_lines = atoi(optarg); break;
        case 'c': closed = atoi(optarg); break;
        case 'o': rate = atof(optarg); break;
        case 'n': b.n_requests = atoll(optarg); break;
        case 'x': b.cancel = atof(optarg); break;
        case 't': b.deadline_ms = atof(optarg); break;
        case 's': b.seed = strtoull(optarg, NULL, 10); break;
        case 'W': warmup = atoll(optarg); break;
        case 'O': offline_batch = atoi(optarg); break;
        case 'R': reference_batch = atoi(optarg); break;
        case 'K': so.workers_per_device = atoi(optarg); break;
        case 'G': /* a comma list of ordinals; one repeated: several workers on that GPU */
            so.n_devices = 0;
            for (char *p = optarg; *p && so.n_devices < 16; p += *p == ',') {
                char *end;
                devices[so.n_devices++] = (int)strtol(p, &end, 10);
                if (end == p || (*end && *end != ',')) { /* not a number: would never advance */
                    fprintf(stderr, "bench_service: --devices %s: a comma list of ordinals\n",
                            optarg);
                    return 2;
                }
                p = end;
            }
            so.devices = devices;
            break;
        case 'P':
            so.translator.precision = !strcmp(optarg, "fp32")   ? NMT_PRECISION_FP32
                                      : !strcmp(optarg, "bf16") ? NMT_PRECISION_BF16
                                      : !strcmp(optarg, "fp16") ? NMT_PRECISION_FP16
                                                                : NMT_PRECISION_AUTO;
            break;
        default: fprintf(stderr, "bench_service: see the header of dev/bench/bench_service.c\n");
                 return 2;
        }
    }
    if (!model_path || !input || (closed <= 0) == (rate <= 0.0)) {
        fprintf(stderr, "usage: bench_service -m MODEL -i FILE (--closed C | --open RATE) ...\n");
        return 2;
    }
    nmt_error err = {0};
    b.n_lines = bench_read_lines(input, max_lines, &b.lines);
    if (b.n_lines <= 0 || nmt_model_load(model_path, &b.model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "bench_service: %s: %s\n", b.n_lines <= 0 ? input : model_path,
                b.n_lines <= 0 ? "no lines" : err.message);
        return 2;
    }
    if (b.n_requests < 0)
        b.n_requests = b.n_lines;
    b.ref = calloc((size_t)b.n_lines, sizeof *b.ref);
    b.ref_score = calloc((size_t)b.n_lines, sizeof *b.ref_score);
    b.ref_log_prob = calloc((size_t)b.n_lines, sizeof *b.ref_log_prob);
    b.submitted = calloc((size_t)b.n_requests, sizeof *b.submitted);
    b.latency = calloc((size_t)b.n_requests, sizeof *b.latency);
    b.completions = calloc((size_t)b.n_requests, sizeof *b.completions);
    if (!b.ref || !b.ref_score || !b.ref_log_prob || !b.submitted || !b.latency || !b.completions)
        return 2;
    nmt_options reference = so.translator;
    if (reference_batch > 0)
        reference.batch_size = reference_batch;
    offline(&b, &reference, 0); /* the reference answers */
    nmt_options timed = so.translator;
    if (offline_batch > 0)
        timed.batch_size = offline_batch;
    const double offline_rate = offline(&b, &timed, 1); /* timed again */
    if (nmt_service_create(b.model, &so, &b.service, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "bench_service: service: %s\n", err.message);
        return 2;
    }
    warm_up(&b, warmup);
    nmt_service_stats before;
    nmt_service_stats_get(b.service, &before);
    const double t0 = now_s();
    if (closed > 0) {
        pthread_t *threads = calloc((size_t)closed, sizeof *threads);
        for (int i = 0; i < closed; i++)
            pthread_create(&threads[i], NULL, closed_client, &b);
        for (int i = 0; i < closed; i++)
            pthread_join(threads[i], NULL);
        free(threads);
    } else {
        g_open = &b;
        double at = now_s();
        for (int64_t k = 0; k < b.n_requests; k++) {
            at += -log(1.0 - uniform(b.seed * 7919u + (uint64_t)k)) / rate;
            double wait = at - now_s();
            if (wait > 0) {
                const struct timespec ts = {(time_t)wait, (long)((wait - floor(wait)) * 1e9)};
                nanosleep(&ts, NULL);
            }
            if (b.cancel > 0.0 && uniform(b.seed ^ (uint64_t)k) < b.cancel) {
                nmt_request *h = NULL;
                if (submit(&b, k, open_done, &h) == NMT_STATUS_OK) {
                    nmt_request_cancel(h);
                    nmt_request_free(h);
                }
            } else {
                submit(&b, k, open_done, NULL);
            }
        }
        nmt_service_shutdown(b.service, 1, NULL, NULL); /* waits for every answer */
    }
    const double wall = now_s() - t0;
    nmt_service_stats st;
    nmt_service_stats_get(b.service, &st);
    int64_t lost = 0, duplicated = 0, done = 0;
    for (int64_t k = 0; k < b.n_requests; k++) {
        const int n = atomic_load(&b.completions[k]);
        lost += n == 0;
        duplicated += n > 1;
        if (n > 0)
            b.latency[done++] = b.latency[k];
    }
    qsort(b.latency, (size_t)done, sizeof *b.latency, cmp_double);
    const int different = atomic_load(&b.different);
    printf("{\"bench\":\"service\",\"mode\":\"%s\",\"clients\":%d,\"rate\":%.1f,"
           "\"requests\":%lld,\"lines\":%d,\"beam\":%d,\"batch_size\":%d,\"workers\":%d,\"workers_per_device\":%d,"
           "\"max_delay_us\":%d,\"continuous\":%d,\"join_every\":%d,\"warmup\":%lld,\"seconds\":%.3f,\"sents_per_s\":%.1f,"
           "\"offline_batch_size\":%d,\"offline_sents_per_s\":%.1f,\"ratio_to_offline\":%.3f,"
           "\"p50_ms\":%.3f,\"p90_ms\":%.3f,\"p99_ms\":%.3f,\"batch_fill\":%.2f,"
           "\"lost\":%lld,\"duplicated\":%lld,\"different\":%d,\"cancelled\":%d,\"expired\":%d,"
           "\"failed\":%d,\"rejected\":%d}\n",
           closed > 0 ? "closed" : "open", closed, rate, (long long)b.n_requests, b.n_lines,
           so.translator.beam_size, so.translator.batch_size, so.cpu_workers, so.workers_per_device,
           so.max_delay_us, so.continuous, so.join_every,
           (long long)warmup, wall, (double)done / wall, timed.batch_size, offline_rate,
           (double)done / wall / offline_rate,
           1e3 * percentile(b.latency, done, 0.5), 1e3 * percentile(b.latency, done, 0.9),
           1e3 * percentile(b.latency, done, 0.99),
           st.batches > before.batches ? (double)(st.batch_sentences - before.batch_sentences) /
                                             (double)(st.batches - before.batches)
                                       : 0.0, (long long)lost,
           (long long)duplicated, different, atomic_load(&b.cancelled), atomic_load(&b.expired),
           atomic_load(&b.failed), atomic_load(&b.rejected));
    nmt_service_free(b.service);
    nmt_model_free(b.model);
    return lost || duplicated || different || atomic_load(&b.failed) ? 1 : 0;
}
