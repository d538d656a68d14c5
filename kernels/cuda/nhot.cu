/* nhot.cu: N-hot embedding lookup, out[n_rows, dim] = A . table, with A an
 * n_rows x table_rows CSR matrix (row_ptr, cols, values) and table
 * [table_rows, dim] row-major (Argueta & Chiang, "Accelerating Sparse Matrix
 * Operations in Neural Networks on GPUs", Alg. 2).
 *
 * As in Alg. 2 every output element is one thread's dot product over the
 * row's few non-zeros: grid.x walks the output rows, threads (and grid.y for
 * wide rows) walk the columns, so each non-zero reads one contiguous table row
 * fully coalesced. With dim % 4 == 0 and 16-byte aligned table and out, a
 * thread owns four columns (float4 loads); otherwise one. The CSR is trusted
 * (validated on the host before upload). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

#include "cuda_check.h"
#include "nhot.h"

static constexpr int kMaxThreads = 256;
static_assert(kMaxThreads % 32 == 0, "whole warps");

template <int VEC>
static __global__ void __launch_bounds__(kMaxThreads)
    nhot_kernel(int32_t dim_vec, const int32_t *__restrict__ row_ptr,
                const int32_t *__restrict__ cols, const float *__restrict__ values,
                const float *__restrict__ table, float *__restrict__ out)
{
    typedef typename std::conditional<VEC == 4, float4, float>::type vec_t;
    const int32_t row = blockIdx.x;
    const int32_t c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= dim_vec)
        return;
    const int32_t begin = __ldg(&row_ptr[row]), end = __ldg(&row_ptr[row + 1]);
    const vec_t *tab = reinterpret_cast<const vec_t *>(table);
    float acc[VEC] = {};
    int32_t e = begin;
    /* Two non-zeros a step so two table loads are in flight per thread. */
    for (; e + 1 < end; e += 2) {
        int32_t z0 = __ldg(&cols[e]), z1 = __ldg(&cols[e + 1]);
        float y0 = __ldg(&values[e]), y1 = __ldg(&values[e + 1]);
        vec_t b0 = __ldg(&tab[(int64_t)z0 * dim_vec + c]);
        vec_t b1 = __ldg(&tab[(int64_t)z1 * dim_vec + c]);
        const float *f0 = reinterpret_cast<const float *>(&b0);
        const float *f1 = reinterpret_cast<const float *>(&b1);
#pragma unroll
        for (int v = 0; v < VEC; v++)
            acc[v] += y0 * f0[v] + y1 * f1[v];
    }
    if (e < end) {
        int32_t z = __ldg(&cols[e]);
        float y = __ldg(&values[e]);
        vec_t b = __ldg(&tab[(int64_t)z * dim_vec + c]);
        const float *f = reinterpret_cast<const float *>(&b);
#pragma unroll
        for (int v = 0; v < VEC; v++)
            acc[v] += y * f[v];
    }
    vec_t r;
    float *rf = reinterpret_cast<float *>(&r);
#pragma unroll
    for (int v = 0; v < VEC; v++)
        rf[v] = acc[v];
    reinterpret_cast<vec_t *>(out)[(int64_t)row * dim_vec + c] = r;
}

template <int VEC>
static nmt_status launch(int32_t n_rows, int32_t dim, const int32_t *row_ptr,
                         const int32_t *cols, const float *values, const float *table,
                         float *out, cudaStream_t stream, nmt_error *err)
{
    int32_t dim_vec = dim / VEC;
    int threads = ((dim_vec + 31) / 32) * 32;
    threads = threads > kMaxThreads ? kMaxThreads : threads;
    dim3 grid((unsigned)n_rows, (unsigned)((dim_vec + threads - 1) / threads));
    nhot_kernel<VEC><<<grid, threads, 0, stream>>>(dim_vec, row_ptr, cols, values, table, out);
    NMT_LAUNCH_RETURN("nhot_kernel");
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_nhot_lookup(int32_t n_rows, int32_t dim, int32_t table_rows,
                                           const int32_t *row_ptr, const int32_t *cols,
                                           const float *values, const float *table, float *out,
                                           void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && dim >= 0 && table_rows >= 0);
    NMT_ARG_CHECK(n_rows == 0 || dim == 0 || (row_ptr && table && out));
    NMT_ARG_CHECK((int64_t)(dim + 3) / 4 <= 65535LL * kMaxThreads);
    if (n_rows == 0 || dim == 0)
        return NMT_STATUS_OK;
    cudaStream_t s = (cudaStream_t)stream;
    bool aligned = ((uintptr_t)table % 16 == 0) && ((uintptr_t)out % 16 == 0);
    if (dim % 4 == 0 && aligned)
        return launch<4>(n_rows, dim, row_ptr, cols, values, table, out, s, err);
    return launch<1>(n_rows, dim, row_ptr, cols, values, table, out, s, err);
}
