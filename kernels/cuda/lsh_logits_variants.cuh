/* lsh_logits_variants.cuh: what the variants of nmt_cuda_lsh_logits share
 * (kernels/cuda/lsh_logits*.cu): the call's arguments, the dealing of
 * candidate tiles to a grid of bounded size, the dot-product steps, and the
 * variants' launchers, each in its own file (lsh_logits_gemm.cu,
 * lsh_logits_sddmm.cu, lsh_logits_warp.cu); the front (lsh_logits.cu) picks.
 * Internal (C++): every launcher checks its launch and returns a status. */
#ifndef NMT_LSH_LOGITS_VARIANTS_CUH
#define NMT_LSH_LOGITS_VARIANTS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "device.cuh"
#include "lsh.h"
#include "nmt_status.h"

static constexpr int kMaxGridYZ = 65535;

/* One call's arguments (kernels/lsh.h), the launch bound and the group size
 * the launchers plan with. */
struct LogitsCall : nmt_lsh_logits_args {
    int32_t max_count;
    int32_t rows_in_group; /* min(lists.rows_per_group, n_rows) */
    int32_t groups;        /* ceil(n_rows / lists.rows_per_group) */
};

/* Blocks along the candidate tiles: all max_count / tile of them would mostly
 * return at once (counts are often far below the bound), so the grid holds
 * about `target` blocks and each loops over every n-th tile. */
static inline int64_t cand_tile_blocks(int64_t tiles, int64_t other_blocks, int64_t target)
{
    int64_t want = (target + other_blocks - 1) / other_blocks;
    want = want < 1 ? 1 : want;
    want = want < tiles ? want : tiles;
    return want < kMaxGridYZ ? want : kMaxGridYZ;
}

static __device__ __forceinline__ float dot_acc(float a, float b, float acc)
{
    return fmaf(a, b, acc);
}

static __device__ __forceinline__ float dot_acc(float4 a, float4 b, float acc)
{
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    return fmaf(a.w, b.w, acc);
}

/* Rows of out_w for a warp's C candidates jw .. jw + C - 1 of `list`. Those
 * past the count alias the block's first candidate j0 (< n_cand, so always
 * valid): the dot-product loops need no predicate, and those candidates are
 * not written. */
template <int C, typename vec_t>
static __device__ __forceinline__ void warp_candidate_rows(const int32_t *__restrict__ list,
                                                           int32_t j0, int32_t jw,
                                                           int32_t n_cand,
                                                           const float *__restrict__ out_w,
                                                           int32_t dim, const vec_t *(&rows)[C])
{
    const int32_t fallback = __ldg(&list[j0]);
#pragma unroll
    for (int c = 0; c < C; c++) {
        const int32_t word = jw + c < n_cand ? __ldg(&list[jw + c]) : fallback;
        rows[c] = reinterpret_cast<const vec_t *>(out_w + (int64_t)word * dim);
    }
}

/* GEMM: tiles of tile_rows (16 or 64) rows, ~target_blocks blocks. */
nmt_status nmt_lsh_logits_gemm(const LogitsCall &a, int tile_rows, int64_t target_blocks,
                               cudaStream_t stream, nmt_error *err);
/* SDDMM (groups of one row), ~target_blocks blocks. */
nmt_status nmt_lsh_logits_sddmm(const LogitsCall &a, int64_t target_blocks, cudaStream_t stream,
                                nmt_error *err);
/* WARP: rows_per_block (4 or 8) rows of a group a block, ~target_blocks blocks. */
nmt_status nmt_lsh_logits_warp(const LogitsCall &a, int rows_per_block, int64_t target_blocks,
                               cudaStream_t stream, nmt_error *err);

#endif /* NMT_LSH_LOGITS_VARIANTS_CUH */
