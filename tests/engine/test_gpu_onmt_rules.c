/* test_gpu_onmt_rules.c: --search-rules onmt on the GPU (decoder/cuda/beam_step.cu)
 * against the CPU search (decoder/beam_search.c) through the public API, as
 * test_gpu_translate.c does for v1: on the test model (NMT_TEST_MODEL),
 * random lines of 1..20 source words are translated with device cpu and
 * device cuda, both with search_rules onmt, at several batch sizes, beams,
 * n-best sizes and alphas; one configuration has a max length short enough
 * that most hypotheses are cut there (no EOS), one shrinks with LSH. Every
 * hypothesis text must be identical on >= 99% of the lines and the scores
 * within 1e-3; differing lines are printed with both scores. Device auto
 * must take the GPU with these rules. Exit 77 without a GPU. */
#include "nmt.h"
#include "cuda_ctx.h"
#include "test_gpu_model.h"
#include "test_results.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N_LINES 100

typedef struct config {
    int batch, beam, n_best;
    float alpha, max_len_a;
    int max_len_b, lsh;
} config;

static nmt_options make_options(nmt_device device, const config *c)
{
    nmt_options o;
    nmt_options_init(&o);
    o.warmup = 0;
    o.device = device;
    o.search_rules = NMT_SEARCH_RULES_ONMT;
    o.unk_replace = 0;
    o.batch_size = c->batch;
    o.beam_size = c->beam;
    o.n_best = c->n_best;
    o.alpha = c->alpha;
    o.max_len_a = c->max_len_a;
    o.max_len_b = c->max_len_b;
    if (c->lsh) {
        o.shrink.mode = NMT_SHRINK_LSH;
        o.shrink.k = 8, o.shrink.u = 2, o.shrink.w = 64, o.shrink.top = 100;
        o.shrink.threshold = 2;
    }
    return o;
}

static int same_line(const nmt_result *a, const nmt_result *b)
{
    if (a->status != b->status || a->n_hypotheses != b->n_hypotheses)
        return 0;
    for (int h = 0; h < a->n_hypotheses; h++) {
        const nmt_hypothesis *x = &a->hypotheses[h], *y = &b->hypotheses[h];
        if (strcmp(x->text, y->text) || x->n_tokens != y->n_tokens ||
            fabsf(x->score - y->score) > 1e-3f || fabsf(x->log_prob - y->log_prob) > 1e-3f)
            return 0;
    }
    return 1;
}

static void compare(const nmt_model *model, const config *c, const char *const *lines)
{
    const nmt_options cpu = make_options(NMT_DEVICE_CPU, c);
    const nmt_options gpu = make_options(NMT_DEVICE_CUDA, c);
    int hyps = 0;
    const int differing = test_gpu_count_differing(model, &cpu, &gpu, lines, N_LINES, same_line,
                                                   "onmt", &hyps);
    if (differing < 0)
        return;
    /* <= 1% of the lines, and at least one line may differ (near-ties). */
    CHECK(differing <= (N_LINES + 99) / 100, "batch %d beam %d n_best %d alpha %g max "
          "%gS+%d lsh %d: %d of %d lines differ", c->batch, c->beam, c->n_best, c->alpha,
          c->max_len_a, c->max_len_b, c->lsh, differing, N_LINES);
    fprintf(stderr, "onmt batch %d beam %d n_best %d alpha %g max %gS+%d lsh %d: %d of %d "
            "lines differ (%d hypotheses)\n", c->batch, c->beam, c->n_best, c->alpha,
            c->max_len_a, c->max_len_b, c->lsh, differing, N_LINES, hyps);
}

int main(void)
{
    test_gpu_input in;
    const int opened = test_gpu_input_open(NMT_TEST_MODEL, N_LINES, 20, &in);
    if (opened != 0)
        return opened;
    /* Device auto with the onmt rules: the GPU now. */
    nmt_options o;
    nmt_options_init(&o);
    o.warmup = 0;
    o.search_rules = NMT_SEARCH_RULES_ONMT;
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    CHECK(nmt_translator_create(in.model, &o, &t, &err) == NMT_STATUS_OK &&
              nmt_translator_device(t) == NMT_DEVICE_CUDA,
          "device auto with onmt rules: %s", t ? "took the CPU" : err.message);
    nmt_translator_free(t);

    const config configs[] = {
        {1, 5, 1, 1.0f, 1.25f, 5, 0},   /* onmt_translate's defaults */
        {7, 3, 2, 1.0f, 1.25f, 5, 0},
        {37, 5, 3, 0.6f, 2.0f, 10, 0},  /* alpha: a non-integer penalty */
        {100, 1, 1, 1.0f, 1.25f, 5, 0}, /* beam 1 */
        {37, 12, 12, 0.0f, 1.25f, 5, 0}, /* alpha 0: no division */
        {16, 5, 2, 1.0f, 0.5f, 1, 0},   /* short max length: hypotheses cut there */
        {7, 5, 1, 1.0f, 1.25f, 5, 1},   /* LSH: PAD and BOS in the lists too */
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        compare(in.model, &configs[i], in.lines);
    test_gpu_input_free(&in);
    return test_finish("test_gpu_onmt_rules");
}
