/* nhot.cu: N-hot embedding lookup, out[n_rows, dim] = A . table, with A an
 * n_rows x table_rows CSR matrix (row_ptr, cols, values) and table
 * [table_rows, dim] row-major (Argueta & Chiang, "Accelerating Sparse Matrix
 * Operations in Neural Networks on GPUs", Alg. 2).
 *
 * As in Alg. 2 every output element is one thread's dot product over the
 * row's few non-zeros, each non-zero reading one contiguous table row fully
 * coalesced. The work unit is a warp: (row, segment of 32 column vectors),
 * so a 512-wide row is four warps and 100 rows fill the GPU. The warp reads
 * its row's (column, value) pairs once, 32 at a time (one a lane), hands them
 * round by shuffles and keeps kInFlight table loads in flight a lane: the
 * dependent chain per call is row_ptr -> cols -> table -> out. With
 * dim % 4 == 0 and 16-byte aligned table and out a lane owns four columns
 * (float4 loads); otherwise one. The CSR is trusted (validated on the host
 * before upload). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "device.cuh"
#include "nhot.h"

static constexpr int kThreads = 256; /* 8 warps, each its own (row, segment) */
static constexpr int kInFlight = 8;  /* table loads a lane issues before it adds */
static_assert(kThreads % kWarpSize == 0, "whole warps");
static_assert(kWarpSize % kInFlight == 0, "a batch of pairs splits into whole steps");

template <int VEC>
static __global__ void __launch_bounds__(kThreads)
    nhot_kernel(int32_t n_rows, int32_t dim_vec, int32_t segments,
                const int32_t *__restrict__ row_ptr, const int32_t *__restrict__ cols,
                const float *__restrict__ values, const float *__restrict__ table,
                float *__restrict__ out)
{
    typedef float_vec<VEC> vec_t;
    const int lane = threadIdx.x & (kWarpSize - 1);
    const int64_t unit = ((int64_t)blockIdx.x * kThreads + threadIdx.x) / kWarpSize;
    if (unit >= (int64_t)n_rows * segments) /* warp-uniform */
        return;
    const int32_t row = (int32_t)(unit / segments), seg = (int32_t)(unit - (int64_t)row * segments);
    const int32_t c = seg * kWarpSize + lane;
    const bool active = c < dim_vec;
    const int32_t cc = active ? c : 0; /* inactive lanes load a valid column, never store */
    const int32_t begin = __ldg(&row_ptr[row]), end = __ldg(&row_ptr[row + 1]);
    const vec_t *tab = reinterpret_cast<const vec_t *>(table);
    float acc[VEC] = {};
    for (int32_t base = begin; base < end; base += kWarpSize) {
        const int n = min(kWarpSize, end - base);
        int32_t my_col = 0;
        float my_val = 0.0f;
        if (lane < n) {
            my_col = __ldg(&cols[base + lane]);
            my_val = __ldg(&values[base + lane]);
        }
        for (int j0 = 0; j0 < n; j0 += kInFlight) {
            vec_t b[kInFlight];
            float y[kInFlight];
#pragma unroll
            for (int u = 0; u < kInFlight; u++) {
                /* Steps past n add a zero vector with weight 0. */
                int32_t z = __shfl_sync(kFullMask, my_col, (j0 + u) & (kWarpSize - 1));
                float yu = __shfl_sync(kFullMask, my_val, (j0 + u) & (kWarpSize - 1));
                y[u] = j0 + u < n ? yu : 0.0f;
                if (j0 + u < n)
                    b[u] = __ldg(&tab[(int64_t)z * dim_vec + cc]);
                else
                    set_zero(b[u]);
            }
#pragma unroll
            for (int u = 0; u < kInFlight; u++) {
                const float *f = reinterpret_cast<const float *>(&b[u]);
#pragma unroll
                for (int v = 0; v < VEC; v++)
                    acc[v] += y[u] * f[v];
            }
        }
    }
    if (!active)
        return;
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
    const int32_t dim_vec = dim / VEC, segments = (dim_vec + kWarpSize - 1) / kWarpSize;
    const int64_t warps = (int64_t)n_rows * segments;
    const int64_t blocks = (warps + kThreads / kWarpSize - 1) / (kThreads / kWarpSize);
    if (blocks > 0x7fffffffLL)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "nhot_lookup: %d rows x %d "
                             "columns is too many", n_rows, dim);
    nhot_kernel<VEC><<<(unsigned)blocks, kThreads, 0, stream>>>(n_rows, dim_vec, segments,
                                                                 row_ptr, cols, values, table, out);
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
    if (n_rows == 0 || dim == 0)
        return NMT_STATUS_OK;
    cudaStream_t s = (cudaStream_t)stream;
    bool aligned = nmt_is_aligned(table, 16) && nmt_is_aligned(out, 16);
    if (dim % 4 == 0 && aligned)
        return launch<4>(n_rows, dim, row_ptr, cols, values, table, out, s, err);
    return launch<1>(n_rows, dim, row_ptr, cols, values, table, out, s, err);
}
