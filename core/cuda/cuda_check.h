/* cuda_check.h: internal check macros for the CUDA launchers (not installed).
 *
 * Each records the failing call's text, file and line into the nmt_error and
 * either jumps to the local label `cleanup` (with a local `nmt_status status`)
 * or returns the status:
 *     NMT_CUDA_TRY(cudaMemsetAsync(...));      goto cleanup on failure
 *     NMT_CUDA_RETURN(cudaGetLastError());     return on failure
 *     NMT_CUBLAS_TRY / NMT_CUBLAS_RETURN       the same for cublasStatus_t
 *     NMT_LAUNCH_RETURN("kernel name")         checks the launch just made
 *     NMT_ARG_CHECK(cond)                      NMT_STATUS_ERROR_ARGUMENT */
#ifndef NMT_KERNELS_CUDA_CHECK_H
#define NMT_KERNELS_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "error.h"
#include "nmt_status.h"

/* Device out-of-memory is NMT_STATUS_ERROR_MEMORY (the translator splits a
 * batch that does not fit and retries it); it is not sticky, so it is also
 * cleared from cudaGetLastError, where a later launch check would find it. */
static inline nmt_status nmt_cuda_status_(cudaError_t code)
{
    if (code == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return NMT_STATUS_ERROR_MEMORY;
    }
    return NMT_STATUS_ERROR_CUDA;
}

#define NMT_CUDA_FAIL_(err_, call_text, code)                                             \
    nmt_error_set((err_), nmt_cuda_status_(code), "%s:%d: %s failed: %s (%s)", __FILE__,  \
                  __LINE__, call_text, cudaGetErrorString(code), cudaGetErrorName(code))

#define NMT_CUDA_TRY(call)                                                                \
    do {                                                                                  \
        cudaError_t nmt_cuda_e_ = (call);                                                 \
        if (nmt_cuda_e_ != cudaSuccess) {                                                 \
            status = NMT_CUDA_FAIL_(err, #call, nmt_cuda_e_);                             \
            goto cleanup;                                                                 \
        }                                                                                 \
    } while (0)

#define NMT_CUDA_RETURN(call)                                                             \
    do {                                                                                  \
        cudaError_t nmt_cuda_e_ = (call);                                                 \
        if (nmt_cuda_e_ != cudaSuccess)                                                   \
            return NMT_CUDA_FAIL_(err, #call, nmt_cuda_e_);                               \
    } while (0)

#define NMT_CUBLAS_FAIL_(err_, call_text, code)                                           \
    nmt_error_set((err_),                                                                 \
                  (code) == CUBLAS_STATUS_ALLOC_FAILED ? NMT_STATUS_ERROR_MEMORY          \
                                                       : NMT_STATUS_ERROR_CUDA,           \
                  "%s:%d: %s failed: %s (%d)", __FILE__, __LINE__, call_text,             \
                  cublasGetStatusString(code), (int)(code))

#define NMT_CUBLAS_TRY(call)                                                              \
    do {                                                                                  \
        cublasStatus_t nmt_cublas_s_ = (call);                                            \
        if (nmt_cublas_s_ != CUBLAS_STATUS_SUCCESS) {                                     \
            status = NMT_CUBLAS_FAIL_(err, #call, nmt_cublas_s_);                         \
            goto cleanup;                                                                 \
        }                                                                                 \
    } while (0)

#define NMT_CUBLAS_RETURN(call)                                                           \
    do {                                                                                  \
        cublasStatus_t nmt_cublas_s_ = (call);                                            \
        if (nmt_cublas_s_ != CUBLAS_STATUS_SUCCESS)                                       \
            return NMT_CUBLAS_FAIL_(err, #call, nmt_cublas_s_);                           \
    } while (0)

/* After a <<<...>>> launch: configuration errors show up here at once. */
#define NMT_LAUNCH_RETURN(kernel_name)                                                    \
    do {                                                                                  \
        cudaError_t nmt_cuda_e_ = cudaGetLastError();                                     \
        if (nmt_cuda_e_ != cudaSuccess)                                                   \
            return NMT_CUDA_FAIL_(err, "launch of " kernel_name, nmt_cuda_e_);            \
    } while (0)

#define NMT_LAUNCH_TRY(kernel_name)                                                       \
    do {                                                                                  \
        cudaError_t nmt_cuda_e_ = cudaGetLastError();                                     \
        if (nmt_cuda_e_ != cudaSuccess) {                                                 \
            status = NMT_CUDA_FAIL_(err, "launch of " kernel_name, nmt_cuda_e_);          \
            goto cleanup;                                                                 \
        }                                                                                 \
    } while (0)

#define NMT_ARG_CHECK(cond)                                                               \
    do {                                                                                  \
        if (!(cond))                                                                      \
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s:%d: %s: invalid "    \
                                 "argument: %s", __FILE__, __LINE__, __func__, #cond);    \
    } while (0)

#endif /* NMT_KERNELS_CUDA_CHECK_H */
