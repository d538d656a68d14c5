/* shrink.h: how a decoder's output layer shrinks the target vocabulary
 * (docs/lsh.md; the kernels are kernels/lsh.h). Shared by the CPU output
 * layer (model/cpu/output_layer.c) and the CUDA one (model/cuda/output_layer.c),
 * which must pick the same candidate lists for the same states.
 *
 * Per step, with f the attentional states of the live rows:
 *   LSH: candidates = ids [0, n_always) plus every word whose WTA band codes
 *        match a row's in at least `threshold` bands, one list per group;
 *   TOP: candidates = ids [0, n_always) (no hashing);
 * then logits and the log-softmax over the candidates only; every other word
 * gets log p = -inf. Groups: the whole batch, a sentence, or a row (share). */
#ifndef NMT_SHRINK_H
#define NMT_SHRINK_H

#include "lsh.h"
#include "lsh_index.h"
#include "nmt_enums.h"
#include "nmt_status.h"

#include <stdint.h>

typedef struct nmt_shrink {
    nmt_shrink_mode mode;
    nmt_lsh_share share;
    int32_t n_always;             /* 4 + T, at most the vocabulary */
    int32_t threshold;            /* t >= 1 (TOP: hits stay 0, so only n_always words) */
    nmt_lsh_index_config index;   /* LSH: the index the backend builds (K, u, W, seed) */
    const nmt_lsh_tables *tables; /* LSH: host tables of the backend's index, when set */
    nmt_lsh_lists lists;       /* CUDA: how the lists are built */
} nmt_shrink;

/* Every automatic choice between the CUDA output layer's shrink variants,
 * one place (model/cuda/output_layer.c reads it; the kernels' own tuning is
 * their policy structs, kernels/cuda/lsh_logits.cu and softmax_topk.cu).
 * Each value was set on an H100 with the command beside it (the bench
 * program of the build directory, dev/bench/bench_lsh.cu, which checks each
 * variant against its CPU twin before timing it); docs/lsh.md, "Automatic
 * choices", has the table. The two 128-row switches lie between the two
 * measured sizes, 12 and 768 rows, where each variant wins clearly. */
typedef struct nmt_shrink_policy {
    /* The hits builder's lookup: the warp-cooperative bucket walk (the
     * paper's Fig. 4b) below this many rows a step, a thread per bucket from
     * it: few rows leave the GPU idle and the warp's shuffles pay; with many,
     * every thread has work and the shuffles only cost.
     *   bench_lsh --variant lookup-warp,lookup-naive --rows 12,768 --group 0
     *             --vocabs 50000 --params 8,2,500 */
    int32_t naive_lookup_min_rows;
    /* NMT_LSH_LISTS_AUTO: the two-step (hits) builder below this many rows
     * a step, the direct one (no hit matrix) from it.
     *   bench_lsh --variant two-step,direct --rows 12,768 --group 0
     *             --vocabs 50000 --params 8,2,500 */
    int32_t direct_lists_min_rows;
    /* n_always from which the always-kept prefix's logits are one dense GEMM
     * on a side stream instead of gathered with the list: below, the prefix
     * fits one gathered tile (not measured below 64). */
    int32_t dense_prefix_min_words;
} nmt_shrink_policy;

/* The policy every backend uses: {128, 128, 64}. */
#define NMT_SHRINK_POLICY_DEFAULT {128, 128, 64}

/* Rows a candidate list serves, for n_rows rows laid out sentence by
 * sentence with `beam` rows each (the CUDA layout). */
static inline int32_t nmt_shrink_rows_per_group(const nmt_shrink *s, int32_t n_rows,
                                                int32_t beam)
{
    if (s->share == NMT_LSH_SHARE_ROW)
        return 1;
    if (s->share == NMT_LSH_SHARE_SENTENCE)
        return beam;
    return n_rows;
}

#ifdef __cplusplus
extern "C" {
#endif

/* Refuses (NMT_STATUS_ERROR_ARGUMENT, the message prefixed with `who`) a
 * shrink that is off, whose LSH tables were built for another hidden size or
 * vocabulary, or whose n_always or threshold is out of range. */
nmt_status nmt_shrink_check(const nmt_shrink *shrink, int32_t hidden, int32_t vocab,
                            const char *who, nmt_error *err);

/* The index a backend needs for `shrink` (LSH: built from W_out [vocab,
 * dim] with shrink->index; TOP: none, *index = NULL). The backend owns it. */
nmt_status nmt_shrink_index_build(const nmt_shrink *shrink, const float *out_w, int32_t vocab,
                                  int32_t dim, nmt_lsh_index **index, nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_SHRINK_H */
