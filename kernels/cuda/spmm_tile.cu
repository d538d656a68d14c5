/* spmm_tile.cu: the tile variant of nmt_cuda_spmm (kernels/spmm.h), for
 * many rows of x: Gale et al.'s SpMM ("Sparse GPU Kernels for Deep
 * Learning", SC 2020, Fig. 8) as the paper lays out its operands.
 *
 * The paper computes C = A B with A sparse (CSR) and B, C row-major, so for
 * each nonzero A[j, c] a tile of outputs C[j, i0 .. i0 + T) reads the
 * contiguous B[c, i0 .. i0 + T). Here A = W and B = x^T, but x is stored
 * [m, k] row-major: its rows run along the sum, and B's rows would be
 * strided columns of x. So the call runs in three kernels:
 *  1. x [m, k] -> x^T [k + 1, ld_t] in the workspace (a 32 x 32 shared
 *     memory transpose; columns m .. ld_t and the extra row k are zeros);
 *  2. the paper's kernel: y^T [n, ld_t] = W x^T;
 *  3. y^T -> y with the bias and the old y (the same transpose).
 * The two transposes move 2 (m k + m n) floats more than the product
 * needs, and buy that every load of x and store of y in the product is a
 * coalesced 16-byte vector, each reused by the tile's 4 outputs a thread.
 * Where that beats the row variant's gathers of x is bench_spmm's to say
 * (--variant row,tile; docs/sparse.md).
 *
 * The kernel (2): a subwarp of kTile / 4 threads computes a 1-D tile of
 * kTile outputs, y^T[j, i0 .. i0 + kTile), each thread a float4 of them
 * (subwarp tiling: 8 to 64 outputs, Gale et al.'s choice of the tile as m
 * rounded up to a power of two, at most 64). Per step the subwarp stages
 * kStage nonzeros of W's row j in shared memory with 16-byte vector loads
 * (ROMA: from the vector-aligned entry at or below the row's start; entries
 * of the rows before and after are staged as value 0 at the zero row k of
 * x^T, so the steps need no bounds and no prefix test), each column index
 * pre-scaled by ld_t (the paper's index pre-scaling), then every thread
 * runs over the staged entries four at a time: a 16-byte shared load of 4
 * values, one of 4 offsets, four float4 loads of x^T rows, 16 FMAs. The row
 * swizzle orders the subwarps as in the row variant, and blocks run the
 * tiles of one row bundle one after another (the m tile varies fastest). */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "spmm_variants.cuh"

static constexpr int kTileThreads = 128;
static constexpr int kTransposeDim = 32, kTransposeRows = 8; /* a 32 x 32 tile, 32 x 8 threads */
static constexpr int kMaxGridY = 65535;

template <typename Value, int kTile> struct TilePolicy {
    static constexpr int kThreads = kTile / 4; /* a subwarp: a float4 of outputs each */
    static constexpr int kSubwarps = kTileThreads / kThreads;
    static constexpr int kVec = SpmmVec<Value>::kEntries;
    /* Nonzeros staged a step: 32, or one vector load a thread where that is more. */
    static constexpr int kStage = kThreads * kVec > 32 ? kThreads * kVec : 32;
    static constexpr int kLoads = kStage / (kThreads * kVec);
    /* Each subwarp's staging row is 4 words longer than kStage, so the
     * subwarps of a warp reading their entry g at once hit different banks. */
    static constexpr int kStride = kStage + 4;
    static_assert(kTile % 4 == 0 && kThreads <= kWarpSize && (kThreads & (kThreads - 1)) == 0,
                  "a subwarp of 2^i <= 32 threads");
    static_assert(kStage % (kThreads * kVec) == 0 && kStage % 4 == 0, "whole loads and groups");
    static_assert(kVec % 4 == 0, "staged as float4 / int4");
};

/* x [m, k] (ldx) -> xt [k + 1, ld_t]: xt[c, i] = x[i, c], zero for i >= m
 * and for the row c = k. Grid: x over 32 columns of x, y over row tiles. */
