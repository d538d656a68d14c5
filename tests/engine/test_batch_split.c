/* test_batch_split.c: a batch the device has no memory for is split and
 * retried (engine/translator_memory.c). The CPU backend's test hook
 * NMT_TEST_DECODE_OOM="K[,L]" makes its decode fail with
 * NMT_STATUS_ERROR_MEMORY for batches of more than K sentences, or holding a
 * sentence of L tokens, as a GPU out of memory would:
 *  - K = 2: every line translates exactly as without the failure (the
 *    translator decodes halves down to 2 sentences) and the call succeeds;
 *  - K = 1, L = 7: the one 7-token line fails alone with its own
 *    NMT_STATUS_ERROR_MEMORY naming the cause, every other line as before;
 *  - max_memory: refused when negative, ignored on the CPU; with CUDA asked,
 *    the cap lowers the batch size by halving or refuses one sentence that
 *    does not fit, naming the need and the cap; with LSH the measure counts
 *    the shrink wing, its hit matrix as tall as the automatic lists use
 *    (the measure is host arithmetic: no GPU needed; skipped in a build
 *    without CUDA). */
#include "nmt.h"
#include "backend.h"
#include "test_util.h"
#include "translator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_LINES = 13 };

static const char *const words[] = {"ein", "mann", "frau", "hund", "spielt", "im", "park",
                                    "haus", "rot", "ball", "zwei", "kind"};
static char text[N_LINES][256];
static const char *lines[N_LINES];

static nmt_options cpu_options(void)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CPU;
    o.beam_size = 3;
    o.batch_size = 8;
    o.max_len_b = 8;
    o.collect_stats = 1;
    return o;
}

/* Translates every line with a translator made while the hook is `hook`
 * (NULL: unset); returns the call's status and the translator's stats. */
static nmt_status translate_with(const nmt_model *model, const char *hook, nmt_result *results,
                                 nmt_stats *stats)
{
    if (hook)
        setenv("NMT_TEST_DECODE_OOM", hook, 1);
    else
        unsetenv("NMT_TEST_DECODE_OOM");
    nmt_options o = cpu_options();
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status status = nmt_translator_create(model, &o, &t, &err);
    unsetenv("NMT_TEST_DECODE_OOM");
    if (status != NMT_STATUS_OK) {
        fprintf(stderr, "create: %s\n", err.message);
        return status;
    }
    status = nmt_translate_batch(t, lines, N_LINES, results, &err);
    if (status != NMT_STATUS_OK)
        fprintf(stderr, "translate (hook %s): %s\n", hook ? hook : "none", err.message);
    nmt_translator_stats(t, stats, &err);
    nmt_translator_free(t);
    return status;
}

static void check_equal(const nmt_result *ref, const nmt_result *got, int line, const char *what)
{
    CHECK(got->status == NMT_STATUS_OK, "%s: line %d status %d (%s)", what, line, got->status,
          got->message);
    if (got->status != NMT_STATUS_OK)
        return;
    CHECK(got->n_hypotheses == ref->n_hypotheses, "%s: line %d hypotheses", what, line);
    CHECK(!strcmp(got->hypotheses[0].text, ref->hypotheses[0].text),
          "%s: line %d '%s' vs '%s'", what, line, got->hypotheses[0].text,
          ref->hypotheses[0].text);
    CHECK(got->hypotheses[0].score == ref->hypotheses[0].score, "%s: line %d score %g vs %g",
          what, line, got->hypotheses[0].score, ref->hypotheses[0].score);
}

static void test_split(const nmt_model *model)
{
    nmt_result ref[N_LINES], got[N_LINES];
    nmt_stats stats;
    CHECK(translate_with(model, NULL, ref, &stats) == NMT_STATUS_OK, "reference");
    CHECK(stats.split_batches == 0 && stats.batch_size == 8, "reference: %lld splits, batch %lld",
          (long long)stats.split_batches, (long long)stats.batch_size);

    CHECK(translate_with(model, "2", got, &stats) == NMT_STATUS_OK, "split down to 2");
    for (int i = 0; i < N_LINES; i++) {
        check_equal(&ref[i], &got[i], i, "K=2");
        nmt_result_clear(&got[i]);
    }
    /* 8 + 5 lines: 8 -> 4 + 4 -> four 2s (1 + 2 splits), 5 -> 2 + 3, 3 -> 1 + 2 (2). */
    CHECK(stats.split_batches == 5, "K=2: %lld splits, expected 5",
          (long long)stats.split_batches);

    CHECK(translate_with(model, "1,7", got, &stats) == NMT_STATUS_OK, "one sentence fails");
    int failed = 0;
    for (int i = 0; i < N_LINES; i++) {
        if (i == 6) { /* the only 7-token line */
            failed = got[i].status == NMT_STATUS_ERROR_MEMORY && got[i].n_hypotheses == 0 &&
                     strstr(got[i].message, "NMT_TEST_DECODE_OOM") != NULL;
            CHECK(failed, "line 6: status %d message '%s'", got[i].status, got[i].message);
        } else {
            check_equal(&ref[i], &got[i], i, "K=1,L=7");
        }
        nmt_result_clear(&got[i]);
    }
    for (int i = 0; i < N_LINES; i++)
        nmt_result_clear(&ref[i]);
}

/* The CUDA backend's measure for `batch` sentences, beam 5, 64 source
 * tokens, fp32 (no device needed). */
static nmt_backend_config measure_config(int32_t batch)
{
    return (nmt_backend_config){.max_sentences = batch,
                                .beam = 5,
                                .max_src = 64,
                                .cuda_graphs = 1,
                                .check_every = 1,
                                .precision = NMT_PRECISION_FP32};
}

