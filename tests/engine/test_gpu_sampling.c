/* test_gpu_sampling.c: sampling, the logit rules and the coverage penalty on
 * the GPU search (decoder/cuda/sample_step.cu, logit_rules.cu, beam_step.cu)
 * against the CPU search (decoder/beam_sample.c, logit_rules.c) through the
 * public API, as test_gpu_onmt_rules.c does for the onmt rules: on the test
 * model, random lines of 1..20 words are translated with device cpu and
 * device cuda in several configurations (top-K, the whole vocabulary,
 * top-p and temperature, samples under logit rules; the beam under every
 * logit rule and suppressed sequences; the onmt rules with each coverage
 * penalty). Each sample draws its word from the same uniform on both
 * devices (test_gpu_philox.cu), so a line differs only where two words'
 * cumulative weights straddle its uniform within the devices' rounding:
 * every hypothesis text must be identical on >= 95% of the lines (scores
 * within 1e-3), differing lines printed. Then the GPU alone: a sampling
 * line keeps its bits at batch 1, 7 and 64 (batch invariance). Exit 77
 * without a GPU. */
#include "nmt.h"
#include "test_gpu_model.h"
#include "test_results.h"
#include "test_util.h"

#include <stdio.h>
#include <string.h>

#define N_LINES 100

static const char *const words[] = {
    "der", "die", "das", "und", "ist", "ein", "eine", "Haus", "katze", "Hund", "MANN", "frau",
    "kind", "sieht", "hat", "nicht", "sehr", "gro\xc3\x9f", "klein", "sch\xc3\xb6n", "Heute",
    "wir", "ich", "du", "sie", "es", "mit", "auf", "gut", "Buch", "liest", "Zebra", "?", "!"};

typedef struct config {
    const char *name;
    int batch, beam, n_best, topk;
    float topp, temperature;
    int min_length, ngram;
    float repetition;
    int ban_unk;
    const char *suppress;
    nmt_search_rules rules;
    nmt_coverage_penalty coverage;
    float beta;
} config;

static nmt_options make_options(nmt_device device, const config *c)
{
    nmt_options o;
    nmt_options_init(&o);
    o.warmup = 0;
    o.device = device;
    o.max_len_b = 12;
    o.batch_size = c->batch;
    o.beam_size = c->beam;
    o.n_best = c->n_best;
    o.sampling_topk = c->topk;
    o.sampling_topp = c->topp;
    o.sampling_temperature = c->temperature;
    o.seed = 2026;
    o.min_length = c->min_length;
    o.no_repeat_ngram_size = c->ngram;
    o.repetition_penalty = c->repetition;
    o.ban_unk = c->ban_unk;
    o.suppress = c->suppress;
    o.search_rules = c->rules;
    o.coverage_penalty = c->coverage;
    o.coverage_beta = c->beta;
    return o;
}

static int translate_with(const nmt_model *model, const nmt_options *o, const char *const *lines,
                          nmt_result *results)
{
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_translator_create(model, o, &t, &err);
    CHECK(st == NMT_STATUS_OK, "translator (device %d): %s", (int)o->device, err.message);
    if (st != NMT_STATUS_OK)
        return 0;
    st = nmt_translate_batch(t, lines, N_LINES, results, &err);
    CHECK(st == NMT_STATUS_OK, "translate (device %d): %s", (int)o->device, err.message);
    nmt_translator_free(t);
    return st == NMT_STATUS_OK;
}

static void clear_all(nmt_result *r)
{
    for (int i = 0; i < N_LINES; i++)
        nmt_result_clear(&r[i]);
}

