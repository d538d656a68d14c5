/* server.h: nmt-server, the HTTP front of nmt_service (docs/server.md):
 * settings (server_options.c), the HTTP layer on libmicrohttpd (http.c),
 * the translation endpoint on jansson (translate_api.c), the counters and
 * their Prometheus text (metrics.c) and the web page (page.c). */
#ifndef NMT_SERVER_H
#define NMT_SERVER_H

#include "nmt.h"
#include "options.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct server_settings {
    char host[64];          /* IPv4 address to listen on, default 127.0.0.1 */
    int port;               /* 0: any free port (printed at start) */
    int max_body_bytes;     /* larger request bodies: 413 */
    int max_sentences;      /* more items in one request: 413 */
    int max_connections;    /* open connections at most (a thread each) */
    int max_connections_per_ip; /* open connections of one client address at most; 0: any */
    int timeout_s;          /* a connection's time to send a whole request, its idle time
                               between requests, and the drain's time at a stop */
    int max_requests;       /* stop (gracefully) after this many requests; 0: never */
    int queue_capacity, max_delay_us, continuous, join_every, workers_per_device;
} server_settings;

typedef struct server_args {
    translate_args common; /* model, config file, engine options: translate's */
    server_settings server;
} server_args;

/* argv and the INI file ([translate] and [server]); EXIT_USAGE with the
 * reason in message on failure. */
int server_args_parse(int argc, char **argv, server_args *args, char *message, size_t size);
int server_print_help(const char *program);

/* Latency buckets (seconds) of the histogram. */
enum { kLatencyBuckets = 14 };

typedef struct server_metrics {
    pthread_mutex_t lock;
    int64_t http[6];         /* responses by class: [1] 1xx .. [5] 5xx */
    int64_t translate_requests, translate_sentences;
    int64_t latency_count[kLatencyBuckets + 1]; /* per bucket, then +Inf */
    double latency_sum;
} server_metrics;

void server_metrics_init(server_metrics *m);
void server_metrics_response(server_metrics *m, unsigned code);
void server_metrics_translation(server_metrics *m, int sentences, double seconds);
/* Prometheus text format (version 0.0.4) into a malloc'ed string. */
char *server_metrics_text(server_metrics *m, nmt_service *service);

typedef struct server_connection server_connection;

typedef struct server {
    nmt_service *service;
    server_settings settings;
    server_metrics metrics;
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock;
    pthread_cond_t idle;      /* signalled when in_flight drops to 0 */
    int in_flight;            /* requests being answered */
    int64_t requests;         /* requests answered */
    int draining;             /* shutting down: new requests get 503 */
    double drain_deadline;    /* server_now() by which every request is answered (0: none) */
    server_connection *connections; /* open ones, for server_http_close_stalled */
    int attention;            /* the service keeps attention weights (--attention): items may
                                 ask for "attention" */
} server;

/* One HTTP response: status code, content type and a malloc'ed body. */
typedef struct server_response {
    unsigned code;
    const char *content_type;
    char *body;
    size_t length;
    int retry_after; /* seconds, 0: no header */
    const char *allow; /* a 405's Allow header: the methods the path takes */
} server_response;

/* POST /translator/translate: the OpenNMT-py REST API over the service. */
void server_translate(server *s, const char *body, size_t length, server_response *out);
/* A JSON error body {"error": message, "status": "error"}. */
void server_error(server_response *out, unsigned code, const char *message);

/* Seconds on the monotonic clock. */
double server_now(void);

/* Starts listening; returns 0 and the port, or -1 with message. */
int server_http_start(server *s, int *port, char *message, size_t size);
void server_http_stop(server *s);
/* Closes the connections that have not sent a whole request within
 * timeout_s of connecting (or of their last answer): a client sending a
 * byte a second never idles long enough for libmicrohttpd's timeout. Called
 * every tick of the main thread. */
void server_http_close_stalled(server *s);

extern const char server_page_html[];

#endif /* NMT_SERVER_H */
