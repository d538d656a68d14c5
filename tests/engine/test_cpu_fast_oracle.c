/* test_cpu_fast_oracle.c: the CPU's fast kernels (--cpu-kernels fast, on
 * every instruction path this CPU runs) and blas against the reference
 * kernels, the oracle, on the test model: 200 random lines of 1..20 words,
 * beam 5, n-best 2, under the v1 rules at batch 32 on 1 thread and 2
 * threads, and under OpenNMT-py's rules at batch 7. fp32 sums in another
 * order than the oracle's double ones: the same texts and scores within
 * 1e-3, but where a text differs at a near tie or where both engines'
 * scores of both texts show the difference to be the search's
 * (test_judge_by_scores), on at most 2% of the lines
 * (test_compare_lines_judged); a line that runs to the maximum length (a loop,
 * where rounding differences grow) is held to its status and hypothesis
 * count, and at least half the lines end before it. Also: the kernels
 * refuse the same lines, and fast or blas with --sparse on is refused.
 * --precision int8 (fast only: blas and reference refuse it) gives the
 * reference's best text on at least 60% of the lines (a CPU with neither
 * AVX-512 VNNI nor AVX2 refuses it, naming the instructions), and so does
 * int8 on the AVX2 path; --cpu-isa generic refuses int8. A
 * run the build or CPU cannot make (no BLAS, an instruction path the CPU
 * lacks) is skipped, saying so. */
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

static nmt_options options(nmt_cpu_kernels kernels, nmt_cpu_isa isa, int threads,
                           nmt_search_rules rules, int batch)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CPU;
    o.cpu_kernels = kernels;
    o.cpu_isa = isa;
    o.threads = threads;
    o.search_rules = rules;
    o.batch_size = batch;
    o.beam_size = 5;
    o.n_best = 2;
    o.output_tokens = 1; /* token strings: a difference has a position */
    /* blas against the oracle also where its BLAS is not row invariant
     * (test_invariance checks the invariance). */
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

