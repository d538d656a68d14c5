/* test_step_ensemble.c: several step models as one (decoder/step_ensemble.h)
 * on scripted fakes, whose scores follow each row's token history (so a
 * member that is not reordered, or reordered wrongly, scores wrongly).
 *  - a step's scores are sum_i w_i log p_i, computed here in double, to the
 *    bit, before and after a reorder; a member of weight 0 adds nothing,
 *    even when its scores are -inf or NaN;
 *  - the attention argmax and weights are the first member's;
 *  - the beam search over an ensemble finds what it finds over one fake
 *    that scores the hand-computed sum itself;
 *  - bad weights and mismatched members are refused, naming the reason. */
#include "error.h"
#include "search.h"
#include "step_ensemble.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { V = 9, MAX_ROWS = 64, EOS = 2, SRC = 4 };

/* A member: row r's history is one hash, mixed with each token it takes. */
typedef struct fake {
    uint64_t seed;
    int poison;      /* scores NaN and -inf (a member of weight 0) */
    uint64_t hash[MAX_ROWS], next[MAX_ROWS];
    float weights[MAX_ROWS * SRC]; /* attention rows */
} fake;

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

static void fake_reset(fake *f, uint64_t seed, int poison)
{
    memset(f, 0, sizeof *f);
    f->seed = seed;
    f->poison = poison;
    for (int r = 0; r < MAX_ROWS; r++)
        f->hash[r] = mix(seed, (uint64_t)r);
}

/* Row r's score of word w: in (-6, 0], exact in float. */
static float fake_score(const fake *f, int32_t r, int32_t w)
{
    if (f->poison)
        return w % 2 ? NAN : -INFINITY;
    return -(float)(mix(f->hash[r], (uint64_t)w) % 3072) / 512.0f;
}

static nmt_status fake_step(void *self, int32_t n_rows, const int32_t *prev, float *log_probs,
                            int32_t *attn_argmax, nmt_error *err)
{
    fake *f = self;
    (void)err;
    for (int32_t r = 0; r < n_rows; r++) {
        f->hash[r] = mix(f->hash[r], (uint64_t)prev[r]);
        for (int32_t w = 0; w < V; w++)
            log_probs[r * V + w] = fake_score(f, r, w);
        attn_argmax[r] = (int32_t)(f->hash[r] % SRC);
        for (int32_t j = 0; j < SRC; j++)
            f->weights[r * SRC + j] = (float)(f->hash[r] % 1000) + (float)j;
    }
    return NMT_STATUS_OK;
}

static nmt_status fake_reorder(void *self, int32_t n_rows, const int32_t *parent,
                               nmt_error *err)
{
    fake *f = self;
    (void)err;
    for (int32_t i = 0; i < n_rows; i++)
        f->next[i] = f->hash[parent[i]];
    memcpy(f->hash, f->next, sizeof f->hash[0] * (size_t)n_rows);
    return NMT_STATUS_OK;
}

static const float *fake_attention(void *self, int32_t *stride)
{
    *stride = SRC;
    return ((fake *)self)->weights;
}

static nmt_step_model fake_model(fake *f)
{
    return (nmt_step_model){.self = f, .vocab_size = V, .step = fake_step,
                            .reorder = fake_reorder, .attention = fake_attention};
}

/* The hand computation: one fake scoring sum_i w_i log p_i of its own
 * copies of the members, in double. */
typedef struct summed {
    int32_t n;
    fake members[3];
    float weights[3];
} summed;

static nmt_status summed_step(void *self, int32_t n_rows, const int32_t *prev, float *log_probs,
                              int32_t *attn_argmax, nmt_error *err)
{
    summed *s = self;
    float lp[MAX_ROWS * V];
    int32_t argmax[MAX_ROWS];
    double sum[MAX_ROWS * V] = {0};
    for (int32_t i = 0; i < s->n; i++) {
        fake_step(&s->members[i], n_rows, prev, lp, i == 0 ? attn_argmax : argmax, err);
        for (int32_t k = 0; k < n_rows * V; k++)
            if (s->weights[i] != 0.0f)
                sum[k] += (double)s->weights[i] * (double)lp[k];
    }
    for (int32_t k = 0; k < n_rows * V; k++)
        log_probs[k] = (float)sum[k];
    return NMT_STATUS_OK;
}

