/* main.c: nmt-server (docs/server.md): reads its models (-m, or
 * --config-json), loads those loaded at start and listens; prints
 * "nmt-server: listening on http://HOST:PORT" on stdout once it accepts
 * requests. The main thread's tick closes stalled connections and unloads
 * the models idle past their timeout. SIGTERM or SIGINT (or --max-requests answered)
 * starts a graceful stop (drain): new requests get 503, those in flight are
 * answered within --timeout (translated, or 503 at the deadline), and the
 * program exits 0. Exit codes as translate's: 2 usage, 3 model, 4 service
 * or listening failed. */
#include "server.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The main thread's tick: stalled connections are closed this often. */
static const struct timespec kTick = {0, 100 * 1000 * 1000};

/* The drain: from now, new requests get 503 and a handler still waiting at
 * the deadline (--timeout from now) answers 503 (translate_api.c); this
 * waits until every request is answered, with a second's grace for the
 * last answers to be written. */
static void drain(server *s)
{
    pthread_mutex_lock(&s->lock);
    s->draining = 1;
    s->drain_deadline = server_now() + s->settings.timeout_s;
    const double until = s->drain_deadline + 1.0;
    while (s->in_flight > 0 && server_now() < until) {
        pthread_mutex_unlock(&s->lock);
        server_http_close_stalled(s);
        pthread_mutex_lock(&s->lock);
        struct timespec wake;
        clock_gettime(CLOCK_REALTIME, &wake);
        wake.tv_nsec += kTick.tv_nsec;
        wake.tv_sec += wake.tv_nsec / 1000000000L;
        wake.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&s->idle, &s->lock, &wake);
    }
    pthread_mutex_unlock(&s->lock);
}

/* Until a stop signal or max_requests answered. */
static int wait_for_stop(server *s, const sigset_t *signals)
{
    for (;;) {
        const int sig = sigtimedwait(signals, NULL, &kTick);
        if (sig > 0)
            return sig;
        server_http_close_stalled(s);
        server_models_expire(s->models, server_now());
        pthread_mutex_lock(&s->lock);
        const int done = s->settings.max_requests > 0 && s->requests >= s->settings.max_requests;
        pthread_mutex_unlock(&s->lock);
        if (done)
            return 0;
    }
}

int main(int argc, char **argv)
{
    static server_args args;
    char message[1024];
    const char *program = argc > 0 ? argv[0] : "nmt-server";
    int closed[3]; /* a closed stream: a socket must not take its number */
    if (app_guard_std_streams(closed) != 0)
        return EXIT_IO;
    /* jansson seeds its hash function on first use, unguarded: seed it here,
     * before any thread exists (helgrind showed the race). */
    json_object_seed(0);
    if (server_args_parse(argc, argv, &args, message, sizeof message) != EXIT_OK) {
        fprintf(stderr, "nmt-server: %s\n", message);
        return EXIT_USAGE;
    }
    if (args.common.show_help)
        return server_print_help(program) < 0 || fflush(stdout) != 0 ? EXIT_IO : EXIT_OK;
    if (args.common.show_version)
        return printf("nmt-server (nmt %s)\n", "0.1") < 0 || fflush(stdout) != 0 ? EXIT_IO
                                                                                 : EXIT_OK;
    /* The stop signals are taken by sigtimedwait only: blocked before any
     * thread starts, so every thread inherits the mask. A client that hangs
     * up must not kill the process. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    server_model_spec *specs = NULL;
    int n_specs = 0;
    if (server_model_specs(&args, argc, argv, &specs, &n_specs, message, sizeof message) !=
        EXIT_OK) {
        fprintf(stderr, "nmt-server: %s\n", message);
        return EXIT_USAGE;
    }
    static server s;
    s.settings = args.server;
    server_metrics_init(&s.metrics);
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.idle, NULL);
    if (!(s.models = server_models_create(specs, n_specs, &args.server))) {
        fprintf(stderr, "nmt-server: out of memory\n");
        server_model_specs_free(specs, n_specs);
        return EXIT_FAILED;
    }
    const int loaded = server_models_load_all(s.models, message, sizeof message);
    if (loaded != EXIT_OK) {
        fprintf(stderr, "nmt-server: %s\n", message);
        server_models_free(s.models);
        return loaded;
    }
    int port = 0;
    if (server_http_start(&s, &port, message, sizeof message) != 0) {
        fprintf(stderr, "nmt-server: %s\n", message);
        server_models_free(s.models);
        return EXIT_FAILED;
    }
    if (printf("nmt-server: listening on http://%s:%d\n", s.settings.host, port) < 0 ||
        fflush(stdout) != 0)
        fprintf(stderr, "nmt-server: cannot write to stdout: %s\n", strerror(errno));

    const int sig = wait_for_stop(&s, &signals);
    fprintf(stderr, "nmt-server: %s; answering what is in flight\n",
            sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "max-requests answered");
    drain(&s);
    server_http_stop(&s);
    nmt_service_stats st;
    int n_loaded;
    server_models_stats(s.models, &st, &n_loaded);
    fprintf(stderr, "nmt-server: stopped after %lld requests (%lld sentences in %lld batches)\n",
            (long long)s.requests, (long long)st.completed, (long long)st.batches);
    if (st.running > 0) {
        /* A batch still runs, its requests answered 503 at the deadline:
         * joining its worker would hold the exit past --timeout, and there
         * is no one left to give its translations to. */
        fprintf(stderr, "nmt-server: %lld sentences abandoned mid-translation\n",
                (long long)st.running);
        fflush(NULL);
        _exit(EXIT_OK);
    }
    server_models_free(s.models); /* nothing is queued: every request was answered or
                                     cancelled */
    return EXIT_OK;
}
