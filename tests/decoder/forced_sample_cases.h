/* forced_sample_cases.h: target prefixes with random sampling
 * (decoder/forced_tokens.h, nmt_rule_sample_forced; docs/decoding.md,
 * "Target prefixes"), included once by test_beam_search.c after
 * forced_rules_cases.h. Every sample of a sentence takes its prefix with the
 * model's log-probabilities (the logit rules and the temperature leave a
 * forced step alone), then draws from the distribution after it, the draw
 * of step t keyed by t; a prefix ending in EOS finishes every sample;
 * min_length counts the prefix; a seed and key give the same samples alone
 * and in a batch; alternatives and scoring stay refused with sampling. */
#ifndef FORCED_SAMPLE_CASES_H
#define FORCED_SAMPLE_CASES_H

#include "logit_rules.h"

enum { SAMPLED_VOCAB = 8, SAMPLED_N = 16 };

/* Before two tokens a, b, c, d a quarter each (so a prefix word's log p is
 * log 1/4); after two a 0.4, b 0.3, c 0.2, d 0.1; then EOS only. */
static void draw_after_two(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                           int32_t vocab, float *out)
{
    (void)ctx, (void)sentence, (void)prefix;
    const float after[4] = {logf(0.4f), logf(0.3f), logf(0.2f), logf(0.1f)};
    for (int32_t w = 0; w < vocab; w++)
        out[w] = -INFINITY;
    if (len >= 3)
        out[EOS] = 0.0f;
    for (int32_t w = 0; len < 3 && w < 4; w++)
        out[4 + w] = len < 2 ? logf(0.25f) : after[w];
}

/* EOS 0.6, a 0.3, b 0.1 at every step. */
static void eos_likely(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                       int32_t vocab, float *out)
{
    (void)ctx, (void)sentence, (void)prefix, (void)len;
    for (int32_t w = 0; w < vocab; w++)
        out[w] = -INFINITY;
    out[EOS] = logf(0.6f), out[4] = logf(0.3f), out[5] = logf(0.1f);
}

static nmt_search_config sampling_config(int32_t samples, int32_t topk, uint64_t seed)
{
    nmt_search_config cfg = make_config(1, samples, 0.0f, 0.0f, 12);
    cfg.unk_id = UNK;
    cfg.params.sampling_topk = topk;
    cfg.params.sampling_topp = 1.0f;
    cfg.params.sampling_temperature = 1.0f;
    cfg.params.seed = seed;
    return cfg;
}

/* n sentences (fake ids `ids`, source length 1) sampled with prefixes
 * (offset, prefix) and keys. */
static nmt_status search_sampled(fake_model *fake, table_fn table, int raw_logits,
                                 nmt_search_config cfg, int32_t n, const int32_t *ids,
                                 const int32_t *offset, const int32_t *prefix,
                                 const uint64_t *keys, nmt_search_result *res, nmt_error *err)
{
    const int32_t src[MAX_SENT] = {1, 1, 1, 1, 1, 1, 1, 1};
    const nmt_forced_tokens f = {offset, prefix, NULL};
    cfg.forced = &f;
    cfg.line_keys = keys;
    nmt_step_model model = fake_init(fake, table, NULL, SAMPLED_VOCAB, n, ids);
    fake->raw_logits = raw_logits;
    return nmt_beam_search(&model, n, src, &cfg, res, err);
}

/* Every hypothesis of res starts with prefix[0 .. n), each token scored
 * as log_p(j, word) says (the model's, before any rule). */
static void check_sampled_prefix(const char *name, const nmt_search_result *res, int32_t samples,
                                 const int32_t *prefix, int32_t n,
                                 float (*log_p)(int32_t len, int32_t w))
{
    CHECK(res->n_hypotheses == samples, "%s: %d samples, asked %d", name, res->n_hypotheses,
          samples);
    for (int32_t h = 0; h < res->n_hypotheses; h++) {
        const nmt_search_hypothesis *hyp = &res->hypotheses[h];
        CHECK(hyp->length >= n && !memcmp(hyp->tokens, prefix, sizeof(int32_t) * (size_t)n),
              "%s: sample %d does not start with the prefix", name, h);
        for (int32_t j = 0; j < n && j < hyp->length; j++)
            CHECK(fabsf(hyp->token_scores[j] - log_p(j, prefix[j])) < 1e-5f,
                  "%s: sample %d forced token %d scores %g, the model %g", name, h, j,
                  hyp->token_scores[j], log_p(j, prefix[j]));
    }
}

