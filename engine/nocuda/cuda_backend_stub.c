/* cuda_backend_stub.c: the CUDA backend of a build without CUDA says so
 * instead of failing to link (core/nocuda/ has the device count, 0). */
#include "backend.h"
#include "error.h"

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

nmt_status nmt_cuda_backend_device_bytes(const nmt_model *model, const nmt_backend_config *config,
                                         size_t *bytes, nmt_error *err)
{
    (void)model;
    (void)config;
    *bytes = 0;
    return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                         "this build of nmt has no CUDA support (configure with NMT_WITH_CUDA=ON)");
}
