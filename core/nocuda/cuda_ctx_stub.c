/* cuda_ctx_stub.c: the ground floor of a build without CUDA: no device is
 * visible, so `--device auto` falls back to the CPU. */
#include "cuda_ctx.h"

int nmt_cuda_device_count(void)
{
    return 0;
}
