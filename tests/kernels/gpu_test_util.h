/* gpu_test_util.h: small helpers shared by the GPU kernel tests (header only,
 * static): the no-GPU skip, host buffers (random ones too), device buffers
 * poisoned before the call with a
 * guard region after the output that must stay untouched, copies back, a
 * kernel's poisoned 16-bit copy and its check, and the ok/FAIL line of a
 * check.
 * CUDA_OK, the check, is tests/common/cuda_ok.h (the benches use it too). */
#ifndef NMT_GPU_TEST_UTIL_H
#define NMT_GPU_TEST_UTIL_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ctx.h"
#include "cuda_ok.h" /* CUDA_OK */
#include "half.h"
#include "test_half_out.h"
/* test_util.c is compiled as C; its header has no extern "C" guards. */
extern "C" {
#include "test_util.h"
}

#define GUARD_BYTES 256
#define POISON_F32 0xFF /* every float byte 0xFF: a NaN */
#define POISON_I32 0xA5 /* 0xA5A5A5A5: no id, no -1 */

/* Exits 77 (skipped) when no GPU is visible. */
static void gpu_test_require_device(const char *name)
{
    if (nmt_cuda_device_count() == 0) {
        fprintf(stderr, "%s: skipped: no GPU\n", name);
        exit(NMT_TEST_SKIP);
    }
    CUDA_OK(cudaSetDevice(0));
}

/* A device copy of host data. */
/* host's bytes into device buffer d, finished before it returns: a pageable
 * copy may still be in flight when cudaMemcpy returns, and the code under
 * test runs on a non-blocking stream that does not wait for the legacy
 * stream (a kernel read poison past such a copy once, under load). */
static void dev_fill(void *d, const void *host, size_t bytes)
{
    if (bytes)
        CUDA_OK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
}

static void *dev_upload(const void *host, size_t bytes)
{
    void *d = NULL;
    CUDA_OK(cudaMalloc(&d, bytes ? bytes : 1));
    dev_fill(d, host, bytes);
    return d;
}

/* An output buffer of `bytes` plus a guard, all filled with `poison`. */
static void *dev_output(size_t bytes, int poison)
{
    void *d = NULL;
    CUDA_OK(cudaMalloc(&d, bytes + GUARD_BYTES));
    CUDA_OK(cudaMemset(d, poison, bytes + GUARD_BYTES));
    /* cudaMemset is asynchronous and the non-blocking stream under test does
     * not wait for it: without this the poison can land after the output. */
    CUDA_OK(cudaDeviceSynchronize());
    return d;
}

/* Copies the output back and checks its guard; returns 1 when the guard is intact. */
static int dev_download(void *host, const void *d, size_t bytes, int poison, const char *what)
{
    unsigned char guard[GUARD_BYTES];
    CUDA_OK(cudaDeviceSynchronize());
    if (bytes)
        CUDA_OK(cudaMemcpy(host, d, bytes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(guard, (const unsigned char *)d + bytes, GUARD_BYTES,
                       cudaMemcpyDeviceToHost));
    for (int i = 0; i < GUARD_BYTES; i++) {
        if (guard[i] != (unsigned char)poison) {
            fprintf(stderr, "  %s: guard byte %d after the output was overwritten\n", what, i);
            test_failures++;
            return 0;
        }
    }
    return 1;
}

/* test_alloc (test_util.h): exits the test when memory runs out. */
static void *host_alloc(size_t bytes)
{
    return test_alloc(bytes);
}

/* n host floats drawn uniformly from [lo, hi) (test_fill_uniform). */
static float *host_uniform(size_t n, float lo, float hi)
{
    float *v = (float *)test_alloc(n * sizeof(float));
    test_fill_uniform(v, n, lo, hi);
    return v;
}

/* The prelude of a kernel test's main: skips without a GPU, seeds the
 * random inputs, and returns a context on device 0 (exits 1 if none). */
static nmt_cuda_ctx *gpu_test_start(const char *name)
{
    gpu_test_require_device(name);
    test_seed();
    nmt_cuda_ctx *ctx = NULL;
    nmt_error err = {};
    if (nmt_cuda_ctx_create(0, &ctx, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "%s: context: %s\n", name, err.message);
        exit(1);
    }
    return ctx;
}

/* A kernel's 16-bit copy of its output (half.h) on the device: rows x ld16
 * values, poisoned (TEST_HALF_POISON) with a guard after them; kind < 0:
 * none (dst NULL). */
static nmt_half_out dev_half_out(int kind, int32_t rows, int32_t ld16)
{
    nmt_half_out o = {NULL, ld16, kind == NMT_HALF_BF16 ? NMT_HALF_BF16 : NMT_HALF_FP16};
    if (kind >= 0)
        o.dst = (uint16_t *)dev_output((size_t)rows * ld16 * sizeof(uint16_t), 0xFF);
    return o;
}

/* Downloads o (when it has a dst), checks its guard and test_half_copy_ok
 * against values, the kernel's own fp32 output on the host (rows ld
 * apart), and frees it; 1 when right or when there is no copy. */
static int dev_half_out_check(const char *what, nmt_half_out *o, int32_t rows, int32_t width,
                              const float *values, int32_t ld)
{
    if (!o->dst)
        return 1;
    const size_t n = (size_t)rows * o->ld;
    uint16_t *copy = (uint16_t *)host_alloc(n * sizeof(uint16_t));
    int ok = dev_download(copy, o->dst, n * sizeof(uint16_t), 0xFF, what);
    ok &= test_half_copy_ok(what, o->kind, rows, width, values, ld, copy, o->ld);
    CUDA_OK(cudaFree(o->dst));
    o->dst = NULL;
    free(copy);
    return ok;
}

/* Counts a failure when !ok, and prints "ok" or "FAIL" beside what was checked. */
static void report_check(int ok, const char *what)
{
    CHECK(ok, "%s", what);
    fprintf(stderr, "%s %s\n", ok ? "ok  " : "FAIL", what);
}

#endif
