/* server_options.c: nmt-server's settings: translate's rows
 * (apps/common/option_table.c) plus the server's own, on the command line
 * (--port 8080) or in the INI file's [server] section (port = 8080). */
#include "server.h"

#include <stdio.h>
#include <string.h>

#define SERVER(field) APP_FIELD(server_settings, field)

static const app_option server_options[] = {
    {.name = "config-json", .kind = APP_OPT_STRING, SERVER(config_json), .lo = 1, .arg = "FILE",
     .help = "serve the models of FILE, OpenNMT-py's conf.json (ids,\n"
             "files, options, load at start or at first use, unload\n"
             "after idle; docs/server.md); instead of -m"},
    {.name = "strict", .kind = APP_OPT_BOOL, SERVER(strict), .arg = "0|1",
     .help = "1 (default): a request item's unknown field gets 400\n"
             "naming it, an unknown --config-json key stops the start;\n"
             "0: both are ignored (OpenNMT-py ignores them)"},
    {.name = "max-loaded-models", .kind = APP_OPT_INT, SERVER(max_loaded), .lo = 0, .hi = 1024,
     .arg = "N",
     .help = "models loaded at once at most: loading another unloads\n"
             "the one idle longest, waiting up to --timeout for one to\n"
             "be idle (0: no limit, the default)"},
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

static void set_defaults(server_settings *s)
{
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
    s->strict = 1;
}

/* translate's options that mean nothing to a server are refused, not ignored. */
static int check_unused(const translate_args *c, const char *source, char *message, size_t size)
{
    const char *unused = c->input_path[0] ? "-i/--input" : c->output_path[0] ? "-o/--output"
                         : c->alignment ? "--alignment (use \"align\": true per item)"
                         : c->token_scores ? "--token-scores (use \"token_scores\": true per item)"
                         : c->mpi ? "--mpi" : c->skip_lines ? "--skip-lines"
                         : c->stats_path[0] ? "--stats/--timing (see /metrics)" : NULL;
    if (unused) {
        snprintf(message, size, "%s%s%s is translate's, not the server's", source ? source : "",
                 source ? ": " : "", unused);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int server_args_parse(int argc, char **argv, server_args *args, char *message, size_t size)
{
    set_defaults(&args->server);
    const app_extra_settings extra = {.options = server_options, .section = "server",
                                      .settings = &args->server, .model_optional = 1};
    const int code = app_args_parse(argc, argv, &args->common, &extra, message, size);
    if (code != EXIT_OK || args->common.show_help || args->common.show_version)
        return code;
    const int model = args->common.model_path[0] != 0, json = args->server.config_json[0] != 0;
    if (model == json) {
        snprintf(message, size, model ? "-m and --config-json exclude each other: give one"
                                      : "no model: give -m MODEL or --config-json FILE");
        return EXIT_USAGE;
    }
    return check_unused(&args->common, NULL, message, size);
}

int server_model_args(int argc, char **argv, const app_setting *overrides, int n_overrides,
                      const char *source, translate_args *out, char *message, size_t size)
{
    server_settings scratch; /* the server's own, read again and not needed */
    set_defaults(&scratch);
    const app_extra_settings extra = {.options = server_options, .section = "server",
                                      .settings = &scratch, .overrides = overrides,
                                      .n_overrides = n_overrides, .overrides_source = source};
    const int code = app_args_parse(argc, argv, out, &extra, message, size);
    if (code != EXIT_OK && strncmp(message, source, strlen(source)) != 0) {
        /* a rule between settings (n_best over beam, ...): say whose */
        char reason[512];
        snprintf(reason, sizeof reason, "%s", message);
        snprintf(message, size, "%s: %s", source, reason);
    }
    return code != EXIT_OK ? code : check_unused(out, source, message, size);
}

int server_print_help(const char *program)
{
    if (printf("usage: %s -m MODEL [options]\n"
               "       %s --config-json CONF.json [options]\n"
               "\n"
               "Serves translations over HTTP/1.1 (docs/server.md), OpenNMT-py's REST API:\n"
               "  POST /translator/translate  [{\"src\": \"...\", \"id\": MODEL_ID}, ...]\n"
               "       (-m's model is id 0; the answer is one list per n-best rank)\n"
               "  POST /translator/score      [{\"src\": \"...\", \"tgt\": \"...\"}, ...]  "
               "(forced decoding)\n"
               "  GET  /translator/models, GET|POST /translator/unload_model/MODEL_ID\n"
               "  GET  /health, /translator/health, /metrics (Prometheus), / (a page to try it)\n"
               "\n"
               "Server options (also keys of the INI file's [server] section):\n",
               program, program) < 0 ||
        app_print_options(server_options) < 0)
        return -1;
    return printf(
        "\n"
        "Every translate option works here too (-c CONFIG, -b BEAM, --batch-size, --device,\n"
        "--lsh, ...; see translate --help): they set the defaults of every model (a\n"
        "--config-json entry's \"opt\" overrides them) and request, and\n"
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
        "\"attention\": true; the first item's \"id\" names the model of every item.\n"
        "SIGTERM or SIGINT: new requests get 503; those in flight are translated, or\n"
        "answered 503 once --timeout has passed; then exit 0.\n");
}