static void compare(const nmt_model *model, const config *c, const char *const *lines)
{
    static nmt_result rc[N_LINES], rg[N_LINES];
    const nmt_options cpu = make_options(NMT_DEVICE_CPU, c);
    const nmt_options gpu = make_options(NMT_DEVICE_CUDA, c);
    if (translate_with(model, &cpu, lines, rc) && translate_with(model, &gpu, lines, rg)) {
        const int differing = test_count_differing(rc, rg, N_LINES, test_same_line, c->name,
                                                   lines);
        CHECK(differing <= N_LINES / 20, "%s: %d of %d lines differ", c->name, differing,
              N_LINES);
        fprintf(stderr, "%s: %d of %d lines differ\n", c->name, differing, N_LINES);
    }
    clear_all(rc);
    clear_all(rg);
}

/* The GPU's samples of a line at other batch sizes: the same bits. */
static void gpu_invariance(const nmt_model *model, const config *c, const char *const *lines)
{
    static nmt_result one[N_LINES], other[N_LINES];
    config at = *c;
    at.batch = 1;
    nmt_options o = make_options(NMT_DEVICE_CUDA, &at);
    if (!translate_with(model, &o, lines, one))
        return;
    const int sizes[2] = {7, 64};
    for (int k = 0; k < 2; k++) {
        o.batch_size = sizes[k];
        if (!translate_with(model, &o, lines, other))
            break;
        int differ = 0;
        char why[512];
        for (int i = 0; i < N_LINES; i++)
            if (!test_bitwise_line(&one[i], &other[i], why, sizeof why) && differ++ < 3)
                fprintf(stderr, "%s, batch %d, line %d: %s\n", c->name, sizes[k], i, why);
        CHECK(differ == 0, "%s: %d lines differ at batch %d from batch 1", c->name, differ,
              sizes[k]);
        clear_all(other);
    }
    clear_all(one);
}

int main(void)
{
    nmt_model *model = NULL;
    const int opened = test_gpu_model_open(NMT_TEST_MODEL, &model);
    if (opened != 0)
        return opened;
    static char text[N_LINES][512];
    const char *lines[N_LINES];
    const int n_words = (int)(sizeof words / sizeof words[0]);
    for (int i = 0; i < N_LINES; i++) {
        test_random_words(text[i], words, n_words, test_rand_int(1, 21));
        lines[i] = text[i];
    }
    const nmt_search_rules v1 = NMT_SEARCH_RULES_V1, onmt = NMT_SEARCH_RULES_ONMT;
    const config configs[] = {
        {"top-K 10", 37, 1, 3, 10, 1.0f, 1.0f, 0, 0, 1.0f, 0, NULL, v1, NMT_COVERAGE_NONE, 0},
        {"every word, T 0.7", 16, 1, 2, 0, 1.0f, 0.7f, 0, 0, 1.0f, 0, NULL, v1,
         NMT_COVERAGE_NONE, 0},
        {"top-K 20, top-p 0.8, T 1.5", 64, 1, 2, 20, 0.8f, 1.5f, 0, 0, 1.0f, 0, NULL, v1,
         NMT_COVERAGE_NONE, 0},
        {"samples under the rules", 37, 1, 4, 10, 1.0f, 1.0f, 2, 3, 1.3f, 1, "sees\nThe", v1,
         NMT_COVERAGE_NONE, 0},
        {"beam under the rules", 37, 5, 2, 1, 1.0f, 1.0f, 3, 2, 1.2f, 1, "sees the\nchild",
         v1, NMT_COVERAGE_NONE, 0},
        {"onmt, wu coverage", 16, 4, 2, 1, 1.0f, 1.0f, 0, 0, 1.0f, 0, NULL, onmt,
         NMT_COVERAGE_WU, 0.2f},
        {"onmt, summary coverage and 2-grams", 7, 5, 3, 1, 1.0f, 1.0f, 1, 2, 1.0f, 0, NULL,
         onmt, NMT_COVERAGE_SUMMARY, 0.5f},
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        compare(model, &configs[i], lines);
    gpu_invariance(model, &configs[0], lines);
    gpu_invariance(model, &configs[1], lines);
    gpu_invariance(model, &configs[4], lines);
    nmt_model_free(model);
    return test_finish("test_gpu_sampling");
}
