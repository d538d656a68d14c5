/* cuda_step_ensemble.h: several GPU step models as one (the twin of
 * decoder/step_ensemble.h, the same scores), so the GPU search decodes an
 * ensemble unchanged and keeps one launch chain a step. On the members'
 * one stream: encode and step run every member; output runs every member's
 * output layer (logits and their log-sum-exp), sums the members' weighted
 * log-softmaxes into one score block (kernels/ensemble.h, member order),
 * ranks it with the softmax + top-K kernel (for the ids: its order is by
 * the score itself) and reads the 2B best scores back from the block, with
 * a log-sum-exp of 0 for the beam step. Nothing allocates after create, and
 * no call reads anything back to the host. Scoring (stash, pick) stashes
 * every member's rows and sums the members' weighted log p of each row's
 * word the same way. The attention (argmax and weights) is the first
 * member's; no continuous batching (encoder_stream and place are NULL) and
 * no recall probe. */
#ifndef NMT_CUDA_STEP_ENSEMBLE_H
#define NMT_CUDA_STEP_ENSEMBLE_H

#include "cuda_search.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_cuda_step_ensemble nmt_cuda_step_ensemble;

typedef struct nmt_cuda_step_ensemble_config {
    int device;              /* the members' CUDA device */
    int32_t max_rows, beam;  /* the most rows a step scores; the largest beam (2B words a row) */
    int batch_invariant;     /* the top-K's plan is one at every row count */
} nmt_cuda_step_ensemble_config;

/* members[0 .. n): full output layers (not shrunk) of one vocabulary size
 * on one stream, each outliving the ensemble; weights as
 * nmt_ensemble_check_weights (decoder/step_ensemble.h). */
nmt_status nmt_cuda_step_ensemble_create(const nmt_cuda_step_model *members, const float *weights,
                                         int32_t n, const nmt_cuda_step_ensemble_config *config,
                                         nmt_cuda_step_ensemble **ensemble, nmt_error *err);
void nmt_cuda_step_ensemble_free(nmt_cuda_step_ensemble *ensemble); /* NULL: nothing */

/* Device bytes create allocates for n members (host arithmetic, no
 * device); SIZE_MAX when the top-K's workspace cannot be sized. */
size_t nmt_cuda_step_ensemble_device_bytes(const nmt_cuda_step_ensemble_config *config,
                                           int32_t n, int32_t vocab);

/* The ensemble as the search's step model (valid while the ensemble lives). */
nmt_cuda_step_model nmt_cuda_step_ensemble_model(nmt_cuda_step_ensemble *ensemble);

#ifdef __cplusplus
}
#endif

#endif /* NMT_CUDA_STEP_ENSEMBLE_H */
