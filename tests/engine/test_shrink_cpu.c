/* test_shrink_cpu.c: vocabulary shrinking (LSH, TOP) on the CPU engine through
 * the public API, on the test model (NMT_TEST_MODEL):
 *  - a shrunk list that holds every word (TOP with T = V) gives exactly the
 *    full softmax's translations and scores;
 *  - so does LSH with T = V (the hashing still runs; its hits add nothing);
 *  - LSH with small T translates every line, the same way twice for a seed,
 *    under every sharing mode; TOP with T = 20 gives finite scores;
 *  - bad shrink options are refused with a message naming the option;
 *  - stats on the CPU: sentences and steps counted, output_layer_ms -1, recall
 *    exactly 1 when the list holds every word and a fraction otherwise.
 * Short lines and beam 2 keep it to a few seconds. */
#include "nmt.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const lines[] = {
    "Ein Mann schläft .", "Zwei Hunde spielen im Schnee .", "Eine Frau liest ein Buch .",
    "Kinder laufen am Strand .", "Der Junge springt ."};
enum { N_LINES = sizeof lines / sizeof lines[0] };

static nmt_options base_options(void)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CPU;
    o.beam_size = 2;
    o.batch_size = 3;
    o.max_len_b = 6;
    return o;
}

/* Translates every line; 0 on failure (reported). */
static int run(const nmt_model *model, const nmt_options *o, nmt_result *results,
               nmt_stats *stats)
{
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_translator_create(model, o, &t, &err);
    CHECK(st == NMT_STATUS_OK, "translator (shrink mode %d): %s", (int)o->shrink.mode,
          err.message);
    if (st != NMT_STATUS_OK)
        return 0;
    st = nmt_translate_batch(t, lines, N_LINES, results, &err);
    CHECK(st == NMT_STATUS_OK, "translate: %s", err.message);
    if (stats)
        CHECK(nmt_translator_stats(t, stats, &err) == NMT_STATUS_OK, "stats: %s", err.message);
    nmt_translator_free(t);
    for (int i = 0; i < N_LINES && st == NMT_STATUS_OK; i++)
        CHECK(results[i].status == NMT_STATUS_OK && results[i].n_hypotheses == 1,
              "line %d: status %d, %d hypotheses", i, (int)results[i].status,
              results[i].n_hypotheses);
    return st == NMT_STATUS_OK;
}

static void clear(nmt_result *results)
{
    for (int i = 0; i < N_LINES; i++)
        nmt_result_clear(&results[i]);
}

static void expect_same(const char *what, const nmt_result *a, const nmt_result *b, float tol)
{
    for (int i = 0; i < N_LINES; i++) {
        if (a[i].n_hypotheses < 1 || b[i].n_hypotheses < 1)
            continue;
        const nmt_hypothesis *x = &a[i].hypotheses[0], *y = &b[i].hypotheses[0];
        CHECK(!strcmp(x->text, y->text), "%s: line %d: '%s' vs '%s'", what, i, x->text, y->text);
        CHECK(fabsf(x->score - y->score) <= tol, "%s: line %d: score %.7f vs %.7f", what, i,
              (double)x->score, (double)y->score);
    }
}

static void expect_refused(const nmt_model *model, const nmt_options *o, const char *needle)
{
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_translator_create(model, o, &t, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "expected a refusal mentioning '%s', got %d", needle,
          (int)st);
    CHECK(strstr(err.message, needle) != NULL, "message '%s' lacks '%s'", err.message, needle);
    nmt_translator_free(t);
}

/* On the shipped Multi30k model (V = 4,778), where the lists really shrink:
 * a list per sentence or per row depends only on that sentence's rows, so a
 * sentence translates the same alone and inside a batch; every output still
 * comes back, and the lists are smaller than V with a recall below 1. */
static void real_shrinking(void)
{
    static char text[6][1024];
    static const char *demo[6];
    FILE *f = fopen(NMT_SOURCE_DIR "/models/demo.de", "r");
    int n = 0;
    while (f && n < 6 && fgets(text[n], sizeof text[n], f)) {
        text[n][strcspn(text[n], "\r\n")] = '\0';
        demo[n] = text[n];
        n++;
    }
    if (f)
        fclose(f);
    nmt_model *model = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    CHECK(n == 6 && nmt_model_load(NMT_SOURCE_DIR "/models/multi30k-de-en.bin", &model, &err) ==
                        NMT_STATUS_OK,
          "models/demo.de (%d lines) or the Multi30k model: %s", n, err.message);
    if (!model)
        return;
    const nmt_lsh_share shares[2] = {NMT_LSH_SHARE_SENTENCE, NMT_LSH_SHARE_ROW};
    for (int s = 0; s < 2; s++) {
        nmt_result batched[6], alone[6];
        nmt_stats stats = {0};
        for (int batch = 1; batch <= 6; batch += 5) {
            nmt_options o;
            nmt_options_init(&o);
            o.device = NMT_DEVICE_CPU;
            o.beam_size = 3;
            o.batch_size = batch;
            o.collect_stats = 2;
            o.shrink.mode = NMT_SHRINK_LSH;
            o.shrink.k = 16, o.shrink.u = 3, o.shrink.w = 32, o.shrink.top = 50;
            o.shrink.threshold = 1, o.shrink.share = shares[s];
            nmt_translator *t = NULL;
            nmt_result *out = batch == 1 ? alone : batched;
            CHECK(nmt_translator_create(model, &o, &t, &err) == NMT_STATUS_OK &&
                      nmt_translate_batch(t, demo, 6, out, &err) == NMT_STATUS_OK &&
                      nmt_translator_stats(t, &stats, &err) == NMT_STATUS_OK,
                  "share %d batch %d: %s", (int)shares[s], batch, err.message);
            nmt_translator_free(t);
        }
        for (int i = 0; i < 6; i++) {
            CHECK(alone[i].n_hypotheses == 1 && batched[i].n_hypotheses == 1 &&
                      !strcmp(alone[i].hypotheses[0].text, batched[i].hypotheses[0].text) &&
                      alone[i].hypotheses[0].score == batched[i].hypotheses[0].score,
                  "share %d line %d: alone '%s', batched '%s'", (int)shares[s], i,
                  alone[i].n_hypotheses ? alone[i].hypotheses[0].text : "",
                  batched[i].n_hypotheses ? batched[i].hypotheses[0].text : "");
            nmt_result_clear(&alone[i]);
            nmt_result_clear(&batched[i]);
        }
        const double per_row = stats.row_steps ? (double)stats.candidate_words / stats.row_steps
                                               : 0.0;
        CHECK(per_row >= 54.0 && per_row < 4778.0 && stats.recall_hits < stats.row_steps,
              "share %d: %.1f candidates a row, recall %lld of %lld", (int)shares[s], per_row,
              (long long)stats.recall_hits, (long long)stats.row_steps);
        fprintf(stderr, "Multi30k, share %d: %.1f candidates a row, recall %.3f\n",
                (int)shares[s], per_row,
                stats.row_steps ? (double)stats.recall_hits / stats.row_steps : 0.0);
    }
    nmt_model_free(model);
}

