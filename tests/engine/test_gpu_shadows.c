/* test_gpu_shadows.c: the decoder step's 16-bit shadows (model/cuda/gemm.c,
 * "Shadows": the kernels that produce a 16-bit GEMM's input also write it
 * rounded, and the GEMM runs no rounding pass) change no bit of any output.
 * The test model translates random lines of 1..20 words through the public
 * API twice per configuration, shadows on and off (NMT_TEST_NO_SHADOWS=1,
 * read at create), and every line must have the same bits (text, scores,
 * token scores, alignment, attention weights): fp16 and bf16, batch 1 (a
 * few rows on cuBLASLt), 64 and 300 (1,500 rows: the attention's warp
 * variant), the fused output layer, batch invariance off (the few-row
 * kernels and the carried layer 0, which write no shadows), TOP and LSH
 * shrinking (the feed's shadow is not written for LSH's lists), attention
 * weights kept, n-best 2. Exit 77 without a GPU. */
#include "nmt.h"
#include "test_gpu_model.h"
#include "test_results.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_LINES 300

typedef struct shadow_case {
    const char *name;
    nmt_precision precision;
    int batch, fused, invariant, attention;
    nmt_shrink_mode shrink;
} shadow_case;

static nmt_options options_of(const shadow_case *c)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CUDA;
    o.precision = c->precision;
    o.warmup = 0;
    o.batch_size = c->batch;
    o.beam_size = 5;
    o.n_best = 2;
    o.fused_output = c->fused;
    o.batch_invariant = c->invariant;
    o.attention_weights = c->attention;
    o.shrink.mode = c->shrink;
    if (c->shrink != NMT_SHRINK_NONE) {
        o.shrink.k = 16, o.shrink.u = 3, o.shrink.w = 64;
        o.shrink.top = c->shrink == NMT_SHRINK_TOP ? 200 : 100;
        o.shrink.threshold = 1;
    }
    return o;
}

static void check_case(const nmt_model *model, const shadow_case *c, const char *const *lines)
{
    static nmt_result on[N_LINES], off[N_LINES];
    const nmt_options o = options_of(c);
    unsetenv("NMT_TEST_NO_SHADOWS");
    const int ran_on = test_gpu_translate_with(model, &o, lines, N_LINES, on);
    setenv("NMT_TEST_NO_SHADOWS", "1", 1);
    const int ran_off = test_gpu_translate_with(model, &o, lines, N_LINES, off);
    unsetenv("NMT_TEST_NO_SHADOWS");
    if (ran_on && ran_off) {
        int differ = 0, translated = 0;
        char why[256];
        for (int i = 0; i < N_LINES; i++) {
            translated += on[i].status == NMT_STATUS_OK;
            if (!test_bitwise_line(&on[i], &off[i], why, sizeof why) && differ++ < 3)
                fprintf(stderr, "  %s line %d: %s\n", c->name, i, why);
        }
        CHECK(differ == 0, "%s: %d of %d lines change bits with the shadows", c->name, differ,
              N_LINES);
        CHECK(translated > N_LINES / 2, "%s: only %d lines translated", c->name, translated);
        fprintf(stderr, "%s %s: %d lines, shadows on = off\n", differ ? "FAIL" : "ok  ",
                c->name, N_LINES);
    }
    test_clear_results(on, N_LINES);
    test_clear_results(off, N_LINES);
}

int main(void)
{
    test_gpu_input in;
    const int opened = test_gpu_input_open(NMT_TEST_MODEL, N_LINES, 20, &in);
    if (opened != 0)
        return opened;
    const nmt_precision F = NMT_PRECISION_FP16, B = NMT_PRECISION_BF16;
    const nmt_shrink_mode none = NMT_SHRINK_NONE;
    const shadow_case cases[] = {
        {"fp16 batch 1", F, 1, 0, 1, 0, none},
        {"fp16 batch 64", F, 64, 0, 1, 0, none},
        {"bf16 batch 64", B, 64, 0, 1, 0, none},
        {"fp16 batch 300", F, 300, 0, 1, 0, none},
        {"fp16 batch 64 fused output", F, 64, 1, 1, 0, none},
        {"bf16 batch 1 fused output", B, 1, 1, 1, 0, none},
        {"fp16 batch 64 not invariant", F, 64, 0, 0, 0, none},
        {"fp16 batch 1 not invariant", F, 1, 0, 0, 0, none},
        {"fp16 batch 64 attention weights", F, 64, 0, 1, 1, none},
        {"fp16 batch 64 TOP", F, 64, 0, 1, 0, NMT_SHRINK_TOP},
        {"fp16 batch 64 LSH", F, 64, 0, 1, 0, NMT_SHRINK_LSH},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(in.model, &cases[i], in.lines);
    test_gpu_input_free(&in);
    return test_finish("test_gpu_shadows");
}
