/* beam_search_hand_cases.h: the hand-worked cases of test_beam_search.c,
 * included once by it after its fake model and check helpers: tables
 * written as rules "prefix" -> "E:-1 a:-0.5" over the letters P B E U a b c
 * d, each case checking one rule of the search (model-v1) by its exact
 * result. */
#ifndef BEAM_SEARCH_HAND_CASES_H
#define BEAM_SEARCH_HAND_CASES_H

/* --- hand tables: rules "prefix" -> "E:-1 a:-0.5" (P B E U a b c d) -------- */
typedef struct rule {
    int32_t sentence; /* -1: any */
    const char *prefix;
    const char *log_probs;
} rule;

typedef struct hand_table {
    const rule *rules;
    float fallback; /* unlisted words and prefixes */
} hand_table;

static int32_t letter_id(char c)
{
    const char *specials = "PBEU";
    const char *p = strchr(specials, c);
    return p ? (int32_t)(p - specials) : 4 + (c - 'a');
}

static void hand_lookup(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                        int32_t vocab, float *out)
{
    const hand_table *t = ctx;
    for (int32_t w = 0; w < vocab; w++)
        out[w] = t->fallback;
    for (const rule *r = t->rules; r->prefix; r++) {
        if ((r->sentence >= 0 && r->sentence != sentence) || (int32_t)strlen(r->prefix) != len)
            continue;
        int match = 1;
        for (int32_t j = 0; j < len; j++)
            match &= letter_id(r->prefix[j]) == prefix[j];
        if (!match)
            continue;
        for (const char *s = r->log_probs; *s;) {
            char *end;
            int32_t w = letter_id(s[0]);
            float v = strtof(s + 2, &end);
            if (w < vocab)
                out[w] = v;
            s = end + strspn(end, " ");
        }
        return;
    }
}

/* Expects hypothesis h to be `tokens` (letters) with the given log_prob and score. */
static void expect_hyp(const char *name, const nmt_search_result *res, int32_t h,
                       const char *tokens, float log_prob, float score)
{
    if (h >= res->n_hypotheses) {
        CHECK(0, "%s: hyp %d missing (%d hyps)", name, h, res->n_hypotheses);
        return;
    }
    const nmt_search_hypothesis *hyp = &res->hypotheses[h];
    int ok = hyp->length == (int32_t)strlen(tokens);
    for (int32_t j = 0; ok && j < hyp->length; j++)
        ok = hyp->tokens[j] == letter_id(tokens[j]);
    CHECK(ok, "%s: hyp %d is not \"%s\"", name, h, tokens);
    CHECK(fabsf(hyp->log_prob - log_prob) < 1e-5f, "%s: hyp %d log_prob %g want %g", name, h,
          hyp->log_prob, log_prob);
    CHECK(fabsf(hyp->score - score) < 1e-5f, "%s: hyp %d score %g want %g", name, h, hyp->score,
          score);
}

/* Searches one sentence (id 0) of a hand table; the caller clears res. */
static void hand_search(const char *name, const rule *rules, float fallback, int32_t vocab,
                        const nmt_search_config *cfg, int32_t src_length, nmt_search_result *res,
                        fake_model *fake)
{
    hand_table t = {rules, fallback};
    nmt_step_model model = fake_init(fake, hand_lookup, &t, vocab, 1, NULL);
    fake->feeds_specials = cfg->rules == NMT_SEARCH_RULES_ONMT;
    nmt_error err = {0};
    nmt_status st = nmt_beam_search(&model, 1, &src_length, cfg, res, &err);
    CHECK(st == NMT_STATUS_OK, "%s: status %d: %s", name, st, err.message);
    if (cfg->rules == NMT_SEARCH_RULES_V1) /* its invariants are v1's */
        check_result(name, res, hand_lookup, &t, 0, vocab, cfg, src_length);
}

