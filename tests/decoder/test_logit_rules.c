/* test_logit_rules.c: the logit rules, the coverage penalty and random
 * sampling of the CPU search (decoder/logit_rules.h, docs/decoding.md) on the
 * scripted fake model (fake_model.h), where the right answer is known:
 * - min_length: EOS banned while the hypothesis is short (not at the max
 *   length), the rows renormalized (token scores checked);
 * - no_repeat_ngram_size 1, 2, 3: greedy outputs against a plain reference
 *   that tests every candidate's n-gram against the hypothesis;
 * - repetition_penalty on raw logits: positive logits divided, negative
 *   multiplied (a sign mistake gives another output), token scores the
 *   log-softmax of the edited logits;
 * - ban_unk and suppress (a pair and a single token) on every hypothesis
 *   of a beam;
 * - the coverage penalty (onmt rules): every score recomputed from the
 *   scripted attention, and a penalty that changes the best hypothesis;
 * - sampling: each sample's first word is the inverse CDF of its own
 *   uniform (nmt_rule_sample_uniform) over the distribution the test builds
 *   from the table (temperature, top-K, top-p); the frequencies over many
 *   lines against the same distribution (chi-square); a line's samples the
 *   same alone and in any batch; EOS at the max length; sampling with
 *   min_length; and the combinations the rules refuse. */
#include "fake_model.h"
#include "logit_rules.h"

#include <math.h>
#include <stdlib.h>

enum { A = 4, B = 5, C = 6, D = 7, V = 12 };

static const float NEG = -INFINITY;

/* Fills row with -inf, then the given (word, value) pairs. */
static void fill(float *out, int32_t vocab, int n, const int32_t *words, const double *values)
{
    for (int32_t w = 0; w < vocab; w++)
        out[w] = NEG;
    for (int i = 0; i < n; i++)
        out[words[i]] = (float)values[i];
}

static nmt_search_config greedy(int32_t beam, int32_t max_len)
{
    return (nmt_search_config){
        .params = {.beam_size = beam, .n_best = 1, .alpha = 0.0f, .max_len_b = max_len,
                   .sampling_topp = 1.0f, .sampling_temperature = 1.0f},
        .pad_id = PAD, .bos_id = BOS, .eos_id = EOS, .unk_id = UNK,
    };
}

/* Searches one sentence (source length 1); returns its result. */
static nmt_search_result run_one(table_fn table, const void *ctx, const nmt_search_config *cfg,
                                 int raw_logits)
{
    static fake_model fake;
    nmt_step_model model = fake_init(&fake, table, ctx, V, 1, NULL);
    fake.raw_logits = raw_logits;
    const int32_t src = 1;
    nmt_search_result res = {0, NULL};
    nmt_error err = {NMT_STATUS_OK, ""};
    const nmt_status st = nmt_beam_search(&model, 1, &src, cfg, &res, &err);
    CHECK(st == NMT_STATUS_OK, "search: %s", err.message);
    return res;
}

static int same_tokens(const nmt_search_hypothesis *h, int n, const int32_t *want)
{
    if (h->length != n)
        return 0;
    for (int i = 0; i < n; i++)
        if (h->tokens[i] != want[i])
            return 0;
    return 1;
}

static void print_tokens(const char *what, const nmt_search_hypothesis *h)
{
    fprintf(stderr, "%s:", what);
    for (int i = 0; i < h->length; i++)
        fprintf(stderr, " %d", h->tokens[i]);
    fprintf(stderr, "\n");
}

/* ---- min_length ---------------------------------------------------------- */

/* Every step: EOS 0.6, a 0.3, b 0.1. */
static void eos_first(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                      int32_t vocab, float *out)
{
    const int32_t words[3] = {EOS, A, B};
    const double values[3] = {log(0.6), log(0.3), log(0.1)};
    fill(out, vocab, 3, words, values);
}