/* The measure with LSH (no device): it counts the shrink wing, and with the
 * automatic lists the hit matrix holds only the two-step builder's rows
 * (below NMT_SHRINK_POLICY_DEFAULT's 128 a step): at 320 rows a step auto
 * measures 127 x V int32 more than direct-only lists (which share the rest
 * of its buffers), within the arena's 256-byte alignment. */
static void test_shrink_measure(const nmt_model *model)
{
    const int32_t V = model->hp.tgt_vocab;
    nmt_shrink shrink = {NMT_SHRINK_LSH, NMT_LSH_SHARE_SENTENCE, 14, 2, {4, 2, 20, 1},
                         NULL, NMT_LSH_LISTS_AUTO};
    nmt_backend_config config = measure_config(64);
    nmt_error err = {NMT_STATUS_OK, ""};
    size_t none = 0, with_auto = 0, with_direct = 0;
    CHECK(nmt_cuda_backend_device_bytes(model, &config, &none, &err) == NMT_STATUS_OK,
          "measure: %s", err.message);
    config.shrink = &shrink;
    CHECK(nmt_cuda_backend_device_bytes(model, &config, &with_auto, &err) == NMT_STATUS_OK,
          "measure with LSH: %s", err.message);
    shrink.lists = NMT_LSH_LISTS_DIRECT;
    CHECK(nmt_cuda_backend_device_bytes(model, &config, &with_direct, &err) == NMT_STATUS_OK,
          "measure with LSH, direct lists: %s", err.message);
    CHECK(with_direct > none, "LSH not counted: %zu with, %zu without", with_direct, none);
    const long long hits = 127LL * V * (long long)sizeof(int32_t);
    const long long d = (long long)with_auto - (long long)with_direct;
    CHECK(d >= hits - 256 && d <= hits + 256,
          "auto lists measure %lld bytes over direct; a hit matrix of 127 rows of %d words is "
          "%lld (of 320 rows: %lld)", d, V, hits, 320LL * V * (long long)sizeof(int32_t));
}

static void test_max_memory(const nmt_model *model)
{
    nmt_options o = cpu_options();
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    o.max_memory = -1;
    CHECK(nmt_translator_create(model, &o, &t, &err) == NMT_STATUS_ERROR_ARGUMENT &&
              strstr(err.message, "max_memory"),
          "negative max_memory: %s", err.message);
    o.max_memory = 1; /* the CPU has no cap */
    CHECK(nmt_translator_create(model, &o, &t, &err) == NMT_STATUS_OK, "cpu: %s", err.message);
    nmt_stats stats;
    nmt_translator_stats(t, &stats, &err);
    CHECK(stats.batch_size == 8, "cpu batch %lld", (long long)stats.batch_size);
    nmt_translator_free(t);

    /* The CUDA backend's measure, no device needed. */
    nmt_backend_config config = measure_config(32);
    size_t at[33] = {0};
    for (int32_t n = 1; n <= 32; n *= 2) {
        config.max_sentences = n;
        const nmt_status s = nmt_cuda_backend_device_bytes(model, &config, &at[n], &err);
        if (s == NMT_STATUS_ERROR_UNSUPPORTED) {
            printf("max_memory with CUDA: skipped (built without CUDA)\n");
            return;
        }
        CHECK(s == NMT_STATUS_OK && at[n] > 0, "measure at %d: %s", n, err.message);
        CHECK(n == 1 || at[n] > at[n / 2], "measure grows: %zu at %d, %zu at %d", at[n], n,
              at[n / 2], n / 2);
    }
    nmt_options c;
    nmt_options_init(&c);
    c.device = NMT_DEVICE_CUDA;
    c.batch_size = 32;
    c.max_src_tokens = 64;
    c.max_memory = (int64_t)at[4] + (int64_t)(at[8] - at[4]) / 2; /* 4 fits, 8 does not */
    config.max_sentences = 32;
    CHECK(nmt_translator_fit_memory(model, &c, &config, &err) == NMT_STATUS_OK &&
              config.max_sentences == 4,
          "fit: batch %d (%s)", config.max_sentences, err.message);
    c.max_memory = (int64_t)at[32];
    config.max_sentences = 32;
    CHECK(nmt_translator_fit_memory(model, &c, &config, &err) == NMT_STATUS_OK &&
              config.max_sentences == 32,
          "fit at the cap: batch %d", config.max_sentences);
    c.max_memory = (int64_t)at[1] - 1;
    config.max_sentences = 32;
    CHECK(nmt_translator_fit_memory(model, &c, &config, &err) == NMT_STATUS_ERROR_MEMORY &&
              strstr(err.message, "max_memory") && strstr(err.message, "one sentence"),
          "one sentence over the cap: %s", err.message);
    /* create refuses it before touching a device */
    CHECK(nmt_translator_create(model, &c, &t, &err) == NMT_STATUS_ERROR_MEMORY,
          "create over the cap: %s", err.message);
    test_shrink_measure(model);
}

int main(void)
{
    nmt_model *model = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    if (nmt_model_load(NMT_TEST_MODEL, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "cannot load %s: %s\n", NMT_TEST_MODEL, err.message);
        return 1;
    }
    /* Line i has i + 1 tokens (so line 6 alone has 7), line 12 has 5. */
    for (int i = 0; i < N_LINES; i++) {
        const int len = i < 12 ? i + 1 : 5;
        text[i][0] = '\0';
        for (int k = 0; k < len; k++) {
            strcat(text[i], k ? " " : "");
            strcat(text[i], words[(i * 5 + k * 3) % 12]);
        }
        lines[i] = text[i];
    }
    test_split(model);
    test_max_memory(model);
    nmt_model_free(model);
    return test_finish("test_batch_split");
}
