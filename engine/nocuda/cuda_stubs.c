/* cuda_stubs.c: the CUDA entry points of a build without CUDA. They say so
 * instead of failing to link, so `--device auto` falls back to the CPU. */
#include "backend.h"
#include "cuda_ctx.h"
#include "error.h"

int nmt_cuda_device_count(void)
{
    return 0;
}

nmt_status nmt_cuda_backend_create(const nmt_model *model, int device_index,
                                   const nmt_backend_config *config, nmt_backend **backend,
                                   nmt_error *err)
{
    (void)model;
    (void)device_index;
    (void)config;
    *backend = NULL;
    return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                         "this build of nmt has no CUDA support (configure with NMT_WITH_CUDA=ON)");
}