static void test_min_length(void)
{
    nmt_search_config cfg = greedy(1, 20);
    nmt_search_result r = run_one(eos_first, NULL, &cfg, 0);
    CHECK(r.n_hypotheses == 1 && r.hypotheses[0].length == 0, "without min_length: %d tokens",
          r.n_hypotheses ? r.hypotheses[0].length : -1);
    nmt_search_result_clear(&r);

    cfg.params.min_length = 2;
    r = run_one(eos_first, NULL, &cfg, 0);
    const int32_t want[2] = {A, A};
    CHECK(r.n_hypotheses == 1 && same_tokens(&r.hypotheses[0], 2, want), "min_length 2");
    if (r.n_hypotheses == 1 && r.hypotheses[0].length == 2) {
        /* EOS banned: a renormalized to 0.3 / 0.4; then EOS at 0.6. */
        const float *ts = r.hypotheses[0].token_scores;
        CHECK(fabs(ts[0] - log(0.75)) < 1e-6 && fabs(ts[1] - log(0.75)) < 1e-6 &&
                  fabs(ts[2] - log(0.6)) < 1e-6,
              "min_length token scores %g %g %g", ts[0], ts[1], ts[2]);
    }
    nmt_search_result_clear(&r);

    /* Past the max length (3 tokens, EOS included): EOS at the last step. */
    cfg = greedy(2, 3);
    cfg.params.min_length = 5;
    r = run_one(eos_first, NULL, &cfg, 0);
    CHECK(r.n_hypotheses == 1 && same_tokens(&r.hypotheses[0], 2, want),
          "min_length past the max length");
    nmt_search_result_clear(&r);
}

/* ---- no_repeat_ngram_size ------------------------------------------------- */

/* Every step: a 0.5, b 0.3, c 0.15, EOS 0.05. */
static void prefers_a(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                      int32_t vocab, float *out)
{
    const int32_t words[4] = {A, B, C, EOS};
    const double values[4] = {log(0.5), log(0.3), log(0.15), log(0.05)};
    fill(out, vocab, 4, words, values);
}

/* Whether seq[0..len) + w holds its last n-gram twice: the reference rule,
 * written as a search over every earlier n-gram (overlapping ones too). */
static int repeats_ngram(const int32_t *seq, int32_t len, int32_t w, int32_t n)
{
    int32_t all[64];
    memcpy(all, seq, sizeof(int32_t) * (size_t)len);
    all[len] = w;
    const int32_t total = len + 1;
    for (int32_t i = 0; i + n < total; i++) {
        int same = 1;
        for (int32_t j = 0; j < n; j++)
            same &= all[i + j] == all[total - n + j];
        if (same)
            return 1;
    }
    return 0;
}

static void test_no_repeat_ngram(void)
{
    for (int32_t n = 1; n <= 3; n++) {
        /* The reference: greedy over the table's order a, b, c, EOS. */
        int32_t ref[64], len = 0;
        const int32_t order[4] = {A, B, C, EOS};
        for (;;) {
            int32_t pick = EOS;
            for (int i = 0; i < 4; i++)
                if (order[i] == EOS || !repeats_ngram(ref, len, order[i], n)) {
                    pick = order[i];
                    break;
                }
            if (pick == EOS || len == 29)
                break;
            ref[len++] = pick;
        }
        nmt_search_config cfg = greedy(1, 30);
        cfg.params.no_repeat_ngram_size = n;
        nmt_search_result r = run_one(prefers_a, NULL, &cfg, 0);
        CHECK(r.n_hypotheses == 1 && same_tokens(&r.hypotheses[0], len, ref),
              "no_repeat_ngram_size %d: %d tokens, the reference %d", n,
              r.n_hypotheses ? r.hypotheses[0].length : -1, len);
        if (r.n_hypotheses == 1 && !same_tokens(&r.hypotheses[0], len, ref))
            print_tokens("got", &r.hypotheses[0]);
        nmt_search_result_clear(&r);
    }
}

/* ---- repetition_penalty ----------------------------------------------------- */

typedef struct logits_case {
    double a, b, c, eos;
} logits_case;

