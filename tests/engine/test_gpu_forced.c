/* test_gpu_forced.c: scoring, target prefixes and alternatives on the GPU
 * (decoder/cuda/score_search.c, the beam step's forced candidates:
 * decoder/cuda/forced_step.cuh) against the CPU through the public API, on
 * the test model, lines as tokens (input_tokens, output_tokens):
 * - scoring: the CPU's translations scored on both devices, log_prob and
 *   every token score within 1e-4 (x (|log_prob| + 1)), the same alignment
 *   but at near ties, attention rows within 1e-4; the GPU's own
 *   translations scored on the GPU give their log-probabilities (the
 *   pick's log-sum-exp against the top-K's: within rounding); each line
 *   scored alone has the bits it has in a batch of 64 (batch invariance);
 * - prefixes and alternatives, model-v1's and OpenNMT-py's rules, beams 4
 *   (the beam step's warp kernel) and 40 (its block kernel): the CPU's
 *   texts on all but near-tie lines (test_compare_lines_near_tie), every
 *   GPU hypothesis starting with its prefix; and so with the logit rules
 *   (and the onmt rules' coverage penalty) after the prefixes;
 * - samples of prefixes (top-K 10, the whole vocabulary, under the logit
 *   rules): the CPU's samples on all but 1 line in 20, every GPU sample
 *   starting with its prefix, the same bits at batch 1 and 32.
 * Exit 77 without a GPU. dev/gpu-check.sh runs it with the gpu label. */
#include "forced_fixture.h"
#include "nmt.h"
#include "test_gpu_model.h"
#include "test_results.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_LINES = 64 };

static char text[N_LINES][512];
static const char *lines[N_LINES];
static nmt_model *model;

static nmt_options options(nmt_device device, int beam, int n_best, int batch)
{
    return forced_options(device, beam, n_best, batch);
}

static nmt_translator *create(const nmt_options *o)
{
    return forced_create(model, o);
}

static int close_to(float a, float b, double scale)
{
    return fabs((double)a - (double)b) <= 1e-4 * (fabs(scale) + 1.0);
}

