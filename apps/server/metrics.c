/* metrics.c: the server's counters and their Prometheus text format
 * (GET /metrics): HTTP responses by class, translation requests and
 * sentences, a latency histogram of translation requests, the models
 * loaded, and their services' counters summed (queue depth, batches and
 * their fill). */
#include "server.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double kBounds[kLatencyBuckets] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                0.25,  0.5,    1.0,   2.5,  5.0,   10.0, 30.0};

void server_metrics_init(server_metrics *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
}

void server_metrics_response(server_metrics *m, unsigned code)
{
    pthread_mutex_lock(&m->lock);
    m->http[code / 100 < 6 ? code / 100 : 5]++;
    pthread_mutex_unlock(&m->lock);
}

void server_metrics_translation(server_metrics *m, int sentences, double seconds)
{
    int b = 0;
    while (b < kLatencyBuckets && seconds > kBounds[b])
        b++;
    pthread_mutex_lock(&m->lock);
    m->translate_requests++;
    m->translate_sentences += sentences;
    m->latency_count[b]++;
    m->latency_sum += seconds;
    pthread_mutex_unlock(&m->lock);
}

/* Appends to a growing buffer; returns 0 when out of memory. */
typedef struct text_buffer {
    char *data;
    size_t length, capacity;
} text_buffer;

static int put(text_buffer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int put(text_buffer *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        const int n = vsnprintf(t->data ? t->data + t->length : NULL,
                                t->data ? t->capacity - t->length : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return 0;
        if (t->data && t->length + (size_t)n < t->capacity) {
            t->length += (size_t)n;
            return 1;
        }
        const size_t grown = (t->capacity + (size_t)n + 1) * 2;
        char *p = realloc(t->data, grown);
        if (!p)
            return 0;
        t->data = p;
        t->capacity = grown;
    }
}

char *server_metrics_text(server_metrics *m, server_models *models)
{
    text_buffer t = {NULL, 0, 0};
    nmt_service_stats st;
    int loaded;
    server_models_stats(models, &st, &loaded);
    pthread_mutex_lock(&m->lock);
    const server_metrics c = *m;
    pthread_mutex_unlock(&m->lock);
    int ok = put(&t, "# HELP nmt_http_responses_total HTTP responses by status class.\n"
                     "# TYPE nmt_http_responses_total counter\n");
    for (int k = 1; k <= 5 && ok; k++)
        ok = put(&t, "nmt_http_responses_total{class=\"%dxx\"} %lld\n", k, (long long)c.http[k]);
    ok = ok && put(&t, "# HELP nmt_translate_requests_total Translation requests answered.\n"
                       "# TYPE nmt_translate_requests_total counter\n"
                       "nmt_translate_requests_total %lld\n"
                       "# HELP nmt_translate_sentences_total Sentences translated.\n"
                       "# TYPE nmt_translate_sentences_total counter\n"
                       "nmt_translate_sentences_total %lld\n",
                   (long long)c.translate_requests, (long long)c.translate_sentences);
    ok = ok && put(&t, "# HELP nmt_request_latency_seconds Translation request latency.\n"
                       "# TYPE nmt_request_latency_seconds histogram\n");
    int64_t cumulative = 0;
    for (int b = 0; b <= kLatencyBuckets && ok; b++) {
        cumulative += c.latency_count[b];
        if (b < kLatencyBuckets)
            ok = put(&t, "nmt_request_latency_seconds_bucket{le=\"%g\"} %lld\n", kBounds[b],
                     (long long)cumulative);
        else
            ok = put(&t, "nmt_request_latency_seconds_bucket{le=\"+Inf\"} %lld\n"
                         "nmt_request_latency_seconds_sum %.6f\n"
                         "nmt_request_latency_seconds_count %lld\n",
                     (long long)cumulative, c.latency_sum, (long long)cumulative);
    }
    ok = ok && put(&t, "# HELP nmt_models_loaded Models loaded (their services counted "
                       "below).\n# TYPE nmt_models_loaded gauge\nnmt_models_loaded %d\n",
                   loaded);
    ok = ok && put(&t,
                   "# HELP nmt_queue_depth Sentences waiting in the service's queue.\n"
                   "# TYPE nmt_queue_depth gauge\nnmt_queue_depth %lld\n"
                   "# HELP nmt_running Sentences being translated.\n"
                   "# TYPE nmt_running gauge\nnmt_running %lld\n"
                   "# HELP nmt_service_sentences_total Service requests by outcome.\n"
                   "# TYPE nmt_service_sentences_total counter\n"
                   "nmt_service_sentences_total{outcome=\"submitted\"} %lld\n"
                   "nmt_service_sentences_total{outcome=\"completed\"} %lld\n"
                   "nmt_service_sentences_total{outcome=\"failed\"} %lld\n"
                   "nmt_service_sentences_total{outcome=\"cancelled\"} %lld\n"
                   "nmt_service_sentences_total{outcome=\"expired\"} %lld\n"
                   "nmt_service_sentences_total{outcome=\"rejected\"} %lld\n"
                   "# HELP nmt_batches_total Batches translated.\n"
                   "# TYPE nmt_batches_total counter\nnmt_batches_total %lld\n"
                   "# HELP nmt_batch_sentences_total Sentences in those batches (fill = this / "
                   "batches).\n"
                   "# TYPE nmt_batch_sentences_total counter\nnmt_batch_sentences_total %lld\n"
                   "# HELP nmt_device_memory_used_bytes GPU memory in use on the workers' "
                   "devices (0 on the CPU).\n"
                   "# TYPE nmt_device_memory_used_bytes gauge\nnmt_device_memory_used_bytes %lld\n"
                   "# HELP nmt_device_memory_total_bytes GPU memory of those devices.\n"
                   "# TYPE nmt_device_memory_total_bytes gauge\nnmt_device_memory_total_bytes "
                   "%lld\n",
                   (long long)st.queued, (long long)st.running, (long long)st.submitted,
                   (long long)st.completed, (long long)st.failed, (long long)st.cancelled,
                   (long long)st.expired, (long long)st.rejected, (long long)st.batches,
                   (long long)st.batch_sentences, (long long)st.device_memory_used,
                   (long long)st.device_memory_total);
    if (!ok) {
        free(t.data);
        return NULL;
    }
    return t.data;
}
