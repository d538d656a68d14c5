/* test_gpu_model.h: the opening of the engine's GPU tests: skip without a
 * GPU, seed the random source, load the test model. */
#ifndef NMT_TEST_GPU_MODEL_H
#define NMT_TEST_GPU_MODEL_H

#include "nmt.h"

/* 0 with *model loaded from path (the seed printed); otherwise the exit
 * code to return: NMT_TEST_SKIP without a GPU, 1 when the model does not
 * load (the reason printed). */
int test_gpu_model_open(const char *path, nmt_model **model);

#endif
