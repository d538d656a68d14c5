/* cuda_ctx.cu: the CUDA context every launcher is handed instead of globals:
 * a device ordinal, a non-blocking stream on it, a cuBLAS handle bound to
 * that stream and a cuBLASLt handle (its calls name their stream).
 * nmt_cuda_device_count answers 0, not an error, on a machine
 * without a driver or a GPU, so callers (and the tests) can skip cleanly;
 * nmt_cuda_sm_count is the one query of a device's SM count. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdlib.h>

#include "cuda_check.h"
#include "cuda_ctx.h"

static const size_t kCublasWorkspaceBytes = (size_t)32 << 20;

struct nmt_cuda_ctx {
    int device;
    cudaStream_t stream;
    cublasHandle_t cublas;
    cublasLtHandle_t cublaslt; /* for GEMMs with an epilogue (kernels/cuda/linear_lt.cu) */
    void *cublas_workspace;    /* both handles', used in stream order */
    int batch_invariant;       /* nmt_cuda_ctx_set_batch_invariant */
};

extern "C" int nmt_cuda_device_count(void)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* clear it so the next call does not report it */
        return 0;
    }
    return count;
}

extern "C" int nmt_cuda_sm_count(int device)
{
    int sms = 0;
    if (device < 0 && cudaGetDevice(&device) != cudaSuccess)
        return 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
        return 0;
    return sms;
}

extern "C" void nmt_cuda_memory_info(int device, long long *used, long long *total)
{
    size_t free_bytes = 0, total_bytes = 0;
    int current = 0;
    *used = *total = 0;
    if (cudaGetDevice(&current) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        *used = (long long)(total_bytes - free_bytes);
        *total = (long long)total_bytes;
    } else {
        (void)cudaGetLastError();
    }
    cudaSetDevice(current);
}

/* Stream priorities (lower numbers first): a context's stream one step above
 * the least, a side context's (nmt_cuda_ctx_create_side) the least, so that
 * when both have blocks waiting the main stream's are placed first. */
static nmt_status create_ctx(int device_index, int side, nmt_cuda_ctx **ctx, nmt_error *err);

extern "C" nmt_status nmt_cuda_ctx_activate(const nmt_cuda_ctx *ctx, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_CUDA_TRY(cudaSetDevice(ctx->device));
cleanup:
    return status;
}

extern "C" nmt_status nmt_cuda_ctx_create(int device_index, nmt_cuda_ctx **ctx, nmt_error *err)
{
    return create_ctx(device_index, 0, ctx, err);
}

extern "C" nmt_status nmt_cuda_ctx_create_side(const nmt_cuda_ctx *main_ctx, nmt_cuda_ctx **ctx,
                                               nmt_error *err)
{
    if (!main_ctx)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "nmt_cuda_ctx_create_side: main_ctx is NULL");
    const nmt_status status = create_ctx(main_ctx->device, 1, ctx, err);
    if (status == NMT_STATUS_OK)
        (*ctx)->batch_invariant = main_ctx->batch_invariant;
    return status;
}

extern "C" void nmt_cuda_ctx_set_batch_invariant(nmt_cuda_ctx *ctx, int on)
{
    ctx->batch_invariant = on != 0;
}

extern "C" int nmt_cuda_ctx_batch_invariant(const nmt_cuda_ctx *ctx)
{
    return ctx->batch_invariant;
}

static nmt_status create_ctx(int device_index, int side, nmt_cuda_ctx **ctx, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_ctx *c = NULL;
    int count, least = 0, greatest = 0;

    if (!ctx)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "nmt_cuda_ctx_create: ctx is NULL");
    *ctx = NULL;
    count = nmt_cuda_device_count();
    if (count == 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "no CUDA device (or no driver) is visible");
    if (device_index < 0 || device_index >= count)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "CUDA device %d requested but only %d visible", device_index, count);

    c = (nmt_cuda_ctx *)calloc(1, sizeof *c);
    if (!c)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "out of memory for the CUDA context");
    c->device = device_index;
    c->batch_invariant = 1;
    NMT_CUDA_TRY(cudaSetDevice(device_index));
    NMT_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    NMT_CUDA_TRY(cudaStreamCreateWithPriority(&c->stream, cudaStreamNonBlocking,
                                              side || least == greatest ? least : least - 1));
    NMT_CUBLAS_TRY(cublasCreate(&c->cublas));
    NMT_CUBLAS_TRY(cublasSetStream(c->cublas, c->stream));
    /* Plain fp32 (no TF32): the CPU oracle and the golden outputs expect it. */
    NMT_CUBLAS_TRY(cublasSetMathMode(c->cublas, CUBLAS_DEFAULT_MATH));
    /* A workspace of our own: GEMMs captured into CUDA graphs (the backend's
     * step graphs) must not depend on cuBLAS's internal pool. 32 MiB is what
     * cuBLAS documents for Hopper. */
    NMT_CUDA_TRY(cudaMalloc(&c->cublas_workspace, kCublasWorkspaceBytes));
    NMT_CUBLAS_TRY(cublasSetWorkspace(c->cublas, c->cublas_workspace, kCublasWorkspaceBytes));
    NMT_CUBLAS_TRY(cublasLtCreate(&c->cublaslt));
    *ctx = c;
    return NMT_STATUS_OK;

cleanup:
    nmt_cuda_ctx_free(c);
    return status;
}

extern "C" size_t nmt_cuda_ctx_device_bytes(void)
{
    return kCublasWorkspaceBytes;
}

extern "C" void nmt_cuda_ctx_free(nmt_cuda_ctx *ctx)
{
    if (!ctx)
        return;
    (void)cudaSetDevice(ctx->device);
    if (ctx->cublas)
        (void)cublasDestroy(ctx->cublas);
    if (ctx->cublaslt)
        (void)cublasLtDestroy(ctx->cublaslt);
    if (ctx->stream) {
        (void)cudaStreamSynchronize(ctx->stream);
        (void)cudaStreamDestroy(ctx->stream);
    }
    if (ctx->cublas_workspace)
        (void)cudaFree(ctx->cublas_workspace);
    free(ctx);
}

extern "C" void *nmt_cuda_ctx_stream(const nmt_cuda_ctx *ctx)
{
    return ctx ? (void *)ctx->stream : NULL;
}

extern "C" void *nmt_cuda_ctx_cublas(const nmt_cuda_ctx *ctx)
{
    return ctx ? (void *)ctx->cublas : NULL;
}

extern "C" void *nmt_cuda_ctx_cublaslt(const nmt_cuda_ctx *ctx)
{
    return ctx ? (void *)ctx->cublaslt : NULL;
}

extern "C" void *nmt_cuda_ctx_workspace(const nmt_cuda_ctx *ctx, size_t *bytes)
{
    *bytes = ctx ? kCublasWorkspaceBytes : 0;
    return ctx ? ctx->cublas_workspace : NULL;
}

extern "C" int nmt_cuda_ctx_device(const nmt_cuda_ctx *ctx)
{
    return ctx ? ctx->device : -1;
}
