/* bench_softmax_topk.cu: fused online softmax + top-K (kernels/softmax_topk.h).
 *
 * The sweep (no --variant): nmt_cuda_softmax_topk (AUTO) against a two-pass
 * CUB baseline: a safe-softmax kernel writing log-probs (max pass, sum pass,
 * write), then cub::DeviceSegmentedRadixSort (pairs, descending) per row and a
 * copy of the first K. Logits rotate over copies bigger than L2. Prints JSON
 * lines (stdout) and a table (stderr) with each time's fraction of the
 * bandwidth floor = logit bytes / measured copy bandwidth. Env:
 * NMT_BENCH_ROWS, NMT_BENCH_VOCABS, NMT_BENCH_KS (comma lists; --rows,
 * --vocabs, --ks override them), NMT_BENCH_REPEATS, NMT_BENCH_BASELINE=0 to
 * skip the baseline.
 *
 * Variants by name (--variant, a comma list; --list names them): each
 * variant on each (V, rows, K), first checked against the CPU twin
 * (nmt_cpu_softmax_topk, or _candidates with --lists: max value and lse
 * error, ids that differ), then timed (median of NMT_BENCH_REPEATS runs of
 * events around a batch, after warm-up). With --lists COUNT each group of
 * --group rows (default 1) scores a random ascending list of COUNT of the V
 * words, max_count = V, as the LSH engine calls it. A variant that cannot
 * take a shape says why and is skipped. Exits 1 when a check fails.
 *   bench_softmax_topk --variant row,fused,split --rows 1,5 --vocabs 32000 --ks 10
 *   bench_softmax_topk --variant row,fused --rows 768 --vocabs 35000 --lists 2300 --ks 10 */
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "device.cuh"
#include "softmax_topk.h"

static __global__ void fill_logits(float *x, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        x[i] = (float)(h & 0xffffff) / 16777216.0f * 20.0f - 10.0f;
    }
}

/* ---- the baseline ---------------------------------------------------------- */

static __global__ void safe_log_softmax(int vocab, const float *logits, float *log_probs,
                                        int *ids)
{
    __shared__ float s_red[32];
    const float *z = logits + (size_t)blockIdx.x * vocab;
    float m = -INFINITY;
    for (int w = threadIdx.x; w < vocab; w += blockDim.x)
        m = fmaxf(m, z[w]);
    m = warp_max(m);
    if ((threadIdx.x & 31) == 0)
        s_red[threadIdx.x / 32] = m;
    __syncthreads();
    m = s_red[0];
    for (int i = 1; i < (int)blockDim.x / 32; i++)
        m = fmaxf(m, s_red[i]);
    __syncthreads();
    float d = 0.0f;
    for (int w = threadIdx.x; w < vocab; w += blockDim.x)
        d += expf(z[w] - m);
    d = warp_sum(d);
    if ((threadIdx.x & 31) == 0)
        s_red[threadIdx.x / 32] = d;
    __syncthreads();
    d = 0.0f;
    for (int i = 0; i < (int)blockDim.x / 32; i++)
        d += s_red[i];
    float lse = m + logf(d);
    for (int w = threadIdx.x; w < vocab; w += blockDim.x) {
        log_probs[(size_t)blockIdx.x * vocab + w] = z[w] - lse;
        ids[(size_t)blockIdx.x * vocab + w] = w;
    }
}

static __global__ void take_first_k(int rows, int vocab, int k, const float *v, const int *id,
                                    float *top_v, int *top_i)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * k)
        return;
    int r = i / k, j = i % k;
    top_v[i] = j < vocab ? v[(size_t)r * vocab + j] : -INFINITY;
    top_i[i] = j < vocab ? id[(size_t)r * vocab + j] : -1;
}

static __global__ void row_offsets(int rows, int vocab, int *off)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= rows)
        off[i] = i * vocab;
}

typedef struct {
    int rows, vocab, k, copies;
    float **logits; /* copies, each pointing into logits_block */
    float *logits_block;
    float *top_v, *lp, *lp_sorted;
    int *top_i, *ids, *ids_sorted, *offsets;
    int32_t *excluded;
    void *workspace; /* ours: sized once, zeroed once */
    size_t workspace_bytes;
    void *temp;
    size_t temp_bytes;
    cudaStream_t stream;
} run_arg;