static void raw_logits(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                       int32_t vocab, float *out)
{
    const logits_case *lc = ctx;
    const int32_t words[4] = {A, B, C, EOS};
    const double values[4] = {lc->a, lc->b, lc->c, lc->eos};
    fill(out, vocab, 4, words, values);
}

static void test_repetition(void)
{
    /* Positive logits, penalty 4: a (1.0); a/4 = 0.25 < b 0.9: b; a 0.25 >
     * b/4 0.225 > c 0.1: a; EOS at the max length (4). Multiplying would
     * give a a a. */
    const logits_case positive = {1.0, 0.9, 0.1, -5.0};
    nmt_search_config cfg = greedy(1, 4);
    cfg.params.repetition_penalty = 4.0f;
    nmt_search_result r = run_one(raw_logits, &positive, &cfg, 1);
    const int32_t want_pos[3] = {A, B, A};
    CHECK(r.n_hypotheses == 1 && same_tokens(&r.hypotheses[0], 3, want_pos), "positive logits");
    if (r.n_hypotheses == 1 && r.hypotheses[0].length == 3) {
        /* Token 2 (b) from logits a 0.25, b 0.9, c 0.1, EOS -5. */
        const double lse = log(exp(0.25) + exp(0.9) + exp(0.1) + exp(-5.0));
        CHECK(fabs(r.hypotheses[0].token_scores[1] - (0.9 - lse)) < 1e-5,
              "token score %g, the edited logits' %g", r.hypotheses[0].token_scores[1],
              0.9 - lse);
    }
    nmt_search_result_clear(&r);

    /* Negative logits: a (-0.1); a x 4 = -0.4 < b -0.3: b; a -0.4 > b -1.2:
     * a, a; EOS at the max length (5). Dividing would give a a a a. */
    const logits_case negative = {-0.1, -0.3, -3.0, -2.0};
    cfg = greedy(1, 5);
    cfg.params.repetition_penalty = 4.0f;
    r = run_one(raw_logits, &negative, &cfg, 1);
    const int32_t want_neg[4] = {A, B, A, A};
    CHECK(r.n_hypotheses == 1 && same_tokens(&r.hypotheses[0], 4, want_neg), "negative logits");
    nmt_search_result_clear(&r);
}

/* ---- ban_unk and suppress ------------------------------------------------------ */

/* UNK best at every step; after a, b best then c, d. */
static void prefers_unk_and_pairs(const void *ctx, int32_t sentence, const int32_t *prefix,
                                  int32_t len, int32_t vocab, float *out)
{
    const int after_a = len > 0 && prefix[len - 1] == A;
    const int32_t words[6] = {UNK, A, B, C, D, EOS};
    const double values[6] = {log(0.3), log(after_a ? 0.05 : 0.3), log(after_a ? 0.3 : 0.1),
                              log(after_a ? 0.2 : 0.1), log(0.1), log(after_a ? 0.05 : 0.1)};
    fill(out, vocab, 6, words, values);
}

static void test_bans(void)
{
    nmt_search_config cfg = greedy(3, 8);
    cfg.params.n_best = 3;
    nmt_search_result r = run_one(prefers_unk_and_pairs, NULL, &cfg, 0);
    int unk = 0;
    for (int h = 0; h < r.n_hypotheses; h++)
        for (int t = 0; t < r.hypotheses[h].length; t++)
            unk |= r.hypotheses[h].tokens[t] == UNK;
    CHECK(unk, "the table's best word UNK never came: the test shows nothing");
    nmt_search_result_clear(&r);

    const int32_t suppress[5] = {2, A, B, 1, C}; /* "a b" and "c" */
    cfg.params.ban_unk = 1;
    cfg.params.suppress = suppress;
    cfg.params.suppress_words = 5;
    r = run_one(prefers_unk_and_pairs, NULL, &cfg, 0);
    CHECK(r.n_hypotheses == 3, "%d hypotheses", r.n_hypotheses);
    int saw_a = 0;
    for (int h = 0; h < r.n_hypotheses; h++) {
        const nmt_search_hypothesis *hyp = &r.hypotheses[h];
        for (int t = 0; t < hyp->length; t++) {
            CHECK(hyp->tokens[t] != UNK && hyp->tokens[t] != C, "hyp %d token %d is %d", h, t,
                  hyp->tokens[t]);
            CHECK(t == 0 || hyp->tokens[t - 1] != A || hyp->tokens[t] != B,
                  "hyp %d holds the suppressed a b at %d", h, t);
            saw_a |= hyp->tokens[t] == A && t + 1 < hyp->length;
        }
    }
    CHECK(saw_a, "no hypothesis continues after a: the pair was not tested");
    nmt_search_result_clear(&r);
}

