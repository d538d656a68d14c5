/* lsh_logits_gemm.cu: the GEMM variant of nmt_cuda_lsh_logits (kernels/lsh.h):
 * a tiled SGEMM of a group's rows against its gathered candidate rows of
 * out_w, for groups of many rows (the batch's one list, or large sentences).
 *
 * Block (group, row tile, candidate tile) computes 64 candidates x TM rows
 * (TM = 16 for groups of <= 32 rows, with 64 threads; else 64, with 256),
 * each thread owning candidates tx + 16 i (i < 4) of 4 rows ty + (threads /
 * 16) m (m < 4): 8 float4 shared loads feed 64 FMAs (one row a thread was
 * bound by shared-memory bandwidth). A warp's stores are 16 consecutive
 * floats a row. K tiles in shared memory (64 wide for 16-row tiles, 32 for
 * 64-row ones), both operands stored row-major with a row stride of K + 4
 * floats (an odd number of float4: the float4 reads of 8 different rows by a
 * quarter warp fall in distinct banks), the next tile prefetched into
 * registers during the FMAs. float4 global loads when dim % 4 == 0 and the
 * operands are 16-byte aligned, scalar otherwise. Plain fp32 FMA. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "lsh_logits_variants.cuh"

static constexpr int kGemmCands = 64;           /* candidates a block */
static constexpr int kGemmRowsPerThread = 4;
static constexpr int kGemmSmallRows = 16;       /* row tile for groups of <= 32 rows */
static constexpr int kGemmSmallK = 64;          /* ... its K tile (float4 loads; else 32) */
static constexpr int kGemmLargeRows = 64;
static constexpr int kGemmLargeK = 32;
static_assert(kGemmCands == 4 * 16, "tx + 16 i, i < 4: 64 candidates");

/* Threads of a TM-row tile: 16 along the candidates, TM / 4 along the rows. */
template <int TM> struct GemmShape {
    static constexpr int threads = 16 * (TM / kGemmRowsPerThread);
    static_assert(TM % kGemmRowsPerThread == 0 && threads % kWarpSize == 0, "whole warps");
};
/* Shared row stride of a K tile: K + 4 floats, an odd number of float4. */
template <int KT> struct GemmTile {
    static constexpr int stride = KT + 4;
    static_assert(KT % 4 == 0 && (stride / 4) % 2 == 1,
                  "float4 rows, an odd number a row: conflict-free reads");
};

