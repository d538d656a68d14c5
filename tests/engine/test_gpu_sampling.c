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

/* A configuration: its name, its batch size and its options over the
 * defaults (every one with seed 2026, max length 2 S + 12, no warm-up). */
typedef struct config {
    const char *name;
    int batch;
    void (*set)(nmt_options *o);
} config;

static void top_k(nmt_options *o)
{
    o->beam_size = 1, o->n_best = 3, o->sampling_topk = 10;
}

static void every_word(nmt_options *o)
{
    o->beam_size = 1, o->n_best = 2, o->sampling_topk = 0, o->sampling_temperature = 0.7f;
}

static void top_p(nmt_options *o)
{
    o->beam_size = 1, o->n_best = 2, o->sampling_topk = 20, o->sampling_topp = 0.8f;
    o->sampling_temperature = 1.5f;
}

static void samples_under_rules(nmt_options *o)
{
    o->beam_size = 1, o->n_best = 4, o->sampling_topk = 10, o->min_length = 2;
    o->no_repeat_ngram_size = 3, o->repetition_penalty = 1.3f, o->ban_unk = 1;
    o->suppress = "sees\nThe";
}

static void beam_under_rules(nmt_options *o)
{
    o->beam_size = 5, o->n_best = 2, o->min_length = 3, o->no_repeat_ngram_size = 2;
    o->repetition_penalty = 1.2f, o->ban_unk = 1, o->suppress = "sees the\nchild";
}

static void onmt_wu(nmt_options *o)
{
    o->beam_size = 4, o->n_best = 2, o->search_rules = NMT_SEARCH_RULES_ONMT;
    o->coverage_penalty = NMT_COVERAGE_WU, o->coverage_beta = 0.2f;
}

static void onmt_summary(nmt_options *o)
{
    o->beam_size = 5, o->n_best = 3, o->search_rules = NMT_SEARCH_RULES_ONMT, o->min_length = 1;
    o->no_repeat_ngram_size = 2, o->coverage_penalty = NMT_COVERAGE_SUMMARY;
    o->coverage_beta = 0.5f;
}

static nmt_options make_options(nmt_device device, const config *c)
{
    nmt_options o;
    nmt_options_init(&o);
    o.warmup = 0;
    o.device = device;
    o.max_len_b = 12;
    o.seed = 2026;
    o.batch_size = c->batch;
    c->set(&o);
    return o;
}

static void compare(const nmt_model *model, const config *c, const char *const *lines)
{
    const nmt_options cpu = make_options(NMT_DEVICE_CPU, c);
    const nmt_options gpu = make_options(NMT_DEVICE_CUDA, c);
    const int differing = test_gpu_count_differing(model, &cpu, &gpu, lines, N_LINES,
                                                   test_same_line, c->name, NULL);
    if (differing < 0)
        return;
    CHECK(differing <= N_LINES / 20, "%s: %d of %d lines differ", c->name, differing, N_LINES);
    fprintf(stderr, "%s: %d of %d lines differ\n", c->name, differing, N_LINES);
}

/* The GPU's samples of a line at other batch sizes: the same bits. */
static void gpu_invariance(const nmt_model *model, const config *c, const char *const *lines)
{
    static nmt_result one[N_LINES], other[N_LINES];
    nmt_options o = make_options(NMT_DEVICE_CUDA, c);
    o.batch_size = 1;
    if (!test_gpu_translate_with(model, &o, lines, N_LINES, one))
        return;
    const int sizes[2] = {7, 64};
    for (int k = 0; k < 2; k++) {
        o.batch_size = sizes[k];
        if (!test_gpu_translate_with(model, &o, lines, N_LINES, other))
            break;
        int differ = 0;
        char why[512];
        for (int i = 0; i < N_LINES; i++)
            if (!test_bitwise_line(&one[i], &other[i], why, sizeof why) && differ++ < 3)
                fprintf(stderr, "%s, batch %d, line %d: %s\n", c->name, sizes[k], i, why);
        CHECK(differ == 0, "%s: %d lines differ at batch %d from batch 1", c->name, differ,
              sizes[k]);
        test_clear_results(other, N_LINES);
    }
    test_clear_results(one, N_LINES);
}

int main(void)
{
    test_gpu_input in;
    const int opened = test_gpu_input_open(NMT_TEST_MODEL, N_LINES, 20, &in);
    if (opened != 0)
        return opened;
    const config configs[] = {
        {"top-K 10", 37, top_k},
        {"every word, T 0.7", 16, every_word},
        {"top-K 20, top-p 0.8, T 1.5", 64, top_p},
        {"samples under the rules", 37, samples_under_rules},
        {"beam under the rules", 37, beam_under_rules},
        {"onmt, wu coverage", 16, onmt_wu},
        {"onmt, summary coverage and 2-grams", 7, onmt_summary},
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        compare(in.model, &configs[i], in.lines);
    gpu_invariance(in.model, &configs[0], in.lines);
    gpu_invariance(in.model, &configs[1], in.lines);
    gpu_invariance(in.model, &configs[4], in.lines);
    test_gpu_input_free(&in);
    return test_finish("test_gpu_sampling");
}
