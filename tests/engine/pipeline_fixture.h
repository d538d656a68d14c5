/* pipeline_fixture.h: what the host pipeline's tests share (test_pipeline.c,
 * test_pipeline_targets.c): the test model and the translators a pipeline
 * takes, all of one options, made and freed, and the check that a run
 * ended where it should. Header-only (static). */
#ifndef NMT_TEST_PIPELINE_FIXTURE_H
#define NMT_TEST_PIPELINE_FIXTURE_H

#include "nmt.h"
#include "test_util.h"

#include <stdint.h>

enum { PIPELINE_TRANSLATORS = 3 };

typedef struct pipeline_fixture {
    nmt_model *model;
    nmt_translator *ts[PIPELINE_TRANSLATORS];
} pipeline_fixture;

/* Loads the test model and makes PIPELINE_TRANSLATORS translators for o,
 * every call CHECKed: 1 when all are there. Free with
 * pipeline_fixture_free whatever it returns. */
static int pipeline_fixture_open(pipeline_fixture *f, const nmt_options *o)
{
    *f = (pipeline_fixture){0};
    nmt_error err = {0};
    if (nmt_model_load(NMT_TEST_MODEL, &f->model, &err) != NMT_STATUS_OK) {
        CHECK(0, "model: %s", err.message);
        return 0;
    }
    int made = 0;
    for (int i = 0; i < PIPELINE_TRANSLATORS; i++) {
        const nmt_status st = nmt_translator_create(f->model, o, &f->ts[i], &err);
        CHECK(st == NMT_STATUS_OK, "translator %d: %s", i, err.message);
        made += st == NMT_STATUS_OK;
    }
    return made == PIPELINE_TRANSLATORS;
}

static void pipeline_fixture_free(pipeline_fixture *f)
{
    for (int i = 0; i < PIPELINE_TRANSLATORS; i++)
        nmt_translator_free(f->ts[i]);
    nmt_model_free(f->model);
    *f = (pipeline_fixture){0};
}

/* After a run's last window (st: nmt_pipeline_next's last status, next: the
 * line after the last window): the run ended without error at line end
 * (CHECKed, naming what); its stats. */
static nmt_pipeline_stats pipeline_fixture_end(nmt_pipeline *p, nmt_status st, int64_t next,
                                               int64_t end, const char *what)
{
    CHECK(st == NMT_STATUS_OK && next == end, "%s: ended with status %d at line %lld, want %lld",
          what, (int)st, (long long)next, (long long)end);
    nmt_pipeline_stats stats;
    nmt_pipeline_stats_get(p, &stats);
    return stats;
}

#endif /* NMT_TEST_PIPELINE_FIXTURE_H */
