/* forced_cases.h: forced tokens (decoder/forced_tokens.h): target
 * prefixes, alternatives and scoring, included once by test_beam_search.c
 * after its fake model, random tables, check_batch and the onmt cases.
 *
 * The oracle of a forced search is the same search, unforced, over a
 * masked table: while a sentence's prefix lasts every word but the forced
 * one is -inf (its log p unchanged), and at an alternative's step every word
 * but the alternative (found here by sorting the row). Both must give the
 * same bits; the masked table's search is itself checked against the
 * reference (v1) by check_batch. Scoring (nmt_score_forced) must give the
 * bits of a v1 search forced to the target and its EOS: log_prob, score and
 * every token score. */
#ifndef FORCED_CASES_H
#define FORCED_CASES_H

#include "forced_search.h"

#define FORCED_MAX 16 /* forced tokens a sentence */

typedef struct forced_table {
    const random_table *base;
    int32_t per_line;            /* sentences a line (alternatives: its ranks) */
    int32_t offset[MAX_SENT + 1];
    int32_t ids[MAX_SENT * FORCED_MAX];
    int32_t alt_word[MAX_SENT];  /* the word an alternative sentence takes, -1 none */
} forced_table;

/* The base table of the sentence's line, every word but the forced one
 * -inf while the sentence's forced tokens (and alternative) last. */
static void forced_lookup(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                          int32_t vocab, float *out)
{
    const forced_table *t = ctx;
    random_lookup(t->base, sentence / t->per_line, prefix, len, vocab, out);
    const int32_t n = t->offset[sentence + 1] - t->offset[sentence];
    const int32_t keep = len < n ? t->ids[t->offset[sentence] + len]
                                 : len == n ? t->alt_word[sentence] : -1;
    for (int32_t w = 0; keep >= 0 && w < vocab; w++)
        if (w != keep)
            out[w] = -INFINITY;
}

/* Rank k's word after the sentence's forced tokens, as the rule says: the
 * row's 2B best finite words by log p (ties: the lower word; v1 without PAD
 * and BOS), the k-th that is not EOS; found by a plain sort. */
static int32_t alternative_word(const forced_table *t, int32_t sentence, int32_t vocab,
                                const nmt_search_config *cfg, int32_t k)
{
    static float lp[MAX_VOCAB];
    static ref_cand words[MAX_VOCAB];
    const int32_t first = t->offset[sentence], n = t->offset[sentence + 1] - first;
    random_lookup(t->base, sentence / t->per_line, t->ids + first, n, vocab, lp);
    int32_t m = 0;
    for (int32_t w = 0; w < vocab; w++)
        if (lp[w] != -INFINITY &&
            (cfg->rules == NMT_SEARCH_RULES_ONMT || (w != PAD && w != BOS)))
            words[m++] = (ref_cand){lp[w], 0, w};
    qsort(words, (size_t)m, sizeof words[0], ref_cand_cmp);
    for (int32_t j = 0; j < m && j < 2 * cfg->params.beam_size; j++)
        if (words[j].word != EOS && k-- == 0)
            return words[j].word;
    return -1;
}

/* The same bits; argmax: the attention argmax too (the fake names the
 * sentence in it). */
static int same_search_hyp(const nmt_search_hypothesis *a, const nmt_search_hypothesis *b,
                           int argmax)
{
    const size_t n = (size_t)a->length;
    return a->length == b->length && a->log_prob == b->log_prob && a->score == b->score &&
           (n == 0 || (!memcmp(a->tokens, b->tokens, sizeof(int32_t) * n) &&
                       (!argmax || !memcmp(a->attn_argmax, b->attn_argmax,
                                           sizeof(int32_t) * n)))) &&
           !memcmp(a->token_scores, b->token_scores, sizeof(float) * (n + 1));
}

/* n sentences (per_line a line) with random prefixes of 0..4 words; with
 * per_line > 1 sentence i takes rank i % per_line at its first free step.
 * The forced search against the unforced one over the masked table. */
