/* cuda_check.h: the CUDA runtime check macro of the CUDA engine (model/cuda,
 * decoder/cuda, engine/cuda). Private to the files that call the runtime:
 * it includes cuda_runtime.h, so no public or plain-C interface header
 * includes it.
 *
 * NMT_CUDA_TRY(call) records the call text, file, line and the runtime's
 * message in `err`, sets the local `status` and jumps to `cleanup`. */
#ifndef NMT_CUDA_CHECK_H
#define NMT_CUDA_CHECK_H

#include "error.h"

#include <cuda_runtime.h>

#define NMT_CUDA_TRY(call)                                                                 \
    do {                                                                                   \
        cudaError_t nmt_cuda_e_ = (call);                                                  \
        if (nmt_cuda_e_ != cudaSuccess) {                                                  \
            status = nmt_error_set(err, NMT_STATUS_ERROR_CUDA, "%s:%d: %s: %s", __FILE__,  \
                                   __LINE__, #call, cudaGetErrorString(nmt_cuda_e_));      \
            goto cleanup;                                                                  \
        }                                                                                  \
    } while (0)

/* After a kernel launch (`what` names it): a bad configuration shows up here. */
#define NMT_CUDA_LAUNCHED(what)                                                            \
    do {                                                                                   \
        cudaError_t nmt_cuda_e_ = cudaGetLastError();                                      \
        if (nmt_cuda_e_ != cudaSuccess) {                                                  \
            status = nmt_error_set(err, NMT_STATUS_ERROR_CUDA, "%s:%d: launching %s: %s",  \
                                   __FILE__, __LINE__, what, cudaGetErrorString(nmt_cuda_e_)); \
            goto cleanup;                                                                  \
        }                                                                                  \
    } while (0)

#endif /* NMT_CUDA_CHECK_H */
