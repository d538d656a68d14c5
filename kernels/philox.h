/* philox.h: Philox4x32-10, the counter-based random generator of Salmon,
 * Moraes, Dror & Shaw ("Parallel random numbers: as easy as 1, 2, 3", SC
 * 2011): 128 random bits a call, a pure function of a 128-bit counter and a
 * 64-bit key, so any draw is reached without a state and the CPU and the GPU
 * draw the same numbers. Ten rounds of two 32 x 32 -> 64-bit products
 * (multipliers 0xD2511F53, 0xCD9E8D57) and a key bumped by the Weyl
 * constants 0x9E3779B9, 0xBB67AE85. On the device the round function is
 * curand's (curand_Philox4x32_10); on the host the C below; tests/kernels
 * checks the C against the published known answers and the device against
 * the C. nmt_cpu_philox / nmt_cuda_philox fill many blocks (the tests'). */
#ifndef NMT_KERNELS_PHILOX_H
#define NMT_KERNELS_PHILOX_H

#include "nmt_status.h"

#include <stdint.h>

#ifdef __CUDACC__
#include <curand_philox4x32_x.h>
#define NMT_PHILOX_HOST_DEVICE __host__ __device__
#else
#define NMT_PHILOX_HOST_DEVICE
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One round: the two products, the words exchanged, the key mixed in. */
NMT_PHILOX_HOST_DEVICE static inline void nmt_philox_round(uint32_t x[4], const uint32_t k[2])
{
    const uint64_t p0 = (uint64_t)0xD2511F53u * x[0], p1 = (uint64_t)0xCD9E8D57u * x[2];
    const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    const uint32_t x1 = x[1], x3 = x[3];
    x[0] = hi1 ^ x1 ^ k[0];
    x[1] = lo1;
    x[2] = hi0 ^ x3 ^ k[1];
    x[3] = lo0;
}

/* out = Philox4x32-10(counter, key). */
NMT_PHILOX_HOST_DEVICE static inline void nmt_philox(const uint32_t counter[4],
                                                    const uint32_t key[2], uint32_t out[4])
{
#ifdef __CUDA_ARCH__
    const uint4 r = curand_Philox4x32_10(make_uint4(counter[0], counter[1], counter[2],
                                                    counter[3]),
                                         make_uint2(key[0], key[1]));
    out[0] = r.x, out[1] = r.y, out[2] = r.z, out[3] = r.w;
#else
    uint32_t x[4] = {counter[0], counter[1], counter[2], counter[3]};
    uint32_t k[2] = {key[0], key[1]};
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k[0] += 0x9E3779B9u;
            k[1] += 0xBB67AE85u;
        }
        nmt_philox_round(x, k);
    }
    for (int i = 0; i < 4; i++)
        out[i] = x[i];
#endif
}

/* out[4 i .. 4 i + 4) = Philox4x32-10(counters[4 i .. 4 i + 4), key), i < n. */
void nmt_cpu_philox(int64_t n, const uint32_t *counters, const uint32_t key[2], uint32_t *out);
/* The same on the device (counters and out device memory). */
nmt_status nmt_cuda_philox(int64_t n, const uint32_t *counters, uint32_t key0, uint32_t key1,
                           uint32_t *out, void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_KERNELS_PHILOX_H */
