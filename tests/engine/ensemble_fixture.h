/* ensemble_fixture.h: what the ensemble tests share (test_ensemble.c on the
 * CPU, test_gpu_ensemble.c on CUDA): lines scored by an ensemble (they are
 * translated by test_translate_models, test_results.h), two runs held
 * against each other bit for bit, and a service over the ensemble against
 * the translator. Header-only (static). */
#ifndef NMT_TEST_ENSEMBLE_FIXTURE_H
#define NMT_TEST_ENSEMBLE_FIXTURE_H

#include "nmt.h"
#include "test_results.h"
#include "test_util.h"

#include <stdio.h>

/* Scores targets[i] as line i's translation (nmt_score_batch) with the
 * ensemble. 1 on success. */
static int ensemble_score(const nmt_model *const *models, const float *weights, int n,
                          const nmt_options *o, const char *const *lines,
                          const char *const *targets, int n_lines, nmt_result *results)
{
    nmt_translator *t = NULL;
    nmt_error err = {0};
    nmt_status st = nmt_translator_create_ensemble(models, weights, n, o, &t, &err);
    CHECK(st == NMT_STATUS_OK, "create (device %d): %s", (int)o->device, err.message);
    if (st == NMT_STATUS_OK) {
        st = nmt_score_batch(t, lines, targets, n_lines, results, &err);
        CHECK(st == NMT_STATUS_OK, "score (device %d): %s", (int)o->device, err.message);
    }
    nmt_translator_free(t);
    return st == NMT_STATUS_OK;
}

/* The best hypotheses' texts of results (the empty text for a line with
 * none), valid while results are. */
static void ensemble_best_texts(const nmt_result *results, int n_lines, const char **texts)
{
    for (int i = 0; i < n_lines; i++)
        texts[i] = results[i].n_hypotheses > 0 ? results[i].hypotheses[0].text : "";
}

static void ensemble_clear(nmt_result *results, int n_lines)
{
    for (int i = 0; i < n_lines; i++)
        nmt_result_clear(&results[i]);
}

/* Lines of a and b that are not the same bits (test_bitwise_line); the
 * first one printed under what. */
static int ensemble_differences(const char *what, const nmt_result *a, const nmt_result *b,
                                int n_lines)
{
    int differing = 0;
    for (int i = 0; i < n_lines; i++) {
        char why[256];
        if (!test_bitwise_line(&a[i], &b[i], why, sizeof why) && differing++ == 0)
            fprintf(stderr, "%s: line %d: %s\n", what, i, why);
    }
    return differing;
}

/* A service over the ensemble (so's options) answers every line as want,
 * bit for bit (a CHECK for each line that does not). */
static void ensemble_check_service(const nmt_model *const *models, const float *weights, int n,
                                   const nmt_service_options *so, const char *const *lines,
                                   int n_lines, const nmt_result *want)
{
    nmt_service *service = NULL;
    nmt_error err = {0};
    CHECK(nmt_service_create_ensemble(models, weights, n, so, &service, &err) == NMT_STATUS_OK,
          "service: %s", err.message);
    for (int i = 0; service && i < n_lines; i++) {
        nmt_request *r = NULL;
        char why[256] = "";
        CHECK(nmt_service_submit(service, lines[i], NULL, NULL, NULL, &r, &err) ==
                  NMT_STATUS_OK,
              "submit: %s", err.message);
        CHECK(r && nmt_request_wait(r, -1.0) &&
                  test_bitwise_line(nmt_request_result(r), &want[i], why, sizeof why),
              "service line %d differs from the translator: %s", i, why);
        nmt_request_free(r);
    }
    nmt_service_free(service);
}

#endif
