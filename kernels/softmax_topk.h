/* softmax_topk.h: log-softmax and fused online softmax + top-K.
 *
 * For each row of logits (ld floats apart) over V words:
 *   lse = log sum_w exp(z_w);  log p_w = z_w - lse
 * and the K largest log p_w among the words not in `excluded` (the excluded
 * words still count in the normalization: model-v1 excludes PAD and BOS after
 * the log-softmax). Order: larger value first, ties to the lower word id.
 * When fewer than K words remain (K > V), the tail gets -INFINITY and id -1.
 * CUDA: Milakov & Gimelshein Alg. 4 with the (m, d) merge of eq. 4, and
 * Argueta & Chiang's packed 64-bit atomicMax top-N, in five variants
 * (kernels/cuda/softmax_topk.cu); the launchers pick (AUTO), the _variant
 * launchers run one by name (the benchmarks and the tests). */
#ifndef NMT_KERNELS_SOFTMAX_TOPK_H
#define NMT_KERNELS_SOFTMAX_TOPK_H

#include "lsh.h"
#include "nmt_status.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* log_probs[r, w] = z[r, w] - lse_r for every word (the full log-softmax). */
void nmt_cpu_log_softmax(int32_t n_rows, int32_t vocab, const float *logits, int32_t ld,
                         float *log_probs);

/* top_values/top_ids: [n_rows, k]; lse: [n_rows] (may be NULL). */
void nmt_cpu_softmax_topk(int32_t n_rows, int32_t vocab, const float *logits, int32_t ld,
                          int32_t k, const int32_t *excluded, int32_t n_excluded,
                          float *top_values, int32_t *top_ids, float *lse);

/* The CUDA variants (kernels/cuda/softmax_topk*.cu). AUTO is the launchers'
 * pick; another runs that kernel (UNSUPPORTED where it cannot take the call). */
typedef enum nmt_softmax_topk_variant {
    NMT_SOFTMAX_TOPK_AUTO = 0,   /* by rows, V, K (nmt_cuda_softmax_topk_pick) */
    NMT_SOFTMAX_TOPK_ROW = 1,    /* a block a row ranking its threads' bests (K + n_excluded
                                    <= 64) */
    NMT_SOFTMAX_TOPK_FUSED = 2,  /* a block a row, warp-wide top-K in registers (K <= 64) */
    NMT_SOFTMAX_TOPK_SPLIT = 3,  /* fused over slices of a row, the last block merges (K <= 64,
                                    rows <= 1024, V >= 2048) */
    NMT_SOFTMAX_TOPK_ATOMIC = 4, /* 64-bit atomicMax into a shared top-K (K <= 6144) */
    NMT_SOFTMAX_TOPK_SORT = 5,   /* keys, CUB segmented sort, the first K (any K, >= 1 by
                                    name; no candidate lists) */
    NMT_SOFTMAX_TOPK_WARP = 6,   /* a warp a row, its top-K in registers (K <= 64): many
                                    rows */
    NMT_SOFTMAX_TOPK_AUTO_INVARIANT = 7 /* AUTO with one plan at every row count (warp, or
                                    fused with one slice over candidate lists; atomic,
                                    sort by K): batch-invariant decoding */
} nmt_softmax_topk_variant;

/* "auto", "row", "fused", "split", "atomic", "sort", "warp", "auto-invariant". */
const char *nmt_cuda_softmax_topk_variant_name(nmt_softmax_topk_variant variant);

/* The variant AUTO runs for such a call on the current device (candidates:
 * nmt_cuda_softmax_topk_candidates, vocab = max_count); AUTO for a call it
 * refuses. */
nmt_softmax_topk_variant nmt_cuda_softmax_topk_pick(int32_t n_rows, int32_t vocab, int32_t k,
                                                    int32_t n_excluded, int candidates);

/* Bytes of device workspace nmt_cuda_softmax_topk needs on the current
 * device for any call with at most n_rows rows, vocab words and k (the split
 * variant's partial results and per-row counters; the sort fallback's keys).
 * Allocate it once (never inside a decode loop) and zero it once
 * (cudaMemset): every call leaves its counters at zero again. One workspace
 * must not serve two calls running at the same time (two streams).
 * SIZE_MAX when CUB cannot size the sort fallback. */
size_t nmt_cuda_softmax_topk_workspace_size(int32_t n_rows, int32_t vocab, int32_t k);
/* The same for one variant (AUTO: the above). */
size_t nmt_cuda_softmax_topk_variant_workspace_size(nmt_softmax_topk_variant variant,
                                                   int32_t n_rows, int32_t vocab, int32_t k);

/* Never allocates: refuses (NMT_STATUS_ERROR_ARGUMENT) a workspace smaller
 * than the call needs. */
nmt_status nmt_cuda_softmax_topk(int32_t n_rows, int32_t vocab, const float *logits, int32_t ld,
                                 int32_t k, const int32_t *excluded, int32_t n_excluded,
                                 float *top_values, int32_t *top_ids, float *lse,
                                 void *workspace, size_t workspace_bytes, void *stream,
                                 nmt_error *err);
/* nmt_cuda_softmax_topk with the variant named (its workspace:
 * nmt_cuda_softmax_topk_variant_workspace_size). */
nmt_status nmt_cuda_softmax_topk_variant(int32_t n_rows, int32_t vocab, const float *logits,
                                         int32_t ld, int32_t k, const int32_t *excluded,
                                         int32_t n_excluded, float *top_values, int32_t *top_ids,
                                         float *lse, void *workspace, size_t workspace_bytes,
                                         nmt_softmax_topk_variant variant, void *stream,
                                         nmt_error *err);

/* Candidate lists (LSH, kernels/lsh.h): row r scores only the count[g]
 * logits logits[r * ld + j], j < count[g], of its group g, whose words are
 * the list's (ascending). lse normalizes over those only; top_ids are words,
 * not candidate indices; `excluded` holds words. Same order and tail rules
 * as above. */
void nmt_cpu_softmax_topk_candidates(int32_t n_rows, const float *logits, int64_t ld,
                                     nmt_cand_lists lists, int32_t k, const int32_t *excluded,
                                     int32_t n_excluded, float *top_values, int32_t *top_ids,
                                     float *lse);

/* max_count: a host-side bound on every count[g] (plans the launch; the counts
 * stay on the device). Workspace: nmt_cuda_softmax_topk_workspace_size(n_rows,
 * max_count, k). K > 512 is refused (NMT_STATUS_ERROR_UNSUPPORTED). */
nmt_status nmt_cuda_softmax_topk_candidates(int32_t n_rows, const float *logits, int64_t ld,
                                            nmt_cand_lists lists, int32_t max_count, int32_t k,
                                            const int32_t *excluded, int32_t n_excluded,
                                            float *top_values, int32_t *top_ids, float *lse,
                                            void *workspace, size_t workspace_bytes, void *stream,
                                            nmt_error *err);
/* ... with the variant named (not SORT: it has no candidate mapping). */
nmt_status nmt_cuda_softmax_topk_candidates_variant(
    int32_t n_rows, const float *logits, int64_t ld, nmt_cand_lists lists, int32_t max_count,
    int32_t k, const int32_t *excluded, int32_t n_excluded, float *top_values, int32_t *top_ids,
    float *lse, void *workspace, size_t workspace_bytes, nmt_softmax_topk_variant variant,
    void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