/* Scoring on both devices, and the GPU's scoring of its own translations. */
static void test_scoring(void)
{
    const nmt_options co = options(NMT_DEVICE_CPU, 4, 1, 64);
    const nmt_options go = options(NMT_DEVICE_CUDA, 4, 1, 64);
    nmt_translator *cpu = create(&co), *gpu = create(&go);
    static nmt_result found[N_LINES], gfound[N_LINES], sc[N_LINES], sg[N_LINES], alone;
    const char *targets[N_LINES], *gtargets[N_LINES];
    nmt_error err = {0};
    if (!cpu || !gpu)
        goto done;
    CHECK(nmt_translate_batch(cpu, lines, N_LINES, found, &err) == NMT_STATUS_OK &&
              nmt_translate_batch(gpu, lines, N_LINES, gfound, &err) == NMT_STATUS_OK,
          "translate: %s", err.message);
    for (int i = 0; i < N_LINES; i++) {
        targets[i] = found[i].n_hypotheses ? found[i].hypotheses[0].text : "";
        gtargets[i] = gfound[i].n_hypotheses ? gfound[i].hypotheses[0].text : "";
    }
    CHECK(nmt_score_batch(cpu, lines, targets, N_LINES, sc, &err) == NMT_STATUS_OK &&
              nmt_score_batch(gpu, lines, targets, N_LINES, sg, &err) == NMT_STATUS_OK,
          "score: %s", err.message);
    int bad = 0, argmax_ties = 0;
    for (int i = 0; i < N_LINES; i++) {
        const nmt_hypothesis *c = sc[i].n_hypotheses ? &sc[i].hypotheses[0] : NULL;
        const nmt_hypothesis *g = sg[i].n_hypotheses ? &sg[i].hypotheses[0] : NULL;
        int ok = sc[i].status == sg[i].status && !c == !g;
        ok = ok && (!c || (c->n_tokens == g->n_tokens && !strcmp(c->text, g->text) &&
                           close_to(c->log_prob, g->log_prob, c->log_prob) &&
                           close_to(c->score, g->score, c->score)));
        for (int t = 0; ok && c && t <= c->n_tokens; t++)
            ok = close_to(c->token_scores[t], g->token_scores[t], c->log_prob);
        for (int t = 0; ok && c && t < c->n_tokens; t++) {
            argmax_ties += c->alignment[t] != g->alignment[t];
            for (int j = 0; j < sc[i].n_src; j++)
                ok = ok && close_to(c->attention[t * sc[i].n_src + j],
                                    g->attention[t * sc[i].n_src + j], 0.0);
        }
        if (!ok && bad++ < 3)
            fprintf(stderr, "line %d: cpu %.7g, gpu %.7g (%s / %s)\n", i, c ? c->log_prob : 0.0f,
                    g ? g->log_prob : 0.0f, sc[i].message, sg[i].message);
    }
    CHECK(bad == 0, "scoring: %d of %d lines differ between the devices", bad, N_LINES);
    CHECK(argmax_ties <= N_LINES / 10, "%d alignments differ (near ties only)", argmax_ties);
    /* The GPU's translations scored on the GPU: their own log-probabilities. */
    for (int i = 0; i < N_LINES; i++)
        nmt_result_clear(&sg[i]);
    CHECK(nmt_score_batch(gpu, lines, gtargets, N_LINES, sg, &err) == NMT_STATUS_OK, "%s",
          err.message);
    bad = 0;
    for (int i = 0; i < N_LINES; i++) {
        if (!gfound[i].n_hypotheses || !sg[i].n_hypotheses)
            continue;
        const nmt_hypothesis *want = &gfound[i].hypotheses[0], *got = &sg[i].hypotheses[0];
        bad += !close_to(want->log_prob, got->log_prob, want->log_prob) ||
               !close_to(want->score, got->score, want->score);
    }
    CHECK(bad == 0, "%d GPU translations score otherwise on the GPU", bad);
    /* Batch invariance: a line alone has the bits it has among 64. */
    bad = 0;
    for (int i = 0; i < N_LINES; i += 7) {
        char why[256];
        CHECK(nmt_score_batch(gpu, &lines[i], &gtargets[i], 1, &alone, &err) == NMT_STATUS_OK,
              "%s", err.message);
        if (!test_bitwise_line(&alone, &sg[i], why, sizeof why) && bad++ < 3)
            fprintf(stderr, "line %d scored alone: %s\n", i, why);
        nmt_result_clear(&alone);
    }
    CHECK(bad == 0, "%d lines scored alone differ from the batch", bad);
    printf("  scoring: %d lines on both devices, %d alignment ties\n", N_LINES, argmax_ties);
done:
    for (int i = 0; i < N_LINES; i++) {
        nmt_result_clear(&found[i]);
        nmt_result_clear(&gfound[i]);
        nmt_result_clear(&sc[i]);
        nmt_result_clear(&sg[i]);
    }
    nmt_translator_free(cpu);
    nmt_translator_free(gpu);
}

/* Prefixes (and alternatives) on both devices; with logit_rules, rules
 * for the free steps after the prefix (onmt: and the coverage penalty). */
