/* test_gpu_model.c: see test_gpu_model.h. */
#include "test_gpu_model.h"

#include "cuda_ctx.h"
#include "test_util.h"

#include <stdio.h>

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
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_translator_create(model, o, &t, &err);
    CHECK(st == NMT_STATUS_OK, "translator (device %d): %s", (int)o->device, err.message);
    if (st != NMT_STATUS_OK)
        return 0;
    CHECK(nmt_translator_device(t) == o->device, "runs on device %d, asked %d",
          (int)nmt_translator_device(t), (int)o->device);
    st = nmt_translate_batch(t, lines, n, results, &err);
    CHECK(st == NMT_STATUS_OK, "translate (device %d): %s", (int)o->device, err.message);
    nmt_translator_free(t);
    return st == NMT_STATUS_OK;
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
