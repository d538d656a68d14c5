/* test_threads.c: the thread contract of nmt.h: one loaded model shared by
 * several threads, each with its own translator. Four threads translate the
 * same random lines three times each, half with the full softmax and half
 * with LSH shrinking, on the CPU backend; every result must equal the one a
 * single thread computed before (text and score bit for bit, since each
 * translator runs the same deterministic code). Any shared mutable state in
 * the library would show up as a mismatch here, or as a race under
 * `valgrind --tool=helgrind`. Also the CPU's default split of the cores
 * (nmt_cpu_default_threads: one translator on all of them, N translators
 * sharing them, never fewer than 1 thread each). */
#include "nmt.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <unistd.h>

enum { N_LINES = 12, N_THREADS = 4, N_ROUNDS = 3 };

static const char *const words[] = {"ein", "mann", "frau", "hund", "spielt", "im", "park",
                                    "Haus", "rot", "Ball", ".", "!", "Zwei", "kind"};

static char text[N_LINES][256];
static const char *lines[N_LINES];
static const nmt_model *model;
/* reference[mode][line]: text and score from one thread, before the others start */
static char *ref_text[2][N_LINES];
static float ref_score[2][N_LINES];

static nmt_options options_for(int mode)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CPU;
    o.beam_size = 3;
    o.batch_size = 5;
    o.max_len_b = 8;
    if (mode == 1) {
        o.shrink.mode = NMT_SHRINK_LSH;
        o.shrink.k = 8, o.shrink.u = 2, o.shrink.w = 16, o.shrink.top = 20;
        o.shrink.threshold = 2;
        o.shrink.share = NMT_LSH_SHARE_SENTENCE;
    }
    return o;
}

/* Translates every line with a fresh translator; 0 on failure. */
static int translate_all(int mode, nmt_result *results, char *message, size_t size)
{
    nmt_options o = options_for(mode);
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    if (nmt_translator_create(model, &o, &t, &err) != NMT_STATUS_OK) {
        snprintf(message, size, "translator: %s", err.message);
        return 0;
    }
    int ok = nmt_translate_batch(t, lines, N_LINES, results, &err) == NMT_STATUS_OK;
    if (!ok)
        snprintf(message, size, "translate: %s", err.message);
    nmt_translator_free(t);
    return ok;
}

typedef struct worker {
    int id;
    int mismatches, failures;
    char message[600];
} worker;

static int run_worker(void *arg)
{
    worker *w = arg;
    for (int round = 0; round < N_ROUNDS; round++) {
        const int mode = (w->id + round) % 2;
        nmt_result results[N_LINES];
        if (!translate_all(mode, results, w->message, sizeof w->message)) {
            w->failures++;
            continue;
        }
        for (int i = 0; i < N_LINES; i++) {
            const nmt_result *r = &results[i];
            const int same = r->status == NMT_STATUS_OK && r->n_hypotheses == 1 &&
                             !strcmp(r->hypotheses[0].text, ref_text[mode][i]) &&
                             r->hypotheses[0].score == ref_score[mode][i];
            w->mismatches += !same;
            nmt_result_clear(&results[i]);
        }
    }
    return 0;
}

/* The default split: cores / workers, at least 1 (0 workers as 1). */
static void check_default_split(void)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(cores >= 1 && nmt_cpu_default_threads(1) == cores, "1 translator: %d threads of %ld "
          "cores", nmt_cpu_default_threads(1), cores);
    CHECK(nmt_cpu_default_threads(0) == nmt_cpu_default_threads(1), "0 workers as 1");
    for (int workers = 2; workers <= 2 * cores + 2; workers++) {
        const long want = cores / workers > 0 ? cores / workers : 1;
        CHECK(nmt_cpu_default_threads(workers) == want, "%d workers: %d threads each, want %ld",
              workers, nmt_cpu_default_threads(workers), want);
    }
}

int main(void)
{
    test_seed();
    check_default_split();
    nmt_model *loaded = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    if (nmt_model_load(NMT_TEST_MODEL, &loaded, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "cannot load %s: %s\n", NMT_TEST_MODEL, err.message);
        return 1;
    }
    model = loaded;
    const int n_words = (int)(sizeof words / sizeof words[0]);
    for (int i = 0; i < N_LINES; i++) {
        const int len = test_rand_int(1, 9);
        test_random_words(text[i], words, n_words, len);
        lines[i] = text[i];
    }
    char message[600];
    for (int mode = 0; mode < 2; mode++) {
        nmt_result results[N_LINES];
        if (!translate_all(mode, results, message, sizeof message)) {
            CHECK(0, "reference, mode %d: %s", mode, message);
            nmt_model_free(loaded);
            return test_finish("test_threads");
        }
        for (int i = 0; i < N_LINES; i++) {
            CHECK(results[i].status == NMT_STATUS_OK && results[i].n_hypotheses == 1,
                  "reference line %d: status %d", i, (int)results[i].status);
            ref_text[mode][i] = strdup(results[i].n_hypotheses ? results[i].hypotheses[0].text : "");
            ref_score[mode][i] = results[i].n_hypotheses ? results[i].hypotheses[0].score : 0.0f;
            nmt_result_clear(&results[i]);
        }
    }

    thrd_t threads[N_THREADS];
    worker workers[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        workers[i] = (worker){.id = i};
        CHECK(thrd_create(&threads[i], run_worker, &workers[i]) == thrd_success,
              "thread %d not started", i);
    }
    for (int i = 0; i < N_THREADS; i++) {
        thrd_join(threads[i], NULL);
        CHECK(workers[i].failures == 0, "thread %d: %d failed runs (%s)", i, workers[i].failures,
              workers[i].message);
        CHECK(workers[i].mismatches == 0, "thread %d: %d lines differ from the single-thread "
              "reference", i, workers[i].mismatches);
    }
    fprintf(stderr, "%d threads x %d rounds x %d lines, full and LSH: checked\n", N_THREADS,
            N_ROUNDS, N_LINES);
    for (int mode = 0; mode < 2; mode++)
        for (int i = 0; i < N_LINES; i++)
            free(ref_text[mode][i]);
    nmt_model_free(loaded);
    return test_finish("test_threads");
}
