/* philox.cu: Philox4x32-10 over many counters on the device
 * (kernels/philox.h): one thread a block of four words, curand's round
 * function; the CPU twin is kernels/cpu/philox.c. The searches draw inline
 * (decoder/logit_rules.h); this launcher is what the tests compare. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "philox.h"

static constexpr int kThreads = 256;

static __global__ void __launch_bounds__(kThreads)
    philox_kernel(int64_t n, const uint32_t *counters, uint32_t key0, uint32_t key1,
                  uint32_t *out)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const uint32_t key[2] = {key0, key1};
    nmt_philox(counters + 4 * i, key, out + 4 * i);
}

extern "C" nmt_status nmt_cuda_philox(int64_t n, const uint32_t *counters, uint32_t key0,
                                      uint32_t key1, uint32_t *out, void *stream,
                                      nmt_error *err)
{
    NMT_ARG_CHECK(n >= 0 && n <= INT32_MAX);
    NMT_ARG_CHECK(n == 0 || (counters && out));
    if (n == 0)
        return NMT_STATUS_OK;
    const int64_t blocks = (n + kThreads - 1) / kThreads;
    philox_kernel<<<(unsigned)blocks, kThreads, 0, (cudaStream_t)stream>>>(n, counters, key0,
                                                                           key1, out);
    NMT_LAUNCH_RETURN("philox_kernel");
    return NMT_STATUS_OK;
}
