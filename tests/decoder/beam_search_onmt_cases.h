/* beam_search_onmt_cases.h: the onmt rules of decoder/beam_search.c
 * (OpenNMT-py 3.5.1's BeamSearch under onmt_translate's defaults), included
 * once by test_beam_search.c after its fake model, hand tables and
 * check_batch.
 *
 * The reference below is OpenNMT-py's algorithm as it runs, not as the
 * search restates it: B rows per sentence from step 1 (rows 1..B-1 at -inf),
 * a top-B over all B x V candidates of (score + log p) / (t + 1)^alpha with
 * ties to the lower flat index (row, then word), scores carried on as the
 * ranked value times the penalty, finished rows kept in the beam at -65504,
 * the sentence done when rank 0 is an EOS (and n_best hypotheses exist) or at
 * the max length, all hypotheses sorted stably at the end. The search drops
 * finished rows instead; on finite tables with V >= B (every real model) the
 * two must agree bit for bit, which the random part checks. */
#ifndef BEAM_SEARCH_ONMT_CASES_H
#define BEAM_SEARCH_ONMT_CASES_H

#define ONMT_MAX_HYPS 2048
#define ONMT_DEAD_SCORE -65504.0f /* OpenNMT-py's masked_fill of a finished row */

static int32_t onmt_ref_search(table_fn table, const void *ctx, int32_t sentence, int32_t vocab,
                               const nmt_search_config *cfg, int32_t src_length, ref_hyp *out)
{
    static ref_hyp rows[MAX_ROWS], next[MAX_ROWS], hyps[ONMT_MAX_HYPS];
    static float acc[MAX_ROWS], ranked[MAX_ROWS];
    static ref_cand cands[MAX_ROWS * MAX_VOCAB];
    static float lp[MAX_VOCAB];
    const int32_t beam = cfg->params.beam_size, max_len = nmt_search_max_length(cfg, src_length);
    int32_t n_hyps = 0;
    for (int32_t k = 0; k < beam; k++) {
        rows[k].len = 0;
        acc[k] = k == 0 ? 0.0f : -INFINITY;
    }
    for (int32_t t = 1; t <= max_len; t++) {
        const float penalty = (float)pow((double)t + 1.0, (double)cfg->params.alpha);
        int32_t n = 0;
        for (int32_t k = 0; k < beam; k++) {
            table(ctx, sentence, rows[k].tokens, rows[k].len, vocab, lp);
            for (int32_t w = 0; w < vocab; w++) {
                const float sum = acc[k] + lp[w];
                cands[n++] = (ref_cand){penalty != 1.0f ? sum / penalty : sum, k, w};
            }
        }
        qsort(cands, (size_t)n, sizeof cands[0], ref_cand_cmp); /* (row, word) = flat index */
        int top_ended = 0, any_ended = 0;
        for (int32_t c = 0; c < beam; c++) {
            next[c] = rows[cands[c].hyp];
            ranked[c] = cands[c].score;
            const int ended = cands[c].word == EOS || t == max_len;
            if (cands[c].word != EOS && next[c].len < MAX_LEN)
                next[c].tokens[next[c].len++] = cands[c].word;
            const float carried = penalty != 1.0f ? ranked[c] * penalty : ranked[c];
            if (ended) {
                CHECK(n_hyps < ONMT_MAX_HYPS, "onmt reference: too many hypotheses");
                if (n_hyps < ONMT_MAX_HYPS) {
                    hyps[n_hyps] = next[c];
                    hyps[n_hyps].log_prob = carried;
                    hyps[n_hyps++].score = ranked[c];
                }
                any_ended = 1;
                top_ended |= c == 0;
            }
            /* A finished row stays in the beam, out of reach. */
            ranked[c] = ended ? ONMT_DEAD_SCORE : carried;
        }
        memcpy(rows, next, sizeof rows[0] * (size_t)beam);
        memcpy(acc, ranked, sizeof acc[0] * (size_t)beam);
        if (any_ended && top_ended && n_hyps >= cfg->params.n_best)
            break;
    }
    /* Python's sorted(..., reverse=True) is stable: equal scores keep their order. */
    for (int32_t i = 1; i < n_hyps; i++)
        for (int32_t j = i; j > 0 && hyps[j - 1].score < hyps[j].score; j--) {
            ref_hyp tmp = hyps[j];
            hyps[j] = hyps[j - 1];
            hyps[j - 1] = tmp;
        }
    int32_t n_out = n_hyps < cfg->params.n_best ? n_hyps : cfg->params.n_best;
    memcpy(out, hyps, sizeof out[0] * (size_t)n_out);
    return n_out;
}