static void test_prefixes(int beam, int n_best, int alternatives, nmt_search_rules rules,
                          int logit_rules)
{
    nmt_options co = options(NMT_DEVICE_CPU, beam, n_best, 32);
    co.attention_weights = 0;
    co.return_alternatives = alternatives;
    co.search_rules = rules;
    if (logit_rules) {
        co.no_repeat_ngram_size = 2;
        co.repetition_penalty = 1.3f;
        co.ban_unk = 1;
        co.min_length = 3;
        if (rules == NMT_SEARCH_RULES_ONMT) {
            co.coverage_penalty = NMT_COVERAGE_WU;
            co.coverage_beta = 0.2f;
        }
    }
    nmt_options go = co;
    go.device = NMT_DEVICE_CUDA;
    nmt_translator *cpu = create(&co), *gpu = create(&go);
    static const char *const prefixes_text[] = {"the", "a dog", "the house is", "katze"};
    const char *prefixes[N_LINES];
    static nmt_result rc[N_LINES], rg[N_LINES];
    nmt_error err = {0};
    for (int i = 0; i < N_LINES; i++)
        prefixes[i] = i % 5 ? prefixes_text[i % 4] : NULL;
    if (!cpu || !gpu)
        goto done;
    CHECK(nmt_translate_batch_prefix(cpu, lines, prefixes, N_LINES, rc, &err) == NMT_STATUS_OK &&
              nmt_translate_batch_prefix(gpu, lines, prefixes, N_LINES, rg, &err) ==
                  NMT_STATUS_OK,
          "prefixes: %s", err.message);
    char label[96];
    snprintf(label, sizeof label, "%s beam %d n_best %d%s%s", rules ? "onmt" : "v1", beam,
             n_best, alternatives ? " alternatives" : "", logit_rules ? " logit rules" : "");
    const test_near_counts c =
        test_compare_lines_near_tie(label, rc, rg, N_LINES, co.max_len_a, co.max_len_b);
    int starts = 0;
    for (int i = 0; i < N_LINES; i++)
        for (int h = 0; prefixes[i] && h < rg[i].n_hypotheses; h++) {
            const size_t len = strlen(prefixes[i]);
            starts += !strncmp(rg[i].hypotheses[h].text, prefixes[i], len);
            CHECK(!strncmp(rg[i].hypotheses[h].text, prefixes[i], len),
                  "%s: line %d hyp %d \"%s\" does not start with \"%s\"", label, i, h,
                  rg[i].hypotheses[h].text, prefixes[i]);
        }
    CHECK(!alternatives || rg[1].n_hypotheses == n_best, "%s: %d alternatives", label,
          rg[1].n_hypotheses);
    printf("  %s: %d near ties, %d other differences, %d hypotheses start with their prefix\n",
           label, c.ties, c.bad, starts);
done:
    for (int i = 0; i < N_LINES; i++) {
        nmt_result_clear(&rc[i]);
        nmt_result_clear(&rg[i]);
    }
    nmt_translator_free(cpu);
    nmt_translator_free(gpu);
}

/* Samples of prefixes on both devices (decoder/cuda/sample_step.cu's
 * forced words): a sample draws from the same uniform on both, so a line
 * differs only where two words' running weights straddle it within the
 * devices' rounding (test_gpu_sampling.c): at most 1 line in 20 differs
 * (test_same_line); every GPU sample starts with its prefix; the GPU gives
 * a line the same bits at batch 1 as at 32. */
