/* cuda_ctx.h: what every CUDA launcher needs, passed down instead of globals:
 * the device, a stream and a cuBLAS handle bound to that stream. Plain C: the
 * stream and handle are opaque pointers here (kernels/cuda/cuda_ctx.cu). */
#ifndef NMT_KERNELS_CUDA_CTX_H
#define NMT_KERNELS_CUDA_CTX_H

#include "nmt_status.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_cuda_ctx nmt_cuda_ctx;

nmt_status nmt_cuda_ctx_create(int device_index, nmt_cuda_ctx **ctx, nmt_error *err);
/* A second context on main_ctx's device whose stream ranks below main_ctx's:
 * for work that may run beside the main stream's and should only fill the
 * room its kernels leave. */
nmt_status nmt_cuda_ctx_create_side(const nmt_cuda_ctx *main_ctx, nmt_cuda_ctx **ctx,
                                    nmt_error *err);
void nmt_cuda_ctx_free(nmt_cuda_ctx *ctx);
/* Device bytes a context allocates itself (its cuBLAS workspace; cuBLAS's
 * own handle memory is not counted). */
size_t nmt_cuda_ctx_device_bytes(void);
void *nmt_cuda_ctx_stream(const nmt_cuda_ctx *ctx); /* cudaStream_t */
void *nmt_cuda_ctx_cublas(const nmt_cuda_ctx *ctx); /* cublasHandle_t */
void *nmt_cuda_ctx_cublaslt(const nmt_cuda_ctx *ctx); /* cublasLtHandle_t */
/* The context's GEMM workspace (cuBLAS's, and cuBLASLt calls on its stream). */
void *nmt_cuda_ctx_workspace(const nmt_cuda_ctx *ctx, size_t *bytes);
int nmt_cuda_ctx_device(const nmt_cuda_ctx *ctx); /* its CUDA device ordinal */
/* Batch invariance (docs/decoding.md): on (the default, and a side
 * context's as its main's), every GEMM on ctx sums each output in one fixed
 * order whatever the row count (kernels/cuda/linear_lt.cu); off, the fastest
 * algorithm for each row class. */
void nmt_cuda_ctx_set_batch_invariant(nmt_cuda_ctx *ctx, int on);
int nmt_cuda_ctx_batch_invariant(const nmt_cuda_ctx *ctx);
/* Makes ctx's device the calling thread's current one. */
nmt_status nmt_cuda_ctx_activate(const nmt_cuda_ctx *ctx, nmt_error *err);
/* Number of visible CUDA devices; 0 (not an error) when there is no driver/GPU. */
int nmt_cuda_device_count(void);
/* Streaming multiprocessors of CUDA device `device` (-1: the current one),
 * which launchers size their grids by; 0 when the runtime cannot tell (no
 * driver, a bad ordinal). */
int nmt_cuda_sm_count(int device);
/* Bytes of device memory in use (by every process) and in all on CUDA
 * device `device` (cudaMemGetInfo); 0 and 0 when the runtime cannot tell. */
void nmt_cuda_memory_info(int device, long long *used, long long *total);

#ifdef __cplusplus
}
#endif
#endif
