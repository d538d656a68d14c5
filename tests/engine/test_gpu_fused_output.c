/* test_gpu_fused_output.c: the fused output layer (fused_output = 1,
 * kernels/output_topk.h) in the engine, through the public API, on the test
 * model and random lines of 1..20 words:
 *  - fp16 and bf16 at batch 37, beam 5, n-best 2: the same texts as the
 *    unfused layer but at near ties (scores within 1e-3), and some score's
 *    last bits moved (else the fused layer never ran);
 *  - batch invariance: at fp16 every line keeps its bits (text, scores,
 *    alignment) at batch 1, 8 and 37, graphs on and off;
 *  - where the step reads every logit (sampling, a logit rule), the fused
 *    setting falls back to the unfused layer: the same bits as without it.
 * Exit 77 without a GPU. */
#include "nmt.h"
#include "test_gpu_model.h"
#include "test_results.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_LINES 100

static nmt_options base(nmt_precision precision, int batch, int fused)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CUDA;
    o.precision = precision;
    o.warmup = 0;
    o.batch_size = batch;
    o.beam_size = 5;
    o.n_best = 2;
    o.fused_output = fused;
    return o;
}

/* Fused against unfused at one precision. */
static void compare_unfused(const nmt_model *model, nmt_precision precision,
                            const char *const *lines)
{
    const char *name = precision == NMT_PRECISION_BF16 ? "bf16" : "fp16";
    static nmt_result a[N_LINES], b[N_LINES];
    const nmt_options off = base(precision, 37, 0), on = base(precision, 37, 1);
    if (test_gpu_translate_with(model, &off, lines, N_LINES, a) &&
        test_gpu_translate_with(model, &on, lines, N_LINES, b)) {
        char label[64];
        snprintf(label, sizeof label, "%s fused vs unfused", name);
        const test_near_counts c =
            test_compare_lines_near_tie(label, a, b, N_LINES, off.max_len_a, off.max_len_b);
        int moved = 0;
        for (int i = 0; i < N_LINES; i++)
            moved += a[i].status == NMT_STATUS_OK && b[i].status == NMT_STATUS_OK &&
                     a[i].hypotheses[0].score != b[i].hypotheses[0].score;
        fprintf(stderr, "%s: %d near ties, %d other differences, %d looping, max |score "
                "diff| %.3g, %d scores moved\n", label, c.ties, c.bad, c.looping, c.max_diff,
                moved);
        CHECK(c.bad == 0, "%s: %d lines differ beyond near ties", label, c.bad);
        CHECK(moved > 0, "%s: every score has the unfused bits (the fused layer never ran?)",
              label);
    }
    test_clear_results(a, N_LINES);
    test_clear_results(b, N_LINES);
}

/* Every line's bits at batch 1, 8 and 37 (graphs off at 8), fused. */
static void check_invariance(const nmt_model *model, const char *const *lines)
{
    static nmt_result ref[N_LINES], other[N_LINES];
    const nmt_options one = base(NMT_PRECISION_FP16, 1, 1);
    if (!test_gpu_translate_with(model, &one, lines, N_LINES, ref))
        return;
    const int batches[2] = {8, 37};
    for (int k = 0; k < 2; k++) {
        nmt_options o = base(NMT_PRECISION_FP16, batches[k], 1);
        o.cuda_graphs = k == 1;
        if (!test_gpu_translate_with(model, &o, lines, N_LINES, other))
            continue;
        int differ = 0;
        char why[256];
        for (int i = 0; i < N_LINES; i++)
            if (!test_bitwise_line(&ref[i], &other[i], why, sizeof why) && differ++ < 3)
                fprintf(stderr, "  fused batch %d line %d: %s\n", batches[k], i, why);
        CHECK(differ == 0, "fused: %d of %d lines change bits at batch %d", differ, N_LINES,
              batches[k]);
        test_clear_results(other, N_LINES);
    }
    test_clear_results(ref, N_LINES);
}

/* Sampling and a logit rule read every logit: the setting changes nothing. */
static void check_fallback(const nmt_model *model, const char *const *lines)
{
    static nmt_result a[N_LINES], b[N_LINES];
    for (int rule = 0; rule < 2; rule++) {
        nmt_options off = base(NMT_PRECISION_FP16, 37, 0);
        if (rule == 0)
            off.beam_size = 1, off.n_best = 1, off.sampling_topk = 10, off.seed = 2026;
        else
            off.no_repeat_ngram_size = 2;
        nmt_options on = off;
        on.fused_output = 1;
        if (test_gpu_translate_with(model, &off, lines, N_LINES, a) &&
            test_gpu_translate_with(model, &on, lines, N_LINES, b)) {
            int differ = 0;
            char why[256];
            for (int i = 0; i < N_LINES; i++)
                differ += !test_bitwise_line(&a[i], &b[i], why, sizeof why);
            CHECK(differ == 0, "%s with fused_output: %d lines differ from without",
                  rule == 0 ? "sampling" : "no_repeat_ngram_size", differ);
        }
        test_clear_results(a, N_LINES);
        test_clear_results(b, N_LINES);
    }
}

int main(void)
{
    nmt_model *model = NULL;
    const int opened = test_gpu_model_open(NMT_TEST_MODEL, &model);
    if (opened != 0)
        return opened;
    static char text[N_LINES][TEST_GPU_LINE_BYTES];
    const char *lines[N_LINES];
    test_gpu_random_lines(text, lines, N_LINES, 20);
    compare_unfused(model, NMT_PRECISION_FP16, lines);
    compare_unfused(model, NMT_PRECISION_BF16, lines);
    check_invariance(model, lines);
    check_fallback(model, lines);
    nmt_model_free(model);
    return test_finish("test_gpu_fused_output");
}