static void check_forced(const char *name, const random_table *base, int32_t vocab,
                         nmt_search_config cfg, int32_t n_lines, int32_t per_line,
                         fake_model *fake, fake_model *alone_fake)
{
    static forced_table t;
    int32_t alternative[MAX_SENT], src_lengths[MAX_SENT];
    const int32_t n = n_lines * per_line;
    t.base = base;
    t.per_line = per_line;
    t.offset[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t len = i % per_line ? t.offset[i] - t.offset[i - 1] : test_rand_int(0, 5);
        for (int32_t j = 0; j < len; j++)
            t.ids[t.offset[i] + j] = i % per_line ? t.ids[t.offset[i - 1] + j]
                                                  : test_rand_int(EOS + 1, vocab);
        t.offset[i + 1] = t.offset[i] + len;
        src_lengths[i] = i % per_line ? src_lengths[i - 1] : test_rand_int(1, 6);
        alternative[i] = per_line > 1 ? i % per_line : -1;
        t.alt_word[i] = -1;
    }
    /* Room for the prefix and an alternative after it: the same max length
     * with and without forcing. */
    cfg.params.max_len_a = 0.0f;
    cfg.params.max_len_b = test_rand_int(FORCED_MAX / 2 + 2, FORCED_MAX);
    const nmt_forced_tokens forced = {t.offset, t.ids, per_line > 1 ? alternative : NULL};
    nmt_search_config forced_cfg = cfg;
    forced_cfg.forced = &forced;
    nmt_search_result res[MAX_SENT], masked[MAX_SENT];
    nmt_error err = {0};
    nmt_step_model model = fake_init(fake, random_lookup, base, vocab, n, NULL);
    for (int32_t i = 0; i < n; i++) /* every rank of a line scores as its line */
        fake->sentence[i] = i / per_line;
    fake->feeds_specials = cfg.rules == NMT_SEARCH_RULES_ONMT;
    nmt_status st = nmt_beam_search(&model, n, src_lengths, &forced_cfg, res, &err);
    CHECK(st == NMT_STATUS_OK, "%s: %s", name, err.message);
    if (st != NMT_STATUS_OK)
        return;
    for (int32_t i = 0; i < n; i++) {
        if (per_line > 1)
            t.alt_word[i] = alternative_word(&t, i, vocab, &cfg, alternative[i]);
        const int32_t len = t.offset[i + 1] - t.offset[i];
        for (int32_t step = 0; step < len + (per_line > 1) && step < fake->n_steps; step++)
            CHECK(fake->rows_at[step][i / per_line] <= per_line,
                  "%s: line %d holds %d rows at forced step %d", name, i / per_line,
                  fake->rows_at[step][i / per_line], step + 1);
    }
    model = fake_init(alone_fake, forced_lookup, &t, vocab, n, NULL);
    alone_fake->feeds_specials = fake->feeds_specials;
    st = nmt_beam_search(&model, n, src_lengths, &cfg, masked, &err);
    CHECK(st == NMT_STATUS_OK, "%s masked: %s", name, err.message);
    for (int32_t i = 0; i < n && st == NMT_STATUS_OK; i++) {
        int ok = res[i].n_hypotheses == masked[i].n_hypotheses;
        for (int32_t h = 0; ok && h < res[i].n_hypotheses; h++)
            ok = same_search_hyp(&res[i].hypotheses[h], &masked[i].hypotheses[h], per_line == 1);
        CHECK(ok, "%s: sentence %d (B %d, %d forced, rank %d) differs from the masked table's "
              "search (%d vs %d hyps)", name, i, cfg.params.beam_size,
              t.offset[i + 1] - t.offset[i], alternative[i], res[i].n_hypotheses,
              masked[i].n_hypotheses);
        for (int32_t h = 0; h < res[i].n_hypotheses; h++) {
            const nmt_search_hypothesis *hyp = &res[i].hypotheses[h];
            const int32_t len = t.offset[i + 1] - t.offset[i];
            CHECK(hyp->length >= len + (per_line > 1) &&
                      !memcmp(hyp->tokens, t.ids + t.offset[i], sizeof(int32_t) * (size_t)len) &&
                      (per_line == 1 || hyp->tokens[len] == t.alt_word[i]),
                  "%s: sentence %d hyp %d does not start with its prefix and alternative", name,
                  i, h);
        }
        nmt_search_result_clear(&res[i]);
        nmt_search_result_clear(&masked[i]);
    }
    if (cfg.rules == NMT_SEARCH_RULES_V1 && per_line == 1) /* the masked search's reference */
        check_batch(name, forced_lookup, &t, vocab, &cfg, n, src_lengths, fake, alone_fake);
}

/* Scoring against a v1 search forced to the target and its EOS, bit for
 * bit; onmt's scores within rounding (the search carries rank x penalty). */
