/* test_prepare.c: nmt_translate_batch in two halves (nmt_translator_prepare,
 * nmt_translate_prepared; the library's host pipeline prepares windows on
 * its pool of threads the same way), on the CPU backend and the test model:
 * - prepare then translate_prepared gives every line's answer bit for bit
 *   as nmt_translate_batch does: translations, scores, alignments, and the
 *   refusals (empty, invalid UTF-8, too many bytes, too many tokens) with
 *   their messages; so does each line in a call of its own (one batch, no
 *   finisher thread) against the call of every line (several batches);
 * - prepare on one thread while the same translator decodes on another
 *   (what the pipeline does) changes nothing;
 * - refused: a prepared call translated twice, lines prepared with other
 *   input options, NULL arguments; zero lines work. */
#include "nmt.h"
#include "test_results.h"
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_LINES = 40, ROUNDS = 3 };

static const char *const words[] = {"der", "die", "Haus", "katze", "Hund", "MANN", "frau",
                                    "kind", "sieht", "Zebra", "xylophon", "kind.", "!", "?"};
static char text[N_LINES][1024];
static const char *lines[N_LINES];

static nmt_options cpu_options(void)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CPU;
    o.beam_size = 3;
    o.n_best = 2;
    o.batch_size = 7;
    o.max_line_bytes = 200;
    o.max_src_tokens = 24;
    o.collect_stats = 1;
    return o;
}

static void make_lines(void)
{
    const int n_words = (int)(sizeof words / sizeof words[0]);
    for (int i = 0; i < N_LINES; i++) {
        test_random_words(text[i], words, n_words, test_rand_int(1, 16));
        lines[i] = text[i];
    }
    text[3][0] = '\0';                              /* empty */
    snprintf(text[5], sizeof text[5], "ein \xff\xfe haus"); /* invalid UTF-8 */
    memset(text[8], 'a', 300);                      /* over max_line_bytes */
    text[8][300] = '\0';
    text[11][0] = '\0';
    for (int w = 0; w < 40; w++)                    /* over max_src_tokens */
        strcat(text[11], w ? " hund" : "hund");
}

static void clear(nmt_result *r, int n)
{
    for (int i = 0; i < n; i++)
        nmt_result_clear(&r[i]);
}

/* Every line as the reference: bit for bit, refusals with the same message. */
static void compare(const char *what, const nmt_result *ref, const nmt_result *got)
{
    const int differing = test_count_differing(ref, got, N_LINES, test_identical_line, what, lines);
    CHECK(differing == 0, "%s: %d of %d lines differ", what, differing, N_LINES);
    for (int i = 0; i < N_LINES; i++)
        CHECK(!strcmp(ref[i].message, got[i].message), "%s line %d: message '%s', want '%s'",
              what, i, got[i].message, ref[i].message);
}

typedef struct decode_job {
    nmt_translator *t;
    nmt_result results[N_LINES];
    nmt_status status;
} decode_job;

static void *decode_thread(void *arg)
{
    decode_job *job = arg;
    nmt_error err = {NMT_STATUS_OK, ""};
    for (int r = 0; r < ROUNDS && job->status == NMT_STATUS_OK; r++) {
        clear(job->results, N_LINES);
        job->status = nmt_translate_batch(job->t, lines, N_LINES, job->results, &err);
    }
    return NULL;
}

