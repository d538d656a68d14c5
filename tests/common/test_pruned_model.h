/* test_pruned_model.h: a pruned copy of a loaded model for the sparse
 * tests (CPU and GPU): each matrix the format may store sparse (decoder
 * LSTM, attention, output) pruned by magnitude to `sparsity` zeros. */
#ifndef NMT_TEST_PRUNED_MODEL_H
#define NMT_TEST_PRUNED_MODEL_H

#include "nmt.h"

/* Writes `model` to `path` with those matrices pruned (the smallest
 * `sparsity` of each by magnitude zeroed, the rest scaled by 1 / (1 -
 * sparsity): the random test model, pruned alone, ends every sentence at
 * once, which would leave nothing to compare), stored in section SPRS when
 * `sparse`, else dense; values fp16 when `fp16`. 1 on success (a failure is
 * a CHECK). */
int test_write_pruned_model(const nmt_model *model, const char *path, double sparsity,
                            int sparse, int fp16);

#endif