static void run_ours(void *p, int i)
{
    run_arg *a = (run_arg *)p;
    nmt_error err;
    if (nmt_cuda_softmax_topk(a->rows, a->vocab, a->logits[i % a->copies], a->vocab, a->k,
                              a->excluded, 2, a->top_v, a->top_i, NULL, a->workspace,
                              a->workspace_bytes, a->stream, &err) !=
        NMT_STATUS_OK) {
        fprintf(stderr, "nmt_cuda_softmax_topk: %s\n", err.message);
        exit(1);
    }
}

static void run_cub(void *p, int i)
{
    run_arg *a = (run_arg *)p;
    safe_log_softmax<<<a->rows, 256, 0, a->stream>>>(a->vocab, a->logits[i % a->copies], a->lp,
                                                     a->ids);
    size_t temp = a->temp_bytes;
    CUDA_OK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
        a->temp, temp, a->lp, a->lp_sorted, a->ids, a->ids_sorted, (int64_t)a->rows * a->vocab,
        a->rows, a->offsets, a->offsets + 1, 0, 32, a->stream));
    take_first_k<<<(a->rows * a->k + 255) / 256, 256, 0, a->stream>>>(
        a->rows, a->vocab, a->k, a->lp_sorted, a->ids_sorted, a->top_v, a->top_i);
}

static void emit(const char *impl, int rows, int vocab, int k, double us, double floor_us,
                 double copy_gbps, size_t bytes)
{
    printf("{\"bench\":\"softmax_topk\",\"impl\":\"%s\",\"rows\":%d,\"V\":%d,\"K\":%d,"
           "\"median_us\":%.3f,\"bytes\":%zu,\"gbps\":%.1f,\"floor_us\":%.3f,"
           "\"frac_of_floor\":%.3f,\"copy_gbps\":%.1f}\n",
           impl, rows, vocab, k, us, bytes, bytes / (us * 1e3), floor_us, floor_us / us,
           copy_gbps);
    fflush(stdout);
}

/* ---- variants by name ------------------------------------------------------- */

static const nmt_softmax_topk_variant kVariants[] = {
    NMT_SOFTMAX_TOPK_AUTO,  NMT_SOFTMAX_TOPK_ROW,    NMT_SOFTMAX_TOPK_FUSED,
    NMT_SOFTMAX_TOPK_SPLIT, NMT_SOFTMAX_TOPK_ATOMIC, NMT_SOFTMAX_TOPK_SORT,
    NMT_SOFTMAX_TOPK_WARP,  NMT_SOFTMAX_TOPK_AUTO_INVARIANT};
enum { N_VARIANTS = sizeof kVariants / sizeof kVariants[0] };
static const int32_t k_excluded[2] = {0, 1}; /* as the sweep: two excluded ids */
static int g_failures;

typedef struct {
    nmt_softmax_topk_variant variant;
    int rows, vocab, k, lists, group, copies;
    float *logits_block; /* [copies][rows, vocab] */
    int32_t *cand, *count, *excluded;
    float *top_v, *lse;
    int32_t *top_i;
    void *ws;
    size_t ws_bytes;
    cudaStream_t stream;
} variant_arg;

/* The candidate lists over words and counts (device or host copies). */
static nmt_cand_lists lists_of(const variant_arg *a, int32_t *words, int32_t *count)
{
    const nmt_cand_lists lists = {
        .words = words, .ld = a->vocab, .count = count, .rows_per_group = a->group};
    return lists;
}

static nmt_status variant_call(variant_arg *a, int i, nmt_error *err)
{
    const float *z = a->logits_block + (size_t)(i % a->copies) * a->rows * a->vocab;
    if (a->lists)
        return nmt_cuda_softmax_topk_candidates_variant(
            a->rows, z, a->vocab, lists_of(a, a->cand, a->count), a->vocab, a->k, a->excluded, 2,
            a->top_v, a->top_i, a->lse, a->ws, a->ws_bytes, a->variant, a->stream, err);
    return nmt_cuda_softmax_topk_variant(a->rows, a->vocab, z, a->vocab, a->k, a->excluded, 2,
                                         a->top_v, a->top_i, a->lse, a->ws, a->ws_bytes,
                                         a->variant, a->stream, err);
}

