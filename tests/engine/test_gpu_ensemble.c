/* test_gpu_ensemble.c: the CUDA engine's ensembles
 * (decoder/cuda/cuda_step_ensemble.c, kernels/cuda/ensemble.cu) against the
 * CPU engine's, through the public API, on the test model A and its twin B
 * of another seed:
 *  - A + B at weights (0.3, 0.9), at beams 1 and 4, batches 1 and 16, and
 *    A + A + B at the default weights, with each line's token strings,
 *    alignment, scores and token scores: every line as the CPU's (scores
 *    within 1e-3), or, for at most 2% of the lines (and two), different only
 *    at a near tie (test_compare_near_tie, as test_gpu_translate);
 *  - scoring (nmt_score_batch, the GPU's teacher-forced pass through the
 *    ensemble's stash and pick) the CPU's best hypotheses: log-probabilities
 *    within 1e-3 of the CPU's scoring;
 *  - on the GPU alone: graphs on and off, batch sizes 1, 7 and 16, and the
 *    service (which batches an ensemble: no continuous batching), all the
 *    same bits (batch invariance, docs/decoding.md);
 *  - A with itself is A alone on the GPU, texts and alignments, scores
 *    within 1e-6 (the sum's fp32 arithmetic is exact, but its top-K orders
 *    by log p where A's orders by the logit: a tie can part them);
 *  - shrinking with an ensemble is refused.
 * Exit 77 without a GPU. */
#include "nmt.h"
#include "ensemble_fixture.h"
#include "test_gpu_model.h"
#include "test_results.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_LINES 60

static const char *const words[] = {
    "der", "die", "das", "und", "ist", "ein", "eine", "Haus", "katze", "Hund", "MANN", "frau",
    "kind", "sieht", "hat", "nicht", "sehr", "gro\xc3\x9f", "klein", "Heute", "wir", "ich",
    "mit", "auf", "gut", "Buch", "liest", "?", "Zebra", "!"};
static char text[N_LINES][1024];
static const char *lines[N_LINES];
static nmt_model *model_a, *model_b;

static nmt_options make_options(nmt_device device, int batch, int beam)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = device;
    o.warmup = 0;
    o.batch_size = batch;
    o.beam_size = beam;
    o.n_best = beam > 1 ? 2 : 1;
    o.max_src_tokens = 48;
    o.output_tokens = 1; /* token strings: a difference has a position (near ties) */
    o.precision = NMT_PRECISION_FP32;
    return o;
}


/* The CPU's best hypotheses (token strings) scored on both devices. */
static void check_scoring(const char *label, const nmt_model *const *models,
                          const float *weights, int n, const nmt_options *oc,
                          const nmt_options *og, const nmt_result *cpu)
{
    static nmt_result on_cpu[N_LINES], on_gpu[N_LINES];
    const char *targets[N_LINES];
    nmt_options sc = *oc, sg = *og;
    sc.input_tokens = sg.input_tokens = 1;
    ensemble_best_texts(cpu, N_LINES, targets);
    if (ensemble_score(models, weights, n, &sc, lines, targets, N_LINES, on_cpu) &&
        ensemble_score(models, weights, n, &sg, lines, targets, N_LINES, on_gpu)) {
        for (int i = 0; i < N_LINES; i++) {
            const int ok = on_cpu[i].status == NMT_STATUS_OK && on_cpu[i].n_hypotheses == 1;
            CHECK(on_gpu[i].status == on_cpu[i].status &&
                      (!ok || (on_gpu[i].n_hypotheses == 1 &&
                               fabs(on_gpu[i].hypotheses[0].log_prob -
                                    on_cpu[i].hypotheses[0].log_prob) <= 1e-3)),
                  "%s line %d: scored %g on the GPU, %g on the CPU", label, i,
                  on_gpu[i].n_hypotheses ? on_gpu[i].hypotheses[0].log_prob : NAN,
                  ok ? on_cpu[i].hypotheses[0].log_prob : NAN);
        }
    }
    ensemble_clear(on_cpu, N_LINES);
    ensemble_clear(on_gpu, N_LINES);
}

