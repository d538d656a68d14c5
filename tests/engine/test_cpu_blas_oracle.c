/* test_cpu_blas_oracle.c: the CPU's BLAS path (--cpu-kernels blas) against
 * the reference kernels, the oracle, on the test model: 200 random lines of
 * 1..20 words, beam 5, n-best 2, under the v1 rules at batch 32 on 1 thread
 * and 2 threads, and under OpenNMT-py's rules at batch 7. fp32 sums in
 * another order than the oracle's double ones: the same texts and scores
 * within 1e-3, but where a text differs at a near tie, on at most 2% of the
 * lines (test_compare_near_tie); a line that runs to the maximum length (a
 * loop, where rounding differences grow) is held to its status and
 * hypothesis count, and at least half the lines end before it. Also: the
 * two kernels refuse the same lines, and blas with --sparse on is refused.
 * Exits 77 in a build without a BLAS. */
#include "nmt.h"
#include "test_results.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_LINES = 200, LINE_BYTES = 256 };

static const char *const words[] = {
    "der", "die", "das", "und", "ist", "ein", "eine", "Haus", "katze", "Hund", "MANN", "frau",
    "kind", "sieht", "hat", "nicht", "sehr", "gro\xc3\x9f", "klein", "Heute", "wir", "ich",
    "mit", "auf", "gut", "Buch", "liest", "?", "Zebra", "xylophon", "kind.", "!"};

static char text[N_LINES][LINE_BYTES];
static const char *lines[N_LINES];
static nmt_result ref[N_LINES], got[N_LINES];

static nmt_options options(nmt_cpu_kernels kernels, int threads, nmt_search_rules rules,
                           int batch)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CPU;
    o.cpu_kernels = kernels;
    o.threads = threads;
    o.search_rules = rules;
    o.batch_size = batch;
    o.beam_size = 5;
    o.n_best = 2;
    o.output_tokens = 1; /* token strings: a difference has a position */
    /* The BLAS path against the oracle, also where its BLAS is not row
     * invariant (test_invariance checks the invariance). */
    o.batch_invariant = 0;
    return o;
}

static nmt_status run(const nmt_model *model, const nmt_options *o, nmt_result *results,
                      nmt_error *err)
{
    nmt_translator *t = NULL;
    nmt_status st = nmt_translator_create(model, o, &t, err);
    if (st == NMT_STATUS_OK)
        st = nmt_translate_batch(t, lines, N_LINES, results, err);
    nmt_translator_free(t);
    return st;
}

static void clear(nmt_result *r)
{
    for (int i = 0; i < N_LINES; i++)
        nmt_result_clear(&r[i]);
}

static void compare(const char *label, const nmt_options *o)
{
    const test_near_counts n =
        test_compare_lines_near_tie(label, ref, got, N_LINES, o->max_len_a, o->max_len_b);
    const int ties = n.ties, bad = n.bad, looping = n.looping;
    const double max_diff = n.max_diff;
    fprintf(stderr, "%s: %d near ties, %d other differences in %d lines (%d at the maximum "
            "length), max score diff %.2g\n", label, ties, bad, N_LINES, looping, max_diff);
    CHECK(ties <= 2 * ((N_LINES + 99) / 100), "%s: %d of %d lines differ at near ties", label,
          ties, N_LINES);
    CHECK(2 * looping <= N_LINES, "%s: %d of %d lines ran to the maximum length", label, looping,
          N_LINES);
}

int main(void)
{
    test_seed();
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_model *model = NULL;
    if (nmt_model_load(NMT_TEST_MODEL, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", NMT_TEST_MODEL, err.message);
        return 1;
    }
    for (int i = 0; i < N_LINES; i++) {
        test_random_words(text[i], words, (int)(sizeof words / sizeof words[0]),
                          test_rand_int(1, 21));
        lines[i] = text[i];
    }
    {
        nmt_options o = options(NMT_CPU_KERNELS_BLAS, 1, NMT_SEARCH_RULES_V1, 4);
        nmt_translator *t = NULL;
        nmt_status st = nmt_translator_create(model, &o, &t, &err);
        nmt_translator_free(t);
        if (st == NMT_STATUS_ERROR_UNSUPPORTED) {
            printf("skipped: %s\n", err.message);
            nmt_model_free(model);
            return NMT_TEST_SKIP;
        }
        CHECK(st == NMT_STATUS_OK, "blas translator: %s", err.message);
        o.sparse = NMT_SPARSE_ON;
        st = nmt_translator_create(model, &o, &t, &err);
        nmt_translator_free(t);
        CHECK(st == NMT_STATUS_ERROR_ARGUMENT, "blas with sparse on: status %d '%s'", (int)st,
              err.message);
    }
    static const struct {
        const char *label;
        int threads, batch;
        nmt_search_rules rules;
    } runs[] = {
        {"v1, batch 32, 1 thread", 1, 32, NMT_SEARCH_RULES_V1},
        {"v1, batch 32, 2 threads", 2, 32, NMT_SEARCH_RULES_V1},
        {"onmt, batch 7, 2 threads", 2, 7, NMT_SEARCH_RULES_ONMT},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        const nmt_options o_ref =
            options(NMT_CPU_KERNELS_REFERENCE, 0, runs[r].rules, runs[r].batch);
        const nmt_options o = options(NMT_CPU_KERNELS_BLAS, runs[r].threads, runs[r].rules,
                                      runs[r].batch);
        if (r == 0 || runs[r].rules != runs[r - 1].rules || runs[r].batch != runs[r - 1].batch) {
            clear(ref);
            CHECK(run(model, &o_ref, ref, &err) == NMT_STATUS_OK, "reference: %s", err.message);
        }
        CHECK(run(model, &o, got, &err) == NMT_STATUS_OK, "%s: %s", runs[r].label, err.message);
        compare(runs[r].label, &o);
        clear(got);
    }
    clear(ref);
    nmt_model_free(model);
    return test_finish("test_cpu_blas_oracle");
}
