/* bench_softmax_topk.cu: fused online softmax + top-K (nmt_cuda_softmax_topk)
 * against a two-pass CUB baseline: a safe-softmax kernel writing log-probs
 * (max pass, sum pass, write), then cub::DeviceSegmentedRadixSort (pairs,
 * descending) per row and a copy of the first K. Logits rotate over copies
 * bigger than L2. Prints JSON lines (stdout) and a table (stderr) with each
 * time's fraction of the bandwidth floor = logit bytes / measured copy
 * bandwidth. Env: NMT_BENCH_ROWS, NMT_BENCH_VOCABS, NMT_BENCH_KS (comma
 * lists), NMT_BENCH_REPEATS, NMT_BENCH_BASELINE=0 to skip the baseline. */
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "softmax_topk.h"

static int parse_list(const char *env, const int *defaults, int n_defaults, int *out, int cap)
{
    const char *v = getenv(env);
    if (!v || !*v) {
        for (int i = 0; i < n_defaults; i++)
            out[i] = defaults[i];
        return n_defaults;
    }
    int n = 0;
    char *end;
    while (*v && n < cap) {
        long x = strtol(v, &end, 10);
        if (end == v)
            break;
        out[n++] = (int)x;
        v = *end == ',' ? end + 1 : end;
    }
    return n;
}

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
    for (int o = 16; o; o /= 2)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
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
    for (int o = 16; o; o /= 2)
        d += __shfl_xor_sync(0xffffffffu, d, o);
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
    BENCH_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
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

int main(void)
{
    static const int d_rows[] = {1, 5, 12, 60, 120, 512, 1024, 4000};
    static const int d_vocab[] = {10240, 32000, 50000};
    static const int d_k[] = {1, 5, 10, 50};
    int rows_list[32], vocab_list[32], k_list[32];
    int n_rows = parse_list("NMT_BENCH_ROWS", d_rows, 8, rows_list, 32);
    int n_vocab = parse_list("NMT_BENCH_VOCABS", d_vocab, 3, vocab_list, 32);
    int n_k = parse_list("NMT_BENCH_KS", d_k, 4, k_list, 32);
    int baseline = bench_env_int("NMT_BENCH_BASELINE", 1);

    cudaStream_t stream;
    BENCH_CHECK(cudaSetDevice(0));
    BENCH_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    double copy_gbps = bench_copy_bandwidth(stream);
    fprintf(stderr, "%6s %6s %3s | %10s %8s | %10s | %7s\n", "rows", "V", "K", "ours us",
            "of floor", "cub us", "speedup");

    int32_t h_excl[2] = {0, 1}, *d_excl;
    BENCH_CHECK(cudaMalloc(&d_excl, sizeof h_excl));
    BENCH_CHECK(cudaMemcpy(d_excl, h_excl, sizeof h_excl, cudaMemcpyHostToDevice));
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
            BENCH_CHECK(cudaMalloc(&a.logits_block, bytes * a.copies));
            fill_logits<<<1024, 256, 0, stream>>>(a.logits_block, n * a.copies, 1234u);
            BENCH_CHECK(cudaGetLastError());
            for (int c = 0; c < a.copies; c++)
                a.logits[c] = a.logits_block + n * c;
            int max_k = 0;
            for (int ki = 0; ki < n_k; ki++)
                max_k = k_list[ki] > max_k ? k_list[ki] : max_k;
            BENCH_CHECK(cudaMalloc(&a.top_v, (size_t)a.rows * max_k * sizeof(float)));
            BENCH_CHECK(cudaMalloc(&a.top_i, (size_t)a.rows * max_k * sizeof(int)));
            a.workspace_bytes = nmt_cuda_softmax_topk_workspace_size(a.rows, a.vocab, max_k);
            BENCH_CHECK(cudaMalloc(&a.workspace, a.workspace_bytes));
            BENCH_CHECK(cudaMemset(a.workspace, 0, a.workspace_bytes));
    BENCH_CHECK(cudaDeviceSynchronize());
            double cub_us = 0.0;
            if (baseline) {
                BENCH_CHECK(cudaMalloc(&a.lp, bytes));
                BENCH_CHECK(cudaMalloc(&a.lp_sorted, bytes));
                BENCH_CHECK(cudaMalloc(&a.ids, n * sizeof(int)));
                BENCH_CHECK(cudaMalloc(&a.ids_sorted, n * sizeof(int)));
                BENCH_CHECK(cudaMalloc(&a.offsets, (a.rows + 1) * sizeof(int)));
                row_offsets<<<(a.rows + 256) / 256, 256, 0, stream>>>(a.rows, a.vocab, a.offsets);
                BENCH_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
                    NULL, a.temp_bytes, a.lp, a.lp_sorted, a.ids, a.ids_sorted, (int64_t)n,
                    a.rows, a.offsets, a.offsets + 1, 0, 32, stream));
                BENCH_CHECK(cudaMalloc(&a.temp, a.temp_bytes));
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
            BENCH_CHECK(cudaFree(a.logits_block));
            free(a.logits);
            BENCH_CHECK(cudaFree(a.top_v));
            BENCH_CHECK(cudaFree(a.top_i));
            BENCH_CHECK(cudaFree(a.workspace));
            if (baseline) {
                BENCH_CHECK(cudaFree(a.lp));
                BENCH_CHECK(cudaFree(a.lp_sorted));
                BENCH_CHECK(cudaFree(a.ids));
                BENCH_CHECK(cudaFree(a.ids_sorted));
                BENCH_CHECK(cudaFree(a.offsets));
                BENCH_CHECK(cudaFree(a.temp));
            }
        }
    }
    BENCH_CHECK(cudaFree(d_excl));
    BENCH_CHECK(cudaStreamDestroy(stream));
    return 0;
}