static void test_sampled_prefixes(int topk, int n_best, int logit_rules)
{
    nmt_options co = options(NMT_DEVICE_CPU, 1, n_best, 32);
    co.sampling_topk = topk;
    co.sampling_temperature = 0.8f;
    co.seed = 2026;
    if (logit_rules) {
        co.no_repeat_ngram_size = 2;
        co.repetition_penalty = 1.3f;
        co.ban_unk = 1;
        co.min_length = 3;
    }
    nmt_options go = co, one = co;
    go.device = one.device = NMT_DEVICE_CUDA;
    one.batch_size = 1;
    nmt_translator *cpu = create(&co), *gpu = create(&go), *gpu1 = create(&one);
    static const char *const prefixes_text[] = {"the", "a dog", "the house is", "katze"};
    const char *prefixes[N_LINES];
    static nmt_result rc[N_LINES], rg[N_LINES], r1[N_LINES];
    nmt_error err = {0};
    for (int i = 0; i < N_LINES; i++)
        prefixes[i] = i % 5 ? prefixes_text[i % 4] : NULL;
    if (!cpu || !gpu || !gpu1)
        goto done;
    CHECK(nmt_translate_batch_prefix(cpu, lines, prefixes, N_LINES, rc, &err) == NMT_STATUS_OK &&
              nmt_translate_batch_prefix(gpu, lines, prefixes, N_LINES, rg, &err) ==
                  NMT_STATUS_OK &&
              nmt_translate_batch_prefix(gpu1, lines, prefixes, N_LINES, r1, &err) ==
                  NMT_STATUS_OK,
          "sampled prefixes: %s", err.message);
    char label[96];
    snprintf(label, sizeof label, "samples of prefixes, top-K %d, %d a line%s", topk, n_best,
             logit_rules ? ", logit rules" : "");
    int differ = 0, starts = 0, moved = 0;
    char why[256];
    for (int i = 0; i < N_LINES; i++) {
        if (!test_same_line(&rc[i], &rg[i]) && differ++ < 3)
            fprintf(stderr, "%s: line %d: cpu \"%s\", gpu \"%s\"\n", label, i,
                    rc[i].n_hypotheses ? rc[i].hypotheses[0].text : "",
                    rg[i].n_hypotheses ? rg[i].hypotheses[0].text : "");
        if (!test_bitwise_line(&rg[i], &r1[i], why, sizeof why) && moved++ < 3)
            fprintf(stderr, "%s: line %d at batch 1: %s\n", label, i, why);
        CHECK(rg[i].status != NMT_STATUS_OK || rg[i].n_hypotheses == n_best,
              "%s: line %d has %d samples", label, i, rg[i].n_hypotheses);
        for (int h = 0; prefixes[i] && h < rg[i].n_hypotheses; h++) {
            const int ok = !strncmp(rg[i].hypotheses[h].text, prefixes[i], strlen(prefixes[i]));
            starts += ok;
            CHECK(ok, "%s: line %d sample %d \"%s\" does not start with \"%s\"", label, i, h,
                  rg[i].hypotheses[h].text, prefixes[i]);
        }
    }
    CHECK(differ <= N_LINES / 20, "%s: %d of %d lines differ between the devices", label,
          differ, N_LINES);
    CHECK(moved == 0, "%s: %d lines differ at batch 1 from batch 32", label, moved);
    printf("  %s: %d lines differ between the devices, %d samples start with their prefix\n",
           label, differ, starts);
done:
    for (int i = 0; i < N_LINES; i++) {
        nmt_result_clear(&rc[i]);
        nmt_result_clear(&rg[i]);
        nmt_result_clear(&r1[i]);
    }
    nmt_translator_free(cpu);
    nmt_translator_free(gpu);
    nmt_translator_free(gpu1);
}

int main(void)
{
    const int opened = test_gpu_model_open(NMT_TEST_MODEL, &model);
    if (opened != 0)
        return opened;
    forced_lines(text, lines, N_LINES, 16);
    test_scoring();
    test_prefixes(4, 2, 0, NMT_SEARCH_RULES_V1, 0);
    test_prefixes(40, 3, 0, NMT_SEARCH_RULES_V1, 0);
    test_prefixes(4, 3, 1, NMT_SEARCH_RULES_V1, 0);
    test_prefixes(40, 5, 1, NMT_SEARCH_RULES_V1, 0);
    test_prefixes(4, 2, 0, NMT_SEARCH_RULES_ONMT, 0);
    test_prefixes(4, 3, 1, NMT_SEARCH_RULES_ONMT, 0);
    test_prefixes(4, 2, 0, NMT_SEARCH_RULES_V1, 1);
    test_prefixes(40, 3, 1, NMT_SEARCH_RULES_V1, 1);
    test_prefixes(4, 3, 1, NMT_SEARCH_RULES_ONMT, 1);
    test_sampled_prefixes(10, 3, 0);
    test_sampled_prefixes(0, 2, 0);
    test_sampled_prefixes(10, 4, 1);
    nmt_model_free(model);
    return test_finish("test_gpu_forced");
}
