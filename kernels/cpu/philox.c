/* philox.c: Philox4x32-10 over many counters, the oracle of
 * kernels/cuda/philox.cu (kernels/philox.h). */
#include "philox.h"

void nmt_cpu_philox(int64_t n, const uint32_t *counters, const uint32_t key[2], uint32_t *out)
{
    for (int64_t i = 0; i < n; i++)
        nmt_philox(counters + 4 * i, key, out + 4 * i);
}