static nmt_status summed_reorder(void *self, int32_t n_rows, const int32_t *parent,
                                 nmt_error *err)
{
    summed *s = self;
    for (int32_t i = 0; i < s->n; i++)
        fake_reorder(&s->members[i], n_rows, parent, err);
    return NMT_STATUS_OK;
}

static const float *summed_attention(void *self, int32_t *stride)
{
    return fake_attention(&((summed *)self)->members[0], stride);
}

static nmt_step_model summed_model(summed *s)
{
    return (nmt_step_model){.self = s, .vocab_size = V, .step = summed_step,
                            .reorder = summed_reorder, .attention = summed_attention};
}

static fake members[3];

/* members[0 .. n) of seeds seed + i (the last poisoned when asked), the
 * hand sum's copies of them, and the ensemble over the members (NULL when
 * create fails: a CHECK). */
static nmt_step_ensemble *make(int32_t n, const float *weights, uint64_t seed, int poison_last,
                               summed *hand)
{
    nmt_step_model steps[3];
    hand->n = n;
    for (int32_t i = 0; i < n; i++) {
        fake_reset(&members[i], seed + (uint64_t)i, poison_last && i == n - 1);
        fake_reset(&hand->members[i], seed + (uint64_t)i, poison_last && i == n - 1);
        hand->weights[i] = weights[i];
        steps[i] = fake_model(&members[i]);
    }
    nmt_step_ensemble *e = NULL;
    nmt_error err = {0};
    CHECK(nmt_step_ensemble_create(steps, weights, n, MAX_ROWS, &e, &err) == NMT_STATUS_OK,
          "create: %s", err.message);
    return e;
}

/* A step and a reorder and a step again, against the hand sum. */
static void check_steps(int32_t n, const float *weights, int poison_last)
{
    static summed hand;
    nmt_step_ensemble *e = make(n, weights, 100, poison_last, &hand);
    nmt_error err = {0};
    if (!e)
        return;
    const nmt_step_model model = nmt_step_ensemble_model(e), ref = summed_model(&hand);
    const int32_t rows = 5, prev[5] = {1, 4, 4, 7, 3}, parent[5] = {2, 2, 0, 4, 1};
    float got[MAX_ROWS * V], want[MAX_ROWS * V];
    int32_t got_arg[MAX_ROWS], want_arg[MAX_ROWS];
    for (int pass = 0; pass < 2; pass++) {
        test_poison_f32(got, MAX_ROWS * V);
        CHECK(model.step(model.self, rows, prev, got, got_arg, &err) == NMT_STATUS_OK, "step: %s",
              err.message);
        ref.step(ref.self, rows, prev, want, want_arg, &err);
        CHECK(!memcmp(got, want, sizeof(float) * rows * V),
              "%d members, pass %d: the scores are not sum_i w_i log p_i to the bit", n, pass);
        for (int32_t k = 0; k < rows * V; k++)
            CHECK(!isnan(got[k]), "score %d is NaN (a member of weight 0 counted)", k);
        CHECK(!memcmp(got_arg, want_arg, sizeof(int32_t) * rows), "attention argmax not the "
              "first member's");
        int32_t s1 = 0, s2 = 0;
        const float *a1 = model.attention(model.self, &s1), *a2 = ref.attention(ref.self, &s2);
        CHECK(s1 == s2 && !memcmp(a1, a2, sizeof(float) * rows * SRC),
              "attention weights not the first member's");
        CHECK(model.reorder(model.self, rows, parent, &err) == NMT_STATUS_OK, "reorder: %s",
              err.message);
        ref.reorder(ref.self, rows, parent, &err);
    }
    CHECK(model.step(model.self, MAX_ROWS + 1, prev, got, got_arg, &err) != NMT_STATUS_OK,
          "more rows than created for: accepted");
    nmt_step_ensemble_free(e);
}

static int same_results(const nmt_search_result *a, const nmt_search_result *b)
{
    if (a->n_hypotheses != b->n_hypotheses)
        return 0;
    for (int32_t h = 0; h < a->n_hypotheses; h++) {
        const nmt_search_hypothesis *x = &a->hypotheses[h], *y = &b->hypotheses[h];
        if (x->length != y->length || x->log_prob != y->log_prob || x->score != y->score ||
            memcmp(x->tokens, y->tokens, sizeof(int32_t) * x->length) ||
            memcmp(x->attn_argmax, y->attn_argmax, sizeof(int32_t) * x->length) ||
            memcmp(x->token_scores, y->token_scores, sizeof(float) * (x->length + 1)))
            return 0;
    }
    return 1;
}