/* ---- the coverage penalty ---------------------------------------------------- */

/* Step 1: EOS 0.6, a 0.4; after a: EOS 0.9, b 0.1. */
static void short_or_a(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                       int32_t vocab, float *out)
{
    const int32_t words[3] = {EOS, A, B};
    const double first[3] = {log(0.6), log(0.4), NEG}, later[3] = {log(0.9), NEG, log(0.1)};
    fill(out, vocab, 3, words, len == 0 ? first : later);
}

/* The attention of the row with this prefix over two positions: the BOS
 * row 0.9 / 0.1, after a 0.1 / 0.9, else 0.5 / 0.5. */
static float coverage_weight(int32_t sentence, const int32_t *prefix, int32_t len, int32_t j)
{
    const int32_t last = len > 0 ? prefix[len - 1] : BOS;
    const float first = last == BOS ? 0.9f : last == A ? 0.1f : 0.5f;
    return j == 0 ? first : 1.0f - first;
}

/* OpenNMT-py's penalty of a hypothesis (its tokens, then EOS): the rows that
 * produced each token, summed per position. */
static double expected_penalty(const nmt_search_hypothesis *h, nmt_coverage_penalty kind,
                               double beta)
{
    double cov[2] = {0.0, 0.0}, penalty = 0.0;
    for (int32_t t = 0; t <= h->length; t++)
        for (int j = 0; j < 2; j++)
            cov[j] += coverage_weight(0, h->tokens, t, j);
    for (int j = 0; j < 2; j++)
        penalty += kind == NMT_COVERAGE_WU ? (cov[j] > 0 ? -log(cov[j] < 1 ? cov[j] : 1) : 0)
                                           : (cov[j] > 1 ? cov[j] : 1) - 1;
    return beta * penalty;
}

static void test_coverage(void)
{
    static fake_model fake;
    const int32_t src = 2;
    for (int kind = NMT_COVERAGE_NONE; kind <= NMT_COVERAGE_SUMMARY; kind++) {
        nmt_search_config cfg = greedy(2, 10);
        cfg.rules = NMT_SEARCH_RULES_ONMT;
        cfg.params.n_best = 2;
        cfg.params.coverage_penalty = (nmt_coverage_penalty)kind;
        cfg.params.coverage_beta = 1.0f;
        nmt_step_model model = fake_init(&fake, short_or_a, NULL, V, 1, NULL);
        fake.weight = coverage_weight;
        nmt_search_result r = {0, NULL};
        nmt_error err = {NMT_STATUS_OK, ""};
        CHECK(nmt_beam_search(&model, 1, &src, &cfg, &r, &err) == NMT_STATUS_OK, "%s",
              err.message);
        CHECK(r.n_hypotheses == 2, "coverage %d: %d hypotheses", kind, r.n_hypotheses);
        for (int h = 0; h < r.n_hypotheses; h++) {
            const nmt_search_hypothesis *hyp = &r.hypotheses[h];
            /* alpha 0: the rank is the log-probability itself. */
            const double want = hyp->log_prob - expected_penalty(hyp, kind, 1.0);
            CHECK(fabs(hyp->score - want) < 1e-5, "coverage %d hyp %d: score %g, expected %g",
                  kind, h, hyp->score, want);
        }
        /* Without it "" (0.6) beats "a" (0.36); wu costs "" -log 0.9 - log 0.1. */
        const int32_t want_best = kind == NMT_COVERAGE_WU ? 1 : 0;
        CHECK(r.n_hypotheses > 0 && r.hypotheses[0].length == want_best,
              "coverage %d: the best has %d tokens", kind,
              r.n_hypotheses ? r.hypotheses[0].length : -1);
        nmt_search_result_clear(&r);
    }
}