static float quarter_log_p(int32_t len, int32_t w)
{
    (void)len, (void)w;
    return logf(0.25f);
}

/* The word u draws from draw_after_two's row after two tokens. */
static int32_t after_two_word(double u)
{
    const double q[4] = {0.4, 0.3, 0.2, 0.1};
    double sum = 0.0;
    for (int i = 0; i < 4; i++)
        if ((sum += q[i]) > u)
            return 4 + i;
    return 7;
}

/* Whether the samples' third words are, as a multiset, those the uniforms
 * of (seed, key, sample, step) draw for samples 0 .. n. */
static int third_words_drawn_at(const nmt_search_result *res, uint64_t seed, uint64_t key,
                                int32_t n, int32_t step)
{
    int32_t want[SAMPLED_N];
    for (int32_t s = 0; s < n; s++)
        want[s] = after_two_word(nmt_rule_sample_uniform(seed, key, s, step));
    for (int32_t h = 0; h < res->n_hypotheses; h++) {
        int found = 0;
        for (int32_t s = 0; s < n && !found && res->hypotheses[h].length == 3; s++)
            if (want[s] == res->hypotheses[h].tokens[2]) {
                want[s] = -1;
                found = 1;
            }
        if (!found)
            return 0;
    }
    return 1;
}

/* The first free word: top-K 3 (d out) and the whole vocabulary, each
 * sample's draw at step 3 under step 3's key; a table allowing one word
 * after the prefix gives it to every sample. */
static void test_sampled_draws(fake_model *fake)
{
    const int32_t offset[2] = {0, 2}, prefix[2] = {6, 7}, one = 0; /* c d */
    const uint64_t key = 41;
    const int32_t topks[2] = {3, NMT_SAMPLING_ALL};
    for (int k = 0; k < 2; k++) {
        nmt_search_config cfg = sampling_config(SAMPLED_N, topks[k], 2026);
        nmt_search_result res = {0};
        nmt_error err = {0};
        CHECK(search_sampled(fake, draw_after_two, 0, cfg, 1, &one, offset, prefix, &key, &res,
                             &err) == NMT_STATUS_OK,
              "sampled prefix: %s", err.message);
        check_sampled_prefix("sampled prefix", &res, SAMPLED_N, prefix, 2, quarter_log_p);
        int top3 = 1;
        for (int32_t h = 0; h < res.n_hypotheses; h++) {
            const nmt_search_hypothesis *hyp = &res.hypotheses[h];
            CHECK(hyp->length == 3, "sampled prefix: a sample of %d tokens", hyp->length);
            top3 &= hyp->length != 3 || hyp->tokens[2] != 7;
        }
        CHECK(topks[k] != 3 || top3, "top-K 3 drew d");
        if (topks[k] == NMT_SAMPLING_ALL) {
            CHECK(third_words_drawn_at(&res, 2026, key, SAMPLED_N, 3),
                  "the first free words are not the draws of step 3's keys");
            /* The check tells step 3's keys from the first free step's. */
            CHECK(!third_words_drawn_at(&res, 2026, key, SAMPLED_N, 1),
                  "step 1's keys draw the same words: the test shows nothing");
        }
        nmt_search_result_clear(&res);
    }
    /* eos_likely after a prefix of b with min_length 1: one word left. */
    nmt_search_config cfg = sampling_config(4, 2, 5);
    const int32_t b_only[1] = {5}, off1[2] = {0, 1};
    cfg.params.min_length = 2;
    cfg.params.no_repeat_ngram_size = 1; /* b held: a is the one word left */
    cfg.params.max_len_b = 3;
    nmt_search_result res = {0};
    nmt_error err = {0};
    CHECK(search_sampled(fake, eos_likely, 0, cfg, 1, &one, off1, b_only, &key, &res, &err) ==
              NMT_STATUS_OK,
          "one word left: %s", err.message);
    for (int32_t h = 0; h < res.n_hypotheses; h++)
        CHECK(res.hypotheses[h].length >= 2 && res.hypotheses[h].tokens[1] == 4,
              "one word left: sample %d's second token is not a", h);
    CHECK(res.n_hypotheses == 4, "one word left: %d samples", res.n_hypotheses);
    nmt_search_result_clear(&res);
}

