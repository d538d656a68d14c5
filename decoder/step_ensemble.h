/* step_ensemble.h: several step models as one (docs/decoding.md, "Ensembles"),
 * so that either search decodes an ensemble unchanged. At each step every
 * member scores the same rows and the ensemble gives the search
 *     log p(w) = sum_i weight_i * log p_i(w)
 * (kernels/ensemble.h; Marian's sum of weighted scorer log-probabilities,
 * OpenNMT-py's mean of log-probabilities with weights 1/n). Members keep
 * their own rows, reordered together; the attention (alignment, UNK
 * replacement, attention weights) is the first member's.
 *
 * CPU: nmt_step_ensemble wraps nmt_step_models (decoder/search.h).
 * GPU: decoder/cuda/cuda_step_ensemble.h wraps nmt_cuda_step_models. */
#ifndef NMT_STEP_ENSEMBLE_H
#define NMT_STEP_ENSEMBLE_H

#include "ensemble.h" /* kernels/: NMT_MAX_ENSEMBLE_MODELS */
#include "search.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one rule for an ensemble's weights: n in 1..NMT_MAX_ENSEMBLE_MODELS,
 * each finite and >= 0, and not all 0 (non-negative weights keep every score
 * a sum of log-probabilities, <= 0, as the searches' finishing rules assume).
 * The message names the weight. */
nmt_status nmt_ensemble_check_weights(const float *weights, int32_t n, nmt_error *err);

typedef struct nmt_step_ensemble nmt_step_ensemble;

/* members[0 .. n) (copied; each must outlive the ensemble) of one
 * vocabulary size, weights as nmt_ensemble_check_weights; max_rows: the most
 * rows a step scores. Allocates every buffer a step needs (a [max_rows, V]
 * row block a member). */
nmt_status nmt_step_ensemble_create(const nmt_step_model *members, const float *weights,
                                    int32_t n, int32_t max_rows, nmt_step_ensemble **ensemble,
                                    nmt_error *err);
void nmt_step_ensemble_free(nmt_step_ensemble *ensemble); /* NULL: nothing */

/* The ensemble as a step model (valid while the ensemble lives). */
nmt_step_model nmt_step_ensemble_model(nmt_step_ensemble *ensemble);

#ifdef __cplusplus
}
#endif

#endif /* NMT_STEP_ENSEMBLE_H */
