/* test_gpu_model.h: the opening of the engine's GPU tests: skip without a
 * GPU, seed the random source, load the test model. */
#ifndef NMT_TEST_GPU_MODEL_H
#define NMT_TEST_GPU_MODEL_H

#include "nmt.h"
#include "test_results.h"

/* 0 with *model loaded from path (the seed printed); otherwise the exit
 * code to return: NMT_TEST_SKIP without a GPU, 1 when the model does not
 * load (the reason printed). */
int test_gpu_model_open(const char *path, nmt_model **model);

enum { TEST_GPU_LINE_BYTES = 512 };

/* n random lines of 1..max_words German words (seeded: test_util.h),
 * text[i] and lines[i]. */
void test_gpu_random_lines(char (*text)[TEST_GPU_LINE_BYTES], const char **lines, int n,
                           int max_words);

/* Translates n lines with a translator of model made for o
 * (test_translate_models). */
int test_gpu_translate_with(const nmt_model *model, const nmt_options *o,
                            const char *const *lines, int n, nmt_result *results);

/* The opening of a test on n random lines: test_gpu_model_open(path), then
 * n lines of 1..max_words words (test_gpu_random_lines) in text and lines;
 * 0, or the exit code to return. test_gpu_input_free frees both. */
typedef struct test_gpu_input {
    nmt_model *model;
    char (*text)[TEST_GPU_LINE_BYTES]; /* [n] */
    const char **lines;                /* [n] */
} test_gpu_input;
int test_gpu_input_open(const char *path, int n, int max_words, test_gpu_input *in);
void test_gpu_input_free(test_gpu_input *in);

/* The n lines translated with on_cpu and with on_cuda (test_gpu_translate_with
 * each), the lines where `same` finds the two runs different printed under
 * label (test_count_differing): their count, or -1 when a run failed.
 * *hypotheses (NULL: not asked) grows by the CPU run's hypotheses. */
int test_gpu_count_differing(const nmt_model *model, const nmt_options *on_cpu,
                             const nmt_options *on_cuda, const char *const *lines, int n,
                             test_line_compare same, const char *label, int *hypotheses);

#endif