int main(void)
{
    test_seed();
    nmt_model *model = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    if (nmt_model_load(NMT_TEST_MODEL, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "cannot load %s: %s\n", NMT_TEST_MODEL, err.message);
        return 1;
    }
    nmt_result full[N_LINES], got[N_LINES], again[N_LINES];
    nmt_options o = base_options();
    nmt_stats stats;
    if (!run(model, &o, full, NULL))
        return test_finish("test_shrink_cpu");

    /* T = V: every word is a candidate (n_always is capped at V), so the full
     * top-B always lies in the list: recall 1, V candidates a row-step. */
    o.shrink.mode = NMT_SHRINK_TOP;
    o.shrink.top = 1 << 24;
    o.collect_stats = 2;
    if (run(model, &o, got, &stats)) {
        expect_same("TOP with every word", got, full, 1e-5f);
        CHECK(stats.steps > 0 && stats.row_steps >= N_LINES &&
                  stats.recall_hits == stats.row_steps &&
                  stats.candidate_words % stats.row_steps == 0,
              "TOP with every word: %lld steps, %lld row-steps, %lld recalled, %lld words",
              (long long)stats.steps, (long long)stats.row_steps, (long long)stats.recall_hits,
              (long long)stats.candidate_words);
    }
    o.collect_stats = 0;
    clear(got);
    o.shrink.mode = NMT_SHRINK_LSH;
    o.shrink.k = 8, o.shrink.u = 2, o.shrink.w = 16, o.shrink.threshold = 1;
    if (run(model, &o, got, NULL))
        expect_same("LSH with every word", got, full, 1e-5f);
    clear(got);

    /* Small lists: every line still translates, the same way twice. */
    const nmt_lsh_share shares[] = {NMT_LSH_SHARE_BATCH, NMT_LSH_SHARE_SENTENCE,
                                    NMT_LSH_SHARE_ROW};
    for (int s = 0; s < 3; s++) {
        o = base_options();
        o.shrink.mode = NMT_SHRINK_LSH;
        o.shrink.k = 8, o.shrink.u = 2, o.shrink.w = 32, o.shrink.top = 50;
        o.shrink.threshold = 2, o.shrink.share = shares[s];
        o.collect_stats = 2;
        if (run(model, &o, got, &stats) && run(model, &o, again, NULL))
            expect_same("LSH twice", got, again, 0.0f);
        CHECK(stats.sentences == N_LINES, "stats: %lld sentences", (long long)stats.sentences);
        /* Lists of at least min(54, V) words (the test model's V may be
         * smaller than the 54 always-words); recall a fraction. */
        CHECK(stats.row_steps > 0 && stats.recall_hits <= stats.row_steps &&
                  stats.candidate_words >= 4 * stats.row_steps,
              "LSH stats: %lld row-steps, %lld recalled, %lld words",
              (long long)stats.row_steps, (long long)stats.recall_hits,
              (long long)stats.candidate_words);
        CHECK(stats.output_layer_ms == -1.0, "stats: CPU output_layer_ms %g",
              stats.output_layer_ms);
        clear(got);
        clear(again);
    }
    o = base_options();
    o.shrink.mode = NMT_SHRINK_TOP;
    o.shrink.top = 20;
    if (run(model, &o, got, NULL))
        for (int i = 0; i < N_LINES; i++)
            CHECK(got[i].n_hypotheses < 1 || isfinite(got[i].hypotheses[0].score),
                  "TOP 20: line %d: score not finite", i);
    clear(got);

    /* Refusals name what is wrong. */
    o = base_options();
    o.shrink.mode = NMT_SHRINK_TOP;
    o.shrink.top = 3; /* < 2 * beam */
    expect_refused(model, &o, "top");
    o = base_options();
    o.shrink.mode = NMT_SHRINK_LSH;
    o.shrink.w = 10, o.shrink.threshold = 11;
    expect_refused(model, &o, "threshold");
    o.shrink.threshold = 1, o.shrink.k = 1;
    expect_refused(model, &o, "K");
    o.shrink.k = 8, o.shrink.share = (nmt_lsh_share)7;
    expect_refused(model, &o, "share");

    clear(full);
    nmt_model_free(model);
    real_shrinking();
    return test_finish("test_shrink_cpu");
}