static void check_scoring(const char *name, const random_table *base, int32_t vocab,
                          nmt_search_config cfg, int32_t n, fake_model *fake,
                          fake_model *alone_fake)
{
    int32_t offset[MAX_SENT + 1], ids[MAX_SENT * FORCED_MAX], with_eos[MAX_SENT * FORCED_MAX];
    int32_t eos_offset[MAX_SENT + 1], src_lengths[MAX_SENT];
    offset[0] = eos_offset[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t len = test_rand_int(0, FORCED_MAX - 1);
        for (int32_t j = 0; j < len; j++)
            ids[offset[i] + j] = with_eos[eos_offset[i] + j] = test_rand_int(EOS + 1, vocab);
        with_eos[eos_offset[i] + len] = EOS;
        offset[i + 1] = offset[i] + len;
        eos_offset[i + 1] = eos_offset[i] + len + 1;
        src_lengths[i] = test_rand_int(1, FAKE_SRC + 1);
    }
    const nmt_forced_tokens target = {offset, ids, NULL}, forced = {eos_offset, with_eos, NULL};
    nmt_search_config score_cfg = cfg, search_cfg = cfg;
    score_cfg.forced = &target;
    search_cfg.forced = &forced;
    search_cfg.params.n_best = 1;
    nmt_search_result scored[MAX_SENT], searched[MAX_SENT];
    nmt_error err = {0};
    nmt_step_model model = fake_init(fake, random_lookup, base, vocab, n, NULL);
    nmt_status st = nmt_score_forced(&model, n, src_lengths, &score_cfg, scored, &err);
    CHECK(st == NMT_STATUS_OK, "%s: %s", name, err.message);
    if (st != NMT_STATUS_OK)
        return;
    /* A row leaves when its target ends: at step t, the targets of t tokens or more. */
    for (int32_t step = 0; step < fake->n_steps; step++)
        for (int32_t i = 0; i < n; i++)
            CHECK(fake->rows_at[step][i] == (step <= offset[i + 1] - offset[i]),
                  "%s: sentence %d has %d rows at step %d", name, i, fake->rows_at[step][i],
                  step + 1);
    model = fake_init(alone_fake, random_lookup, base, vocab, n, NULL);
    alone_fake->feeds_specials = cfg.rules == NMT_SEARCH_RULES_ONMT;
    st = nmt_beam_search(&model, n, src_lengths, &search_cfg, searched, &err);
    CHECK(st == NMT_STATUS_OK, "%s search: %s", name, err.message);
    for (int32_t i = 0; i < n && st == NMT_STATUS_OK; i++) {
        const nmt_search_hypothesis *s = &scored[i].hypotheses[0];
        const int32_t len = offset[i + 1] - offset[i];
        CHECK(scored[i].n_hypotheses == 1 && s->length == len &&
                  (len == 0 || !memcmp(s->tokens, ids + offset[i], sizeof(int32_t) * len)),
              "%s: sentence %d: %d hyps of %d tokens, target %d", name, i,
              scored[i].n_hypotheses, s->length, len);
        if (s->log_prob == -INFINITY) { /* a target word the table excludes */
            CHECK(searched[i].n_hypotheses == 0, "%s: sentence %d: the search found a "
                  "hypothesis the scores exclude", name, i);
        } else if (cfg.rules == NMT_SEARCH_RULES_V1) {
            CHECK(searched[i].n_hypotheses == 1 &&
                      same_search_hyp(s, &searched[i].hypotheses[0], 1),
                  "%s: sentence %d (%d tokens): scoring differs from the forced search "
                  "(log_prob %.9g vs %.9g)", name, i, len, s->log_prob,
                  searched[i].n_hypotheses ? searched[i].hypotheses[0].log_prob : NAN);
        } else {
            const nmt_search_hypothesis *f = searched[i].n_hypotheses ? &searched[i].hypotheses[0]
                                                                      : NULL;
            const double tol = 1e-5 * (fabs((double)s->log_prob) + 1.0);
            CHECK(f && f->length == len && fabs((double)f->log_prob - s->log_prob) <= tol &&
                      fabs((double)f->score - s->score) <= tol,
                  "%s: sentence %d: onmt scoring %.9g (%.9g) vs the forced search %.9g", name,
                  i, s->log_prob, s->score, f ? f->log_prob : NAN);
        }
        if (s->log_prob != -INFINITY)
            check_outputs(name, &scored[i], random_lookup, base, i, vocab, &cfg,
                          src_lengths[i]);
        nmt_search_result_clear(&scored[i]);
        nmt_search_result_clear(&searched[i]);
    }
}

