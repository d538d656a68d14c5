/* ensemble.h: the scores of an ensemble step (Marian's --models/--weights,
 * OpenNMT-py's -model A B): the weighted sum of its members' log-softmaxes,
 *     out[r, w] = sum_i weight_i * (z_i[r, w] - lse_i[r])
 * summed over the members in their order (so a row's sum never depends on
 * the rows beside it), a member of weight 0 skipped (its row adds nothing,
 * not 0 * -inf). Not renormalized: these are the scores the search adds up.
 *
 * The top-K over such scores runs the softmax + top-K kernel for its ids
 * (its order is by the value itself, kernels/softmax_topk.h), whose values
 * come out shifted by the row's log-sum-exp; gather_top_values reads the
 * scores themselves back: values[r, j] = scores[r, ids[r, j]] (-inf where
 * ids[r, j] is -1, the tail of a short list). */
#ifndef NMT_KERNELS_ENSEMBLE_H
#define NMT_KERNELS_ENSEMBLE_H

#include "nmt_enums.h"
#include "nmt_status.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_ensemble_member {
    const float *logits; /* [n_rows, ld]: a row's scores, column = word */
    int32_t ld;
    const float *lse;    /* [n_rows]: each row's log-sum-exp; NULL: the logits are
                            log-probabilities already */
    float weight;        /* >= 0 */
} nmt_ensemble_member;

/* Travels by value (the CUDA launch's parameters). */
typedef struct nmt_ensemble_members {
    int32_t n; /* 1..NMT_MAX_ENSEMBLE_MODELS */
    nmt_ensemble_member member[NMT_MAX_ENSEMBLE_MODELS];
} nmt_ensemble_members;

/* The oracle sums in double. out: [n_rows, ld_out], ld_out >= vocab. */
void nmt_cpu_ensemble_log_probs(int32_t n_rows, int32_t vocab, const nmt_ensemble_members *m,
                                float *out, int32_t ld_out);
/* fp32 fused multiply-adds in member order. */
nmt_status nmt_cuda_ensemble_log_probs(int32_t n_rows, int32_t vocab,
                                       const nmt_ensemble_members *m, float *out,
                                       int32_t ld_out, void *stream, nmt_error *err);

/* values, ids: [n_rows, k]; scores: [n_rows, ld]. */
void nmt_cpu_gather_top_values(int32_t n_rows, int32_t k, const float *scores, int32_t ld,
                               const int32_t *ids, float *values);
nmt_status nmt_cuda_gather_top_values(int32_t n_rows, int32_t k, const float *scores,
                                      int32_t ld, const int32_t *ids, float *values,
                                      void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
