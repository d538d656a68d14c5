/* bench_passes: what the first pass over a file costs beyond the later ones.
 *
 *   bench_passes MODEL FILE [BATCH [BEAM [PASSES [DEVICE [graphs=0|1] [warmup=0|1] [check=N] [precision=fp32|tf32x2|bf16|fp16|auto]]]]]
 *
 * Translates FILE (one sentence a line) PASSES times (default 3) in one
 * process, BATCH lines per nmt_translate_batch call (default 64), and prints
 * the wall time of every call, then each pass's total and how many encoder
 * passes and steps ran as graphs and eagerly. Pass 1 includes the
 * one-time work of the first batches (kernel loading, cuBLAS's per-shape
 * heuristics, buffers growing); later passes are the steady state. */
#include "nmt.h"

#include "bench_lines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* nmt_precision's values, in order (auto, the default: the model file's). */
static const char *const precision_names[] = {"fp32", "tf32x2", "bf16", "fp16", "auto"};

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL FILE [BATCH [BEAM [PASSES [cpu|cuda [graphs=0|1] "
                        "[warmup=0|1] [check=N] [precision=fp32|tf32x2|bf16|fp16|auto]]]]]\n", argv[0]);
        return 2;
    }
    const int batch = argc > 3 ? atoi(argv[3]) : 64, beam = argc > 4 ? atoi(argv[4]) : 5;
    const int passes = argc > 5 ? atoi(argv[5]) : 3;
    nmt_options options;
    nmt_options_init(&options);
    options.batch_size = batch;
    options.beam_size = beam;
    options.collect_stats = 1; /* the graph counters (free: no timing events) */
    options.device = argc > 6 && !strcmp(argv[6], "cpu") ? NMT_DEVICE_CPU : NMT_DEVICE_CUDA;
    for (int i = 7; i < argc; i++) {
        if (!strncmp(argv[i], "graphs=", 7))
            options.cuda_graphs = atoi(argv[i] + 7);
        else if (!strncmp(argv[i], "warmup=", 7))
            options.warmup = atoi(argv[i] + 7);
        else if (!strncmp(argv[i], "check=", 6))
            options.check_every = atoi(argv[i] + 6);
        else if (!strncmp(argv[i], "precision=", 10)) {
            int found = -1;
            for (int p = 0; p <= NMT_PRECISION_AUTO; p++)
                if (!strcmp(argv[i] + 10, precision_names[p]))
                    found = p;
            if (found < 0) {
                fprintf(stderr, "bench_passes: unknown %s\n", argv[i]);
                return 2;
            }
            options.precision = (nmt_precision)found;
            /* tf32x2 switches to TF32 from 64 rows: refused under batch invariance */
            if (options.precision == NMT_PRECISION_TF32X2)
                options.batch_invariant = 0;
        } else {
            fprintf(stderr, "bench_passes: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    char **lines = NULL;
    const int n = bench_read_lines(argv[2], 0, &lines);
    if (n < 1 || batch < 1 || beam < 1 || passes < 1) {
        fprintf(stderr, "%s: no lines in %s, or a bad number\n", argv[0], argv[2]);
        return 2;
    }
    nmt_error err = {0};
    nmt_model *model = NULL;
    nmt_translator *translator = NULL;
    double t0 = now_ms();
    if (nmt_model_load(argv[1], &model, &err) != NMT_STATUS_OK ||
        nmt_translator_create(model, &options, &translator, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", argv[0], err.message);
        return 3;
    }
    printf("load + create: %.1f ms; %d lines, batch %d, beam %d, graphs %d, warmup %d, "
           "check every %d, precision %s\n", now_ms() - t0, n, batch, beam, options.cuda_graphs,
           options.warmup, options.check_every, precision_names[options.precision]);
    nmt_result *results = calloc((size_t)batch, sizeof *results);
    if (!results)
        return 4;
    for (int pass = 1; pass <= passes; pass++) {
        double total = 0.0;
        nmt_stats before = {0}, after = {0};
        (void)nmt_translator_stats(translator, &before, &err);
        printf("pass %d:", pass);
        for (int first = 0; first < n; first += batch) {
            const int count = n - first < batch ? n - first : batch;
            t0 = now_ms();
            if (nmt_translate_batch(translator, (const char *const *)lines + first, count,
                                    results, &err) != NMT_STATUS_OK) {
                fprintf(stderr, "\n%s: %s\n", argv[0], err.message);
                return 4;
            }
            const double ms = now_ms() - t0;
            total += ms;
            printf(" %.3f", ms);
            for (int k = 0; k < count; k++)
                nmt_result_clear(&results[k]);
        }
        (void)nmt_translator_stats(translator, &after, &err);
        printf("  | total %.1f ms | graph runs %lld, eager runs %lld\n", total,
               (long long)(after.graph_runs - before.graph_runs),
               (long long)(after.eager_runs - before.eager_runs));
    }
    free(results);
    for (int i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    nmt_translator_free(translator);
    nmt_model_free(model);
    return 0;
}