/* got (options o) against ref (options o_ref, the reference kernels). */
static void compare(const nmt_model *model, const char *label, const nmt_options *o_ref,
                    const nmt_options *o)
{
    test_score_judge judge = {.model = model, .a = o_ref, .b = o, .lines = lines};
    const test_near_counts n = test_compare_lines_judged(
        label, ref, got, N_LINES, o->max_len_a, o->max_len_b, test_judge_by_scores, &judge);
    const int ties = n.ties + n.searched, looping = n.looping;
    fprintf(stderr, "%s: %d near ties, %d search differences, %d other differences in %d lines "
            "(%d at the maximum length), max score diff %.2g\n", label, n.ties, n.searched,
            n.bad, N_LINES, looping, n.max_diff);
    CHECK(ties <= 2 * ((N_LINES + 99) / 100), "%s: %d of %d lines differ at near ties or in "
          "the search", label, ties, N_LINES);
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
    for (int k = 0; k < 2; k++) {
        const nmt_cpu_kernels kernels = k ? NMT_CPU_KERNELS_BLAS : NMT_CPU_KERNELS_FAST;
        nmt_options o = options(kernels, NMT_CPU_ISA_AUTO, 1, NMT_SEARCH_RULES_V1, 4);
        o.sparse = NMT_SPARSE_ON;
        nmt_translator *t = NULL;
        const nmt_status st = nmt_translator_create(model, &o, &t, &err);
        nmt_translator_free(t);
        CHECK(st == NMT_STATUS_ERROR_ARGUMENT || (k && st == NMT_STATUS_ERROR_UNSUPPORTED),
              "%s with sparse on: status %d '%s'", k ? "blas" : "fast", (int)st, err.message);
    }
    static const struct {
        const char *label;
        nmt_cpu_kernels kernels;
        nmt_cpu_isa isa;
        int threads, batch;
        nmt_search_rules rules;
    } runs[] = {
        {"fast, v1, batch 32, 1 thread", NMT_CPU_KERNELS_FAST, NMT_CPU_ISA_AUTO, 1, 32,
         NMT_SEARCH_RULES_V1},
        {"fast avx2, v1, batch 32, 2 threads", NMT_CPU_KERNELS_FAST, NMT_CPU_ISA_AVX2, 2, 32,
         NMT_SEARCH_RULES_V1},
        {"blas, v1, batch 32, 1 thread", NMT_CPU_KERNELS_BLAS, NMT_CPU_ISA_AUTO, 1, 32,
         NMT_SEARCH_RULES_V1},
        {"blas, v1, batch 32, 2 threads", NMT_CPU_KERNELS_BLAS, NMT_CPU_ISA_AUTO, 2, 32,
         NMT_SEARCH_RULES_V1},
        {"fast generic, onmt, batch 7, 2 threads", NMT_CPU_KERNELS_FAST, NMT_CPU_ISA_GENERIC, 2,
         7, NMT_SEARCH_RULES_ONMT},
        {"fast avx512, onmt, batch 7, 1 thread", NMT_CPU_KERNELS_FAST, NMT_CPU_ISA_AVX512, 1, 7,
         NMT_SEARCH_RULES_ONMT},
        {"blas, onmt, batch 7, 2 threads", NMT_CPU_KERNELS_BLAS, NMT_CPU_ISA_AUTO, 2, 7,
         NMT_SEARCH_RULES_ONMT},
    };
    int have_ref = 0, compared = 0;
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        const nmt_options o = options(runs[r].kernels, runs[r].isa, runs[r].threads,
                                      runs[r].rules, runs[r].batch);
        nmt_translator *t = NULL;
        const nmt_status made = nmt_translator_create(model, &o, &t, &err);
        nmt_translator_free(t);
        if (made == NMT_STATUS_ERROR_UNSUPPORTED) {
            printf("%s: skipped: %s\n", runs[r].label, err.message);
            continue;
        }
        CHECK(made == NMT_STATUS_OK, "%s: %s", runs[r].label, err.message);
        const nmt_options o_ref = options(NMT_CPU_KERNELS_REFERENCE, NMT_CPU_ISA_AUTO, 0,
                                          runs[r].rules, runs[r].batch);
        if (!have_ref || runs[r].rules != runs[r - 1].rules ||
            runs[r].batch != runs[r - 1].batch) {
            clear(ref);
            CHECK(run(model, &o_ref, ref, &err) == NMT_STATUS_OK, "reference: %s", err.message);
            have_ref = 1;
        }
        CHECK(run(model, &o, got, &err) == NMT_STATUS_OK, "%s: %s", runs[r].label, err.message);
        compare(model, runs[r].label, &o_ref, &o);
        clear(got);
        compared++;
    }
    CHECK(compared >= 2, "only %d runs compared: fast always runs", compared);

    /* int8: the fast kernels only; against the reference (v1, batch 32) most
     * best texts agree (a broken product agrees on none; the test model's
     * 32 units give int8 more error than the shipped model's 512: 83% of
     * 200 lines, and 966 of the 1,000 test lines' texts with the shipped
     * model are fp32's). */
    for (int k = 0; k < 2; k++) {
        nmt_options o = options(k ? NMT_CPU_KERNELS_BLAS : NMT_CPU_KERNELS_REFERENCE,
                                NMT_CPU_ISA_AUTO, 1, NMT_SEARCH_RULES_V1, 32);
        o.precision = NMT_PRECISION_INT8;
        nmt_translator *t = NULL;
        const nmt_status st = nmt_translator_create(model, &o, &t, &err);
        nmt_translator_free(t);
        CHECK(st == NMT_STATUS_ERROR_ARGUMENT && strstr(err.message, "int8"),
              "int8 on %s: status %d '%s'", k ? "blas" : "reference", (int)st, err.message);
    }
    nmt_options generic8 = options(NMT_CPU_KERNELS_FAST, NMT_CPU_ISA_GENERIC, 1,
                                   NMT_SEARCH_RULES_V1, 32);
    generic8.precision = NMT_PRECISION_INT8;
    nmt_translator *t8 = NULL;
    CHECK(nmt_translator_create(model, &generic8, &t8, &err) == NMT_STATUS_ERROR_UNSUPPORTED &&
              strstr(err.message, "generic"),
          "int8 on --cpu-isa generic: '%s'", err.message);
    nmt_translator_free(t8);
    t8 = NULL;
    const nmt_cpu_isa isa8[] = {NMT_CPU_ISA_AUTO, NMT_CPU_ISA_AVX2};
    const char *const isa8_name[] = {"auto", "avx2"};
    clear(ref);
    const nmt_options o_ref = options(NMT_CPU_KERNELS_REFERENCE, NMT_CPU_ISA_AUTO, 0,
                                      NMT_SEARCH_RULES_V1, 32);
    CHECK(run(model, &o_ref, ref, &err) == NMT_STATUS_OK, "reference: %s", err.message);
    for (int v = 0; v < 2; v++) {
        nmt_options o8 = options(NMT_CPU_KERNELS_AUTO, isa8[v], 2, NMT_SEARCH_RULES_V1, 32);
        o8.precision = NMT_PRECISION_INT8;
        const nmt_status made8 = nmt_translator_create(model, &o8, &t8, &err);
        if (made8 == NMT_STATUS_ERROR_UNSUPPORTED) {
            printf("int8 (isa %s): skipped: %s\n", isa8_name[v], err.message);
            CHECK(strstr(err.message, "VNNI") != NULL, "the refusal names the instructions: %s",
                  err.message);
            continue;
        }
        nmt_stats stats;
        CHECK(made8 == NMT_STATUS_OK && nmt_translator_stats(t8, &stats, &err) == NMT_STATUS_OK &&
                  stats.precision == NMT_PRECISION_INT8,
              "int8 (isa %s) translator: %s", isa8_name[v], err.message);
        CHECK(nmt_translate_batch(t8, lines, N_LINES, got, &err) == NMT_STATUS_OK, "int8: %s",
              err.message);
        int same = 0;
        for (int i = 0; i < N_LINES; i++)
            same += ref[i].status == got[i].status && ref[i].n_hypotheses > 0 &&
                    got[i].n_hypotheses > 0 &&
                    !strcmp(ref[i].hypotheses[0].text, got[i].hypotheses[0].text);
        fprintf(stderr, "int8 (isa %s): %d of %d best texts as the reference's\n", isa8_name[v],
                same, N_LINES);
        CHECK(same * 10 >= N_LINES * 6, "int8 (isa %s): only %d of %d best texts as the "
              "reference's", isa8_name[v], same, N_LINES);
        clear(got);
        nmt_translator_free(t8);
        t8 = NULL;
    }
    clear(ref);
    nmt_model_free(model);
    return test_finish("test_cpu_fast_oracle");
}