/* The beam search over the ensemble and over the hand sum: the same results. */
static void check_search(int32_t n, const float *weights)
{
    static summed hand;
    nmt_step_ensemble *e = make(n, weights, 7, 0, &hand);
    nmt_error err = {0};
    if (!e)
        return;
    const nmt_search_config config = {
        .params = {.beam_size = 4, .n_best = 3, .alpha = 0.6f, .max_len_a = 1.0f,
                   .max_len_b = 3},
        .pad_id = 0,
        .bos_id = 1,
        .eos_id = EOS,
    };
    const int32_t src_len[3] = {2, 5, 1};
    nmt_search_result got[3], want[3];
    const nmt_step_model model = nmt_step_ensemble_model(e), ref = summed_model(&hand);
    CHECK(nmt_beam_search(&model, 3, src_len, &config, got, &err) == NMT_STATUS_OK,
          "search: %s", err.message);
    CHECK(nmt_beam_search(&ref, 3, src_len, &config, want, &err) == NMT_STATUS_OK,
          "search: %s", err.message);
    for (int s = 0; s < 3; s++) {
        CHECK(got[s].n_hypotheses > 0 && same_results(&got[s], &want[s]),
              "%d members: sentence %d differs from the search over the hand sum", n, s);
        nmt_search_result_clear(&got[s]);
        nmt_search_result_clear(&want[s]);
    }
    nmt_step_ensemble_free(e);
}

static void check_refused(const float *weights, int32_t n, const char *expect)
{
    nmt_step_model steps[NMT_MAX_ENSEMBLE_MODELS + 1];
    for (int32_t i = 0; i < NMT_MAX_ENSEMBLE_MODELS + 1; i++) {
        fake_reset(&members[i % 3], 1, 0);
        steps[i] = fake_model(&members[i % 3]);
    }
    nmt_step_ensemble *e = NULL;
    nmt_error err = {0};
    const nmt_status st = nmt_step_ensemble_create(steps, weights, n, MAX_ROWS, &e, &err);
    CHECK(st == NMT_STATUS_ERROR_ARGUMENT && !e && strstr(err.message, expect),
          "weights of %d models: expected a refusal naming '%s', got %d '%s'", n, expect,
          (int)st, err.message);
    nmt_step_ensemble_free(e);
}

int main(void)
{
    test_seed();
    const float one[1] = {1.0f}, two[2] = {0.25f, 2.0f}, three[3] = {0.5f, 1.0f / 3.0f, 0.0f};
    check_steps(1, one, 0);
    check_steps(2, two, 0);
    check_steps(3, three, 1); /* the last member's NaN and -inf weigh 0 */
    check_search(1, one);
    check_search(2, two);
    check_search(3, (const float[3]){1.0f / 3.0f, 1.0f / 3.0f, 1.0f / 3.0f});

    const float nine[NMT_MAX_ENSEMBLE_MODELS + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    check_refused(nine, 0, "0 models");
    check_refused(nine, NMT_MAX_ENSEMBLE_MODELS + 1, "models, must be 1..");
    check_refused((const float[2]){1.0f, -0.5f}, 2, "weight 2 is -0.5");
    check_refused((const float[2]){NAN, 1.0f}, 2, "weight 1 is nan");
    check_refused((const float[2]){INFINITY, 1.0f}, 2, "weight 1 is inf");
    check_refused((const float[2]){0.0f, 0.0f}, 2, "every weight is 0");
    {
        fake a, b;
        fake_reset(&a, 1, 0);
        fake_reset(&b, 2, 0);
        nmt_step_model steps[2] = {fake_model(&a), fake_model(&b)};
        steps[1].vocab_size = V + 1;
        nmt_step_ensemble *e = NULL;
        nmt_error err = {0};
        CHECK(nmt_step_ensemble_create(steps, two, 2, MAX_ROWS, &e, &err) ==
                      NMT_STATUS_ERROR_ARGUMENT &&
                  strstr(err.message, "model 2 scores 10 words, model 1 9"),
              "other vocabulary sizes: '%s'", err.message);
        nmt_step_ensemble_free(e);
    }
    return test_finish("test_step_ensemble");
}
