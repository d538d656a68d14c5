/* pointwise.cu: element-wise ops between GEMMs (kernels/pointwise.h).
 * tanh_inplace: x[i] = tanh(x[i]) for i < n, the attentional vector
 * f = tanh(W_c [c; h]). A grid-stride loop, accurate tanhf (the CPU twin
 * computes in double). */
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
