/* server.h: nmt-server, the HTTP front of nmt_service (docs/server.md):
 * settings (server_options.c), the models it serves (model_config.c reads
 * them, models.c loads and unloads them), the HTTP layer on libmicrohttpd
 * (http.c), the translation endpoint on jansson (translate_api.c; an
 * item's fields: item_fields.c), the counters and their Prometheus text
 * (metrics.c) and the web page (page.c). */
#ifndef NMT_SERVER_H
#define NMT_SERVER_H

#include "nmt.h"
#include "options.h"

#include <jansson.h>

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
    char config_json[1024]; /* --config-json: the models, OpenNMT-py's conf.json shape */
    int strict;             /* 1: unknown request fields get 400, unknown conf.json keys
                               stop the start; 0: both are ignored */
    int max_loaded;         /* models loaded at once at most; 0: no limit */
} server_settings;

typedef struct server_args {
    translate_args common; /* model, config file, engine options: translate's */
    server_settings server;
} server_args;

/* argv and the INI file ([translate] and [server]); EXIT_USAGE with the
 * reason in message on failure. */
int server_args_parse(int argc, char **argv, server_args *args, char *message, size_t size);
/* One model's translate settings: argv and the INI file as for the server,
 * then overrides (translate's INI keys, named source in messages).
 * EXIT_USAGE with the reason in message on failure. */
int server_model_args(int argc, char **argv, const app_setting *overrides, int n_overrides,
                      const char *source, translate_args *out, char *message, size_t size);
int server_print_help(const char *program);

/* One model the server serves: -m's (id 0) or an entry of --config-json
 * (model_config.c). Fixed once the server starts. */
typedef struct server_model_spec {
    int id;
    translate_args args;  /* the server's settings, then the entry's "opt"; args.models
                             are the files (several: an ensemble) */
    double timeout_s;     /* idle seconds before on_timeout; < 0: never */
    int keep_weights;     /* on_timeout "to_cpu": the service (translators, device memory)
                             goes, the weights stay in host memory; 0: "unload" */
    int load;             /* loaded at start; else at its first request */
    int report_align;     /* every item gets "align", as if it asked */
    char *opt_json;       /* the entry's "opt" as given (GET /translator/models) */
} server_model_spec;

/* The models of args: -m's, or --config-json's entries (read with argv
 * again for each one's settings). EXIT_OK with *specs (free with
 * server_model_specs_free), or EXIT_USAGE with the reason in message. */
int server_model_specs(const server_args *args, int argc, char **argv, server_model_spec **specs,
                       int *n_specs, char *message, size_t size);
void server_model_specs_free(server_model_spec *specs, int n_specs);

/* The registry of models (models.c), thread-safe: a model loads at start or
 * at its first request, and goes after timeout_s idle, on
 * /translator/unload_model, or to make room under max_loaded. A request holds
 * its model's service from acquire to release; a service taken away while
 * held is freed by its last holder. */
typedef struct server_models server_models;
typedef struct server_loaded server_loaded;

typedef struct server_use {
    const server_model_spec *spec;
    nmt_service *service;
    server_loaded *loaded; /* for release */
} server_use;

/* Takes specs (freed by server_models_free); settings: the services' queue
 * and batching, and max_loaded. NULL when out of memory. */
server_models *server_models_create(server_model_spec *specs, int n_specs,
                                    const server_settings *settings);
void server_models_free(server_models *m); /* frees every service (no drain) and the specs */
/* The spec of model id, or NULL. */
const server_model_spec *server_models_find(const server_models *m, int id);
/* Loads the models whose spec says load: EXIT_OK, or EXIT_USAGE (more than
 * max_loaded), EXIT_MODEL (the file) or EXIT_FAILED (the service) with the
 * reason in message. */
int server_models_load_all(server_models *m, char *message, size_t size);
/* Model id's service, loaded if it is not: 0 and *use, or the HTTP code (404
 * no such model, 503 every loaded model in use for timeout_s under
 * max_loaded, 500 the load failed) with the reason in message. */
unsigned server_models_acquire(server_models *m, int id, server_use *use, char *message,
                               size_t size);
void server_models_release(server_models *m, server_use *use);
/* Unloads model id (service and weights; a held service goes with its last
 * request): 0, or 404 with message. */
unsigned server_models_unload(server_models *m, int id, char *message, size_t size);
/* Applies on_timeout to the models idle timeout_s (called every tick). */
void server_models_expire(server_models *m, double now);
/* OpenNMT-py's GET /models list as malloc'ed JSON, NULL when out of memory. */
char *server_models_list_json(server_models *m);
/* The loaded services' counters summed (device memory: the largest), and
 * how many models are loaded. */
void server_models_stats(server_models *m, nmt_service_stats *sum, int *loaded);

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
char *server_metrics_text(server_metrics *m, server_models *models);

typedef struct server_connection server_connection;

typedef struct server {
    server_models *models;
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

/* POST /translator/translate: the OpenNMT-py REST API over the models. */
void server_translate(server *s, const char *body, size_t length, server_response *out);
/* POST /translator/score: the same items with a "tgt" to score (forced
 * decoding), one answer an item with its "log_prob". */
void server_score(server *s, const char *body, size_t length, server_response *out);
/* GET /translator/models and GET or POST /translator/unload_model/ID. */
void server_list_models(server *s, server_response *out);
void server_unload_model(server *s, const char *id_text, server_response *out);
/* apps/server/item_fields.c: item i of a request (a JSON object) as its
 * request options, checked against the table of item fields (score: a
 * /translator/score item, whose "tgt" is required, and only there known);
 * 1, or 0 with the message for a bad or (--strict) unknown field. */
int server_read_item(const server *s, const server_model_spec *spec, json_t *item, size_t i,
                     int score, nmt_request_options *o, char *msg, size_t size);
/* apps/server/sequences.c: a "suppress" field's shape (a list of strings and
 * lists of strings), and the list (NULL: none) as the library's text, one
 * sequence a line, tokens separated by spaces (malloc'd; NULL and *failed
 * when out of memory). */
int server_is_sequences(json_t *list);
char *server_sequences_text(json_t *list, int *failed);
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
