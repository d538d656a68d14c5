/* lsh_logits_sddmm.cu: the SDDMM variant of nmt_cuda_lsh_logits
 * (kernels/lsh.h), for per-row lists (groups of one row): Gale et al.,
 * "Sparse GPU Kernels for Deep Learning", the sampled dense-dense product.
 * Block (row, tiles of 64 candidates), a warp per 8 consecutive candidates;
 * x_r is staged in shared memory (2048 floats at a time; once a block when
 * dim <= 2048) and the lanes stride over dim with coalesced loads of the 8
 * candidates' rows (8 loads in flight a lane), then a shuffle reduction per
 * candidate. Plain fp32 FMA. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "lsh_logits_variants.cuh"

static constexpr int kSddmmWarps = 8;
static constexpr int kSddmmCandsPerWarp = 8;
static constexpr int kSddmmCands = kSddmmWarps * kSddmmCandsPerWarp;
static constexpr int kSddmmThreads = kSddmmWarps * kWarpSize;
static constexpr int kSddmmTile = 2048; /* floats of x_r staged at a time: 8 KiB */
static_assert(kSddmmTile % 4 == 0, "staged tiles keep float4 alignment");
static_assert(kSddmmCandsPerWarp <= kWarpSize, "lane c writes candidate c");

template <int VEC>
static __global__ void __launch_bounds__(kSddmmThreads)
    sddmm_logits_kernel(int32_t rows_per_group, int32_t dim, const float *__restrict__ x,
                        int32_t ldx, const float *__restrict__ out_w,
                        const float *__restrict__ out_b, const int32_t *__restrict__ cand,
                        int64_t cand_ld, const int32_t *__restrict__ count, int32_t first_cand,
                        int32_t max_count, float *__restrict__ logits, int64_t ld)
{
    typedef float_vec<VEC> vec_t;
    __shared__ __align__(16) float s_x[kSddmmTile];

    const int32_t r = blockIdx.x, g = r / rows_per_group;
    const int32_t n_cand = min(__ldg(&count[g]), max_count);
    const int lane = threadIdx.x & (kWarpSize - 1), warp = threadIdx.x / kWarpSize;
    const int32_t *list = cand + (int64_t)g * cand_ld;
    const float *xr = x + (int64_t)r * ldx;
    const bool one_tile = dim <= kSddmmTile; /* x_r staged once for all candidates */

    /* Candidate blocks j0 = first_cand + blockIdx.y * 64, + gridDim.y * 64,
     * ... below the count (block-uniform): blocks past it return at once. */
    const int32_t j_start = first_cand + blockIdx.y * kSddmmCands;
    for (int32_t j0 = j_start; j0 < n_cand; j0 += gridDim.y * kSddmmCands) {
        const int32_t jw = j0 + warp * kSddmmCandsPerWarp; /* the warp's first candidate */
        const vec_t *w_rows[kSddmmCandsPerWarp];
        warp_candidate_rows(list, j0, jw, n_cand, out_w, dim, w_rows);
        float acc[kSddmmCandsPerWarp];
#pragma unroll
        for (int c = 0; c < kSddmmCandsPerWarp; c++)
            acc[c] = 0.0f;
        /* Lane c < 8 writes candidate jw + c. */
        const bool writer = lane < kSddmmCandsPerWarp && jw + lane < n_cand;
        const float bias = writer && out_b ? __ldg(&out_b[__ldg(&list[jw + lane])]) : 0.0f;

        for (int32_t t0 = 0; t0 < dim; t0 += kSddmmTile) {
            const int32_t len = min(kSddmmTile, dim - t0);
            if (!one_tile || j0 == j_start) {
                __syncthreads(); /* the previous tile is consumed */
                for (int32_t i = threadIdx.x; i < len; i += kSddmmThreads)
                    s_x[i] = __ldg(&xr[t0 + i]);
                __syncthreads();
            }
            const vec_t *xs = reinterpret_cast<const vec_t *>(s_x);
            const int32_t n_vec = len / VEC, v0 = t0 / VEC; /* VEC 4: dim % 4 == 0 */
            for (int32_t v = lane; v < n_vec; v += kWarpSize) {
                const vec_t xv = xs[v];
                vec_t wv[kSddmmCandsPerWarp];
#pragma unroll
                for (int c = 0; c < kSddmmCandsPerWarp; c++)
                    wv[c] = __ldg(&w_rows[c][v0 + v]);
#pragma unroll
                for (int c = 0; c < kSddmmCandsPerWarp; c++)
                    acc[c] = dot_acc(wv[c], xv, acc[c]);
            }
        }

        float mine = 0.0f; /* lane c keeps candidate c's sum */
#pragma unroll
        for (int c = 0; c < kSddmmCandsPerWarp; c++) {
            const float sum = warp_sum(acc[c]);
            if (lane == c)
                mine = sum;
        }
        if (writer)
            logits[(int64_t)r * ld + jw + lane] = mine + bias;
    }
}

/* ---- launch --------------------------------------------------------------- */

nmt_status nmt_lsh_logits_sddmm(const LogitsCall &a, int64_t target_blocks, cudaStream_t stream,
                                nmt_error *err)
{
    const int64_t cand_blocks = ((int64_t)a.max_count - a.first + kSddmmCands - 1) / kSddmmCands;
    const dim3 grid((unsigned)a.n_rows,
                    (unsigned)cand_tile_blocks(cand_blocks, a.n_rows, target_blocks));
    if (a.dim % 4 == 0 && nmt_is_aligned(a.out_w, 16))
        sddmm_logits_kernel<4><<<grid, kSddmmThreads, 0, stream>>>(
            a.lists.rows_per_group, a.dim, a.x, a.ldx, a.out_w, a.out_b, a.lists.words,
            a.lists.ld, a.lists.count, a.first, a.max_count, a.logits, a.ld);
    else
        sddmm_logits_kernel<1><<<grid, kSddmmThreads, 0, stream>>>(
            a.lists.rows_per_group, a.dim, a.x, a.ldx, a.out_w, a.out_b, a.lists.words,
            a.lists.ld, a.lists.count, a.first, a.max_count, a.logits, a.ld);
    NMT_LAUNCH_RETURN("sddmm_logits_kernel");
    return NMT_STATUS_OK;
}