static nmt_search_config onmt_config(int32_t beam, int32_t n_best, float alpha, float a,
                                     int32_t b)
{
    nmt_search_config cfg = make_config(beam, n_best, alpha, a, b);
    cfg.rules = NMT_SEARCH_RULES_ONMT;
    return cfg;
}

static void test_onmt_hand_cases(fake_model *fake)
{
    nmt_search_result res;
    nmt_search_config cfg;

    /* The best candidate of step 1 is an EOS: the sentence is done, though
     * "a" would score better later (v1 goes on: aE -0.7 / 2 beats E -0.5).
     * onmt's penalty counts the BOS: E scores -0.5 / 2. */
    const rule top_eos[] = {{-1, "", "E:-0.5 a:-0.6 b:-3"}, {-1, "a", "E:-0.1"}, {0}};
    cfg = onmt_config(2, 1, 1.0f, 0.0f, 10);
    hand_search("onmt top eos", top_eos, -INFINITY, 8, &cfg, 1, &res, fake);
    expect_hyp("onmt top eos", &res, 0, "", -0.5f, -0.25f);
    CHECK(fake->n_steps == 1, "onmt top eos: %d steps", fake->n_steps);
    nmt_search_result_clear(&res);
    cfg.rules = NMT_SEARCH_RULES_V1;
    hand_search("v1 top eos", top_eos, -INFINITY, 8, &cfg, 1, &res, fake);
    expect_hyp("v1 top eos", &res, 0, "a", -0.7f, -0.35f);
    nmt_search_result_clear(&res);

    /* B candidates a step, not 2B: E and a are the 2 best of step 1, so
     * only a lives on (v1 would keep b too). n_best 2 needs a second
     * hypothesis; at step 2 aE (rank 1) finishes but ac ranks first, so the
     * search goes on until acE ranks first at step 3. alpha 0: no penalty. */
    const rule b_cands[] = {{-1, "", "E:-0.1 a:-1 b:-2"}, {-1, "a", "E:-1 c:-0.5"},
                            {-1, "ac", "E:-0.1 a:-5"}, {0}};
    cfg = onmt_config(2, 2, 0.0f, 0.0f, 10);
    hand_search("onmt B candidates", b_cands, -INFINITY, 8, &cfg, 1, &res, fake);
    CHECK(res.n_hypotheses == 2, "onmt B candidates: %d hyps", res.n_hypotheses);
    expect_hyp("onmt B candidates", &res, 0, "", -0.1f, -0.1f);
    expect_hyp("onmt B candidates", &res, 1, "ac", -1.6f, -1.6f);
    CHECK(fake->n_steps == 3 && fake->rows_at[1][0] == 1 && fake->rows_at[2][0] == 1,
          "onmt B candidates: %d steps, rows %d %d", fake->n_steps, fake->rows_at[1][0],
          fake->rows_at[2][0]);
    nmt_search_result_clear(&res);

    /* The length counts BOS and EOS: "" -1 / 2 beats "a" -1.8 / 3 (v1: -1 / 1
     * loses to -1.8 / 2). Step 1: a ranks first (-0.25), E second finishes. */
    const rule bos_len[] = {{-1, "", "E:-1 a:-0.5"}, {-1, "a", "E:-1.3 b:-3"}, {0}};
    cfg = onmt_config(2, 2, 1.0f, 0.0f, 10);
    hand_search("onmt length", bos_len, -INFINITY, 8, &cfg, 1, &res, fake);
    CHECK(res.n_hypotheses == 2, "onmt length: %d hyps", res.n_hypotheses);
    expect_hyp("onmt length", &res, 0, "", -1.0f, -0.5f);
    expect_hyp("onmt length", &res, 1, "a", -1.8f, -0.6f);
    nmt_search_result_clear(&res);

    /* PAD and BOS are ordinary words: BOS is the best first word. */
    const rule specials[] = {{-1, "", "B:-0.1 a:-1 E:-2"}, {-1, "B", "E:-0.1 P:-0.2"}, {0}};
    cfg = onmt_config(1, 1, 0.0f, 0.0f, 10);
    hand_search("onmt specials", specials, -INFINITY, 8, &cfg, 1, &res, fake);
    expect_hyp("onmt specials", &res, 0, "B", -0.2f, -0.2f);
    nmt_search_result_clear(&res);

    /* At the max length (here 2) the B best finish as they are, no EOS
     * forced: aa and ba, not v1's aE and bE. Scores by (2 + 1)^alpha. */
    const rule maxlen[] = {{-1, "", "a:-1 b:-2 E:-5"}, {-1, "a", "a:-0.1 E:-3"},
                           {-1, "b", "a:-0.1 E:-4"}, {0}};
    cfg = onmt_config(2, 2, 1.0f, 0.0f, 2);
    hand_search("onmt max length", maxlen, -INFINITY, 8, &cfg, 3, &res, fake);
    CHECK(res.n_hypotheses == 2 && fake->n_steps == 2, "onmt max length: %d hyps, %d steps",
          res.n_hypotheses, fake->n_steps);
    expect_hyp("onmt max length", &res, 0, "aa", -1.1f, -1.1f / 3);
    expect_hyp("onmt max length", &res, 1, "ba", -2.1f, -2.1f / 3);
    nmt_search_result_clear(&res);

    /* The cap: OpenNMT-py's -max_length 250 bounds a * S + b. */
    cfg = onmt_config(1, 1, 1.0f, 2.0f, 10);
    CHECK(nmt_search_max_length(&cfg, 200) == NMT_ONMT_MAX_LENGTH &&
              nmt_search_max_length(&cfg, 7) == 24,
          "onmt max length cap");
    cfg = onmt_config(1, 1, 1.0f, 1.25f, 5); /* onmt_translate's own ratio and + 5 */
    CHECK(nmt_search_max_length(&cfg, 7) == 13, "onmt 1.25 * 7 + 5");
    cfg.rules = NMT_SEARCH_RULES_V1;
    cfg.params.max_len_a = 2.0f;
    cfg.params.max_len_b = 10;
    CHECK(nmt_search_max_length(&cfg, 200) == 410, "v1 has no cap");
}

