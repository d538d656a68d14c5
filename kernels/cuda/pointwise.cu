/* pointwise.cu: element-wise ops between GEMMs (kernels/pointwise.h).
 * tanh_rows: x[r * ld + j] = tanh(x[r * ld + j]) for the attentional vector
 * f = tanh(W_c [c; h]) inside the decoder's row buffer; threads over the
 * width, grid.y over rows, accurate tanhf (the CPU twin computes in double);
 * the 16-bit copy, when asked for, stored beside each result.
 * (The CUDA decoder needs no contiguous tanh_inplace any more.) */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "device.cuh"
#include "half_device.cuh"
#include "pointwise.h"

static constexpr int kThreads = 256;

static __global__ void __launch_bounds__(kThreads)
    tanh_rows_kernel(int32_t n_rows, int32_t width, float *x, int32_t ld, nmt_half_out x16)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    const int32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= width)
        return;
    for (int32_t r = blockIdx.y; r < n_rows; r += gridDim.y) {
        const float t = tanhf(x[(int64_t)r * ld + j]);
        x[(int64_t)r * ld + j] = t;
        half_out_put(x16, r, j, t);
    }
}

extern "C" nmt_status nmt_cuda_tanh_rows(int32_t n_rows, int32_t width, float *x, int32_t ld,
                                         const nmt_half_out *x16, void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && width >= 0 && ld >= width && half_out_ok(x16, width));
    NMT_ARG_CHECK(n_rows == 0 || width == 0 || x);
    if (n_rows == 0 || width == 0)
        return NMT_STATUS_OK;
    const unsigned rows = (unsigned)(n_rows < 65535 ? n_rows : 65535);
    dim3 grid((unsigned)((width + kThreads - 1) / kThreads), rows);
    nmt_launch_pdl(tanh_rows_kernel, grid, kThreads, 0, (cudaStream_t)stream, n_rows, width, x,
                   ld, half_out_of(x16));
    NMT_LAUNCH_RETURN("tanh_rows_kernel");
    return NMT_STATUS_OK;
}
