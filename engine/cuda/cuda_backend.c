/* cuda_backend.c: placeholder until the CUDA engine lands (issue 4); says so
 * instead of failing to link, so `--device auto` falls back to the CPU. */
#include "backend.h"
#include "error.h"

nmt_status nmt_cuda_backend_create(const nmt_model *model, int device_index,
                                   int32_t max_sentences, int32_t beam_size, int32_t max_src,
                                   nmt_backend **backend, nmt_error *err)
{
    *backend = NULL;
    return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                         "the CUDA decoder is not implemented yet; use --device cpu");
}
