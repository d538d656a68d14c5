/* test_gpu_philox.cu: the device's Philox4x32-10 (curand's round function,
 * kernels/philox.h) against the C one: nmt_cuda_philox over random counters
 * and keys (and Random123's three published answers) equals nmt_cpu_philox
 * word for word, and the sampling uniform (decoder/logit_rules.h) computed
 * in a kernel has the host's bits for random (seed, line key, sample, step).
 * Both are what makes the GPU's samples the CPU's (test_gpu_sampling.c runs
 * the searches). Exit 77 without a GPU. */
#include "logit_rules.h"
#include "philox.h"
#include "gpu_test_util.h"

#include <string.h>

static __global__ void uniforms_kernel(int n, const uint64_t *seeds, const uint64_t *keys,
                                       const int32_t *samples, const int32_t *steps,
                                       double *out)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = nmt_rule_sample_uniform(seeds[i], keys[i], samples[i], steps[i]);
}

static void compare_blocks(int64_t n, const uint32_t *counters, const uint32_t key[2])
{
    uint32_t *want = (uint32_t *)host_alloc(sizeof(uint32_t) * 4 * (size_t)n);
    uint32_t *got = (uint32_t *)host_alloc(sizeof(uint32_t) * 4 * (size_t)n);
    nmt_cpu_philox(n, counters, key, want);
    uint32_t *d_counters = (uint32_t *)dev_upload(counters, sizeof(uint32_t) * 4 * (size_t)n);
    uint32_t *d_out = (uint32_t *)dev_output(sizeof(uint32_t) * 4 * (size_t)n, POISON_I32);
    nmt_error err = {NMT_STATUS_OK, ""};
    CHECK(nmt_cuda_philox(n, d_counters, key[0], key[1], d_out, NULL, &err) == NMT_STATUS_OK,
          "nmt_cuda_philox: %s", err.message);
    dev_download(got, d_out, sizeof(uint32_t) * 4 * (size_t)n, POISON_I32, "philox blocks");
    int64_t bad = 0;
    for (int64_t i = 0; i < 4 * n; i++)
        bad += got[i] != want[i];
    CHECK(bad == 0, "key %08x %08x: %lld of %lld words differ from the C", key[0], key[1],
          (long long)bad, (long long)(4 * n));
    cudaFree(d_counters);
    cudaFree(d_out);
    free(want);
    free(got);
}

int main(void)
{
    gpu_test_require_device("test_gpu_philox");
    test_seed();
    /* Random123's known answers: zeros, ones, the digits of pi. */
    const uint32_t kat[3][4] = {{0, 0, 0, 0},
                                {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                                {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}};
    const uint32_t kat_keys[3][2] = {{0, 0}, {0xffffffff, 0xffffffff}, {0xa4093822, 0x299f31d0}};
    for (int i = 0; i < 3; i++)
        compare_blocks(1, kat[i], kat_keys[i]);
    enum { N = 100000 };
    uint32_t *counters = (uint32_t *)host_alloc(sizeof(uint32_t) * 4 * N);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 4 * N; i++)
            counters[i] = (uint32_t)test_rand_u64();
        const uint32_t key[2] = {(uint32_t)test_rand_u64(), (uint32_t)test_rand_u64()};
        compare_blocks(N, counters, key);
    }
    free(counters);

    enum { U = 4096 };
    static uint64_t seeds[U], keys[U];
    static int32_t samples[U], steps[U];
    static double want[U], got[U];
    for (int i = 0; i < U; i++) {
        seeds[i] = test_rand_u64();
        keys[i] = i % 3 ? test_rand_u64() : (uint64_t)i;
        samples[i] = test_rand_int(0, 256);
        steps[i] = test_rand_int(1, 1000);
        want[i] = nmt_rule_sample_uniform(seeds[i], keys[i], samples[i], steps[i]);
    }
    uint64_t *d_seeds = (uint64_t *)dev_upload(seeds, sizeof seeds);
    uint64_t *d_keys = (uint64_t *)dev_upload(keys, sizeof keys);
    int32_t *d_samples = (int32_t *)dev_upload(samples, sizeof samples);
    int32_t *d_steps = (int32_t *)dev_upload(steps, sizeof steps);
    double *d_out = (double *)dev_output(sizeof got, POISON_F32);
    uniforms_kernel<<<(U + 255) / 256, 256>>>(U, d_seeds, d_keys, d_samples, d_steps, d_out);
    CUDA_OK(cudaGetLastError());
    dev_download(got, d_out, sizeof got, POISON_F32, "uniforms");
    int bad = 0;
    for (int i = 0; i < U; i++)
        bad += memcmp(&got[i], &want[i], sizeof(double)) != 0;
    CHECK(bad == 0, "%d of %d sampling uniforms differ from the host's", bad, U);
    cudaFree(d_seeds);
    cudaFree(d_keys);
    cudaFree(d_samples);
    cudaFree(d_steps);
    cudaFree(d_out);
    return test_finish("test_gpu_philox");
}
