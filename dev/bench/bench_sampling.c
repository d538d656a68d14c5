/* bench_sampling: random sampling's cost against greedy decoding, the
 * issue's target (sampling top-K 10 with beam 1 within 1.3x of greedy at
 * batch 1,024; docs/performance.md).
 *
 *   bench_sampling MODEL FILE [BATCH [PASSES [cpu|cuda [topk=K] [samples=N]
 *                  [precision=fp32|bf16|fp16|auto] [rules=1]]]]]
 *
 * Makes two translators of the same batch size (default 1024): greedy (beam
 * 1) and sampling (beam 1, top-K K, default 10, N samples a line, default
 * 1; rules=1 adds no_repeat_ngram_size 3 and a repetition penalty 1.2 to
 * both). After a warm-up pass each, translates FILE PASSES times (default
 * 5) with each, alternating, BATCH lines a call, and prints every pass's
 * wall time, sentences/s, decoder steps and time a step (nmt_stats), then
 * the medians and the ratios sampling / greedy of the wall time and of the
 * time a step (samples run as long as they draw words other than EOS, so
 * the steps differ too). */
#include "nmt.h"

#include "bench_lines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_PASSES = 64 };

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static const char *const precision_names[] = {"fp32", "tf32x2", "bf16", "fp16", "auto"};

typedef struct pass_result {
    double ms;
    long long steps;
} pass_result;

/* One pass over the lines, BATCH a call. */
static int run_pass(nmt_translator *t, char **lines, int n, int batch, nmt_result *results,
                    pass_result *out)
{
    nmt_error err = {0};
    nmt_stats before = {0}, after = {0};
    (void)nmt_translator_stats(t, &before, &err);
    const double t0 = now_ms();
    for (int first = 0; first < n; first += batch) {
        const int count = n - first < batch ? n - first : batch;
        if (nmt_translate_batch(t, (const char *const *)lines + first, count, results, &err) !=
            NMT_STATUS_OK) {
            fprintf(stderr, "bench_sampling: %s\n", err.message);
            return 0;
        }
        for (int k = 0; k < count; k++)
            nmt_result_clear(&results[k]);
    }
    out->ms = now_ms() - t0;
    (void)nmt_translator_stats(t, &after, &err);
    out->steps = (long long)(after.steps - before.steps);
    return 1;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL FILE [BATCH [PASSES [cpu|cuda [topk=K] [samples=N] "
                        "[precision=fp32|bf16|fp16|auto] [rules=1]]]]]\n", argv[0]);
        return 2;
    }
    const int batch = argc > 3 ? atoi(argv[3]) : 1024, passes = argc > 4 ? atoi(argv[4]) : 5;
    int topk = 10, samples = 1, rules = 0;
    nmt_options greedy;
    nmt_options_init(&greedy);
    greedy.batch_size = batch;
    greedy.beam_size = 1;
    greedy.collect_stats = 1;
    greedy.device = argc > 5 && !strcmp(argv[5], "cpu") ? NMT_DEVICE_CPU : NMT_DEVICE_CUDA;
    for (int i = 6; i < argc; i++) {
        int found = -1;
        if (!strncmp(argv[i], "topk=", 5))
            topk = atoi(argv[i] + 5);
        else if (!strncmp(argv[i], "samples=", 8))
            samples = atoi(argv[i] + 8);
        else if (!strncmp(argv[i], "rules=", 6))
            rules = atoi(argv[i] + 6);
        else if (!strncmp(argv[i], "precision=", 10)) {
            for (int p = 0; p <= NMT_PRECISION_AUTO; p++)
                if (!strcmp(argv[i] + 10, precision_names[p]))
                    found = p;
            if (found < 0) {
                fprintf(stderr, "bench_sampling: unknown %s\n", argv[i]);
                return 2;
            }
            greedy.precision = (nmt_precision)found;
        } else {
            fprintf(stderr, "bench_sampling: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (rules) {
        greedy.no_repeat_ngram_size = 3;
        greedy.repetition_penalty = 1.2f;
    }
    nmt_options sampling = greedy;
    sampling.sampling_topk = topk;
    sampling.n_best = samples;
    char **lines = NULL;
    const int n = bench_read_lines(argv[2], 0, &lines);
    if (n < 1 || batch < 1 || passes < 1 || passes > MAX_PASSES || samples < 1) {
        fprintf(stderr, "%s: no lines in %s, or a bad number\n", argv[0], argv[2]);
        return 2;
    }
    nmt_error err = {0};
    nmt_model *model = NULL;
    nmt_translator *t[2] = {NULL, NULL};
    if (nmt_model_load(argv[1], &model, &err) != NMT_STATUS_OK ||
        nmt_translator_create(model, &greedy, &t[0], &err) != NMT_STATUS_OK ||
        nmt_translator_create(model, &sampling, &t[1], &err) != NMT_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", argv[0], err.message);
        return 3;
    }
    nmt_result *results = calloc((size_t)batch, sizeof *results);
    if (!results)
        return 4;
    printf("%d lines, batch %d, %s, precision %s; sampling: top-K %d, %d sample(s) a line%s\n",
           n, batch, nmt_translator_device(t[0]) == NMT_DEVICE_CUDA ? "cuda" : "cpu",
           precision_names[greedy.precision], topk, samples,
           rules ? "; both: no-repeat 3-grams, repetition penalty 1.2" : "");
    static const char *const names[2] = {"greedy", "sampling"};
    double ms[2][MAX_PASSES], step_us[2][MAX_PASSES];
    pass_result r;
    for (int k = 0; k < 2; k++) /* warm-up: kernels, plans, graphs */
        if (!run_pass(t[k], lines, n, batch, results, &r))
            return 4;
    for (int pass = 0; pass < passes; pass++)
        for (int k = 0; k < 2; k++) {
            if (!run_pass(t[k], lines, n, batch, results, &r))
                return 4;
            ms[k][pass] = r.ms;
            step_us[k][pass] = r.steps > 0 ? 1e3 * r.ms / (double)r.steps : 0.0;
            printf("pass %d %-8s %9.1f ms  %9.1f sentences/s  %6lld steps  %8.1f us/step\n",
                   pass + 1, names[k], r.ms, 1e3 * n / r.ms, r.steps, step_us[k][pass]);
        }
    double med_ms[2], med_step[2];
    for (int k = 0; k < 2; k++) {
        med_ms[k] = median(ms[k], passes);
        med_step[k] = median(step_us[k], passes);
        printf("median %-8s %9.1f ms  %9.1f sentences/s  %8.1f us/step\n", names[k], med_ms[k],
               1e3 * n / med_ms[k], med_step[k]);
    }
    printf("sampling / greedy: %.3fx the wall time, %.3fx the time a step\n",
           med_ms[1] / med_ms[0], med_step[0] > 0 ? med_step[1] / med_step[0] : 0.0);
    free(results);
    for (int i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    nmt_translator_free(t[0]);
    nmt_translator_free(t[1]);
    nmt_model_free(model);
    return 0;
}
