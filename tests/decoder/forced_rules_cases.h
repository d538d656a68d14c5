/* forced_rules_cases.h: forced tokens with the logit rules and sampling
 * (decoder/forced_tokens.h, nmt_rule_forced_step; decoder/forced_search.h,
 * nmt_forced_params_check), included once by test_beam_search.c after
 * forced_cases.h. A prefix is taken as the model scores it, whatever the
 * rules say of its words; the free steps after it follow the rules, which
 * see the prefix as part of the hypothesis. Scoring takes no rule
 * (sampling with prefixes: forced_sample_cases.h). */
#ifndef FORCED_RULES_CASES_H
#define FORCED_RULES_CASES_H

/* Logits a 3, UNK 2.5, b 2, c 1, d 0.5 at every step; EOS -1, or 5 from
 * six tokens on. */
static void rules_logits(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                         int32_t vocab, float *out)
{
    (void)ctx, (void)sentence, (void)prefix;
    const float z[8] = {-10.0f, -10.0f, len >= 6 ? 5.0f : -1.0f, 2.5f, 3.0f, 2.0f, 1.0f, 0.5f};
    for (int32_t w = 0; w < vocab; w++)
        out[w] = z[w];
}

/* The model's log p of word w after len tokens (what the fake's step gives). */
static float rules_log_p(int32_t len, int32_t w)
{
    float z[8], lp[8];
    rules_logits(NULL, 0, NULL, len, 8, z);
    nmt_cpu_log_softmax(1, 8, z, 8, lp);
    return lp[w];
}

typedef struct forced_rules_case {
    const char *name;
    int32_t n_forced, ids[3];
    int32_t no_repeat, ban_unk, min_length;
    float repetition;
    int32_t next; /* the first free word the rules leave best; -1: the prefix ends in EOS */
} forced_rules_case;

static void check_forced_rules_case(fake_model *fake, const forced_rules_case *c)
{
    nmt_search_config cfg = make_config(2, 1, 0.0f, 0.0f, 12);
    cfg.unk_id = UNK;
    cfg.params.no_repeat_ngram_size = c->no_repeat;
    cfg.params.ban_unk = c->ban_unk;
    cfg.params.min_length = c->min_length;
    cfg.params.repetition_penalty = c->repetition;
    const int32_t offset[2] = {0, c->n_forced}, one = 1;
    const nmt_forced_tokens f = {offset, c->ids, NULL};
    cfg.forced = &f;
    nmt_step_model model = fake_init(fake, rules_logits, NULL, 8, 1, NULL);
    fake->raw_logits = 1;
    nmt_search_result res = {0};
    nmt_error err = {0};
    const nmt_status st = nmt_beam_search(&model, 1, &one, &cfg, &res, &err);
    CHECK(st == NMT_STATUS_OK && res.n_hypotheses == 1, "%s: %s", c->name, err.message);
    if (st != NMT_STATUS_OK || res.n_hypotheses != 1) {
        nmt_search_result_clear(&res);
        return;
    }
    const nmt_search_hypothesis *h = &res.hypotheses[0];
    const int32_t kept = c->next < 0 ? c->n_forced - 1 : c->n_forced; /* EOS excluded */
    CHECK(h->length >= kept && !memcmp(h->tokens, c->ids, sizeof(int32_t) * (size_t)kept),
          "%s: the prefix is not the hypothesis's start", c->name);
    for (int32_t j = 0; j < kept && j < h->length; j++) /* the model's log p, rules or not */
        CHECK(fabsf(h->token_scores[j] - rules_log_p(j, c->ids[j])) < 1e-5f,
              "%s: forced token %d scores %g, the model %g", c->name, j, h->token_scores[j],
              rules_log_p(j, c->ids[j]));
    if (c->next < 0) {
        CHECK(h->length == kept, "%s: %d tokens after a prefix ending in EOS", c->name,
              h->length);
    } else {
        CHECK(h->length > kept && h->tokens[kept] == c->next, "%s: first free word %d, not %d",
              c->name, h->length > kept ? h->tokens[kept] : -1, c->next);
        for (int32_t j = kept; j < h->length; j++) {
            CHECK(!c->ban_unk || h->tokens[j] != UNK, "%s: UNK at %d", c->name, j);
            for (int32_t i = 0; c->no_repeat == 1 && i < j; i++)
                CHECK(h->tokens[i] != h->tokens[j], "%s: token %d repeats token %d", c->name,
                      j, i);
        }
        CHECK(c->min_length == 0 || h->length >= c->min_length, "%s: %d tokens, min %d",
              c->name, h->length, c->min_length);
    }
    nmt_search_result_clear(&res);
}

static void test_forced_rules(fake_model *fake)
{
    enum { a = 4, b = 5 };
    const forced_rules_case cases[] = {
        /* a repeated, then no word of the hypothesis again: UNK is the best left */
        {"no-repeat 1", 2, {a, a}, 1, 0, 0, 1.0f, UNK},
        /* UNK forced, then banned: a is best */
        {"ban_unk", 2, {UNK, a}, 0, 1, 0, 1.0f, a},
        {"ban_unk, no-repeat 1", 2, {UNK, a}, 1, 1, 0, 1.0f, b},
        /* the second a keeps its log p; a free a is penalized (3 / 4) below UNK */
        {"repetition 4", 2, {a, a}, 0, 0, 0, 4.0f, UNK},
        /* a forced EOS ends the hypothesis before min_length */
        {"min_length, EOS", 2, {a, EOS}, 0, 0, 5, 1.0f, -1},
        {"min_length", 1, {a}, 0, 0, 9, 1.0f, a},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        check_forced_rules_case(fake, &cases[c]);

    /* Scoring takes no logit rule or coverage penalty. */
    const int32_t offset[2] = {0, 1}, ids[1] = {a}, one = 1;
    const nmt_forced_tokens f = {offset, ids, NULL};
    nmt_search_config cfg;
    nmt_search_result res = {0};
    nmt_error err = {0};
    nmt_step_model model;
    const char *what[3] = {"repetition_penalty", "ban_unk", "coverage_penalty"};
    for (int k = 0; k < 3; k++) {
        cfg = make_config(1, 1, 0.0f, 0.0f, 12);
        cfg.forced = &f;
        cfg.unk_id = UNK;
        cfg.rules = k == 2 ? NMT_SEARCH_RULES_ONMT : NMT_SEARCH_RULES_V1;
        cfg.params.repetition_penalty = k == 0 ? 1.5f : 0.0f;
        cfg.params.ban_unk = k == 1;
        cfg.params.coverage_penalty = k == 2 ? NMT_COVERAGE_WU : NMT_COVERAGE_NONE;
        model = fake_init(fake, rules_logits, NULL, 8, 1, NULL);
        err = (nmt_error){0};
        CHECK(nmt_score_forced(&model, 1, &one, &cfg, &res, &err) == NMT_STATUS_ERROR_ARGUMENT &&
                  strstr(err.message, "scoring") && res.n_hypotheses == 0,
              "scoring with %s: \"%s\"", what[k], err.message);
    }
}

#endif /* FORCED_RULES_CASES_H */
