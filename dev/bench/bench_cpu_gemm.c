/* bench_cpu_gemm: the CPU's own product (nmt_cpu_linear_fixed, each code
 * path this CPU runs) against --cpu-kernels blas's (nmt_cpu_linear_blas:
 * OpenBLAS's SGEMM, few rows padded) on the shipped model's shapes, at the
 * row counts a decode step and the encoder make. Prints the median
 * microseconds a call and GFLOP/s (2 m n k / time) after a warm-up; the
 * contenders take turns, rep by rep.
 *
 *   bench_cpu_gemm [--threads N] [--rows "1 5 40 160 480"] [--reps R]
 *
 * Pin it (taskset -c 0 for one thread): the machine is shared. */
#include "half.h"
#include "linear_blas.h"
#include "linear_fixed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape {
    const char *what;
    int32_t n, k, ldw;
} shape;

static const shape shapes[] = {
    {"decoder l0 embedding", 2048, 256, 768}, {"decoder l0 feed", 2048, 512, 768},
    {"decoder w_hh, l1 w_ih", 2048, 512, 512}, {"W_c half", 512, 512, 1024},
    {"W_out", 4778, 512, 512},                 {"encoder l0 w_ih", 1024, 256, 256},
    {"encoder l1 w_ih", 1024, 512, 512},       {"encoder w_hh", 1024, 256, 256},
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct run {
    int kind; /* -1: BLAS, else an nmt_cpu_isa */
    int half; /* the weights in fp16 */
    nmt_cpu_gemm gemm;
    float *scratch;
    const uint16_t *w16;
} run;

static void call(const run *r, int32_t m, const shape *s, const float *x, const float *w,
                 const float *bias, float *y)
{
    if (r->kind < 0)
        nmt_cpu_linear_blas(m, s->n, s->k, x, s->k, w, s->ldw, bias, 0, y, s->n, r->scratch);
    else if (r->half)
        nmt_cpu_linear_fixed_half(&r->gemm, m, s->n, s->k, x, s->k, r->w16, s->ldw, bias, 0, y,
                                  s->n);
    else
        nmt_cpu_linear_fixed(&r->gemm, m, s->n, s->k, x, s->k, w, s->ldw, bias, 0, y, s->n);
}

/* Microseconds a call over enough calls for ~1 ms (the calls counted once
 * per shape). */
static double time_calls(const run *r, int32_t m, const shape *s, const float *x,
                         const float *w, const float *bias, float *y, int *calls)
{
    double t0 = now();
    if (*calls == 0) {
        while (now() - t0 < 1e-3 || *calls < 2)
            call(r, m, s, x, w, bias, y), ++*calls;
        t0 = now();
    }
    for (int c = 0; c < *calls; c++)
        call(r, m, s, x, w, bias, y);
    return (now() - t0) / *calls * 1e6;
}

int main(int argc, char **argv)
{
    int threads = 1, reps = 7;
    const char *rows_arg = "1 5 40 160 480";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            rows_arg = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]) < 1 ? 1 : atoi(argv[i]) > 64 ? 64 : atoi(argv[i]);
        else {
            fprintf(stderr, "usage: %s [--threads N] [--rows LIST] [--reps R]\n", argv[0]);
            return 2;
        }
    }
    int32_t rows[32], n_rows = 0, max_rows = 1;
    for (const char *p = rows_arg; *p && n_rows < 32;) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (v > 0 && v <= 4096)
            rows[n_rows++] = (int32_t)v, max_rows = v > max_rows ? (int32_t)v : max_rows;
        p = end;
    }
    nmt_thread_pool *pool = NULL;
    if (threads > 1 && nmt_thread_pool_create(threads, &pool, NULL) != NMT_STATUS_OK) {
        fprintf(stderr, "could not start %d threads\n", threads);
        return 1;
    }
    nmt_cpu_blas_set_threads(threads);
    run runs[2 * NMT_CPU_ISA_COUNT + 1];
    int n_runs = 0;
    if (nmt_cpu_blas_available())
        runs[n_runs++] = (run){.kind = -1};
    for (int isa = NMT_CPU_ISA_COUNT - 1; isa >= NMT_CPU_ISA_GENERIC; isa--)
        for (int half = 0; half < 2; half++)
            if (nmt_cpu_isa_supported((nmt_cpu_isa)isa) &&
                (!half || isa == (int)nmt_cpu_isa_best()))
                runs[n_runs++] = (run){.kind = isa, .half = half,
                                       .gemm = {.isa = (nmt_cpu_isa)isa, .pool = pool}};
    printf("# %d thread(s); BLAS: %s; median us a call (GFLOP/s)\n", threads,
           nmt_cpu_blas_name());
    printf("| shape | n x k | rows |");
    for (int r = 0; r < n_runs; r++)
        printf(" %s%s |", runs[r].kind < 0 ? "OpenBLAS (padded)" : nmt_cpu_isa_name(runs[r].kind),
               runs[r].half ? " fp16 weights" : "");
    printf("\n|---|---|---|");
    for (int r = 0; r < n_runs; r++)
        printf("---|");
    printf("\n");
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const shape *s = &shapes[si];
        float *x = malloc(sizeof(float) * (size_t)max_rows * s->k);
        float *w = malloc(sizeof(float) * (size_t)s->n * s->ldw);
        float *bias = malloc(sizeof(float) * (size_t)s->n);
        float *y = malloc(sizeof(float) * (size_t)max_rows * s->n);
        float *scratch = malloc(sizeof(float) * nmt_cpu_linear_blas_scratch(s->n, s->k));
        uint16_t *w16 = malloc(sizeof(uint16_t) * (size_t)s->n * s->ldw);
        if (!x || !w || !bias || !y || !scratch || !w16)
            return 1;
        for (size_t i = 0; i < (size_t)max_rows * s->k; i++)
            x[i] = (float)sin(0.1 * i);
        for (size_t i = 0; i < (size_t)s->n * s->ldw; i++)
            w16[i] = nmt_f32_to_f16((float)cos(0.01 * i) * 0.1f), w[i] = nmt_f16_to_f32(w16[i]);
        for (int32_t j = 0; j < s->n; j++)
            bias[j] = 0.01f * j;
        for (int r = 0; r < n_runs; r++)
            runs[r].scratch = scratch, runs[r].w16 = w16;
        for (int ri = 0; ri < n_rows; ri++) {
            const int32_t m = rows[ri];
            printf("| %s | %d x %d | %d |", s->what, s->n, s->k, m);
            /* The runs take turns, so a change in the machine's load hits each alike. */
            double times[NMT_CPU_ISA_COUNT + 1][64];
            int calls[NMT_CPU_ISA_COUNT + 1] = {0};
            for (int rep = 0; rep < reps; rep++)
                for (int r = 0; r < n_runs; r++)
                    times[r][rep] = time_calls(&runs[r], m, s, x, w, bias, y, &calls[r]);
            for (int r = 0; r < n_runs; r++) {
                qsort(times[r], (size_t)reps, sizeof(double), cmp_double);
                const double us = times[r][reps / 2];
                printf(" %.1f (%.1f) |", us, 2.0 * m * s->n * s->k / us * 1e-3);
            }
            printf("\n");
            fflush(stdout);
        }
        free(x), free(w), free(bias), free(y), free(scratch), free(w16);
    }
    nmt_thread_pool_free(pool);
    return 0;
}