/* Random finite tables with V >= B (no -inf: a log-softmax never gives one),
 * batched, against the literal reference. Quantized tables tie everywhere. */
static void test_onmt_random(fake_model *fake, fake_model *alone_fake, int iterations)
{
    for (int it = 0; it < iterations; it++) {
        random_table t = {test_rand_u64(), (int)(test_rand_u64() % 2), 1};
        int large = it % 10 == 9;
        int32_t beam = test_rand_int(1, large ? 9 : 6);
        int32_t vocab = large ? test_rand_int(100, MAX_VOCAB) : test_rand_int(beam > 4 ? beam : 4, 9);
        const float alphas[] = {0.0f, 0.5f, 1.0f, 1.5f};
        nmt_search_config cfg = onmt_config(beam, test_rand_int(1, beam + 1),
                                            alphas[test_rand_int(0, 4)],
                                            0.5f * (float)test_rand_int(0, 3), test_rand_int(1, 5));
        cfg.attention = it % 2;
        int32_t n = test_rand_int(1, 5), src_lengths[MAX_SENT];
        for (int32_t i = 0; i < n; i++)
            src_lengths[i] = test_rand_int(1, 6);
        check_batch("onmt random", random_lookup, &t, vocab, &cfg, n, src_lengths, fake,
                    alone_fake);
    }
}

#endif /* BEAM_SEARCH_ONMT_CASES_H */