static void run_variant(void *p, int i)
{
    nmt_error err = {};
    if (variant_call((variant_arg *)p, i, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "bench_softmax_topk: %s\n", err.message);
        exit(1);
    }
}

/* Per group, `lists` distinct random words of V, ascending (ld = vocab). */
static void make_lists(int groups, int vocab, int lists, int32_t *cand, int32_t *count)
{
    uint8_t *mark = (uint8_t *)malloc(vocab);
    uint32_t h = 12345u;
    for (int g = 0; g < groups; g++) {
        memset(mark, 0, vocab);
        for (int n = 0; n < lists;) {
            h = h * 1664525u + 1013904223u;
            const int w = (int)((h >> 8) % (uint32_t)vocab);
            n += !mark[w];
            mark[w] = 1;
        }
        int n = 0;
        for (int w = 0; w < vocab; w++)
            if (mark[w])
                cand[(size_t)g * vocab + n++] = w;
        count[g] = n;
    }
    free(mark);
}

/* One variant on one shape: the check against the CPU twin, then the time. */
static void variant_case(variant_arg *a, double copy_gbps)
{
    const size_t n = (size_t)a->rows * a->vocab, n_top = (size_t)a->rows * a->k;
    const int groups = (a->rows + a->group - 1) / a->group;
    const char *name = nmt_cuda_softmax_topk_variant_name(a->variant);
    char shape[96];
    snprintf(shape, sizeof shape, "rows %d V %d K %d", a->rows, a->vocab, a->k);
    a->copies = bench_copies(n * sizeof(float));
    CUDA_OK(cudaMalloc(&a->logits_block, n * a->copies * sizeof(float)));
    fill_logits<<<1024, 256, 0, a->stream>>>(a->logits_block, n * a->copies, 1234u);
    CUDA_OK(cudaGetLastError());
    float *z = (float *)malloc(n * sizeof(float));
    CUDA_OK(cudaMemcpyAsync(z, a->logits_block, n * sizeof(float), cudaMemcpyDeviceToHost,
                            a->stream));
    int32_t *cand = NULL, *count = NULL;
    if (a->lists) {
        cand = (int32_t *)calloc((size_t)groups * a->vocab, sizeof(int32_t));
        count = (int32_t *)malloc(groups * sizeof(int32_t));
        make_lists(groups, a->vocab, a->lists, cand, count);
        CUDA_OK(cudaMalloc(&a->cand, (size_t)groups * a->vocab * sizeof(int32_t)));
        CUDA_OK(cudaMalloc(&a->count, groups * sizeof(int32_t)));
        CUDA_OK(cudaMemcpy(a->cand, cand, (size_t)groups * a->vocab * sizeof(int32_t),
                           cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(a->count, count, groups * sizeof(int32_t),
                           cudaMemcpyHostToDevice));
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), " lists %d/%d rows",
                 a->lists, a->group);
    }
    a->ws_bytes = nmt_cuda_softmax_topk_variant_workspace_size(a->variant, a->rows, a->vocab, a->k);
    if (a->ws_bytes == SIZE_MAX) {
        fprintf(stderr, "bench_softmax_topk: no workspace size for %s at %s\n", name, shape);
        exit(1);
    }
    CUDA_OK(cudaMalloc(&a->ws, a->ws_bytes));
    CUDA_OK(cudaMemset(a->ws, 0, a->ws_bytes));
    CUDA_OK(cudaMalloc(&a->top_v, (n_top ? n_top : 1) * sizeof(float)));
    CUDA_OK(cudaMalloc(&a->top_i, (n_top ? n_top : 1) * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&a->lse, a->rows * sizeof(float)));
    CUDA_OK(cudaDeviceSynchronize());

    nmt_error err = {};
    nmt_status st = variant_call(a, 0, &err);
    if (st == NMT_STATUS_ERROR_UNSUPPORTED) {
        fprintf(stderr, "%-6s %s: skipped: %s\n", name, shape, err.message);
    } else if (st != NMT_STATUS_OK) {
        fprintf(stderr, "bench_softmax_topk: %s at %s: %s\n", name, shape, err.message);
        exit(1);
    } else {
        CUDA_OK(cudaStreamSynchronize(a->stream)); /* the copies below do not wait for it */
        float *want_v = (float *)malloc((n_top + 1) * sizeof(float));
        float *got_v = (float *)malloc((n_top + 1) * sizeof(float));
        int32_t *want_i = (int32_t *)malloc((n_top + 1) * sizeof(int32_t));
        int32_t *got_i = (int32_t *)malloc((n_top + 1) * sizeof(int32_t));
        float *want_lse = (float *)malloc(a->rows * sizeof(float));
        float *got_lse = (float *)malloc(a->rows * sizeof(float));
        if (a->lists)
            nmt_cpu_softmax_topk_candidates(a->rows, z, a->vocab, lists_of(a, cand, count), a->k,
                                            k_excluded, 2, want_v, want_i, want_lse);
        else
            nmt_cpu_softmax_topk(a->rows, a->vocab, z, a->vocab, a->k, k_excluded, 2, want_v,
                                 want_i, want_lse);
        CUDA_OK(cudaMemcpy(got_v, a->top_v, n_top * sizeof(float), cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(got_i, a->top_i, n_top * sizeof(int32_t), cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(got_lse, a->lse, a->rows * sizeof(float),
                           cudaMemcpyDeviceToHost));
        const double value_err = bench_max_abs_err(got_v, want_v, n_top);
        const double lse_err = bench_max_abs_err(got_lse, want_lse, a->rows);
        const size_t bad_ids = bench_count_diff_i32(got_i, want_i, n_top);
        const int ok = bad_ids == 0 && value_err <= 1e-4 && lse_err <= 1e-4;
        g_failures += !ok;
        const double us = bench_time_us(run_variant, a, a->stream);
        const double words = a->lists ? (double)a->rows * a->lists : (double)n;
        const double floor_us = words * sizeof(float) / (copy_gbps * 1e3);
        const char *ran = a->variant == NMT_SOFTMAX_TOPK_AUTO
                              ? nmt_cuda_softmax_topk_variant_name(nmt_cuda_softmax_topk_pick(
                                    a->rows, a->vocab, a->k, 2, a->lists != 0))
                              : name;
        printf("{\"bench\":\"softmax_topk_variant\",\"variant\":\"%s\",\"ran\":\"%s\","
               "\"rows\":%d,\"V\":%d,\"K\":%d,\"lists\":%d,\"group\":%d,\"median_us\":%.3f,"
               "\"floor_us\":%.3f,\"max_err\":%.3g,\"lse_max_err\":%.3g,\"ids_differ\":%zu,"
               "\"ok\":%s}\n", name, ran, a->rows, a->vocab, a->k, a->lists, a->group, us,
               floor_us, value_err, lse_err, bad_ids, ok ? "true" : "false");
        fflush(stdout);
        fprintf(stderr, "%-6s %-6s %-34s | %9.2f us (floor %7.2f) | max err %.2g, lse %.2g, "
                "ids differ %zu%s\n", name, ran, shape, us, floor_us, value_err, lse_err,
                bad_ids, ok ? "" : "  MISMATCH");
        free(want_v);
        free(got_v);
        free(want_i);
        free(got_i);
        free(want_lse);
        free(got_lse);
    }
    free(z);
    free(cand);
    free(count);
    void *bufs[] = {a->logits_block, a->cand, a->count, a->ws, a->top_v, a->top_i, a->lse};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            CUDA_OK(cudaFree(bufs[i]));
    a->logits_block = a->top_v = a->lse = NULL;
    a->cand = a->count = a->top_i = NULL;
    a->ws = NULL;
}

static int parse_variant(const char *name, nmt_softmax_topk_variant *v)
{
    for (int i = 0; i < N_VARIANTS; i++)
        if (strcmp(name, nmt_cuda_softmax_topk_variant_name(kVariants[i])) == 0) {
            *v = kVariants[i];
            return 1;
        }
    return 0;
}

static const char *kUsage =
    "usage: bench_softmax_topk [--rows N,..] [--vocabs V,..] [--ks K,..]   (AUTO vs CUB)\n"
    "       bench_softmax_topk --variant NAME[,NAME..] [--rows N,..] [--vocabs V,..] [--ks K,..]\n"
    "                          [--lists COUNT [--group ROWS]]\n"
    "       bench_softmax_topk --list\n";

static const char *opt_or_env(int argc, char **argv, const char *option, const char *env)
{
    const char *v = bench_option(argc, argv, option);
    return v ? v : getenv(env);
}

int main(int argc, char **argv)
{
    static const char *const known[] = {"--variant=", "--rows=", "--vocabs=", "--ks=",
                                        "--lists=",   "--group=", "--list", NULL};
    bench_options_check(argc, argv, known, kUsage);
    if (bench_flag(argc, argv, "--list")) {
        for (int i = 0; i < N_VARIANTS; i++)
            printf("%s\n", nmt_cuda_softmax_topk_variant_name(kVariants[i]));
        return 0;
    }
    static const int d_rows[] = {1, 5, 12, 60, 120, 512, 1024, 4000};
    static const int d_vocab[] = {10240, 32000, 50000};
    static const int d_k[] = {1, 5, 10, 50};
    int rows_list[32], vocab_list[32], k_list[32];
    int n_rows = parse_ints_text(opt_or_env(argc, argv, "--rows", "NMT_BENCH_ROWS"), d_rows, 8,
                                 rows_list, 32);
    int n_vocab = parse_ints_text(opt_or_env(argc, argv, "--vocabs", "NMT_BENCH_VOCABS"),
                                  d_vocab, 3, vocab_list, 32);
    int n_k = parse_ints_text(opt_or_env(argc, argv, "--ks", "NMT_BENCH_KS"), d_k, 4, k_list, 32);
    const char *variants = bench_option(argc, argv, "--variant");
    const char *lists = bench_option(argc, argv, "--lists");
    const char *group = bench_option(argc, argv, "--group");
    if (variants) { /* every name first: a typo fails before any timing */
        const char *p = variants;
        char name[32];
        nmt_softmax_topk_variant v;
        while (bench_next_name(&p, name, sizeof name))
            if (!parse_variant(name, &v)) {
                fprintf(stderr, "bench_softmax_topk: no variant \"%s\" (--list)\n", name);
                return 2;
            }
    }
    int baseline = bench_env_int("NMT_BENCH_BASELINE", 1);

    cudaStream_t stream;
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    double copy_gbps = bench_copy_bandwidth(stream);
    int32_t *d_excl;
    CUDA_OK(cudaMalloc(&d_excl, sizeof k_excluded));
    CUDA_OK(cudaMemcpy(d_excl, k_excluded, sizeof k_excluded, cudaMemcpyHostToDevice));

    if (variants) {
        const char *p = variants;
        char name[32];
        nmt_softmax_topk_variant v;
        while (bench_next_name(&p, name, sizeof name)) {
            parse_variant(name, &v);
            for (int vi = 0; vi < n_vocab; vi++)
                for (int ri = 0; ri < n_rows; ri++)
                    for (int ki = 0; ki < n_k; ki++) {
                        variant_arg a = {};
                        a.variant = v;
                        a.rows = rows_list[ri];
                        a.vocab = vocab_list[vi];
                        a.k = k_list[ki];
                        a.lists = lists ? atoi(lists) : 0;
                        a.lists = a.lists > a.vocab ? a.vocab : a.lists;
                        a.group = group && atoi(group) > 0 ? atoi(group) : 1;
                        a.excluded = d_excl;
                        a.stream = stream;
                        if (a.rows >= 1 && a.vocab >= 1 && a.k >= 0 && a.lists >= 0)
                            variant_case(&a, copy_gbps);
                    }
        }
        CUDA_OK(cudaFree(d_excl));
        CUDA_OK(cudaStreamDestroy(stream));
        if (g_failures)
            fprintf(stderr, "bench_softmax_topk: %d case(s) differ from the CPU\n", g_failures);
        return g_failures ? 1 : 0;
    }

    fprintf(stderr, "%6s %6s %3s | %10s %8s | %10s | %7s\n", "rows", "V", "K", "ours us",
            "of floor", "cub us", "speedup");
    for (int vi = 0; vi < n_vocab; vi++) {
        for (int ri = 0; ri < n_rows; ri++) {
            run_arg a = {};
            a.rows = rows_list[ri];
            a.vocab = vocab_list[vi];
            a.stream = stream;
            a.excluded = d_excl;
            size_t n = (size_t)a.rows * a.vocab, bytes = n * sizeof(float);
            a.copies = bench_copies(bytes);
            a.logits = (float **)malloc(a.copies * sizeof(float *));
            CUDA_OK(cudaMalloc(&a.logits_block, bytes * a.copies));
            fill_logits<<<1024, 256, 0, stream>>>(a.logits_block, n * a.copies, 1234u);
            CUDA_OK(cudaGetLastError());
            for (int c = 0; c < a.copies; c++)
                a.logits[c] = a.logits_block + n * c;
            int max_k = 0;
            for (int ki = 0; ki < n_k; ki++)
                max_k = k_list[ki] > max_k ? k_list[ki] : max_k;
            CUDA_OK(cudaMalloc(&a.top_v, (size_t)a.rows * max_k * sizeof(float)));
            CUDA_OK(cudaMalloc(&a.top_i, (size_t)a.rows * max_k * sizeof(int)));
            a.workspace_bytes = nmt_cuda_softmax_topk_workspace_size(a.rows, a.vocab, max_k);
            CUDA_OK(cudaMalloc(&a.workspace, a.workspace_bytes));
            CUDA_OK(cudaMemset(a.workspace, 0, a.workspace_bytes));
            CUDA_OK(cudaDeviceSynchronize());
            double cub_us = 0.0;
            if (baseline) {
                CUDA_OK(cudaMalloc(&a.lp, bytes));
                CUDA_OK(cudaMalloc(&a.lp_sorted, bytes));
                CUDA_OK(cudaMalloc(&a.ids, n * sizeof(int)));
                CUDA_OK(cudaMalloc(&a.ids_sorted, n * sizeof(int)));
                CUDA_OK(cudaMalloc(&a.offsets, (a.rows + 1) * sizeof(int)));
                row_offsets<<<(a.rows + 256) / 256, 256, 0, stream>>>(a.rows, a.vocab, a.offsets);
                CUDA_OK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
                    NULL, a.temp_bytes, a.lp, a.lp_sorted, a.ids, a.ids_sorted, (int64_t)n,
                    a.rows, a.offsets, a.offsets + 1, 0, 32, stream));
                CUDA_OK(cudaMalloc(&a.temp, a.temp_bytes));
                /* The sort does not depend on K: time it once, with the largest K copy. */
                a.k = max_k;
                cub_us = bench_time_us(run_cub, &a, stream);
            }
            double floor_us = bytes / (copy_gbps * 1e3);
            for (int ki = 0; ki < n_k; ki++) {
                a.k = k_list[ki];
                double us = bench_time_us(run_ours, &a, stream);
                emit("ours", a.rows, a.vocab, a.k, us, floor_us, copy_gbps, bytes);
                if (baseline)
                    emit("cub_two_pass", a.rows, a.vocab, a.k, cub_us, floor_us, copy_gbps, bytes);
                fprintf(stderr, "%6d %6d %3d | %10.2f %7.0f%% | %10.2f | %6.1fx\n", a.rows,
                        a.vocab, a.k, us, 100.0 * floor_us / us, cub_us,
                        baseline ? cub_us / us : 0.0);
            }
            CUDA_OK(cudaFree(a.logits_block));
            free(a.logits);
            CUDA_OK(cudaFree(a.top_v));
            CUDA_OK(cudaFree(a.top_i));
            CUDA_OK(cudaFree(a.workspace));
            if (baseline) {
                CUDA_OK(cudaFree(a.lp));
                CUDA_OK(cudaFree(a.lp_sorted));
                CUDA_OK(cudaFree(a.ids));
                CUDA_OK(cudaFree(a.ids_sorted));
                CUDA_OK(cudaFree(a.offsets));
                CUDA_OK(cudaFree(a.temp));
            }
        }
    }
    CUDA_OK(cudaFree(d_excl));
    CUDA_OK(cudaStreamDestroy(stream));
    return 0;
}