template <int TM, int KT, int VEC>
static __global__ void __launch_bounds__(GemmShape<TM>::threads)
    gemm_logits_kernel(int32_t n_rows, int32_t rows_per_group, int32_t dim,
                       const float *__restrict__ x, int32_t ldx, const float *__restrict__ out_w,
                       const float *__restrict__ out_b, const int32_t *__restrict__ cand,
                       int64_t cand_ld, const int32_t *__restrict__ count, int32_t first_cand,
                       int32_t max_count, float *__restrict__ logits, int64_t ld)
{
    typedef float_vec<VEC> vec_t;
    constexpr int kThreads = GemmShape<TM>::threads;
    constexpr int MR = kGemmRowsPerThread; /* rows a thread: ty + RS m */
    constexpr int RS = TM / MR;
    constexpr int KV = KT / VEC;          /* vectors a tile row */
    constexpr int kStride = GemmTile<KT>::stride;
    constexpr int A_N = TM * KV, B_N = kGemmCands * KV;
    constexpr int A_LOADS = (A_N + kThreads - 1) / kThreads;
    constexpr int B_LOADS = (B_N + kThreads - 1) / kThreads;
    __shared__ __align__(16) float s_x[TM][kStride];
    __shared__ __align__(16) float s_w[kGemmCands][kStride];
    __shared__ int32_t s_word[kGemmCands];

    const int32_t g = blockIdx.x;
    const int32_t n_cand = min(__ldg(&count[g]), max_count);
    const int32_t first = g * rows_per_group; /* < n_rows: g < ceil(n_rows / rows_per_group) */
    const int32_t r0 = blockIdx.y * TM;       /* within the group */
    const int32_t rows_here = min(rows_per_group, n_rows - first) - r0;
    if (rows_here <= 0) /* block-uniform, before any barrier */
        return;
    const int32_t rows = min(TM, rows_here);
    const float *xb = x + (int64_t)(first + r0) * ldx;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;

    /* Candidate tiles j0 = first_cand + blockIdx.z * 64, + gridDim.z * 64, ...
     * below the count (block-uniform): blocks past it return at once. */
    for (int32_t j0 = first_cand + blockIdx.z * kGemmCands; j0 < n_cand;
         j0 += gridDim.z * kGemmCands) {
        __syncthreads(); /* the previous tile's s_word reads are done */
        /* cand entries past the count are never read: they may be anything. */
        if (tid < kGemmCands) {
            const int32_t j = j0 + tid;
            s_word[tid] = j < n_cand ? __ldg(&cand[(int64_t)g * cand_ld + j]) : -1;
        }
        __syncthreads();

        /* Element e of a tile: row (or candidate) e / KV, k offset (e % KV) *
         * VEC; rows past the group, candidates past the count and k past dim
         * load 0. */
        vec_t ra[A_LOADS], rb[B_LOADS];
        auto load_tiles = [&](int32_t k0) {
#pragma unroll
            for (int a = 0; a < A_LOADS; a++) {
                const int e = tid + a * kThreads, row = e / KV;
                const int32_t k = k0 + (e % KV) * VEC;
                set_zero(ra[a]);
                if ((A_N % kThreads == 0 || e < A_N) && row < rows && k < dim)
                    ra[a] = __ldg(reinterpret_cast<const vec_t *>(xb + (int64_t)row * ldx + k));
            }
#pragma unroll
            for (int b = 0; b < B_LOADS; b++) {
                const int e = tid + b * kThreads;
                const int32_t k = k0 + (e % KV) * VEC;
                const int32_t word =
                    (B_N % kThreads == 0 || e < B_N) ? s_word[e / KV] : -1;
                set_zero(rb[b]);
                if (word >= 0 && k < dim)
                    rb[b] = __ldg(
                        reinterpret_cast<const vec_t *>(out_w + (int64_t)word * dim + k));
            }
        };
        auto store_tiles = [&]() {
#pragma unroll
            for (int a = 0; a < A_LOADS; a++) {
                const int e = tid + a * kThreads;
                if (A_N % kThreads == 0 || e < A_N)
                    *reinterpret_cast<vec_t *>(&s_x[e / KV][(e % KV) * VEC]) = ra[a];
            }
#pragma unroll
            for (int b = 0; b < B_LOADS; b++) {
                const int e = tid + b * kThreads;
                if (B_N % kThreads == 0 || e < B_N)
                    *reinterpret_cast<vec_t *>(&s_w[e / KV][(e % KV) * VEC]) = rb[b];
            }
        };

        float acc[MR][4];
#pragma unroll
        for (int m = 0; m < MR; m++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[m][i] = 0.0f;

        load_tiles(0);
        for (int32_t k0 = 0; k0 < dim; k0 += KT) {
            store_tiles();
            __syncthreads();
            if (k0 + KT < dim) /* in flight during the FMAs below */
                load_tiles(k0 + KT);
#pragma unroll 8
            for (int kk = 0; kk < KT; kk += 4) {
                float4 a[MR], b[4];
#pragma unroll
                for (int m = 0; m < MR; m++)
                    a[m] = *reinterpret_cast<const float4 *>(&s_x[ty + RS * m][kk]);
#pragma unroll
                for (int i = 0; i < 4; i++)
                    b[i] = *reinterpret_cast<const float4 *>(&s_w[tx + 16 * i][kk]);
#pragma unroll
                for (int m = 0; m < MR; m++)
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        acc[m][i] = dot_acc(a[m], b[i], acc[m][i]);
            }
            __syncthreads(); /* the next store_tiles overwrites the tiles */
        }

        float bias[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int32_t word = s_word[tx + 16 * i];
            bias[i] = out_b && word >= 0 ? __ldg(&out_b[word]) : 0.0f;
        }
#pragma unroll
        for (int m = 0; m < MR; m++) {
            const int row = ty + RS * m;
            if (row >= rows)
                continue;
            float *out = logits + (int64_t)(first + r0 + row) * ld + j0;
#pragma unroll
            for (int i = 0; i < 4; i++)
                if (j0 + tx + 16 * i < n_cand)
                    out[tx + 16 * i] = acc[m][i] + bias[i];
        }
    }
}

/* ---- launch --------------------------------------------------------------- */

template <int TM, int VEC>
static void launch_gemm(dim3 grid, const LogitsCall &a, cudaStream_t stream)
{
    constexpr int KT = TM == kGemmSmallRows && VEC == 4 ? kGemmSmallK : kGemmLargeK;
    gemm_logits_kernel<TM, KT, VEC><<<grid, GemmShape<TM>::threads, 0, stream>>>(
        a.n_rows, a.lists.rows_per_group, a.dim, a.x, a.ldx, a.out_w, a.out_b, a.lists.words,
        a.lists.ld, a.lists.count, a.first, a.max_count, a.logits, a.ld);
}

nmt_status nmt_lsh_logits_gemm(const LogitsCall &a, int tile_rows, int64_t target_blocks,
                               cudaStream_t stream, nmt_error *err)
{
    const int tm = tile_rows == kGemmLargeRows ? kGemmLargeRows : kGemmSmallRows;
    const int64_t row_tiles = (a.rows_in_group + tm - 1) / tm;
    if (row_tiles > kMaxGridYZ)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "nmt_cuda_lsh_logits: %d groups "
                             "of %d rows are too many for the GEMM grid", a.groups,
                             a.rows_in_group);
    const int64_t cand_tiles = ((int64_t)a.max_count - a.first + kGemmCands - 1) / kGemmCands;
    /* Groups fastest: every group's first tiles are dealt out in the first
     * wave and the blocks past the counts come last (with the tiles fastest,
     * the blocks that work were spread over every wave of the mostly idle
     * grid). */
    const dim3 grid((unsigned)a.groups, (unsigned)row_tiles,
                    (unsigned)cand_tile_blocks(cand_tiles, row_tiles * a.groups, target_blocks));
    const bool vec4 = a.dim % 4 == 0 && a.ldx % 4 == 0 && nmt_is_aligned(a.x, 16) &&
                      nmt_is_aligned(a.out_w, 16);
    if (tm == kGemmLargeRows && vec4)
        launch_gemm<kGemmLargeRows, 4>(grid, a, stream);
    else if (tm == kGemmLargeRows)
        launch_gemm<kGemmLargeRows, 1>(grid, a, stream);
    else if (vec4)
        launch_gemm<kGemmSmallRows, 4>(grid, a, stream);
    else
        launch_gemm<kGemmSmallRows, 1>(grid, a, stream);
    NMT_LAUNCH_RETURN("gemm_logits_kernel");
    return NMT_STATUS_OK;
}