int main(void)
{
    test_seed();
    make_lines();
    nmt_model *model = NULL;
    nmt_translator *t = NULL, *other = NULL;
    nmt_prepared *p = NULL, *ps[ROUNDS] = {NULL};
    static nmt_result ref[N_LINES], got[N_LINES];
    static decode_job job;
    nmt_error err = {NMT_STATUS_OK, ""};
    const nmt_options o = cpu_options();
    nmt_options o2 = o;
    o2.max_src_tokens = 12;
    if (nmt_model_load(NMT_TEST_MODEL, &model, &err) != NMT_STATUS_OK ||
        nmt_translator_create(model, &o, &t, &err) != NMT_STATUS_OK ||
        nmt_translator_create(model, &o2, &other, &err) != NMT_STATUS_OK) {
        CHECK(0, "set-up: %s", err.message);
        goto done;
    }
    CHECK(nmt_translate_batch(t, lines, N_LINES, ref, &err) == NMT_STATUS_OK, "batch: %s",
          err.message);
    int refused = 0;
    for (int i = 0; i < N_LINES; i++)
        refused += ref[i].status != NMT_STATUS_OK;
    CHECK(refused >= 3, "only %d refused lines (5, 8, 11 should be)", refused);

    /* One line a call: one batch, filled on the caller's thread. The
     * reference's 40 lines were 6 batches of 7, filled on the finisher's
     * thread (engine/translator_finish.c) while the next one decoded; the
     * CPU engine's answer does not depend on the batch, so every line must
     * have landed on its own result. */
    for (int i = 0; i < N_LINES; i++)
        CHECK(nmt_translate_batch(t, &lines[i], 1, &got[i], &err) == NMT_STATUS_OK,
              "line %d alone: %s", i, err.message);
    compare("one line a call", ref, got);
    clear(got, N_LINES);

    /* The two halves, one after the other. */
    CHECK(nmt_translator_prepare(t, lines, N_LINES, &p, &err) == NMT_STATUS_OK && p,
          "prepare: %s", err.message);
    CHECK(nmt_translate_prepared(t, p, got, &err) == NMT_STATUS_OK, "translate_prepared: %s",
          err.message);
    compare("prepared", ref, got);
    clear(got, N_LINES);
    CHECK(nmt_translate_prepared(t, p, got, &err) == NMT_STATUS_ERROR_ARGUMENT &&
              strstr(err.message, "already"),
          "a second translate_prepared: '%s'", err.message);
    nmt_prepared_free(p);
    p = NULL;

    /* Prepared while the same translator decodes on another thread. */
    job.t = t;
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, decode_thread, &job) == 0, "pthread_create");
    for (int r = 0; r < ROUNDS; r++)
        CHECK(nmt_translator_prepare(t, lines, N_LINES, &ps[r], &err) == NMT_STATUS_OK,
              "prepare %d: %s", r, err.message);
    pthread_join(thread, NULL);
    CHECK(job.status == NMT_STATUS_OK, "the decoding thread failed");
    compare("decoded beside prepare", ref, job.results);
    for (int r = 0; r < ROUNDS; r++) {
        if (!ps[r])
            continue;
        CHECK(nmt_translate_prepared(t, ps[r], got, &err) == NMT_STATUS_OK,
              "translate_prepared %d: %s", r, err.message);
        compare("prepared beside decoding", ref, got);
        clear(got, N_LINES);
    }

    /* Other input options: refused, nothing written. */
    CHECK(nmt_translator_prepare(other, lines, N_LINES, &p, &err) == NMT_STATUS_OK, "prepare: %s",
          err.message);
    CHECK(nmt_translate_prepared(t, p, got, &err) == NMT_STATUS_ERROR_ARGUMENT &&
              strstr(err.message, "input options"),
          "prepared with max_src_tokens 12, translated with 24: '%s'", err.message);
    nmt_prepared_free(p);
    p = NULL;
    CHECK(nmt_translator_prepare(NULL, lines, 1, &p, &err) == NMT_STATUS_ERROR_ARGUMENT && !p,
          "prepare without a translator");
    CHECK(nmt_translator_prepare(t, NULL, 2, &p, &err) == NMT_STATUS_ERROR_ARGUMENT && !p,
          "prepare without lines");
    CHECK(nmt_translate_prepared(t, NULL, got, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "translate_prepared without prepared lines");
    CHECK(nmt_translator_prepare(t, lines, 0, &p, &err) == NMT_STATUS_OK &&
              nmt_translate_prepared(t, p, got, &err) == NMT_STATUS_OK,
          "zero lines: %s", err.message);
    nmt_prepared_free(NULL);

    nmt_stats stats;
    CHECK(nmt_translator_stats(t, &stats, &err) == NMT_STATUS_OK &&
              stats.sentences == (3 + 2 * ROUNDS) * N_LINES,
          "stats: %lld sentences, want %d", (long long)stats.sentences, (3 + 2 * ROUNDS) * N_LINES);
done:
    nmt_prepared_free(p);
    for (int r = 0; r < ROUNDS; r++)
        nmt_prepared_free(ps[r]);
    clear(ref, N_LINES);
    clear(got, N_LINES);
    clear(job.results, N_LINES);
    nmt_translator_free(t);
    nmt_translator_free(other);
    nmt_model_free(model);
    return test_finish("test_prepare");
}
