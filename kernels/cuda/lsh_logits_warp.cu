/* lsh_logits_warp.cu: the WARP variant of nmt_cuda_lsh_logits (kernels/lsh.h),
 * SDDMM's shape for small groups (a sentence's beam): block (group, RB rows of
 * it, tiles of 8 C candidates), a warp per C = 32 / RB candidates of those RB
 * rows (RB 4 or 8). The rows are staged in shared memory (1024 floats of each
 * at a time) and every candidate row loaded by the warp feeds all RB of them,
 * so a group reads its candidates once where SDDMM reads them once a row;
 * the warp's 32 = C x RB sums are reduced together, lane i ending with sum i
 * (31 shuffles). Why: with 5 rows a group, the GEMM's 16-row tile is two
 * thirds padding and its 8 K steps in series leave a mostly idle grid waiting
 * on loads (compare: bench_lsh --variant gemm,warp --rows 320 --group 5
 * --vocabs 30000 --count 150). Plain fp32 FMA. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "lsh_logits_variants.cuh"

static constexpr int kWarpDotWarps = 8;
static constexpr int kWarpDotThreads = kWarpDotWarps * kWarpSize;
static constexpr int kWarpDotTile = 1024; /* floats of each staged row at a time */
static_assert(kWarpDotTile % 4 == 0, "staged rows keep float4 alignment");

/* Lane i of the warp ends with the warp-wide sum of v[i] in v[0]. Each
 * halving keeps the half of the values that the lane's bit selects and adds
 * the partner's copy of it: 16 + 8 + 4 + 2 + 1 shuffles for 32 sums, where
 * 32 separate butterflies would take 160. (A template a halving: every
 * index stays a constant, so v stays in registers.) */
template <int HALF>
static __device__ __forceinline__ void warp_transpose_sum(float (&v)[kWarpSize], int lane)
{
    const bool upper = (lane & HALF) != 0;
#pragma unroll
    for (int j = 0; j < HALF; j++) {
        const float send = upper ? v[j] : v[j + HALF];
        const float keep = upper ? v[j + HALF] : v[j];
        v[j] = keep + __shfl_xor_sync(kFullMask, send, HALF);
    }
    if constexpr (HALF > 1)
        warp_transpose_sum<HALF / 2>(v, lane);
}

