/* test_pruned_model.h: a pruned copy of a loaded model for the sparse
 * tests (CPU and GPU): each matrix the format may store sparse (decoder
 * LSTM, attention, output) pruned by magnitude to `sparsity` zeros; and a
 * copy with a token renamed for the ensemble tests. */
#ifndef NMT_TEST_PRUNED_MODEL_H
#define NMT_TEST_PRUNED_MODEL_H

#include "nmt.h"

/* Writes `model` to `path` with those matrices pruned (the smallest
 * `sparsity` of each by magnitude zeroed, the rest scaled by (1 -
 * sparsity)^-0.6), stored in section SPRS when `sparse`, else dense; values
 * fp16 when `fp16`. 1 on success (a failure is a CHECK). The gain keeps the
 * random test model translating: pruned alone it ends most sentences at
 * once (nothing to compare); scaled by 1 / (1 - sparsity) its states
 * saturate and its search turns chaotic (fp16 rounding of the weights moves
 * 46% of 100 lines at 80% zeros), where (1 - sparsity)^-0.6 moves 6%, as on
 * the unpruned model (5%). Tuned at 80%; sparser models still run to their
 * maximum length, too sensitive to compare runs line by line. */
int test_write_pruned_model(const nmt_model *model, const char *path, double sparsity,
                            int sparse, int fp16);

/* Writes an unpruned fp32 copy of `model` to `path` with token `id` of its
 * target (target 1) or source (0) vocabulary renamed `word`: a model that
 * must not join an ensemble with the original. 1 on success. */
int test_write_renamed_model(const nmt_model *model, const char *path, int target, int32_t id,
                             const char *word);

#endif