/* The logit rules see the prefix and leave its steps alone; min_length
 * counts it; a prefix ending in EOS finishes every sample. */
static void test_sampled_rules(fake_model *fake)
{
    const int32_t one = 0;
    const uint64_t key = 3;
    /* UNK a a forced under ban_unk, no-repeat 1 and a repetition penalty:
     * taken at the model's log p; after them no UNK and no word twice. */
    nmt_search_config cfg = sampling_config(6, 3, 11);
    cfg.params.ban_unk = 1;
    cfg.params.no_repeat_ngram_size = 1;
    cfg.params.repetition_penalty = 4.0f;
    cfg.params.sampling_temperature = 0.5f;
    const int32_t offset[2] = {0, 3}, prefix[3] = {UNK, 4, 4};
    nmt_search_result res = {0};
    nmt_error err = {0};
    CHECK(search_sampled(fake, rules_logits, 1, cfg, 1, &one, offset, prefix, &key, &res,
                         &err) == NMT_STATUS_OK,
          "prefix under the rules: %s", err.message);
    check_sampled_prefix("prefix under the rules", &res, 6, prefix, 3, rules_log_p);
    for (int32_t h = 0; h < res.n_hypotheses; h++) {
        const nmt_search_hypothesis *hyp = &res.hypotheses[h];
        for (int32_t j = 3; j < hyp->length; j++) {
            CHECK(hyp->tokens[j] != UNK, "prefix under the rules: UNK at %d", j);
            for (int32_t i = 0; i < j; i++)
                CHECK(hyp->tokens[i] != hyp->tokens[j],
                      "prefix under the rules: token %d repeats token %d", j, i);
        }
    }
    nmt_search_result_clear(&res);

    /* min_length 3 with a prefix of 2: EOS banned at step 3 only. */
    cfg = sampling_config(8, 2, 1);
    cfg.params.min_length = 3;
    const int32_t ab[2] = {4, 5}, off2[2] = {0, 2};
    CHECK(search_sampled(fake, eos_likely, 0, cfg, 1, &one, off2, ab, &key, &res, &err) ==
              NMT_STATUS_OK,
          "min_length: %s", err.message);
    int at_least = res.n_hypotheses == 8, shortest = 0;
    for (int32_t h = 0; h < res.n_hypotheses; h++) {
        at_least &= res.hypotheses[h].length >= 3;
        shortest |= res.hypotheses[h].length == 3;
    }
    CHECK(at_least && shortest, "min_length 3 after a prefix of 2: not every sample has 3 "
          "tokens, or none ends there");
    nmt_search_result_clear(&res);

    /* A prefix ending in EOS: every sample is the prefix, EOS scored. */
    cfg = sampling_config(3, NMT_SAMPLING_ALL, 1);
    cfg.params.min_length = 5;
    const int32_t a_eos[2] = {4, EOS};
    CHECK(search_sampled(fake, eos_likely, 0, cfg, 1, &one, off2, a_eos, &key, &res, &err) ==
              NMT_STATUS_OK,
          "EOS prefix: %s", err.message);
    CHECK(res.n_hypotheses == 3, "EOS prefix: %d samples", res.n_hypotheses);
    for (int32_t h = 0; h < res.n_hypotheses; h++)
        CHECK(res.hypotheses[h].length == 1 && res.hypotheses[h].tokens[0] == 4 &&
                  fabsf(res.hypotheses[h].log_prob - (logf(0.3f) + logf(0.6f))) < 1e-5f,
              "EOS prefix: sample %d has %d tokens, log p %g", h, res.hypotheses[h].length,
              res.hypotheses[h].log_prob);
    nmt_search_result_clear(&res);
}

