/* gather.cu: dst[i, :] = src[index[i], :] for i < n_rows, rows of dim floats
 * (reorders LSTM states and input feed by beam back-pointers).
 *
 * grid.x walks destination rows, threads (and grid.y for wide rows) the
 * columns; float4 copies when dim % 4 == 0 and both pointers are 16-byte
 * aligned. The indices are trusted (produced on the device by the search).
 *
 * gather_segments: grid.x rows, grid.y segments; the segment table travels
 * by value in the kernel's parameters; a segment's 16-bit copy (dst16) is
 * stored beside each fp32 value. A thread copies a few columns with its
 * loads issued before its stores, so a row segment is one memory round trip;
 * at decoder sizes (a few rows, ~3k floats a row) the launch, not the
 * bandwidth, is the cost, which is why the segments share one launch. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "device.cuh"
#include "gather.h"
#include "half_device.cuh"

static constexpr int kMaxThreads = 256;

template <int VEC>
static __global__ void __launch_bounds__(kMaxThreads)
    gather_rows_kernel(int32_t dim_vec, const float *__restrict__ src,
                       const int32_t *__restrict__ index, float *__restrict__ dst)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    typedef float_vec<VEC> vec_t;
    const int32_t row = blockIdx.x;
    const int32_t c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= dim_vec)
        return;
    const int32_t from = __ldg(&index[row]);
    reinterpret_cast<vec_t *>(dst)[(int64_t)row * dim_vec + c] =
        __ldg(&reinterpret_cast<const vec_t *>(src)[(int64_t)from * dim_vec + c]);
}

struct SegmentTable {
    nmt_gather_segment seg[NMT_GATHER_MAX_SEGMENTS];
};

static constexpr int kSegmentUnroll = 4; /* loads in flight a thread */

static __global__ void __launch_bounds__(kMaxThreads)
    gather_segments_kernel(int32_t n_rows, SegmentTable table)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    const nmt_gather_segment s = table.seg[blockIdx.y];
    for (int32_t row = blockIdx.x; row < n_rows; row += gridDim.x) {
        const float *src = s.src + (int64_t)__ldg(&s.index[row]) * s.ld_src;
        float *dst = s.dst + (int64_t)row * s.ld_dst;
        for (int32_t c0 = threadIdx.x; c0 < s.width; c0 += kSegmentUnroll * blockDim.x) {
            float v[kSegmentUnroll];
#pragma unroll
            for (int u = 0; u < kSegmentUnroll; u++) {
                int32_t c = c0 + u * blockDim.x;
                v[u] = c < s.width ? __ldg(&src[c]) : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < kSegmentUnroll; u++) {
                int32_t c = c0 + u * blockDim.x;
                if (c < s.width) {
                    dst[c] = v[u];
                    half_out_put(s.dst16, row, c, v[u]);
                }
            }
        }
    }
}

template <int VEC>
static nmt_status launch(int32_t n_rows, int32_t dim, const float *src, const int32_t *index,
                         float *dst, cudaStream_t stream, nmt_error *err)
{
    int32_t dim_vec = dim / VEC;
    int threads = ((dim_vec + 31) / 32) * 32;
    threads = threads > kMaxThreads ? kMaxThreads : threads;
    dim3 grid((unsigned)n_rows, (unsigned)((dim_vec + threads - 1) / threads));
    nmt_launch_pdl(gather_rows_kernel<VEC>, grid, threads, 0, stream, dim_vec, src, index, dst);
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
    if (dim % 4 == 0 && nmt_is_aligned(src, 16) && nmt_is_aligned(dst, 16))
        return launch<4>(n_rows, dim, src, index, dst, s, err);
    return launch<1>(n_rows, dim, src, index, dst, s, err);
}

extern "C" nmt_status nmt_cuda_gather_segments(int32_t n_rows, int32_t n_segments,
                                               const nmt_gather_segment *segments, void *stream,
                                               nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && n_segments >= 0 && n_segments <= NMT_GATHER_MAX_SEGMENTS);
    NMT_ARG_CHECK(n_segments == 0 || segments);
    if (n_rows == 0 || n_segments == 0)
        return NMT_STATUS_OK;
    SegmentTable table = {};
    int32_t widest = 0;
    for (int32_t g = 0; g < n_segments; g++) {
        const nmt_gather_segment *s = &segments[g];
        NMT_ARG_CHECK(s->width >= 0 && s->ld_src >= s->width && s->ld_dst >= s->width);
        NMT_ARG_CHECK(s->width == 0 || (s->src && s->index && s->dst));
        NMT_ARG_CHECK(half_out_ok(&s->dst16, s->width));
        table.seg[g] = *s;
        widest = s->width > widest ? s->width : widest;
    }
    if (widest == 0)
        return NMT_STATUS_OK;
    int threads = (widest + kSegmentUnroll - 1) / kSegmentUnroll;
    threads = (threads + 31) / 32 * 32;
    threads = threads > kMaxThreads ? kMaxThreads : threads;
    const unsigned rows = (unsigned)(n_rows < 65535 ? n_rows : 65535);
    nmt_launch_pdl(gather_segments_kernel, dim3(rows, (unsigned)n_segments), threads, 0,
                   (cudaStream_t)stream, n_rows, table);
    NMT_LAUNCH_RETURN("gather_segments_kernel");
    return NMT_STATUS_OK;
}