/* ---- sampling ------------------------------------------------------------------ */

/* Step 1: a 0.4, b 0.3, c 0.2, d 0.1 (no EOS); then EOS only. */
static void one_word(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                     int32_t vocab, float *out)
{
    const int32_t words[4] = {A, B, C, D};
    const double first[4] = {log(0.4), log(0.3), log(0.2), log(0.1)};
    const int32_t eos = EOS;
    const double zero = 0.0;
    if (len == 0)
        fill(out, vocab, 4, words, first);
    else
        fill(out, vocab, 1, &eos, &zero);
}

/* The distribution over a, b, c, d a sampling config gives (sorted by
 * probability: the words' order), built here from the table's. */
static void expected_distribution(const nmt_search_params *p, double q[4])
{
    const double base[4] = {0.4, 0.3, 0.2, 0.1};
    const int k = p->sampling_topk == NMT_SAMPLING_ALL ? 4 : p->sampling_topk;
    double total = 0.0;
    for (int i = 0; i < 4; i++) {
        q[i] = i < k ? pow(base[i], 1.0 / p->sampling_temperature) : 0.0;
        total += q[i];
    }
    double kept = 0.0;
    for (int i = 0; i < 4; i++) {
        const int in = kept < p->sampling_topp * total - 1e-12;
        kept += q[i];
        q[i] = in ? q[i] : 0.0;
    }
    total = 0.0;
    for (int i = 0; i < 4; i++)
        total += q[i];
    for (int i = 0; i < 4; i++)
        q[i] /= total;
}

static int32_t inverse_cdf(const double q[4], double u)
{
    double sum = 0.0;
    for (int i = 0; i < 4; i++) {
        sum += q[i];
        if (q[i] > 0.0 && sum > u)
            return A + i;
    }
    return -1;
}

enum { SAMPLES = 8, LINES = 8, CALLS = 64 };

/* Sampling runs: CALLS calls of LINES lines, SAMPLES samples each, keys
 * unique; each sample's word against its uniform's inverse CDF, and the
 * counts against the distribution. */