static __global__ void __launch_bounds__(kTransposeDim *kTransposeRows)
    spmm_transpose_in(int32_t m, int32_t k, const float *__restrict__ x, int32_t ldx,
                      float *__restrict__ xt, int32_t ld_t)
{
    __shared__ float tile[kTransposeDim][kTransposeDim + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int32_t c0 = blockIdx.x * kTransposeDim;
    for (int32_t i0 = blockIdx.y * kTransposeDim; i0 < ld_t; i0 += gridDim.y * kTransposeDim) {
        for (int r = ty; r < kTransposeDim; r += kTransposeRows) {
            const int32_t i = i0 + r, col = c0 + tx;
            tile[r][tx] = i < m && col < k ? x[(int64_t)i * ldx + col] : 0.0f;
        }
        __syncthreads();
        for (int r = ty; r < kTransposeDim; r += kTransposeRows) {
            const int32_t col = c0 + r, i = i0 + tx;
            if (col <= k && i < ld_t)
                xt[(int64_t)col * ld_t + i] = tile[tx][r];
        }
        __syncthreads(); /* the tile is read before the next one is written */
    }
}

/* y[i, j] = y^T[j, i] + bias[j] (+ y[i, j]) for i < m, j < n. Grid: x over
 * 32 outputs j, y over row tiles. */
static __global__ void __launch_bounds__(kTransposeDim *kTransposeRows)
    spmm_transpose_out(int32_t m, int32_t n, const float *__restrict__ yt, int32_t ld_t,
                       const float *__restrict__ bias, int accumulate, float *__restrict__ y,
                       int32_t ldy)
{
    __shared__ float tile[kTransposeDim][kTransposeDim + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int32_t j0 = blockIdx.x * kTransposeDim;
    for (int32_t i0 = blockIdx.y * kTransposeDim; i0 < m; i0 += gridDim.y * kTransposeDim) {
        for (int r = ty; r < kTransposeDim; r += kTransposeRows) {
            const int32_t j = j0 + r, i = i0 + tx;
            tile[r][tx] = j < n && i < m ? yt[(int64_t)j * ld_t + i] : 0.0f;
        }
        __syncthreads();
        for (int r = ty; r < kTransposeDim; r += kTransposeRows) {
            const int32_t i = i0 + r, j = j0 + tx;
            if (i < m && j < n) {
                const float v = tile[tx][r] + (bias ? __ldg(&bias[j]) : 0.0f);
                float *out = y + (int64_t)i * ldy + j;
                *out = accumulate ? v + *out : v;
            }
        }
        __syncthreads();
    }
}

/* Block b: m tile b % m_tiles, subwarps (b / m_tiles) x kSubwarps + s of
 * the row order. yt[j, tile] = W[j, :] . xt[:, tile]. */
template <typename Value, typename Index, int kTile>
static __global__ void __launch_bounds__(kTileThreads)
    spmm_tile_kernel(const SpmmCall c, const float *__restrict__ xt, int32_t ld_t,
                     float *__restrict__ yt, int32_t m_tiles)
{
    typedef TilePolicy<Value, kTile> P;
    constexpr int kVec = P::kVec;
    __shared__ __align__(16) float s_val[P::kSubwarps][P::kStride];
    __shared__ __align__(16) int32_t s_off[P::kSubwarps][P::kStride];

    const int sub = threadIdx.x / P::kThreads, t = threadIdx.x % P::kThreads;
    const int64_t slot = (int64_t)(blockIdx.x / m_tiles) * P::kSubwarps + sub;
    if (slot >= c.n)
        return; /* a whole subwarp; no block-wide barrier follows */
    const unsigned mask = spmm_subwarp_mask(P::kThreads);
    const int32_t j = __ldg(&c.row_order[slot]);
    const int32_t start = __ldg(&c.row_offsets[j]), end = __ldg(&c.row_offsets[j + 1]);
    const int32_t col0 = (int32_t)(blockIdx.x % m_tiles) * kTile + t * 4;
    const int32_t zero_off = c.k * ld_t; /* row k of xt: zeros */
    const Value *values = static_cast<const Value *>(c.values);
    const Index *cols = static_cast<const Index *>(c.col_indices);
    const float *xt_col = xt + col0;
    float *s_v = s_val[sub];
    int32_t *s_o = s_off[sub];

    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int32_t base = start & ~(kVec - 1); base < end; base += P::kStage) {
#pragma unroll
        for (int l = 0; l < P::kLoads; l++) {
            const int q = (l * P::kThreads + t) * kVec; /* entries q .. q + kVec of the step */
            const int32_t p = base + q;
            float w[kVec];
            int32_t off[kVec];
            if (p < end) { /* p + kVec <= end rounded up to kVec: inside the padding */
                Value v[kVec];
                Index col[kVec];
                spmm_load_vec(values + p, v);
                spmm_load_vec(cols + p, col);
#pragma unroll
                for (int e = 0; e < kVec; e++) {
                    const bool in_row = p + e >= start && p + e < end;
                    w[e] = in_row ? spmm_to_float(v[e]) : 0.0f;
                    off[e] = in_row ? (int32_t)col[e] * ld_t : zero_off;
                }
            } else {
#pragma unroll
                for (int e = 0; e < kVec; e++) {
                    w[e] = 0.0f;
                    off[e] = zero_off;
                }
            }
#pragma unroll
            for (int g = 0; g < kVec; g += 4) {
                *reinterpret_cast<float4 *>(s_v + q + g) =
                    make_float4(w[g], w[g + 1], w[g + 2], w[g + 3]);
                *reinterpret_cast<int4 *>(s_o + q + g) =
                    make_int4(off[g], off[g + 1], off[g + 2], off[g + 3]);
            }
        }
        __syncwarp(mask);
        /* Groups of 4 up to the row's end in this step; the rest are zeros. */
        const int groups = (min(P::kStage, end - base) + 3) / 4;
#pragma unroll 4
        for (int g = 0; g < groups; g++) {
            const float4 w4 = *reinterpret_cast<const float4 *>(s_v + 4 * g);
            const int4 o4 = *reinterpret_cast<const int4 *>(s_o + 4 * g);
            const float4 a = __ldg(reinterpret_cast<const float4 *>(xt_col + o4.x));
            const float4 b = __ldg(reinterpret_cast<const float4 *>(xt_col + o4.y));
            const float4 d = __ldg(reinterpret_cast<const float4 *>(xt_col + o4.z));
            const float4 e = __ldg(reinterpret_cast<const float4 *>(xt_col + o4.w));
            acc.x = fmaf(w4.x, a.x, acc.x);
            acc.y = fmaf(w4.x, a.y, acc.y);
            acc.z = fmaf(w4.x, a.z, acc.z);
            acc.w = fmaf(w4.x, a.w, acc.w);
            acc.x = fmaf(w4.y, b.x, acc.x);
            acc.y = fmaf(w4.y, b.y, acc.y);
            acc.z = fmaf(w4.y, b.z, acc.z);
            acc.w = fmaf(w4.y, b.w, acc.w);
            acc.x = fmaf(w4.z, d.x, acc.x);
            acc.y = fmaf(w4.z, d.y, acc.y);
            acc.z = fmaf(w4.z, d.z, acc.z);
            acc.w = fmaf(w4.z, d.w, acc.w);
            acc.x = fmaf(w4.w, e.x, acc.x);
            acc.y = fmaf(w4.w, e.y, acc.y);
            acc.z = fmaf(w4.w, e.z, acc.z);
            acc.w = fmaf(w4.w, e.w, acc.w);
        }
        __syncwarp(mask); /* the staged entries are read before the next step's */
    }
    *reinterpret_cast<float4 *>(yt + (int64_t)j * ld_t + col0) = acc;
}

typedef void (*TileKernel)(const SpmmCall, const float *, int32_t, float *, int32_t);

template <typename Value, typename Index> static TileKernel tile_kernel(int tile)
{
    switch (tile) {
    case 8: return spmm_tile_kernel<Value, Index, 8>;
    case 16: return spmm_tile_kernel<Value, Index, 16>;
    case 32: return spmm_tile_kernel<Value, Index, 32>;
    case 64: return spmm_tile_kernel<Value, Index, 64>;
    default: return nullptr;
    }
}

int64_t nmt_spmm_tile_blocks(int32_t m, int32_t n, int tile)
{
    const int subwarps = kTileThreads / (tile / 4);
    return (int64_t)((n + subwarps - 1) / subwarps) * (nmt_spmm_tile_ld(m, tile) / tile);
}

int32_t nmt_spmm_tile_ld(int32_t m, int tile)
{
    return (int32_t)(((int64_t)m + tile - 1) / tile * tile);
}

size_t nmt_spmm_tile_workspace_size(int32_t m, int32_t n, int32_t k, int tile)
{
    const size_t ld_t = (size_t)nmt_spmm_tile_ld(m, tile);
    return nmt_align_up(((size_t)k + 1) * ld_t * sizeof(float), 256) +
           nmt_align_up((size_t)n * ld_t * sizeof(float), 256);
}

nmt_status nmt_spmm_tile(const SpmmCall &c, const nmt_cuda_spmm_matrix &w,
                         const nmt_spmm_config &config, void *workspace, cudaStream_t stream,
                         nmt_error *err)
{
    const bool fp16 = w.value_type == NMT_SPMM_VALUES_FP16, narrow = w.index_bits == 16;
    const TileKernel kernel = fp16 ? (narrow ? tile_kernel<__half, uint16_t>(config.tile)
                                             : tile_kernel<__half, int32_t>(config.tile))
                                   : (narrow ? tile_kernel<float, uint16_t>(config.tile)
                                             : tile_kernel<float, int32_t>(config.tile));
    if (!kernel)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "spmm tile variant: tile %d (8, 16, 32 or 64)", config.tile);
    const int32_t ld_t = nmt_spmm_tile_ld(c.m, config.tile);
    const int32_t m_tiles = ld_t / config.tile;
    const int64_t blocks = nmt_spmm_tile_blocks(c.m, c.n, config.tile);
    /* Pre-scaled offsets c x ld_t are int32 (the workspace would pass 8 GiB first). */
    if (((int64_t)c.k + 1) * ld_t > INT32_MAX || blocks > INT32_MAX)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "spmm tile variant: m %d, n %d, k %d too large", c.m, c.n, c.k);
    float *xt = static_cast<float *>(workspace);
    float *yt = reinterpret_cast<float *>(
        static_cast<char *>(workspace) +
        nmt_align_up(((size_t)c.k + 1) * ld_t * sizeof(float), 256));

    const dim3 block(kTransposeDim, kTransposeRows);
    const int64_t in_tiles = ((int64_t)ld_t + kTransposeDim - 1) / kTransposeDim;
    const dim3 grid_in((unsigned)((c.k + 1 + kTransposeDim - 1) / kTransposeDim),
                       (unsigned)(in_tiles < kMaxGridY ? in_tiles : kMaxGridY));
    spmm_transpose_in<<<grid_in, block, 0, stream>>>(c.m, c.k, c.x, c.ldx, xt, ld_t);
    NMT_LAUNCH_RETURN("spmm_transpose_in");

    kernel<<<(unsigned)blocks, kTileThreads, 0, stream>>>(c, xt, ld_t, yt, m_tiles);
    NMT_LAUNCH_RETURN("spmm_tile_kernel");

    const int64_t out_tiles = ((int64_t)c.m + kTransposeDim - 1) / kTransposeDim;
    const dim3 grid_out((unsigned)((c.n + kTransposeDim - 1) / kTransposeDim),
                        (unsigned)(out_tiles < kMaxGridY ? out_tiles : kMaxGridY));
    spmm_transpose_out<<<grid_out, block, 0, stream>>>(c.m, c.n, yt, ld_t, c.bias, c.accumulate,
                                                       c.y, c.ldy);
    NMT_LAUNCH_RETURN("spmm_transpose_out");
    return NMT_STATUS_OK;
}
