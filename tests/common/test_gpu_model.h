/* test_gpu_model.h: the opening of the engine's GPU tests: skip without a
 * GPU, seed the random source, load the test model. */
#ifndef NMT_TEST_GPU_MODEL_H
#define NMT_TEST_GPU_MODEL_H

#include "nmt.h"

/* 0 with *model loaded from path (the seed printed); otherwise the exit
 * code to return: NMT_TEST_SKIP without a GPU, 1 when the model does not
 * load (the reason printed). */
int test_gpu_model_open(const char *path, nmt_model **model);

enum { TEST_GPU_LINE_BYTES = 512 };

/* n random lines of 1..max_words German words (seeded: test_util.h),
 * text[i] and lines[i]. */
void test_gpu_random_lines(char (*text)[TEST_GPU_LINE_BYTES], const char **lines, int n,
                           int max_words);

/* Translates n lines with a translator made for o (which must run on
 * o->device), every call CHECKed: 1 when results holds the n answers. */
int test_gpu_translate_with(const nmt_model *model, const nmt_options *o,
                            const char *const *lines, int n, nmt_result *results);

#endif
