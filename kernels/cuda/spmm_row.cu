/* spmm_row.cu: the row variant of nmt_cuda_spmm (kernels/spmm.h), for few
 * rows of x: the decoder's steps, a beam or a small batch of them.
 *
 * y = x W^T with x row-major [m, k] is, for output j, a dot product of W's
 * row j with each row of x. With few rows of x there are too few outputs to
 * give each thread its own (Gale et al.'s tile kernel would leave most of
 * the GPU idle at m = 5), so the work is split along W's row instead, as in
 * a vector SpMV, with the paper's techniques where they apply:
 *  - 1-D tiling: a subwarp computes one row j of W against `kRows` rows of x
 *    (an output tile of y's column j); blocks run the tiles of a row of W
 *    one after another, so W's row is read from L2 after the first;
 *  - subwarp tiling: `kLanes` (4..32) threads a row of W, fewer for short
 *    rows, so a warp's lanes are not left idle past a row's end;
 *  - vector loads: each lane reads 4 (fp32) or 8 (fp16) consecutive values
 *    and their column indices with 16-byte loads; reverse-offset alignment
 *    (ROMA): the row's first load starts at the multiple of the vector width
 *    at or below the row's start, and the entries of the row before it (and
 *    past the row's end) are masked out, so rows need no padding;
 *  - row swizzle: subwarp s takes row order[s], rows by decreasing length,
 *    so lanes of a warp finish together and the longest rows start first.
 * The x values of a nonzero are gathered where x is (k floats a row, so the
 * rows of a small batch stay in L1); the kRows partial sums of the lanes are
 * reduced by halving exchanges (each lane ends with its share of the rows)
 * and written with the bias and the old y. fp32 products and sums. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "spmm_variants.cuh"

static constexpr int kRowThreads = 128;

static __host__ __device__ constexpr int spmm_log2(int v) { return v <= 1 ? 0 : 1 + spmm_log2(v / 2); }

/* The lanes' partial sums of kRows outputs reduced over the subwarp. Each
 * halving step pairs lanes `o` apart: the lower lane keeps the lower half of
 * its rows, the upper the upper half, each adding its partner's copy of the
 * half it keeps, so a step costs half the shuffles of the last. After
 * min(log2 kRows, log2 kLanes) steps lane l holds kRows >> steps rows from
 * row (l >> (log2 kLanes - steps)) x (kRows >> steps); plain butterfly
 * steps then sum those over the rest of the subwarp. */
template <int kLanes, int kRows>
static __device__ __forceinline__ void subwarp_reduce_rows(float (&acc)[kRows], int lane,
                                                           unsigned mask)
{
    constexpr int kLogLanes = spmm_log2(kLanes), kLogRows = spmm_log2(kRows);
    constexpr int kSteps = kLogRows < kLogLanes ? kLogRows : kLogLanes;
#pragma unroll
    for (int s = 0; s < kLogLanes; s++) {
        const int o = kLanes >> (s + 1);
        if (s < kSteps) {
            const int half = (kRows >> s) / 2;
            const bool upper = (lane & o) != 0;
#pragma unroll
            for (int t = 0; t < half; t++) {
                const float send = upper ? acc[t] : acc[t + half];
                const float keep = upper ? acc[t + half] : acc[t];
                acc[t] = keep + __shfl_xor_sync(mask, send, o);
            }
        } else {
#pragma unroll
            for (int t = 0; t < (kRows >> kSteps); t++)
                acc[t] += __shfl_xor_sync(mask, acc[t], o);
        }
    }
}

/* Block b: m tile b % m_tiles of the rows of x, subwarps (b / m_tiles) x
 * (kRowThreads / kLanes) + s of the row order. */