static void test_forced_invalid(fake_model *fake)
{
    const rule none[] = {{0}};
    hand_table t = {none, -1.0f};
    nmt_step_model model = fake_init(fake, hand_lookup, &t, 8, 1, NULL);
    int32_t one = 1;
    struct {
        const char *what;
        int32_t offset[2], ids[3], alternative;
        int score;
    } cases[] = {
        {"PAD", {0, 2}, {4, PAD}, -1, 0},      {"outside", {0, 1}, {8}, -1, 0},
        {"BOS", {0, 1}, {BOS}, -1, 1},         {"EOS before", {0, 2}, {EOS, 4}, -1, 0},
        {"EOS in a target", {0, 1}, {EOS}, -1, 1},
        {"offset[0]", {1, 2}, {4, 4}, -1, 0},  {"offsets", {0, -1}, {4}, -1, 0},
        {"alternative", {0, 1}, {4}, 2, 0},    {"after an EOS", {0, 1}, {EOS}, 0, 0},
        {"alternatives are", {0, 1}, {4}, 0, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        nmt_search_config cfg = make_config(2, 1, 1.0f, 2.0f, 10);
        const nmt_forced_tokens f = {cases[c].offset, cases[c].ids,
                                     cases[c].alternative >= 0 ? &cases[c].alternative : NULL};
        cfg.forced = &f;
        nmt_search_result res = {7, NULL};
        nmt_error err = {0};
        model = fake_init(fake, hand_lookup, &t, 8, 1, NULL);
        const nmt_status st = cases[c].score
                                  ? nmt_score_forced(&model, 1, &one, &cfg, &res, &err)
                                  : nmt_beam_search(&model, 1, &one, &cfg, &res, &err);
        CHECK(st == NMT_STATUS_ERROR_ARGUMENT && strstr(err.message, cases[c].what) &&
                  res.n_hypotheses == 0,
              "forced %s: status %d, \"%s\"", cases[c].what, st, err.message);
    }
    nmt_search_config cfg = make_config(2, 1, 1.0f, 2.0f, 10);
    nmt_search_result res;
    nmt_error err = {0};
    CHECK(nmt_score_forced(&model, 1, &one, &cfg, &res, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "scoring without targets");
    /* The max length makes room for the prefix, its alternative and an EOS. */
    const int32_t offset[2] = {0, 30}, alt = 1;
    const nmt_forced_tokens f = {offset, NULL, &alt};
    cfg.forced = &f;
    CHECK(nmt_forced_max_length(&cfg, 0, 3) == 32 && nmt_rule_forced_max_len(16, 3, -1) == 16 &&
              nmt_rule_forced_max_len(4, 3, 0) == 5 && nmt_rule_forced_max_len(3, 3, -1) == 4,
          "forced max lengths");
}

static void test_forced(fake_model *fake, fake_model *alone_fake, int iterations)
{
    test_forced_invalid(fake);
    for (int it = 0; it < iterations; it++) {
        const int onmt = it % 2, large = it % 10 == 9;
        random_table t = {test_rand_u64(), (int)(test_rand_u64() % 3 == 0), onmt || it % 4 == 0};
        const int32_t beam = test_rand_int(1, large ? 9 : 6);
        const int32_t vocab = large ? test_rand_int(100, MAX_VOCAB)
                                    : test_rand_int(2 * beam + 4 > 8 ? 2 * beam + 4 : 8, 24);
        const float alphas[] = {0.0f, 0.5f, 1.0f, 1.5f};
        nmt_search_config cfg = make_config(beam, test_rand_int(1, beam + 1),
                                            alphas[test_rand_int(0, 4)], 2.0f, 10);
        cfg.rules = onmt ? NMT_SEARCH_RULES_ONMT : NMT_SEARCH_RULES_V1;
        cfg.attention = it % 3 == 0;
        check_forced("prefix", &t, vocab, cfg, test_rand_int(1, 5), 1, fake, alone_fake);
        const int32_t ranks = test_rand_int(1, beam + 1);
        cfg.params.n_best = 1;
        check_forced("alternatives", &t, vocab, cfg, MAX_SENT / ranks, ranks, fake, alone_fake);
        check_scoring("scoring", &t, vocab, cfg, test_rand_int(1, MAX_SENT + 1), fake,
                      alone_fake);
    }
}

#endif /* FORCED_CASES_H */