/* A sentence samples the same bits alone, again, and in a batch with
 * other prefixes (keys its own). */
static void test_sampled_invariance(fake_model *fake)
{
    const nmt_search_config cfg = sampling_config(4, 3, 77);
    const int32_t ids[3] = {0, 1, 2}, offset[4] = {0, 1, 1, 3}, prefix[3] = {4, 5, 6};
    const uint64_t keys[3] = {10, 11, 12};
    nmt_search_result all[3], alone[2];
    nmt_error err = {0};
    CHECK(search_sampled(fake, rules_logits, 1, cfg, 3, ids, offset, prefix, keys, all, &err) ==
              NMT_STATUS_OK,
          "batch: %s", err.message);
    const int32_t off_alone[2] = {0, 2};
    for (int r = 0; r < 2; r++)
        CHECK(search_sampled(fake, rules_logits, 1, cfg, 1, &ids[2], off_alone, prefix + 1,
                             &keys[2], &alone[r], &err) == NMT_STATUS_OK,
              "alone: %s", err.message);
    check_sampled_prefix("batched", &all[2], 4, prefix + 1, 2, rules_log_p);
    for (int r = 0; r < 2; r++) {
        const int same = alone[r].n_hypotheses == all[2].n_hypotheses;
        CHECK(same, "alone %d samples, batched %d", alone[r].n_hypotheses, all[2].n_hypotheses);
        for (int32_t h = 0; same && h < alone[r].n_hypotheses; h++) {
            const nmt_search_hypothesis *x = &alone[r].hypotheses[h], *y = &all[2].hypotheses[h];
            CHECK(x->length == y->length && x->log_prob == y->log_prob &&
                      !memcmp(x->tokens, y->tokens, sizeof(int32_t) * (size_t)x->length) &&
                      !memcmp(x->token_scores, y->token_scores,
                              sizeof(float) * (size_t)(x->length + 1)),
                  "run %d: sample %d differs alone and batched", r, h);
        }
        nmt_search_result_clear(&alone[r]);
    }
    for (int i = 0; i < 3; i++)
        nmt_search_result_clear(&all[i]);
}

/* Sampling refuses alternatives and scoring. */
static void test_sampled_refusals(fake_model *fake)
{
    const int32_t offset[2] = {0, 1}, ids[1] = {4}, rank = 0, one = 1;
    const nmt_forced_tokens with_rank = {offset, ids, &rank}, plain = {offset, ids, NULL};
    nmt_search_config cfg = sampling_config(2, 3, 1);
    cfg.forced = &with_rank;
    nmt_search_result res = {0};
    nmt_error err = {0};
    nmt_step_model model = fake_init(fake, rules_logits, NULL, SAMPLED_VOCAB, 1, NULL);
    CHECK(nmt_beam_search(&model, 1, &one, &cfg, &res, &err) == NMT_STATUS_ERROR_ARGUMENT &&
              strstr(err.message, "sampling") && res.n_hypotheses == 0,
          "an alternative with sampling: \"%s\"", err.message);
    cfg.forced = &plain;
    model = fake_init(fake, rules_logits, NULL, SAMPLED_VOCAB, 1, NULL);
    err = (nmt_error){0};
    CHECK(nmt_score_forced(&model, 1, &one, &cfg, &res, &err) == NMT_STATUS_ERROR_ARGUMENT &&
              strstr(err.message, "scoring: not with sampling") && res.n_hypotheses == 0,
          "scoring with sampling: \"%s\"", err.message);
}

static void test_forced_sampling(fake_model *fake)
{
    test_sampled_draws(fake);
    test_sampled_rules(fake);
    test_sampled_invariance(fake);
    test_sampled_refusals(fake);
}

#endif /* FORCED_SAMPLE_CASES_H */
