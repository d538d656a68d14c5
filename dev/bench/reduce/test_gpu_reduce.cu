/* test_gpu_reduce.cu: nmt_cuda_reduce_sum and nmt_cuda_broadcast_add (the lab's
 * reduce op, reduce.h: not library code) against the CPU twins over shapes
 * reaching every kernel the launchers pick: kept innermost axis (float4 and
 * scalar, split with atomics), reduced innermost axis (groups of 1, 4 and 32
 * lanes, split), nothing reduced (copy), 1..6 axes with size-1 axes, every
 * mask of a 3-D shape, and broadcast with y along the inner or outer axes, in
 * place (out == x) too.
 * Sums: fp32 partials (atomics when split) vs double, so the tolerance grows
 * with sqrt(number of summed elements). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_test_util.h"
#include "reduce.h"
#include "test_util.h"

typedef struct {
    int ndim;
    int64_t dims[NMT_REDUCE_MAX_DIMS];
    uint32_t mask;
} case_t;

static const case_t cases[] = {
    {1, {1}, 1},
    {1, {7}, 1},
    {1, {333}, 0},
    {2, {64, 333}, 1},
    {2, {64, 333}, 2},
    {2, {64, 333}, 3},
    {3, {7, 5, 3}, 0}, {3, {7, 5, 3}, 1}, {3, {7, 5, 3}, 2}, {3, {7, 5, 3}, 3},
    {3, {7, 5, 3}, 4}, {3, {7, 5, 3}, 5}, {3, {7, 5, 3}, 6}, {3, {7, 5, 3}, 7},
    {6, {2, 3, 4, 5, 6, 7}, 0x2a},
    {6, {2, 3, 4, 5, 6, 7}, 0x15},
    {6, {2, 3, 4, 5, 6, 7}, 0x3f},
    {6, {2, 1, 4, 1, 6, 8}, 0x21},
    {4, {1, 33, 1, 1}, 0x2},
    {2, {4096, 1024}, 1},     /* kept inner, float4, split */
    {2, {4096, 1024}, 2},     /* reduced inner, 32 lanes */
    {2, {1, 3000000}, 2},     /* everything: split with atomics */
    {2, {1000000, 4}, 2},     /* reduced inner of 4: a lane per output */
    {2, {20000, 64}, 2},      /* 4 lanes per output */
    {2, {3, 1000001}, 1},     /* kept inner, odd: scalar */
    {3, {128, 3, 1024}, 5},   /* two reduced axes around a kept one */
    {3, {64, 1000, 36}, 2},   /* kept inner of 36 */
};

static void fill(float *x, size_t n)
{
    test_fill_uniform(x, n, -1.0f, 1.0f);
}

