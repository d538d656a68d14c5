/* bench_lsh_variant.h: bench_lsh's variants by name (header only, static,
 * included by bench_lsh.cu): --variant NAME[,NAME..] runs each named kernel
 * variant on every (H, V, rows, group) of the options, first once against its
 * CPU twin (the largest error, or the entries that differ), then timed with
 * bench_lsh's time_us (events around batches, median of NMT_BENCH_REPEATS
 * runs, inputs rotated over copies bigger than 2x L2).
 *  logits (auto, gemm, sddmm, warp): nmt_cuda_lsh_logits over fixed random
 *      lists of --count words a group (the n_always = 4 + T words first),
 *      columns from --first, max_count = V (the engine's bound; the exact
 *      one with NMT_BENCH_LSH_TIGHT=1), against nmt_cpu_lsh_logits: the
 *      largest error over the fp32 bound of any summation order,
 *      (dim + 2) u sum|x_k w_k| + u |ref| (u = 2^-24);
 *  lookups (lookup-warp, lookup-naive): nmt_cuda_lsh_hits from zero hits
 *      on the codes of a real index, against nmt_cpu_lsh_codes +
 *      nmt_cpu_lsh_hits (the codes and the hits that differ);
 *  lists (two-step, direct): hits + candidates, or the direct builder, from
 *      those codes to a list a group, against nmt_cpu_lsh_candidates (the
 *      counts and list entries that differ). */
#ifndef NMT_BENCH_LSH_VARIANT_H
#define NMT_BENCH_LSH_VARIANT_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lsh_data.h"
#include "bench_lsh_step.h"
#include "bench_util.h"
#include "lsh.h"
#include "lsh_index.h"

enum { LSH_LOGITS, LSH_LOOKUP, LSH_LISTS };

typedef struct {
    const char *name;
    int kind, code; /* LSH_LOGITS: nmt_lsh_logits_kernel; LSH_LOOKUP: nmt_lsh_lookup;
                       LSH_LISTS: 1 for the direct builder */
    const char *what;
} lsh_variant;

static const lsh_variant kLshVariants[] = {
    {"auto", LSH_LOGITS, NMT_LSH_LOGITS_AUTO, "logits, AUTO's pick by group size"},
    {"gemm", LSH_LOGITS, NMT_LSH_LOGITS_GEMM, "logits, a tiled GEMM over a group's gathered rows"},
    {"sddmm", LSH_LOGITS, NMT_LSH_LOGITS_SDDMM, "logits, a warp per 8 candidates of one row"},
    {"warp", LSH_LOGITS, NMT_LSH_LOGITS_WARP, "logits, a warp per candidates x 4 or 8 rows"},
    {"lookup-warp", LSH_LOOKUP, NMT_LSH_LOOKUP_WARP, "hits, the warp walks each lane's bucket"},
    {"lookup-naive", LSH_LOOKUP, NMT_LSH_LOOKUP_NAIVE, "hits, a thread walks its own bucket"},
    {"two-step", LSH_LISTS, 0, "lists, hits (warp lookup) + candidates"},
    {"direct", LSH_LISTS, 1, "lists, straight from the codes (no hit matrix)"},
};
enum { N_LSH_VARIANTS = sizeof kLshVariants / sizeof kLshVariants[0] };

static const lsh_variant *lsh_variant_find(const char *name)
{
    for (int i = 0; i < N_LSH_VARIANTS; i++)
        if (strcmp(name, kLshVariants[i].name) == 0)
            return &kLshVariants[i];
    return NULL;
}

/* The shape of one case. */
typedef struct {
    int dim, vocab, rows, group, count, first;
} lsh_shape;

static int g_lsh_failures;

/* A host copy of device data, after all the work on the device (the library's
 * stream is non-blocking: a plain cudaMemcpy does not wait for it). */
static void *host_copy(const void *d, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    return h;
}

static void report(const bench *B, const lsh_variant *v, const lsh_shape *s, double us,
                   double floor, const char *check, double value, int ok)
{
    g_lsh_failures += !ok;
    printf("{\"bench\":\"lsh_variant\",\"variant\":\"%s\",\"H\":%d,\"V\":%d,\"rows\":%d,"
           "\"group\":%d,\"count\":%d,\"first\":%d,\"K\":%d,\"u\":%d,\"W\":%d,\"threshold\":%d,"
           "\"top\":%d,\"median_us\":%.3f,\"floor_us\":%.3f,\"%s\":%.4g,\"ok\":%s}\n",
           v->name, s->dim, s->vocab, s->rows, s->group, s->count, s->first, B->cfg.k, B->cfg.u,
           B->cfg.w, B->threshold, B->top, us, floor, check, value, ok ? "true" : "false");
    fflush(stdout);
    fprintf(stderr, "%-12s H %4d V %6d rows %4d group %4d count %6d | %9.2f us (floor %7.2f) | "
            "%s %.3g%s\n", v->name, s->dim, s->vocab, s->rows, s->group, s->count, us, floor,
            check, value, ok ? "" : "  MISMATCH");
}