static void test_hand_cases(fake_model *fake)
{
    nmt_search_result res;
    nmt_search_config cfg;

    /* Greedy: a (-0.5) -> ab (-0.75; aE -2.5 is 2nd of 2B, beyond B) -> abE. */
    const rule greedy[] = {{-1, "", "a:-0.5 b:-1 E:-3"}, {-1, "a", "b:-0.25 E:-2"},
                           {-1, "ab", "E:-0.5 c:-1"}, {0}};
    cfg = make_config(1, 1, 1.0f, 0.0f, 10);
    hand_search("greedy", greedy, -INFINITY, 8, &cfg, 1, &res, fake);
    CHECK(res.n_hypotheses == 1, "greedy: %d hyps", res.n_hypotheses);
    expect_hyp("greedy", &res, 0, "ab", -1.25f, -1.25f / 3);
    CHECK(fake->n_steps == 3, "greedy: %d steps", fake->n_steps);
    nmt_search_result_clear(&res);

    /* B = 2. Step 1: a -1, b -1.5 alive (E -4 is 4th: beyond B, dropped).
     * Step 2: aE -2 and bc -2 tie, hypothesis 0 first: aE finishes (score -1),
     * then bc, aa -3 alive. Step 3: bcE -2.25 finishes (score -0.75): 2 done.
     * alpha 1 prefers bc, alpha 0 prefers a (-2 > -2.25). */
    const rule beam2[] = {{-1, "", "a:-1 b:-1.5 c:-2 E:-4"}, {-1, "a", "E:-1 a:-2 b:-3"},
                          {-1, "b", "E:-3 c:-0.5"}, {-1, "bc", "E:-0.25 a:-1"},
                          {-1, "aa", "E:-0.5"}, {0}};
    cfg = make_config(2, 2, 1.0f, 0.0f, 10);
    hand_search("beam2 alpha1", beam2, -INFINITY, 8, &cfg, 1, &res, fake);
    CHECK(res.n_hypotheses == 2, "beam2: %d hyps", res.n_hypotheses);
    expect_hyp("beam2 alpha1", &res, 0, "bc", -2.25f, -0.75f);
    expect_hyp("beam2 alpha1", &res, 1, "a", -2.0f, -1.0f);
    CHECK(fake->n_steps == 3, "beam2: %d steps", fake->n_steps);
    nmt_search_result_clear(&res);
    cfg.params.alpha = 0.0f;
    hand_search("beam2 alpha0", beam2, -INFINITY, 8, &cfg, 1, &res, fake);
    expect_hyp("beam2 alpha0", &res, 0, "a", -2.0f, -2.0f);
    expect_hyp("beam2 alpha0", &res, 1, "bc", -2.25f, -2.25f);
    nmt_search_result_clear(&res);

    /* B = 3: EOS first at step 1 (finishes, empty hypothesis), a and b tie
     * (word id), c (4th of 2B) still becomes alive. Step 2: ad, bd tie (row),
     * aE finishes; cE and ca tie (word id: EOS first) so c's EOS is out of the
     * first B and ca lives. Step 3: adE and bdE finish: 4 > B finished, the 3
     * best are kept: "" -0.5, ad -2.5/3, a -1. */
    const rule beam3[] = {{-1, "", "E:-0.5 a:-1 b:-1 c:-3"}, {-1, "a", "E:-1 d:-0.5"},
                          {-1, "b", "E:-1 d:-0.5"}, {-1, "c", "E:-0.1 a:-0.1"},
                          {-1, "ad", "E:-1 b:-1"}, {-1, "bd", "E:-2"}, {-1, "ca", "E:-0.5"},
                          {0}};
    cfg = make_config(3, 3, 1.0f, 0.0f, 10);
    hand_search("beam3", beam3, -INFINITY, 8, &cfg, 1, &res, fake);
    CHECK(res.n_hypotheses == 3, "beam3: %d hyps", res.n_hypotheses);
    expect_hyp("beam3", &res, 0, "", -0.5f, -0.5f);
    expect_hyp("beam3", &res, 1, "ad", -2.5f, -2.5f / 3);
    expect_hyp("beam3", &res, 2, "a", -2.0f, -1.0f);
    CHECK(fake->n_steps == 3 && fake->rows_at[1][0] == 3 && fake->rows_at[2][0] == 3,
          "beam3: %d steps", fake->n_steps);
    nmt_search_result_clear(&res);

    /* Equal normalized scores: earlier finish first, then rank in the step.
     * Step 1: E, a, b tie at -1 (word order): E finishes. Step 2: aE, bE -2. */
    const rule ties[] = {{-1, "", "a:-1 E:-1 b:-1"}, {-1, "a", "E:-1"}, {-1, "b", "E:-1"}, {0}};
    cfg = make_config(2, 2, 1.0f, 0.0f, 10);
    hand_search("ties", ties, -INFINITY, 8, &cfg, 1, &res, fake);
    expect_hyp("ties", &res, 0, "", -1.0f, -1.0f);
    expect_hyp("ties", &res, 1, "a", -2.0f, -1.0f);
    nmt_search_result_clear(&res);
    cfg = make_config(2, 1, 1.0f, 0.0f, 10);
    const rule ties2[] = {{-1, "", "b:-1 a:-1"}, {-1, "a", "E:-1"}, {-1, "b", "E:-1"}, {0}};
    hand_search("ties2", ties2, -INFINITY, 8, &cfg, 1, &res, fake);
    expect_hyp("ties2", &res, 0, "a", -2.0f, -1.0f);
    nmt_search_result_clear(&res);

    /* Max length floor(0.5 * 3 + 1) = 2: step 2 allows only EOS, whose
     * log-probability counts, even though "a" prefers to go on. */
    const rule maxlen[] = {{-1, "", "a:-1 b:-2 E:-5"}, {-1, "a", "a:-0.1 E:-3"},
                           {-1, "b", "a:-0.1 E:-4"}, {0}};
    cfg = make_config(2, 2, 1.0f, 0.5f, 1);
    CHECK(nmt_search_max_length(&cfg, 3) == 2, "max length %d", nmt_search_max_length(&cfg, 3));
    hand_search("maxlen", maxlen, -INFINITY, 8, &cfg, 3, &res, fake);
    CHECK(res.n_hypotheses == 2, "maxlen: %d hyps", res.n_hypotheses);
    expect_hyp("maxlen", &res, 0, "a", -4.0f, -2.0f);
    expect_hyp("maxlen", &res, 1, "b", -6.0f, -3.0f);
    CHECK(fake->n_steps == 2, "maxlen: %d steps", fake->n_steps);
    nmt_search_result_clear(&res);
    /* Max length 1: the first step is the last. */
    const rule maxlen1[] = {{-1, "", "a:0 E:-7"}, {0}};
    cfg = make_config(1, 1, 1.0f, 0.0f, 1);
    hand_search("maxlen1", maxlen1, -INFINITY, 8, &cfg, 5, &res, fake);
    expect_hyp("maxlen1", &res, 0, "", -7.0f, -7.0f);
    nmt_search_result_clear(&res);

    /* PAD and BOS are never generated, even as the most likely words. */
    const rule padbos[] = {{-1, "", "P:0 B:0 a:-1 E:-2"}, {-1, "a", "P:0 B:0 E:-1 a:-3"}, {0}};
    cfg = make_config(1, 1, 1.0f, 0.0f, 10);
    hand_search("padbos", padbos, -INFINITY, 8, &cfg, 1, &res, fake);
    expect_hyp("padbos", &res, 0, "a", -2.0f, -1.0f);
    nmt_search_result_clear(&res);

    /* V = 4 < 2B: only EOS and UNK can be generated. UE and UU tie at -2
     * (EOS has the lower id, so it finishes); then UUE at max length 3. */
    const rule tiny[] = {{-1, "", "U:-1 E:-2"}, {-1, "U", "U:-1 E:-1"}, {-1, "UU", "U:-1 E:-1"}, {0}};
    cfg = make_config(3, 3, 1.0f, 0.0f, 3);
    hand_search("tiny vocab", tiny, -INFINITY, 4, &cfg, 1, &res, fake);
    CHECK(res.n_hypotheses == 3, "tiny vocab: %d hyps", res.n_hypotheses);
    expect_hyp("tiny vocab", &res, 0, "U", -2.0f, -1.0f);
    expect_hyp("tiny vocab", &res, 1, "UU", -3.0f, -1.0f);
    expect_hyp("tiny vocab", &res, 2, "", -2.0f, -2.0f);
    nmt_search_result_clear(&res);

    /* A degenerate model (everything -inf) gives zero hypotheses, not an error. */
    const rule none[] = {{0}};
    cfg = make_config(2, 2, 1.0f, 2.0f, 10);
    hand_search("no hypotheses", none, -INFINITY, 8, &cfg, 3, &res, fake);
    CHECK(res.n_hypotheses == 0 && fake->n_steps == 1, "no hypotheses: %d hyps, %d steps",
          res.n_hypotheses, fake->n_steps);
    nmt_search_result_clear(&res);
}

#endif /* BEAM_SEARCH_HAND_CASES_H */