static void run_reduce(const case_t *c)
{
    size_t total = 1, n_out = 1;
    for (int a = 0; a < c->ndim; a++) {
        total *= (size_t)c->dims[a];
        if (!(c->mask >> a & 1u))
            n_out *= (size_t)c->dims[a];
    }
    size_t n_red = total / n_out;
    float *x = (float *)host_alloc(total * sizeof(float));
    fill(x, total);
    float *want = (float *)host_alloc(n_out * sizeof(float));
    float *got = (float *)host_alloc(n_out * sizeof(float));
    nmt_error err = {};
    CHECK(nmt_cpu_reduce_sum(c->ndim, c->dims, c->mask, x, want, &err) == NMT_STATUS_OK, "cpu: %s",
          err.message);
    float *d_x = (float *)dev_upload(x, total * sizeof(float));
    float *d_out = (float *)dev_output(n_out * sizeof(float), POISON_F32);
    nmt_status st = nmt_cuda_reduce_sum(c->ndim, c->dims, c->mask, d_x, d_out, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[160];
    int len = snprintf(what, sizeof what, "reduce_sum dims [");
    for (int a = 0; a < c->ndim; a++)
        len += snprintf(what + len, sizeof what - len, "%s%lld", a ? "," : "", (long long)c->dims[a]);
    snprintf(what + len, sizeof what - len, "] mask 0x%x", c->mask);
    dev_download(got, d_out, n_out * sizeof(float), POISON_F32, what);
    int ok = test_close_f32(what, got, want, n_out, 1e-5 + 4e-7 * sqrt((double)n_red), 1e-5);
    CHECK(ok, "%s", what);
    fprintf(stderr, "%s %s\n", ok ? "ok  " : "FAIL", what);
    cudaFree(d_x);
    cudaFree(d_out);
    free(x);
    free(want);
    free(got);
}

static void run_broadcast(const case_t *c, int in_place)
{
    size_t total = 1, n_y = 1;
    for (int a = 0; a < c->ndim; a++) {
        total *= (size_t)c->dims[a];
        if (c->mask >> a & 1u)
            n_y *= (size_t)c->dims[a];
    }
    float *x = (float *)host_alloc(total * sizeof(float));
    float *y = (float *)host_alloc(n_y * sizeof(float));
    fill(x, total);
    fill(y, n_y);
    float *want = (float *)host_alloc(total * sizeof(float));
    float *got = (float *)host_alloc(total * sizeof(float));
    nmt_error err = {};
    CHECK(nmt_cpu_broadcast_add(c->ndim, c->dims, x, c->mask, y, want, &err) == NMT_STATUS_OK,
          "cpu: %s", err.message);
    float *d_y = (float *)dev_upload(y, n_y * sizeof(float));
    float *d_out = (float *)dev_output(total * sizeof(float), POISON_F32);
    float *d_x = d_out;
    if (in_place)
        CUDA_OK(cudaMemcpy(d_out, x, total * sizeof(float), cudaMemcpyHostToDevice));
    else
        d_x = (float *)dev_upload(x, total * sizeof(float));
    nmt_status st = nmt_cuda_broadcast_add(c->ndim, c->dims, d_x, c->mask, d_y, d_out, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[160];
    int len = snprintf(what, sizeof what, "broadcast_add%s dims [", in_place ? " in place" : "");
    for (int a = 0; a < c->ndim; a++)
        len += snprintf(what + len, sizeof what - len, "%s%lld", a ? "," : "", (long long)c->dims[a]);
    snprintf(what + len, sizeof what - len, "] y_mask 0x%x", c->mask);
    dev_download(got, d_out, total * sizeof(float), POISON_F32, what);
    int ok = test_close_f32(what, got, want, total, 0.0, 0.0); /* one fp32 add: exact */
    CHECK(ok, "%s", what);
    fprintf(stderr, "%s %s\n", ok ? "ok  " : "FAIL", what);
    if (!in_place)
        cudaFree(d_x);
    cudaFree(d_y);
    cudaFree(d_out);
    free(x);
    free(y);
    free(want);
    free(got);
}

int main(void)
{
    gpu_test_require_device("test_gpu_reduce");
    test_seed();
    /* NMT_TEST_SMALL=1 (under compute-sanitizer) keeps the small shapes only. */
    const char *small = getenv("NMT_TEST_SMALL");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t total = 1;
        for (int a = 0; a < cases[i].ndim; a++)
            total *= (size_t)cases[i].dims[a];
        if (small && *small == '1' && total > 300000)
            continue;
        run_reduce(&cases[i]);
        run_broadcast(&cases[i], 0);
    }
    /* Beam-score add (y along axis 0) and bias add (y along the last), in place. */
    const case_t beam = {2, {60, 32000}, 1}, bias = {2, {333, 1027}, 2};
    run_broadcast(&beam, 1);
    run_broadcast(&bias, 1);

    nmt_error err = {};
    int64_t bad_dims[2] = {4, 0};
    CHECK(nmt_cuda_reduce_sum(2, bad_dims, 1, (const float *)&err, (float *)&err, NULL, &err) ==
              NMT_STATUS_ERROR_ARGUMENT, "dimension 0 accepted");
    int64_t dims[2] = {4, 4};
    CHECK(nmt_cuda_broadcast_add(2, dims, (const float *)&err, 4, (const float *)&err,
                                 (float *)&err, NULL, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "mask naming axis 2 of 2 accepted");
    return test_finish("test_gpu_reduce");
}
