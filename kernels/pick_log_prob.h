/* pick_log_prob.h: the log-probability of one chosen column per row,
 * out[r] = logits[r, words[r]] - log(sum_j exp(logits[r, j])), j < cols: a
 * row's log-softmax normalizer and its one picked logit, without the
 * softmax or a top-K (scoring's teacher-forced pass, decoder/cuda/score_search.c).
 * A row whose word lies outside [0, cols) gets NaN. Each row is reduced
 * alone, in a fixed order, so its result does not depend on the other rows. */
#ifndef NMT_KERNELS_PICK_LOG_PROB_H
#define NMT_KERNELS_PICK_LOG_PROB_H

#include "nmt_status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The oracle: the log-sum-exp in double (max first). */
void nmt_cpu_pick_log_prob(int32_t rows, int32_t cols, const float *logits, int32_t ld,
                           const int32_t *words, float *out);

/* On `stream` (a cudaStream_t); device pointers. */
nmt_status nmt_cuda_pick_log_prob(int32_t rows, int32_t cols, const float *logits, int32_t ld,
                                  const int32_t *words, float *out, void *stream,
                                  nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_KERNELS_PICK_LOG_PROB_H */