static void test_sampling_distribution(int32_t topk, float topp, float temperature)
{
    static fake_model fake;
    nmt_search_config cfg = greedy(1, 10);
    cfg.params.n_best = SAMPLES;
    cfg.params.sampling_topk = topk;
    cfg.params.sampling_topp = topp;
    cfg.params.sampling_temperature = temperature;
    cfg.params.seed = 77;
    double q[4];
    expected_distribution(&cfg.params, q);
    int64_t counts[4] = {0, 0, 0, 0}, total = 0, off = 0;
    const int32_t src[LINES] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int call = 0; call < CALLS; call++) {
        uint64_t keys[LINES];
        for (int i = 0; i < LINES; i++)
            keys[i] = (uint64_t)(call * LINES + i) * 7919u;
        cfg.line_keys = keys;
        nmt_step_model model = fake_init(&fake, one_word, NULL, V, LINES, NULL);
        nmt_search_result r[LINES];
        nmt_error err = {NMT_STATUS_OK, ""};
        CHECK(nmt_beam_search(&model, LINES, src, &cfg, r, &err) == NMT_STATUS_OK, "%s",
              err.message);
        for (int i = 0; i < LINES; i++) {
            CHECK(r[i].n_hypotheses == SAMPLES, "%d samples", r[i].n_hypotheses);
            /* The samples come best first; which one drew what is not kept, so
             * each word must be one some sample's uniform draws. */
            int32_t want[SAMPLES];
            for (int s = 0; s < SAMPLES; s++)
                want[s] = inverse_cdf(q, nmt_rule_sample_uniform(77, keys[i], s, 1));
            for (int h = 0; h < r[i].n_hypotheses; h++) {
                const nmt_search_hypothesis *hyp = &r[i].hypotheses[h];
                CHECK(hyp->length == 1, "a sample of %d words", hyp->length);
                if (hyp->length != 1)
                    continue;
                int found = 0;
                for (int s = 0; s < SAMPLES; s++)
                    if (want[s] == hyp->tokens[0]) {
                        found = 1;
                        want[s] = -2; /* each draw once */
                        break;
                    }
                off += !found;
                const int32_t w = hyp->tokens[0] - A;
                if (w >= 0 && w < 4)
                    counts[w]++;
                total++;
                CHECK(h == 0 || hyp->score <= r[i].hypotheses[h - 1].score,
                      "samples not best first");
            }
            nmt_search_result_clear(&r[i]);
        }
    }
    CHECK(off == 0, "topk %d topp %g T %g: %lld samples drew another word than their uniform",
          topk, topp, temperature, (long long)off);
    double chi2 = 0.0;
    for (int i = 0; i < 4; i++) {
        const double e = q[i] * (double)total;
        if (e == 0.0)
            CHECK(counts[i] == 0, "topk %d topp %g: word %d drawn %lld times, probability 0",
                  topk, topp, i, (long long)counts[i]);
        else
            chi2 += (counts[i] - e) * (counts[i] - e) / e;
    }
    /* 3 degrees of freedom at most: 30 is p < 1e-6. */
    CHECK(chi2 < 30.0, "topk %d topp %g T %g: chi-square %.1f over %lld samples", topk, topp,
          temperature, chi2, (long long)total);
}

/* A line's samples do not depend on its batch: alone, and among others. */
static void test_sampling_invariance(void)
{
    static fake_model fake;
    nmt_search_config cfg = greedy(1, 12);
    cfg.params.n_best = 4;
    cfg.params.sampling_topk = 3;
    cfg.params.seed = 5;
    const int32_t src[3] = {1, 1, 1};
    const uint64_t keys[3] = {11, 12, 13}, alone_key = 12;
    const int32_t ids[3] = {0, 1, 2}, alone_id = 1;
    nmt_search_result all[3], alone;
    nmt_error err = {NMT_STATUS_OK, ""};
    cfg.line_keys = keys;
    nmt_step_model model = fake_init(&fake, prefers_a, NULL, V, 3, ids);
    CHECK(nmt_beam_search(&model, 3, src, &cfg, all, &err) == NMT_STATUS_OK, "%s", err.message);
    cfg.line_keys = &alone_key;
    model = fake_init(&fake, prefers_a, NULL, V, 1, &alone_id);
    CHECK(nmt_beam_search(&model, 1, src, &cfg, &alone, &err) == NMT_STATUS_OK, "%s",
          err.message);
    CHECK(alone.n_hypotheses == all[1].n_hypotheses, "alone %d samples, batched %d",
          alone.n_hypotheses, all[1].n_hypotheses);
    for (int h = 0; h < alone.n_hypotheses && h < all[1].n_hypotheses; h++) {
        const nmt_search_hypothesis *x = &alone.hypotheses[h], *y = &all[1].hypotheses[h];
        CHECK(x->length == y->length && x->score == y->score && x->log_prob == y->log_prob &&
                  !memcmp(x->tokens, y->tokens, sizeof(int32_t) * (size_t)x->length) &&
                  !memcmp(x->token_scores, y->token_scores,
                          sizeof(float) * (size_t)(x->length + 1)),
              "sample %d differs alone and batched", h);
    }
    /* Other keys draw other samples (with 4 samples of up to 11 words). */
    int differ = all[0].n_hypotheses != all[1].n_hypotheses;
    for (int h = 0; !differ && h < all[0].n_hypotheses; h++)
        differ = all[0].hypotheses[h].length != all[1].hypotheses[h].length ||
                 memcmp(all[0].hypotheses[h].tokens, all[1].hypotheses[h].tokens,
                        sizeof(int32_t) * (size_t)all[0].hypotheses[h].length);
    CHECK(differ, "keys 11 and 12 drew the same samples");
    for (int i = 0; i < 3; i++)
        nmt_search_result_clear(&all[i]);
    nmt_search_result_clear(&alone);
}

