/* lsh_logits.cu: step 4 of LSH vocabulary shrinking (kernels/lsh.h; Shi, Xu &
 * Knight, section 4.2): the logits of each row's candidate words only,
 *     logits[r, j] = x_r . out_w[cand_g[j]] + out_b[cand_g[j]],  first <= j < count[g],
 * g = r / rows_per_group, with x [n_rows, dim] (ldx), out_w [vocab, dim]. The
 * counts stay on the device: the candidate tiles of [first, max_count) are
 * dealt to a few thousand blocks in turn (tile t to block t mod blocks),
 * and a block stops at its group's count. Plain fp32 FMA, no TF32. The engine
 * passes first = n_always: those columns, the same words for every group, are
 * one dense cuBLAS GEMM (model/cuda/output_layer.c).
 *
 * The front: the policy, AUTO's pick and the exported launcher. Variants
 * (nmt_lsh_logits_kernel), one file each:
 *  GEMM:  a tiled SGEMM of the group's rows against its gathered candidate
 *         rows (lsh_logits_gemm.cu).
 *  SDDMM: per-row lists, a warp per 8 candidates of one row (Gale et al.,
 *         lsh_logits_sddmm.cu).
 *  WARP:  small groups (a sentence's beam), a warp per few candidates x 4 or
 *         8 rows, reading a group's candidates once (lsh_logits_warp.cu).
 * AUTO: SDDMM when a group is one row, WARP for groups of up to
 * warp_max_rows rows, else GEMM. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "lsh.h"
#include "lsh_logits_variants.cuh"

/* The launcher's tuning thresholds, one place. Each was measured on an H100;
 * the command after a field times its alternatives (the bench program in the
 * build directory, dev/bench/bench_lsh.cu; --variant takes a comma list). */
struct nmt_lsh_logits_policy {
    /* AUTO: WARP for groups of 2 .. this many rows, GEMM above.
     * bench_lsh --variant gemm,warp --rows 320,768 --group 5 --vocabs 30000 --count 2300 */
    int warp_max_rows = 8;
    /* WARP: 4 rows a block for groups of up to this many rows, else 8.
     * bench_lsh --variant warp --rows 320 --group 4,5 --vocabs 30000 --count 2300 */
    int warp_four_rows_max = 4;
    /* GEMM: 16-row tiles for groups of up to this many rows (less padding),
     * 64-row tiles above (each gathered candidate row read by fewer blocks).
     * bench_lsh --variant gemm --rows 768 --group 32,64,768 --vocabs 30000 --count 3000 */
    int gemm_small_tile_max_rows = 32;
    /* SDDMM: blocks in the grid (~30 an SM on an H100's 132).
     * bench_lsh --variant sddmm --rows 60,768 --group 1 --vocabs 30000 --count 1500 */
    int64_t sddmm_target_blocks = 4096;
    /* GEMM and WARP: blocks in the grid (about one wave).
     * bench_lsh --variant gemm,warp --rows 60,768 --group 5,12 --vocabs 30000 --count 2300 */
    int64_t tile_target_blocks = 1024;
};
static constexpr nmt_lsh_logits_policy kPolicy{};

/* ---- exported ------------------------------------------------------------- */

extern "C" nmt_status nmt_cuda_lsh_logits(const nmt_lsh_logits_args *a, int32_t max_count,
                                          nmt_lsh_logits_kernel variant, void *stream,
                                          nmt_error *err)
{
    NMT_ARG_CHECK(a);
    const int32_t n_rows = a->n_rows, rows_per_group = a->lists.rows_per_group;
    NMT_ARG_CHECK(n_rows >= 0 && rows_per_group >= 1 && a->dim >= 1 && a->ldx >= a->dim);
    NMT_ARG_CHECK(max_count >= 0 && a->lists.ld >= max_count && a->ld >= max_count &&
                  a->first >= 0);
    NMT_ARG_CHECK(variant == NMT_LSH_LOGITS_AUTO || variant == NMT_LSH_LOGITS_GEMM ||
                  variant == NMT_LSH_LOGITS_SDDMM || variant == NMT_LSH_LOGITS_WARP);
    NMT_ARG_CHECK(n_rows == 0 || max_count == 0 ||
                  (a->x && a->out_w && a->lists.words && a->lists.count && a->logits));
    if (n_rows == 0 || max_count <= a->first)
        return NMT_STATUS_OK;
    cudaStream_t s = (cudaStream_t)stream;
    const int32_t rows_in_group = rows_per_group < n_rows ? rows_per_group : n_rows;
    const int32_t groups = (int32_t)(((int64_t)n_rows + rows_per_group - 1) / rows_per_group);
    if (variant == NMT_LSH_LOGITS_AUTO)
        variant = rows_in_group == 1                      ? NMT_LSH_LOGITS_SDDMM
                  : rows_in_group <= kPolicy.warp_max_rows ? NMT_LSH_LOGITS_WARP
                                                           : NMT_LSH_LOGITS_GEMM;
    const LogitsCall call{*a, max_count, rows_in_group, groups};
    if (variant == NMT_LSH_LOGITS_SDDMM)
        return nmt_lsh_logits_sddmm(call, kPolicy.sddmm_target_blocks, s, err);
    if (variant == NMT_LSH_LOGITS_WARP)
        return nmt_lsh_logits_warp(call, rows_in_group <= kPolicy.warp_four_rows_max ? 4 : 8,
                                   kPolicy.tile_target_blocks, s, err);
    return nmt_lsh_logits_gemm(call, rows_in_group > kPolicy.gemm_small_tile_max_rows ? 64 : 16,
                               kPolicy.tile_target_blocks, s, err);
}
