/* softmax_topk_variants.cuh: the variants of nmt_cuda_softmax_topk as the
 * front file (softmax_topk.cu: plan, workspace, the pick) launches them, each
 * defined in its own file: softmax_topk_row.cu, softmax_topk_fused.cu (fused
 * and split), softmax_topk_atomic.cu, softmax_topk_sort.cu. Internal (C++):
 * every launcher checks its launch and returns a status; none allocates. */
#ifndef NMT_SOFTMAX_TOPK_VARIANTS_CUH
#define NMT_SOFTMAX_TOPK_VARIANTS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "nmt_status.h"
#include "softmax_topk_device.cuh"

/* One call's arguments as every variant takes them. vocab: the row length
 * or, with candidate lists, max_count (the kernels clamp each row's count to
 * it); k: the outputs a row (the tail past the words found is -inf / -1). */
struct SoftmaxTopkCall {
    int32_t n_rows, vocab;
    const float *logits;
    int64_t ld;
    int32_t k;
    const int32_t *excluded;
    int32_t n_excluded;
    float *top_values;
    int32_t *top_ids;
    float *lse;
    nmt_cand_lists lists;
};

/* Fused and split variants: blocks per row, words per block, warps per block. */
struct FusedPlan {
    int splits, chunk, warps;
};

/* Sort fallback, workspace after the split counters: keys in, keys out, lse,
 * segment offsets, CUB's temporary storage (byte offsets into the workspace). */
struct SortPlan {
    int chunk_rows;
    size_t n_keys, temp_bytes, off_keys_in, off_keys_out, off_lse, off_offsets, off_temp, total;
    cudaError_t error; /* from CUB's size query */
};

/* Row: one block of `threads` per row; k_run = the K it selects (>= 1,
 * k_run + n_excluded <= kRegisterK, the plan's candidate bound met).
 * warp_md: the warp kernel's (m, d), bit for bit (kStagedRowThreads
 * threads, no candidate lists). */
static constexpr int kStagedRowThreads = 256;
nmt_status nmt_softmax_topk_row(const SoftmaxTopkCall &c, bool cand, int k_run, int threads,
                                bool warp_md, cudaStream_t stream, nmt_error *err);

/* Fused (plan.splits == 1) and split: k_run in [1, kRegisterK]; with splits
 * the partials (part_md [n_rows * splits], part_keys [n_rows * splits *
 * k_run]) and the per-row counters (row_done, zero on entry, left zero). */
nmt_status nmt_softmax_topk_fused(const SoftmaxTopkCall &c, bool cand, int k_run,
                                  const FusedPlan &plan, float2 *part_md, uint64_t *part_keys,
                                  uint32_t *row_done, cudaStream_t stream, nmt_error *err);

/* Warp: a row a warp, kWarpRowsPerBlock rows a block; k_run in [1, kRegisterK]. */
nmt_status nmt_softmax_topk_warp(const SoftmaxTopkCall &c, bool cand, int k_run,
                                 cudaStream_t stream, nmt_error *err);

/* Atomic: k_sel in [1, kAtomicMaxK] keys in dynamic shared memory. */
static constexpr int kAtomicMaxK = 48 * 1024 / (int)sizeof(uint64_t);
nmt_status nmt_softmax_topk_atomic(const SoftmaxTopkCall &c, bool cand, int k_sel,
                                   cudaStream_t stream, nmt_error *err);

/* Sort (full vocabulary only): passes of at most max(chunk_words, vocab)
 * words (int offsets), the plan from nmt_softmax_topk_sort_plan, ws holding
 * plan.total bytes. */
SortPlan nmt_softmax_topk_sort_plan(int32_t n_rows, int32_t vocab, int chunk_words);
nmt_status nmt_softmax_topk_sort(const SoftmaxTopkCall &c, const SortPlan &plan, char *ws,
                                 cudaStream_t stream, nmt_error *err);

#endif /* NMT_SOFTMAX_TOPK_VARIANTS_CUH */