static void compare_cpu(const nmt_model *const *models, const float *weights, int n, int batch,
                        int beam)
{
    static nmt_result cpu[N_LINES], gpu[N_LINES];
    char label[96];
    snprintf(label, sizeof label, "%d models, batch %d beam %d", n, batch, beam);
    const nmt_options oc = make_options(NMT_DEVICE_CPU, batch, beam);
    const nmt_options og = make_options(NMT_DEVICE_CUDA, batch, beam);
    if (test_translate_models(models, weights, n, &oc, lines, N_LINES, cpu) &&
        test_translate_models(models, weights, n, &og, lines, N_LINES, gpu)) {
        const test_near_counts c = test_compare_lines_near_tie(label, cpu, gpu, N_LINES,
                                                               oc.max_len_a, oc.max_len_b);
        CHECK(c.bad == 0 && c.ties <= 2 && c.ties * 50 <= N_LINES,
              "%s: %d lines differ beyond a near tie, %d near ties", label, c.bad, c.ties);
        fprintf(stderr, "%s: %d near ties, %d at the maximum length, scores within %.3g\n",
                label, c.ties, c.looping, c.max_diff);
        check_scoring(label, models, weights, n, &oc, &og, cpu);
    }
    ensemble_clear(cpu, N_LINES);
    ensemble_clear(gpu, N_LINES);
}

/* Graphs off, other batch sizes and the service: the same bits as graphs on
 * at batch 16. */
static void check_invariance(void)
{
    static nmt_result base[N_LINES], other[N_LINES];
    const nmt_model *ab[2] = {model_a, model_b};
    const float weights[2] = {0.3f, 0.9f};
    nmt_options o = make_options(NMT_DEVICE_CUDA, 16, 4);
    if (!test_translate_models(ab, weights, 2, &o, lines, N_LINES, base))
        return;
    const int batches[3] = {1, 7, 16};
    for (int k = 0; k < 3; k++) {
        nmt_options ok = o;
        ok.batch_size = batches[k];
        ok.cuda_graphs = k != 2; /* the last: batch 16 without graphs */
        char what[64];
        snprintf(what, sizeof what, "batch %d, graphs %s", ok.batch_size,
                 ok.cuda_graphs ? "on" : "off");
        if (test_translate_models(ab, weights, 2, &ok, lines, N_LINES, other))
            CHECK(ensemble_differences(what, other, base, N_LINES) == 0, "%s: other bits", what);
        ensemble_clear(other, N_LINES);
    }
    nmt_service_options so;
    nmt_service_options_init(&so);
    so.translator = o;
    so.continuous = 1; /* asked for; an ensemble's workers batch */
    ensemble_check_service(ab, weights, 2, &so, lines, N_LINES, base);
    ensemble_clear(base, N_LINES);
}

static void check_self(void)
{
    static nmt_result alone[N_LINES], twice[N_LINES];
    const nmt_model *aa[2] = {model_a, model_a};
    const nmt_options o = make_options(NMT_DEVICE_CUDA, 16, 4);
    if (test_translate_models(aa, NULL, 1, &o, lines, N_LINES, alone) &&
        test_translate_models(aa, NULL, 2, &o, lines, N_LINES, twice)) {
        int differing = 0;
        for (int i = 0; i < N_LINES; i++)
            differing += !test_same_line(&alone[i], &twice[i]);
        CHECK(differing <= 1, "A with itself: %d lines differ from A alone", differing);
    }
    ensemble_clear(alone, N_LINES);
    ensemble_clear(twice, N_LINES);
    nmt_options shrunk = o;
    shrunk.shrink.mode = NMT_SHRINK_TOP;
    shrunk.shrink.top = 20;
    nmt_translator *t = NULL;
    nmt_error err = {0};
    CHECK(nmt_translator_create_ensemble(aa, NULL, 2, &shrunk, &t, &err) ==
                  NMT_STATUS_ERROR_UNSUPPORTED && !t,
          "shrinking with an ensemble: '%s'", err.message);
    nmt_translator_free(t);
}

int main(void)
{
    const int code = test_gpu_model_open(NMT_TEST_MODEL, &model_a);
    if (code != 0)
        return code;
    nmt_error err = {0};
    CHECK(nmt_model_load(NMT_TEST_MODEL_SEED2, &model_b, &err) == NMT_STATUS_OK, "%s: %s",
          NMT_TEST_MODEL_SEED2, err.message);
    const int n_words = (int)(sizeof words / sizeof words[0]);
    for (int i = 0; i < N_LINES; i++) {
        test_random_words(text[i], words, n_words, i == 5 ? 0 : test_rand_int(1, 20));
        lines[i] = text[i];
    }
    if (model_b) {
        const nmt_model *ab[2] = {model_a, model_b}, *aab[3] = {model_a, model_a, model_b};
        const float weights[2] = {0.3f, 0.9f};
        compare_cpu(ab, weights, 2, 16, 4);
        compare_cpu(ab, weights, 2, 1, 1);
        compare_cpu(aab, NULL, 3, 16, 4);
        check_invariance();
        check_self();
    }
    nmt_model_free(model_a);
    nmt_model_free(model_b);
    return test_finish("test_gpu_ensemble");
}