template <int RB, int VEC>
static __global__ void __launch_bounds__(kWarpDotThreads)
    warp_logits_kernel(int32_t n_rows, int32_t rows_per_group, int32_t dim,
                       const float *__restrict__ x, int32_t ldx, const float *__restrict__ out_w,
                       const float *__restrict__ out_b, const int32_t *__restrict__ cand,
                       int64_t cand_ld, const int32_t *__restrict__ count, int32_t first_cand,
                       int32_t max_count, float *__restrict__ logits, int64_t ld)
{
    typedef float_vec<VEC> vec_t;
    constexpr int C = kWarpSize / RB;          /* candidates a warp */
    constexpr int kCands = kWarpDotWarps * C; /* a block */
    static_assert(C * RB == kWarpSize, "a sum a lane");
    __shared__ __align__(16) float s_x[RB][kWarpDotTile];

    const int32_t g = blockIdx.x;
    const int32_t n_cand = min(__ldg(&count[g]), max_count);
    const int32_t first = g * rows_per_group; /* < n_rows: g < ceil(n_rows / rows_per_group) */
    const int32_t r0 = blockIdx.y * RB;       /* within the group */
    const int32_t rows_here = min(rows_per_group, n_rows - first) - r0;
    if (rows_here <= 0) /* block-uniform, before any barrier */
        return;
    const int32_t rows = min(RB, rows_here);
    const float *xb = x + (int64_t)(first + r0) * ldx;
    const int32_t *list = cand + (int64_t)g * cand_ld;
    const int lane = threadIdx.x & (kWarpSize - 1), warp = threadIdx.x / kWarpSize;
    const bool one_tile = dim <= kWarpDotTile; /* rows staged once for all candidates */

    /* Candidate tiles j0 = first_cand + blockIdx.z * 8C, + gridDim.z * 8C, ...
     * below the count (block-uniform): blocks past it return at once. */
    const int32_t j_start = first_cand + blockIdx.z * kCands;
    for (int32_t j0 = j_start; j0 < n_cand; j0 += gridDim.z * kCands) {
        const int32_t jw = j0 + warp * C; /* the warp's first candidate */
        const vec_t *w_rows[C];
        warp_candidate_rows(list, j0, jw, n_cand, out_w, dim, w_rows);
        float acc[kWarpSize]; /* acc[c * RB + r]: candidate jw + c, row r */
#pragma unroll
        for (int i = 0; i < kWarpSize; i++)
            acc[i] = 0.0f;

        for (int32_t t0 = 0; t0 < dim; t0 += kWarpDotTile) {
            const int32_t len = min(kWarpDotTile, dim - t0);
            if (!one_tile || j0 == j_start) {
                __syncthreads(); /* the previous tile is consumed */
                for (int32_t i = threadIdx.x; i < RB * len; i += kWarpDotThreads) {
                    const int32_t r = i / len, k = i - r * len;
                    s_x[r][k] = r < rows ? __ldg(&xb[(int64_t)r * ldx + t0 + k]) : 0.0f;
                }
                __syncthreads();
            }
            const int32_t n_vec = len / VEC, v0 = t0 / VEC; /* VEC 4: dim % 4 == 0 */
#pragma unroll 2
            for (int32_t v = lane; v < n_vec; v += kWarpSize) {
                vec_t wv[C];
#pragma unroll
                for (int c = 0; c < C; c++)
                    wv[c] = __ldg(&w_rows[c][v0 + v]);
#pragma unroll
                for (int r = 0; r < RB; r++) {
                    const vec_t xv = reinterpret_cast<const vec_t *>(s_x[r])[v];
#pragma unroll
                    for (int c = 0; c < C; c++)
                        acc[c * RB + r] = dot_acc(wv[c], xv, acc[c * RB + r]);
                }
            }
        }

        warp_transpose_sum<kWarpSize / 2>(acc, lane);
        const float sum = acc[0]; /* of acc[lane]: lane = c * RB + r */
        const int32_t j = jw + lane / RB, r = lane % RB;
        if (r < rows && j < n_cand) {
            const float bias = out_b ? __ldg(&out_b[__ldg(&list[j])]) : 0.0f;
            logits[(int64_t)(first + r0 + r) * ld + j] = sum + bias;
        }
    }
}

/* ---- launch --------------------------------------------------------------- */

template <int RB, int VEC>
static void launch_warp(dim3 grid, const LogitsCall &a, cudaStream_t stream)
{
    warp_logits_kernel<RB, VEC><<<grid, kWarpDotThreads, 0, stream>>>(
        a.n_rows, a.lists.rows_per_group, a.dim, a.x, a.ldx, a.out_w, a.out_b, a.lists.words,
        a.lists.ld, a.lists.count, a.first, a.max_count, a.logits, a.ld);
}

nmt_status nmt_lsh_logits_warp(const LogitsCall &a, int rows_per_block, int64_t target_blocks,
                               cudaStream_t stream, nmt_error *err)
{
    const int rb = rows_per_block == 4 ? 4 : 8;
    const int64_t passes = (a.rows_in_group + rb - 1) / rb;
    if (passes > kMaxGridYZ)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "nmt_cuda_lsh_logits: "
                             "groups of %d rows are too many for the WARP grid",
                             a.rows_in_group);
    const int64_t per_block = kWarpDotWarps * (kWarpSize / rb);
    const int64_t cand_tiles = ((int64_t)a.max_count - a.first + per_block - 1) / per_block;
    const dim3 grid((unsigned)a.groups, (unsigned)passes,
                    (unsigned)cand_tile_blocks(cand_tiles, passes * a.groups, target_blocks));
    const bool vec4 = a.dim % 4 == 0 && nmt_is_aligned(a.out_w, 16); /* x is staged as floats */
    if (rb == 4 && vec4)
        launch_warp<4, 4>(grid, a, stream);
    else if (rb == 4)
        launch_warp<4, 1>(grid, a, stream);
    else if (vec4)
        launch_warp<8, 4>(grid, a, stream);
    else
        launch_warp<8, 1>(grid, a, stream);
    NMT_LAUNCH_RETURN("warp_logits_kernel");
    return NMT_STATUS_OK;
}