static void test_sampling_rules(void)
{
    /* At the max length (1: EOS only) every sample is EOS. */
    nmt_search_config cfg = greedy(1, 1);
    cfg.params.n_best = 3;
    cfg.params.sampling_topk = NMT_SAMPLING_ALL;
    nmt_search_result r = run_one(eos_first, NULL, &cfg, 0);
    CHECK(r.n_hypotheses == 3, "max length 1: %d samples", r.n_hypotheses);
    for (int h = 0; h < r.n_hypotheses; h++)
        CHECK(r.hypotheses[h].length == 0 && fabs(r.hypotheses[h].log_prob - log(0.6)) < 1e-6,
              "max length 1: a sample of %d words", r.hypotheses[h].length);
    nmt_search_result_clear(&r);

    /* min_length holds for samples too. */
    cfg = greedy(1, 20);
    cfg.params.n_best = 8;
    cfg.params.sampling_topk = 2;
    cfg.params.min_length = 3;
    r = run_one(eos_first, NULL, &cfg, 0);
    CHECK(r.n_hypotheses == 8, "%d samples", r.n_hypotheses);
    for (int h = 0; h < r.n_hypotheses; h++)
        CHECK(r.hypotheses[h].length >= 3, "a sample of %d words under min_length 3",
              r.hypotheses[h].length);
    nmt_search_result_clear(&r);
}

/* What the rules refuse. */
static void test_refused(void)
{
    static fake_model fake;
    const int32_t src = 1;
    nmt_search_config cases[5];
    for (int i = 0; i < 5; i++)
        cases[i] = greedy(1, 5);
    cases[0].params.sampling_topk = 4;
    cases[0].params.beam_size = 2; /* sampling takes beam 1 */
    cases[0].params.n_best = 2;
    cases[1].params.sampling_topk = 4;
    cases[1].rules = NMT_SEARCH_RULES_ONMT; /* sampling is v1's */
    cases[2].params.coverage_penalty = NMT_COVERAGE_WU; /* coverage is onmt's */
    cases[3].params.sampling_topk = NMT_SAMPLING_ALL;
    cases[3].params.sampling_topp = 0.5f; /* top-p needs a K */
    const int32_t bad_suppress[2] = {3, A}; /* a length past the words */
    cases[4].params.suppress = bad_suppress;
    cases[4].params.suppress_words = 2;
    for (int i = 0; i < 5; i++) {
        nmt_step_model model = fake_init(&fake, eos_first, NULL, V, 1, NULL);
        nmt_search_result r = {0, NULL};
        nmt_error err = {NMT_STATUS_OK, ""};
        CHECK(nmt_beam_search(&model, 1, &src, &cases[i], &r, &err) ==
                  NMT_STATUS_ERROR_ARGUMENT && err.message[0],
              "case %d was not refused", i);
    }
}

int main(void)
{
    test_seed();
    test_min_length();
    test_no_repeat_ngram();
    test_repetition();
    test_bans();
    test_coverage();
    test_sampling_distribution(NMT_SAMPLING_ALL, 1.0f, 1.0f);
    test_sampling_distribution(NMT_SAMPLING_ALL, 1.0f, 2.0f);
    test_sampling_distribution(2, 1.0f, 1.0f);
    test_sampling_distribution(3, 0.6f, 1.0f);
    test_sampling_distribution(4, 0.75f, 0.5f);
    test_sampling_invariance();
    test_sampling_rules();
    test_refused();
    return test_finish("test_logit_rules");
}
