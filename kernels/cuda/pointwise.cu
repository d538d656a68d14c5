/* pointwise.cu: element-wise ops between GEMMs (kernels/pointwise.h).
 * tanh_inplace: x[i] = tanh(x[i]) for i < n, the attentional vector
 * f = tanh(W_c [c; h]). A grid-stride loop, accurate tanhf (the CPU twin
 * computes in double). tanh_rows: the same over strided rows, grid.y rows. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "pointwise.h"

static constexpr int kThreads = 256;
static constexpr int64_t kMaxBlocks = 65535;

static __global__ void __launch_bounds__(kThreads) tanh_inplace_kernel(int64_t n, float *x)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] = tanhf(x[i]);
}

static __global__ void __launch_bounds__(kThreads)
    tanh_rows_kernel(int32_t n_rows, int32_t width, float *x, int32_t ld)
{
    const int32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= width)
        return;
    for (int32_t r = blockIdx.y; r < n_rows; r += gridDim.y)
        x[(int64_t)r * ld + j] = tanhf(x[(int64_t)r * ld + j]);
}

extern "C" nmt_status nmt_cuda_tanh_inplace(int64_t n, float *x, void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n >= 0 && (n == 0 || x));
    if (n == 0)
        return NMT_STATUS_OK;
    int64_t blocks = (n + kThreads - 1) / kThreads;
    blocks = blocks > kMaxBlocks ? kMaxBlocks : blocks;
    tanh_inplace_kernel<<<(unsigned)blocks, kThreads, 0, (cudaStream_t)stream>>>(n, x);
    NMT_LAUNCH_RETURN("tanh_inplace_kernel");
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_tanh_rows(int32_t n_rows, int32_t width, float *x, int32_t ld,
                                         void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && width >= 0 && ld >= width);
    NMT_ARG_CHECK(n_rows == 0 || width == 0 || x);
    if (n_rows == 0 || width == 0)
        return NMT_STATUS_OK;
    const unsigned rows = (unsigned)(n_rows < 65535 ? n_rows : 65535);
    dim3 grid((unsigned)((width + kThreads - 1) / kThreads), rows);
    tanh_rows_kernel<<<grid, kThreads, 0, (cudaStream_t)stream>>>(n_rows, width, x, ld);
    NMT_LAUNCH_RETURN("tanh_rows_kernel");
    return NMT_STATUS_OK;
}
