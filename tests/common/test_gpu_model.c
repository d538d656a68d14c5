/* test_gpu_model.c: see test_gpu_model.h. */
#include "test_gpu_model.h"

#include "cuda_ctx.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const words[] = {
    "der", "die", "das", "und", "ist", "ein", "eine", "Haus", "katze", "Hund", "MANN", "frau",
    "kind", "sieht", "hat", "nicht", "sehr", "gro\xc3\x9f", "klein", "sch\xc3\xb6n", "Heute",
    "wir", "ich", "du", "sie", "es", "mit", "auf", "gut", "Buch", "liest", "Zebra", "?", "!"};

void test_gpu_random_lines(char (*text)[TEST_GPU_LINE_BYTES], const char **lines, int n,
                           int max_words)
{
    for (int i = 0; i < n; i++) {
        test_random_words(text[i], words, (int)(sizeof words / sizeof words[0]),
                          test_rand_int(1, max_words + 1));
        lines[i] = text[i];
    }
}

int test_gpu_translate_with(const nmt_model *model, const nmt_options *o,
                            const char *const *lines, int n, nmt_result *results)
{
    return test_translate_models(&model, NULL, 1, o, lines, n, results);
}

int test_gpu_model_open(const char *path, nmt_model **model)
{
    *model = NULL;
    if (nmt_cuda_device_count() == 0) {
        fprintf(stderr, "skipped: no GPU\n");
        return NMT_TEST_SKIP;
    }
    test_seed();
    nmt_error err = {NMT_STATUS_OK, ""};
    if (nmt_model_load(path, model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        return 1;
    }
    return 0;
}

int test_gpu_input_open(const char *path, int n, int max_words, test_gpu_input *in)
{
    *in = (test_gpu_input){0};
    const int opened = test_gpu_model_open(path, &in->model);
    if (opened != 0)
        return opened;
    in->text = malloc(sizeof *in->text * (size_t)n);
    in->lines = malloc(sizeof *in->lines * (size_t)n);
    if (!in->text || !in->lines) {
        fprintf(stderr, "out of memory for %d lines\n", n);
        test_gpu_input_free(in);
        return 1;
    }
    test_gpu_random_lines(in->text, in->lines, n, max_words);
    return 0;
}

void test_gpu_input_free(test_gpu_input *in)
{
    nmt_model_free(in->model);
    free(in->text);
    free(in->lines);
    *in = (test_gpu_input){0};
}

int test_gpu_count_differing(const nmt_model *model, const nmt_options *on_cpu,
                             const nmt_options *on_cuda, const char *const *lines, int n,
                             test_line_compare same, const char *label, int *hypotheses)
{
    nmt_result *rc = calloc((size_t)n, sizeof *rc), *rg = calloc((size_t)n, sizeof *rg);
    int differing = -1;
    CHECK(rc && rg, "out of memory for %d results", n);
    if (rc && rg && test_gpu_translate_with(model, on_cpu, lines, n, rc) &&
        test_gpu_translate_with(model, on_cuda, lines, n, rg)) {
        differing = test_count_differing(rc, rg, n, same, label, lines);
        for (int i = 0; hypotheses && i < n; i++)
            *hypotheses += rc[i].n_hypotheses;
    }
    for (int i = 0; rc && rg && i < n; i++) {
        nmt_result_clear(&rc[i]);
        nmt_result_clear(&rg[i]);
    }
    free(rc);
    free(rg);
    return differing;
}
