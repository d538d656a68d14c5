/* server_options.c: nmt-server's settings: translate's (apps/common/options.c)
 * plus the server's own keys, on the command line (--port 8080) or in the
 * INI file's [server] section (port = 8080). */
#include "server.h"

#include <stdio.h>
#include <string.h>

static const struct option server_options[] = {
    {"host", required_argument, NULL, 0},
    {"port", required_argument, NULL, 0},
    {"max-body-bytes", required_argument, NULL, 0},
    {"max-sentences", required_argument, NULL, 0},
    {"max-connections", required_argument, NULL, 0},
    {"max-connections-per-ip", required_argument, NULL, 0},
    {"timeout", required_argument, NULL, 0},
    {"max-requests", required_argument, NULL, 0},
    {"queue-capacity", required_argument, NULL, 0},
    {"max-delay-us", required_argument, NULL, 0},
    {"continuous", required_argument, NULL, 0},
    {"join-every", required_argument, NULL, 0},
    {NULL, 0, NULL, 0}};

static int apply_server_setting(void *ctx, const char *key, const char *value)
{
    server_settings *s = ctx;
    if (!strcmp(key, "host")) {
        if (strlen(value) >= sizeof s->host)
            return 0;
        strcpy(s->host, value);
        return 1;
    }
    if (!strcmp(key, "port"))
        return app_parse_int(value, 0, 65535, &s->port);
    if (!strcmp(key, "max_body_bytes"))
        return app_parse_int(value, 64, 1 << 30, &s->max_body_bytes);
    if (!strcmp(key, "max_sentences"))
        return app_parse_int(value, 1, 1 << 20, &s->max_sentences);
    if (!strcmp(key, "max_connections"))
        return app_parse_int(value, 1, 65536, &s->max_connections);
    if (!strcmp(key, "max_connections_per_ip"))
        return app_parse_int(value, 0, 65536, &s->max_connections_per_ip);
    if (!strcmp(key, "timeout"))
        return app_parse_int(value, 1, 3600, &s->timeout_s);
    if (!strcmp(key, "max_requests"))
        return app_parse_int(value, 0, 2147483647, &s->max_requests);
    if (!strcmp(key, "queue_capacity"))
        return app_parse_int(value, 1, 1 << 24, &s->queue_capacity);
    if (!strcmp(key, "max_delay_us"))
        return app_parse_int(value, 0, 10000000, &s->max_delay_us);
    if (!strcmp(key, "continuous"))
        return app_parse_int(value, 0, 1, &s->continuous);
    if (!strcmp(key, "join_every"))
        return app_parse_int(value, 1, 1000, &s->join_every);
    return -1;
}

int server_args_parse(int argc, char **argv, server_args *args, char *message, size_t size)
{
    server_settings *s = &args->server;
    memset(s, 0, sizeof *s);
    strcpy(s->host, "127.0.0.1");
    s->port = 5000; /* OpenNMT-py's default */
    s->max_body_bytes = 1 << 20;
    s->max_sentences = 256;
    s->max_connections = 1024;
    /* one address's share: a client (or a slowloris) cannot hold every thread;
     * dev/eval/loadgen's 256 clients fit */
    s->max_connections_per_ip = 256;
    s->timeout_s = 30;
    s->queue_capacity = 4096;
    s->max_delay_us = 100; /* docs/perf/service.md, "Batching delay" */
    s->continuous = 0;      /* docs/perf/service.md, "Continuous batching" */
    s->join_every = 4;
    const app_extra_settings extra = {server_options, "server", apply_server_setting, s};
    const int code = app_args_parse(argc, argv, &args->common, &extra, message, size);
    if (code != EXIT_OK)
        return code;
    /* translate's options that mean nothing to a server are refused, not ignored. */
    const translate_args *c = &args->common;
    const char *unused = c->input_path[0] ? "-i/--input" : c->output_path[0] ? "-o/--output"
                         : c->alignment ? "--alignment (use \"align\": true per item)"
                         : c->token_scores ? "--token-scores (use \"token_scores\": true per item)"
                         : c->mpi ? "--mpi" : c->skip_lines ? "--skip-lines"
                         : c->stats_path[0] ? "--stats/--timing (see /metrics)" : NULL;
    if (unused) {
        snprintf(message, size, "%s is translate's, not the server's", unused);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int server_print_help(const char *program)
{
    return printf(
        "usage: %s -m MODEL [options]\n"
        "\n"
        "Serves translations over HTTP/1.1 (docs/server.md):\n"
        "  POST /translator/translate  [{\"src\": \"...\", \"id\": 1}, ...]  (OpenNMT-py's REST "
        "API)\n"
        "  GET  /health, /translator/health, /metrics (Prometheus), / (a page to try it)\n"
        "\n"
        "Server options (also keys of the INI file's [server] section):\n"
        "  --host ADDR           IPv4 address to listen on (127.0.0.1)\n"
        "  --port N              port, 0 for any free one (5000); printed at start\n"
        "  --workers N           (translate's) CPU worker threads (1)\n"
        "  --devices LIST|all    (translate's) CUDA devices, one worker each\n"
        "  --queue-capacity N    sentences waiting at most; more get 503 (4096)\n"
        "  --continuous 0|1      CUDA: 1: continuous batching, requests join the running\n"
        "                        search at its next join point; 0: batches (0)\n"
        "  --join-every N        continuous: steps between join points (4)\n"
        "  --max-delay-us N      batches: how long a worker waits for one to fill (100)\n"
        "  --max-batch-tokens N  (translate's) source tokens a batch holds at most\n"
        "  --max-body-bytes N    larger bodies get 413 (1048576)\n"
        "  --max-sentences N     more items in one request get 413 (256)\n"
        "  --max-connections N   open connections at most, a thread each (1024)\n"
        "  --max-connections-per-ip N  open connections of one client address at most\n"
        "                        (0: no limit; 256)\n"
        "  --timeout S           a connection that has not sent a whole request after S\n"
        "                        seconds, or idles S seconds, is closed; a stop answers\n"
        "                        every request within S seconds (30)\n"
        "  --max-requests N      stop gracefully after N requests (0: never)\n"
        "  --attention           (translate's) keep the attention weights, so that items may\n"
        "                        ask for \"attention\": true\n"
        "\n"
        "Every translate option works here too (-c CONFIG, -b BEAM, --batch-size, --device,\n"
        "--lsh, ...; see translate --help): they set the defaults of every request, and\n"
        "--beam and --batch-size the largest a request and a batch may be; --precision is\n"
        "auto as in translate (fp16 for an fp16 model file): an answer does not depend on\n"
        "what it was batched with (--batch-invariant, on by default). A request item may\n"
        "set beam_size, n_best, alpha, max_len_a, max_len_b, shrink and deadline_ms, and\n"
        "ask for \"align\", \"token_scores\" and (with --attention) \"attention\": true.\n"
        "SIGTERM or SIGINT: new requests get 503; those in flight are translated, or\n"
        "answered 503 once --timeout has passed; then exit 0.\n",
        program);
}