template <typename Value, typename Index, int kLanes, int kRows>
static __global__ void __launch_bounds__(kRowThreads)
    spmm_row_kernel(const SpmmCall c, int32_t m_tiles)
{
    constexpr int kVec = SpmmVec<Value>::kEntries;
    constexpr int kSubwarps = kRowThreads / kLanes;
    constexpr int kLogLanes = spmm_log2(kLanes), kLogRows = spmm_log2(kRows);
    constexpr int kSteps = kLogRows < kLogLanes ? kLogRows : kLogLanes;
    constexpr int kHeld = kRows >> kSteps; /* rows a lane holds after the reduction */
    static_assert((kLanes & (kLanes - 1)) == 0 && kLanes <= kWarpSize, "lanes: 2^i <= 32");
    static_assert((kRows & (kRows - 1)) == 0, "rows: a power of two");

    const int lane = (int)threadIdx.x % kLanes;
    const int64_t slot = (int64_t)(blockIdx.x / m_tiles) * kSubwarps + threadIdx.x / kLanes;
    if (slot >= c.n)
        return; /* a whole subwarp: the others' shuffles do not name it */
    const unsigned mask = spmm_subwarp_mask(kLanes);
    const int32_t j = __ldg(&c.row_order[slot]);
    const int32_t start = __ldg(&c.row_offsets[j]), end = __ldg(&c.row_offsets[j + 1]);
    const int32_t i0 = (int32_t)(blockIdx.x % m_tiles) * kRows;
    const int rows_here = min(kRows, c.m - i0);

    const float *x_row[kRows];
#pragma unroll
    for (int r = 0; r < kRows; r++) /* rows past m point at row i0 and are never read */
        x_row[r] = c.x + (int64_t)(i0 + (r < rows_here ? r : 0)) * c.ldx;
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; r++)
        acc[r] = 0.0f;

    const Value *values = static_cast<const Value *>(c.values);
    const Index *cols = static_cast<const Index *>(c.col_indices);
    /* ROMA: from the aligned entry at or below start; p + kVec <= the end
     * rounded up to kVec, inside the padding (nnz < 2^31 - 4096: no overflow). */
    for (int32_t p = (start & ~(kVec - 1)) + lane * kVec; p < end; p += kLanes * kVec) {
        Value v[kVec];
        Index col[kVec];
        spmm_load_vec(values + p, v);
        spmm_load_vec(cols + p, col);
#pragma unroll
        for (int e = 0; e < kVec; e++) {
            if (p + e < start || p + e >= end)
                continue; /* the previous or the next row's entry */
            const float w = spmm_to_float(v[e]);
            const int32_t cc = (int32_t)col[e];
#pragma unroll
            for (int r = 0; r < kRows; r++)
                if (r < rows_here)
                    acc[r] = fmaf(w, __ldg(x_row[r] + cc), acc[r]);
        }
    }

    subwarp_reduce_rows<kLanes, kRows>(acc, lane, mask);
    if ((lane & ((1 << (kLogLanes - kSteps)) - 1)) != 0)
        return;
    const float b = c.bias ? __ldg(&c.bias[j]) : 0.0f;
    const int first = (lane >> (kLogLanes - kSteps)) * kHeld;
#pragma unroll
    for (int t = 0; t < kHeld; t++) {
        const int r = first + t;
        if (r < rows_here) {
            float *out = c.y + (int64_t)(i0 + r) * c.ldy + j;
            *out = c.accumulate ? acc[t] + b + *out : acc[t] + b;
        }
    }
}

typedef void (*RowKernel)(const SpmmCall, int32_t);

template <typename Value, typename Index, int kLanes>
static RowKernel row_kernel_rows(int rows)
{
    switch (rows) {
    case 1: return spmm_row_kernel<Value, Index, kLanes, 1>;
    case 4: return spmm_row_kernel<Value, Index, kLanes, 4>;
    case 8: return spmm_row_kernel<Value, Index, kLanes, 8>;
    default: return nullptr;
    }
}

template <typename Value, typename Index>
static RowKernel row_kernel_lanes(int lanes, int rows)
{
    switch (lanes) {
    case 4: return row_kernel_rows<Value, Index, 4>(rows);
    case 8: return row_kernel_rows<Value, Index, 8>(rows);
    case 16: return row_kernel_rows<Value, Index, 16>(rows);
    case 32: return row_kernel_rows<Value, Index, 32>(rows);
    default: return nullptr;
    }
}

nmt_status nmt_spmm_row(const SpmmCall &c, const nmt_cuda_spmm_matrix &w,
                        const nmt_spmm_config &config, cudaStream_t stream, nmt_error *err)
{
    const bool fp16 = w.value_type == NMT_SPMM_VALUES_FP16, narrow = w.index_bits == 16;
    const RowKernel kernel =
        fp16 ? (narrow ? row_kernel_lanes<__half, uint16_t>(config.lanes, config.rows)
                       : row_kernel_lanes<__half, int32_t>(config.lanes, config.rows))
             : (narrow ? row_kernel_lanes<float, uint16_t>(config.lanes, config.rows)
                       : row_kernel_lanes<float, int32_t>(config.lanes, config.rows));
    if (!kernel)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "spmm row variant: lanes %d, rows %d (lanes 4, 8, 16 or 32; rows "
                             "1, 4 or 8)", config.lanes, config.rows);
    const int32_t m_tiles = (c.m + config.rows - 1) / config.rows;
    const int subwarps = kRowThreads / config.lanes;
    const int64_t blocks = (int64_t)((c.n + subwarps - 1) / subwarps) * m_tiles;
    if (blocks > INT32_MAX)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "spmm row variant: %lld blocks for m %d, n %d",
                             (long long)blocks, c.m, c.n);
    kernel<<<(unsigned)blocks, kRowThreads, 0, stream>>>(c, m_tiles);
    NMT_LAUNCH_RETURN("spmm_row_kernel");
    return NMT_STATUS_OK;
}