/* Logits over fixed lists against nmt_cpu_lsh_logits. */
static void variant_logits(const bench *B, const weights *wt, const lsh_variant *v,
                           const lsh_shape *s)
{
    const int V = s->vocab, H = s->dim, groups = (s->rows + s->group - 1) / s->group;
    const int n_always = 4 + B->top < s->count ? 4 + B->top : s->count;
    step_arg a = {};
    step_alloc(B, wt, &a, s->rows, groups);
    states_make(B, &a, s->rows, s->group > 1 ? s->group : beam_for(s->rows), 5000u + s->rows);
    int32_t *cand = (int32_t *)calloc((size_t)groups * V, sizeof(int32_t));
    int32_t *count = (int32_t *)malloc(groups * sizeof(int32_t));
    int64_t words = 0;
    for (int g = 0; g < groups; g++) {
        count[g] = make_fixed_list(V, s->count, n_always, 88u + g, cand + (size_t)g * V);
        words += count[g] > s->first ? count[g] - s->first : 0;
    }
    CUDA_OK(cudaMemcpy(a.hash_cand, cand, (size_t)groups * V * sizeof(int32_t),
                       cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(a.hash_count, count, groups * sizeof(int32_t),
                       cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize()); /* pageable copies may still be in flight */
    a.rows_per_group = s->group;
    a.cand = a.hash_cand;
    a.count = a.hash_count;
    a.first = s->first;
    a.max_count = B->tight ? s->count : V;
    a.kernel = (nmt_lsh_logits_kernel)v->code;

    run_logits(&a, 0);
    const size_t n = (size_t)s->rows * V;
    float *got = (float *)host_copy(a.logits, n * sizeof(float));
    float *x = (float *)host_copy(a.x, (size_t)s->rows * H * sizeof(float));
    float *b = (float *)host_copy(a.b, V * sizeof(float));
    float *want = (float *)malloc(n * sizeof(float));
    const nmt_lsh_logits_args args = {
        .n_rows = s->rows,
        .dim = H,
        .x = x,
        .ldx = H,
        .out_w = wt->host_w,
        .out_b = b,
        .lists = lists_of(&a, cand, count),
        .first = s->first,
        .logits = want,
        .ld = V,
    };
    nmt_cpu_lsh_logits(&args);
    double worst = 0.0; /* |error| / bound */
    for (int r = 0; r < s->rows; r++) {
        const int g = r / s->group;
        for (int j = s->first; j < count[g]; j++) {
            const int32_t word = cand[(size_t)g * V + j];
            double mag = fabs((double)b[word]);
            for (int p = 0; p < H; p++)
                mag += fabs((double)x[(size_t)r * H + p] * wt->host_w[(size_t)word * H + p]);
            const double u = ldexp(1.0, -24), ref = want[(size_t)r * V + j];
            const double bound = (H + 2) * u * mag + u * fabs(ref) + 1e-30;
            const double ratio = fabs((double)got[(size_t)r * V + j] - ref) / bound;
            if (!(ratio <= worst)) /* NaN: infinitely wrong */
                worst = ratio == ratio ? ratio : INFINITY;
        }
    }
    const double us = time_us(run_logits, &a, B->stream);
    report(B, v, s, us, floor_us(B, (double)words, H), "err_over_bound", worst, worst <= 1.0);
    free(cand);
    free(count);
    free(got);
    free(x);
    free(b);
    free(want);
    step_free(&a);
}

/* Lookups and lists on the codes of a real index. */
static void variant_index(const bench *B, const weights *wt, const nmt_lsh_index *index,
                          const dev_index *d, const lsh_variant *v, const lsh_shape *s)
{
    const int V = s->vocab, H = s->dim, groups = (s->rows + s->group - 1) / s->group;
    const nmt_lsh_tables *t = nmt_lsh_index_tables(index);
    step_arg a = {};
    step_alloc(B, wt, &a, s->rows, groups);
    states_make(B, &a, s->rows, s->group > 1 ? s->group : beam_for(s->rows), 6000u + s->rows);
    codes_make(&a, d);
    a.rows_per_group = s->group;
    a.n_always = 4 + B->top < V ? 4 + B->top : V;
    a.lookup = v->kind == LSH_LOOKUP ? (nmt_lsh_lookup)v->code : NMT_LSH_LOOKUP_WARP;

    /* The CPU side: codes of x copy 0, then hits and (lists) candidates. */
    const size_t n_codes = (size_t)s->rows * t->w, n_hits = (size_t)s->rows * V;
    float *x = (float *)host_copy(a.x, (size_t)s->rows * H * sizeof(float));
    int32_t *codes = (int32_t *)malloc(n_codes * sizeof(int32_t));
    int32_t *got_codes = (int32_t *)host_copy(a.codes_all, n_codes * sizeof(int32_t));
    nmt_cpu_lsh_codes(s->rows, x, H, t, codes);
    size_t bad = bench_count_diff_i32(got_codes, codes, n_codes);
    int32_t *hits = (int32_t *)calloc(n_hits, sizeof(int32_t));
    nmt_cpu_lsh_hits(s->rows, codes, NULL, t, hits);
    const char *check = "codes_and_hits_differ";
    bench_fn fn = run_hits;
    if (v->kind == LSH_LOOKUP) {
        CUDA_OK(cudaMemset(a.hits, 0, n_hits * sizeof(int32_t)));
        CUDA_OK(cudaDeviceSynchronize());
        run_hits(&a, 0);
        int32_t *got = (int32_t *)host_copy(a.hits, n_hits * sizeof(int32_t));
        bad += bench_count_diff_i32(got, hits, n_hits);
        free(got);
    } else {
        int32_t *cand = (int32_t *)malloc((size_t)groups * V * sizeof(int32_t));
        int32_t *count = (int32_t *)malloc(groups * sizeof(int32_t));
        nmt_cpu_lsh_candidates(s->rows, V, hits, B->threshold, a.n_always,
                               lists_of(&a, cand, count));
        fn = v->code ? run_lists_direct : run_lists_two_step;
        fn(&a, 0);
        int32_t *got_count = (int32_t *)host_copy(a.hash_count, groups * sizeof(int32_t));
        int32_t *got = (int32_t *)host_copy(a.hash_cand, (size_t)groups * V * sizeof(int32_t));
        bad += bench_count_diff_i32(got_count, count, groups);
        for (int g = 0; g < groups; g++)
            bad += bench_count_diff_i32(got + (size_t)g * V, cand + (size_t)g * V, count[g]);
        check = "codes_and_lists_differ";
        free(cand);
        free(count);
        free(got_count);
        free(got);
    }
    const double us = time_us(fn, &a, B->stream);
    CUDA_OK(cudaMemsetAsync(a.hits, 0, n_hits * sizeof(int32_t), B->stream));
    report(B, v, s, us, 0.0, check, (double)bad, bad == 0);
    free(x);
    free(codes);
    free(got_codes);
    free(hits);
    step_free(&a);
}

/* Every named variant on every shape of the option lists. */
static void variant_mode(const bench *B, const char *names, const int *dims, int n_dims,
                         const int *vocabs, int n_vocabs, const int *rows, int n_rows,
                         const int *group_list, int n_groups, int count_opt, int first)
{
    for (int di = 0; di < n_dims; di++)
        for (int vi = 0; vi < n_vocabs; vi++) {
            weights wt;
            weights_make(dims[di], vocabs[vi], B->stream, &wt);
            nmt_lsh_index *index = NULL;
            dev_index d = {};
            const char *p = names;
            char name[32];
            while (bench_next_name(&p, name, sizeof name)) {
                const lsh_variant *v = lsh_variant_find(name);
                if (v->kind != LSH_LOGITS && !index)
                    index = index_make(&wt, &B->cfg, &d);
                for (int ri = 0; ri < n_rows; ri++)
                    for (int gi = 0; gi < n_groups; gi++) {
                        lsh_shape s = {dims[di], vocabs[vi], rows[ri], group_list[gi], 0, first};
                        s.group = s.group < 1 || s.group > s.rows ? s.rows : s.group;
                        s.count = count_opt > 0 ? count_opt : s.vocab / 10;
                        s.count = s.count < 4 ? 4 : (s.count > s.vocab ? s.vocab : s.count);
                        if (v->kind == LSH_LOGITS)
                            variant_logits(B, &wt, v, &s);
                        else
                            variant_index(B, &wt, index, &d, v, &s);
                    }
            }
            if (index) {
                dev_index_free(&d);
                nmt_lsh_index_free(index);
            }
            weights_free(&wt);
        }
}

#endif /* NMT_BENCH_LSH_VARIANT_H */
