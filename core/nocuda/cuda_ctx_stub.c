/* cuda_ctx_stub.c: the ground floor of a build without CUDA: no device is
 * visible, so `--device auto` falls back to the CPU. */
#include "cuda_ctx.h"

int nmt_cuda_device_count(void)
{
    return 0;
}

void nmt_cuda_memory_info(int device, long long *used, long long *total)
{
    (void)device;
    *used = *total = 0;
}
