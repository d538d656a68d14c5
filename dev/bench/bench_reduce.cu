/* bench_reduce.cu: multi-mode reduce_sum and broadcast_add (kernels/reduce.h)
 * on 64M-element (256 MB, > 5x L2) tensors with several axis masks, each as a
 * fraction of the device-to-device copy bandwidth measured in the same run.
 * Bytes: reduce reads x and writes out; broadcast reads x and y, writes out.
 * JSON lines on stdout, a table on stderr. Env: NMT_BENCH_REDUCE_LOG2 (log2
 * of the element count, default 26), NMT_BENCH_REPEATS. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "reduce.h"

typedef struct {
    const char *name;
    int ndim;
    int64_t dims[NMT_REDUCE_MAX_DIMS];
    uint32_t mask;
    int broadcast;
} bcase;

typedef struct {
    const bcase *c;
    float *x, *y, *out;
    cudaStream_t stream;
} rarg;

static void run(void *p, int i)
{
    rarg *a = (rarg *)p;
    nmt_error err;
    nmt_status st = a->c->broadcast
                        ? nmt_cuda_broadcast_add(a->c->ndim, a->c->dims, a->x, a->c->mask, a->y,
                                                 a->out, a->stream, &err)
                        : nmt_cuda_reduce_sum(a->c->ndim, a->c->dims, a->c->mask, a->x, a->out,
                                              a->stream, &err);
    (void)i;
    if (st != NMT_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", a->c->name, err.message);
        exit(1);
    }
}

int main(void)
{
    int lg = bench_env_int("NMT_BENCH_REDUCE_LOG2", 26);
    lg = lg < 12 ? 12 : (lg > 30 ? 30 : lg);
    const int64_t n = (int64_t)1 << lg, side = (int64_t)1 << (lg / 2);
    const int64_t a3 = (int64_t)1 << (lg / 3), c3 = n / (a3 * a3);
    const bcase cases[] = {
        {"sum rows (keep last)", 2, {side * (n / side / side), side}, 1, 0},
        {"sum cols (reduce last)", 2, {n / side, side}, 2, 0},
        {"sum all", 1, {n}, 1, 0},
        {"sum axes 0,2", 3, {a3, a3, c3}, 5, 0},
        {"sum axis 1", 3, {a3, a3, c3}, 2, 0},
        {"sum last of 4", 2, {n / 4, 4}, 2, 0},
        {"bias add (y last)", 2, {n / side, side}, 2, 1},
        {"beam add (y first)", 2, {n / side, side}, 1, 1},
        {"add y over axes 0,2", 3, {a3, a3, c3}, 5, 1},
        {"add y over axis 1", 3, {a3, a3, c3}, 2, 1},
    };
    rarg a = {};
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&a.stream, cudaStreamNonBlocking));
    double copy_gbps = bench_copy_bandwidth(a.stream);
    CUDA_OK(cudaMalloc(&a.x, n * sizeof(float)));
    CUDA_OK(cudaMalloc(&a.out, n * sizeof(float)));
    CUDA_OK(cudaMalloc(&a.y, n * sizeof(float)));
    CUDA_OK(cudaMemset(a.x, 0, n * sizeof(float)));
    CUDA_OK(cudaMemset(a.y, 0, n * sizeof(float)));
    fprintf(stderr, "%-24s %-22s %5s | %9s %9s %8s\n", "case", "dims", "mask", "us", "GB/s",
            "of copy");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bcase *c = &cases[i];
        a.c = c;
        int64_t out_n = 1, y_n = 1;
        for (int d = 0; d < c->ndim; d++) {
            if (!(c->mask >> d & 1u))
                out_n *= c->dims[d];
            else
                y_n *= c->dims[d];
        }
        size_t bytes = c->broadcast ? (size_t)(2 * n + y_n) * sizeof(float)
                                    : (size_t)(n + out_n) * sizeof(float);
        double us = bench_time_us(run, &a, a.stream);
        double gbps = bytes / (us * 1e3);
        char dims[96];
        int len = 0;
        for (int d = 0; d < c->ndim; d++)
            len += snprintf(dims + len, sizeof dims - len, "%s%lld", d ? "x" : "",
                            (long long)c->dims[d]);
        printf("{\"bench\":\"reduce\",\"impl\":\"ours\",\"op\":\"%s\",\"case\":\"%s\","
               "\"dims\":\"%s\",\"mask\":%u,\"median_us\":%.3f,\"bytes\":%zu,\"gbps\":%.1f,"
               "\"floor_us\":%.3f,\"frac_of_copy\":%.3f,\"copy_gbps\":%.1f}\n",
               c->broadcast ? "broadcast_add" : "reduce_sum", c->name, dims, c->mask, us, bytes,
               gbps, bytes / (copy_gbps * 1e3), gbps / copy_gbps, copy_gbps);
        fflush(stdout);
        fprintf(stderr, "%-24s %-22s %5u | %9.1f %9.1f %7.0f%%\n", c->name, dims, c->mask, us,
                gbps, 100.0 * gbps / copy_gbps);
    }
    CUDA_OK(cudaFree(a.x));
    CUDA_OK(cudaFree(a.y));
    CUDA_OK(cudaFree(a.out));
    CUDA_OK(cudaStreamDestroy(a.stream));
    return 0;
}
