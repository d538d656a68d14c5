/* gather.cu: dst[i, :] = src[index[i], :] for i < n_rows, rows of dim floats
 * (reorders LSTM states and input feed by beam back-pointers).
 *
 * grid.x walks destination rows, threads (and grid.y for wide rows) the
 * columns; float4 copies when dim % 4 == 0 and both pointers are 16-byte
 * aligned. The indices are trusted (produced on the device by the search). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

#include "cuda_check.h"
#include "gather.h"

static constexpr int kMaxThreads = 256;

template <int VEC>
static __global__ void __launch_bounds__(kMaxThreads)
    gather_rows_kernel(int32_t dim_vec, const float *__restrict__ src,
                       const int32_t *__restrict__ index, float *__restrict__ dst)
{
    typedef typename std::conditional<VEC == 4, float4, float>::type vec_t;
    const int32_t row = blockIdx.x;
    const int32_t c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= dim_vec)
        return;
    const int32_t from = __ldg(&index[row]);
    reinterpret_cast<vec_t *>(dst)[(int64_t)row * dim_vec + c] =
        __ldg(&reinterpret_cast<const vec_t *>(src)[(int64_t)from * dim_vec + c]);
}

template <int VEC>
static nmt_status launch(int32_t n_rows, int32_t dim, const float *src, const int32_t *index,
                         float *dst, cudaStream_t stream, nmt_error *err)
{
    int32_t dim_vec = dim / VEC;
    int threads = ((dim_vec + 31) / 32) * 32;
    threads = threads > kMaxThreads ? kMaxThreads : threads;
    dim3 grid((unsigned)n_rows, (unsigned)((dim_vec + threads - 1) / threads));
    gather_rows_kernel<VEC><<<grid, threads, 0, stream>>>(dim_vec, src, index, dst);
    NMT_LAUNCH_RETURN("gather_rows_kernel");
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_gather_rows(int32_t n_rows, int32_t dim, const float *src,
                                           const int32_t *index, float *dst, void *stream,
                                           nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && dim >= 0);
    NMT_ARG_CHECK(n_rows == 0 || dim == 0 || (src && index && dst && src != dst));
    NMT_ARG_CHECK((int64_t)(dim + 3) / 4 <= 65535LL * kMaxThreads);
    if (n_rows == 0 || dim == 0)
        return NMT_STATUS_OK;
    cudaStream_t s = (cudaStream_t)stream;
    if (dim % 4 == 0 && (uintptr_t)src % 16 == 0 && (uintptr_t)dst % 16 == 0)
        return launch<4>(n_rows, dim, src, index, dst, s, err);
    return launch<1>(n_rows, dim, src, index, dst, s, err);
}
