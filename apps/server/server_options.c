/* server_options.c: nmt-server's settings: translate's rows
 * (apps/common/option_table.c) plus the server's own, on the command line
 * (--port 8080) or in the INI file's [server] section (port = 8080). */
#include "server.h"

#include <stdio.h>
#include <string.h>

#define SERVER(field) APP_FIELD(server_settings, field)

static const app_option server_options[] = {
    {.name = "host", .kind = APP_OPT_STRING, SERVER(host), .arg = "ADDR",
     .help = "IPv4 address to listen on (127.0.0.1)"},
    {.name = "port", .kind = APP_OPT_INT, SERVER(port), .lo = 0, .hi = 65535, .arg = "N",
     .help = "port, 0 for any free one (5000); printed at start"},
    {.name = "queue-capacity", .kind = APP_OPT_INT, SERVER(queue_capacity), .lo = 1,
     .hi = 1 << 24, .arg = "N", .help = "sentences waiting at most; more get 503 (4096)"},
    {.name = "continuous", .kind = APP_OPT_INT, SERVER(continuous), .lo = 0, .hi = 1,
     .arg = "0|1",
     .help = "CUDA: 1: continuous batching, requests join the running\n"
             "search at its next join point; 0: batches (0)"},
    {.name = "join-every", .kind = APP_OPT_INT, SERVER(join_every), .lo = 1, .hi = 1000,
     .arg = "N", .help = "continuous: steps between join points (4)"},
    {.name = "workers-per-device", .kind = APP_OPT_INT, SERVER(workers_per_device), .lo = 1,
     .hi = 16, .arg = "N",
     .help = "CUDA: workers (translators) on each device; one decodes\n"
             "while another gathers its batch (2)"},
    {.name = "max-delay-us", .kind = APP_OPT_INT, SERVER(max_delay_us), .lo = 0, .hi = 10000000,
     .arg = "N", .help = "batches: how long a worker waits for one to fill (100)"},
    {.name = "max-body-bytes", .kind = APP_OPT_INT, SERVER(max_body_bytes), .lo = 64,
     .hi = 1 << 30, .arg = "N", .help = "larger bodies get 413 (1048576)"},
    {.name = "max-sentences", .kind = APP_OPT_INT, SERVER(max_sentences), .lo = 1,
     .hi = 1 << 20, .arg = "N", .help = "more items in one request get 413 (256)"},
    {.name = "max-connections", .kind = APP_OPT_INT, SERVER(max_connections), .lo = 1,
     .hi = 65536, .arg = "N", .help = "open connections at most, a thread each (1024)"},
    {.name = "max-connections-per-ip", .kind = APP_OPT_INT, SERVER(max_connections_per_ip),
     .lo = 0, .hi = 65536, .arg = "N",
     .help = "open connections of one client address at most\n(0: no limit; 256)"},
    {.name = "timeout", .kind = APP_OPT_INT, SERVER(timeout_s), .lo = 1, .hi = 3600, .arg = "S",
     .help = "a connection that has not sent a whole request after S\n"
             "seconds, or idles S seconds, is closed; a stop answers\n"
             "every request within S seconds (30)"},
    {.name = "max-requests", .kind = APP_OPT_INT, SERVER(max_requests), .lo = 0,
     .hi = 2147483647, .arg = "N", .help = "stop gracefully after N requests (0: never)"},
    {.name = NULL}};

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
    s->workers_per_device = 2; /* docs/perf/service.md, "Workers" */
    const app_extra_settings extra = {.options = server_options, .section = "server", .settings = s};
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
    if (printf("usage: %s -m MODEL [options]\n"
               "\n"
               "Serves translations over HTTP/1.1 (docs/server.md):\n"
               "  POST /translator/translate  [{\"src\": \"...\", \"id\": 1}, ...]  "
               "(OpenNMT-py's REST API)\n"
               "  GET  /health, /translator/health, /metrics (Prometheus), / (a page to try it)\n"
               "\n"
               "Server options (also keys of the INI file's [server] section):\n",
               program) < 0 ||
        app_print_options(server_options) < 0)
        return -1;
    return printf(
        "\n"
        "Every translate option works here too (-c CONFIG, -b BEAM, --batch-size, --device,\n"
        "--lsh, ...; see translate --help): they set the defaults of every request, and\n"
        "--beam and --batch-size the largest a request and a batch may be; --precision is\n"
        "auto as in translate (fp16 for an fp16 model file): an answer does not depend on\n"
        "what it was batched with (--batch-invariant, on by default). These matter most:\n"
        "  --workers N           CPU worker threads (1)\n"
        "  --devices LIST|all    CUDA devices, --workers-per-device workers each\n"
        "  --max-batch-tokens N  source tokens a batch holds at most\n"
        "  --attention           keep the attention weights, so that items may ask for\n"
        "                        \"attention\": true\n"
        "A request item may set beam_size, n_best, alpha, max_len_a, max_len_b, shrink\n"
        "and deadline_ms, and ask for \"align\", \"token_scores\" and (with --attention)\n"
        "\"attention\": true.\n"
        "SIGTERM or SIGINT: new requests get 503; those in flight are translated, or\n"
        "answered 503 once --timeout has passed; then exit 0.\n");
}
