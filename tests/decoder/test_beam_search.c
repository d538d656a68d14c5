/* test_beam_search.c: beam search semantics (model-v1, and OpenNMT-py's rules:
 * beam_search_onmt_cases.h) on a scripted fake model.
 *
 * The fake keeps each row's token prefix and moves it through reorder, and
 * scores a row by its prefix alone, so a search that reorders wrongly sees
 * wrong scores. Hand-worked cases check the rules one at a time; a randomized
 * part compares the batched search with a plain full-sort implementation of
 * the rules, and (with B large enough to prune nothing) with an exhaustive
 * enumeration of every sequence. Every result's token scores are checked
 * against the table (they sum to log_prob), and with config.attention
 * (half the random batches) every token's attention row against the row the
 * fake reported when it produced the token. Forced tokens (prefixes,
 * alternatives, scoring): forced_cases.h; with the logit rules and
 * sampling: forced_rules_cases.h, forced_sample_cases.h. */
#include "error.h"
#include "search.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_model.h"

static nmt_search_config make_config(int32_t beam, int32_t n_best, float alpha, float a, int32_t b)
{
    return (nmt_search_config){
        .params = {.beam_size = beam, .n_best = n_best, .alpha = alpha, .max_len_a = a,
                   .max_len_b = b},
        .pad_id = PAD,
        .bos_id = BOS,
        .eos_id = EOS,
        .rules = NMT_SEARCH_RULES_V1,
    };
}

/* Token scores and attention rows, for both rule sets: token j's score is
 * the table's log p of the token (v1: within float rounding of the
 * accumulation; onmt: also of the rank x penalty it carries), the EOS's last
 * (onmt: 0 for a hypothesis cut at the max length), summing to log_prob;
 * with cfg->attention, row j is the one the fake gave for the prefix j. */
static void check_outputs(const char *name, const nmt_search_result *res, table_fn table,
                          const void *ctx, int32_t sentence, int32_t vocab,
                          const nmt_search_config *cfg, int32_t src_length)
{
    static float lp[MAX_VOCAB];
    const int onmt = cfg->rules == NMT_SEARCH_RULES_ONMT;
    for (int32_t h = 0; h < res->n_hypotheses; h++) {
        const nmt_search_hypothesis *hyp = &res->hypotheses[h];
        const double tol = (onmt ? 1e-5 : 1e-6) * (fabs((double)hyp->log_prob) + 1.0);
        CHECK(hyp->token_scores != NULL, "%s: hyp %d has no token scores", name, h);
        if (!hyp->token_scores)
            continue;
        double sum = 0.0;
        for (int32_t j = 0; j <= hyp->length && j < MAX_LEN; j++) {
            table(ctx, sentence, hyp->tokens, j, vocab, lp);
            const float got = hyp->token_scores[j];
            const int cut = onmt && j == hyp->length && got == 0.0f;
            const float want = j < hyp->length ? lp[hyp->tokens[j]] : lp[EOS];
            CHECK(cut || fabs((double)got - (double)want) <= tol,
                  "%s: hyp %d token %d scores %.9g, the table says %.9g", name, h, j, got, want);
            sum += (double)got;
        }
        CHECK(fabs(sum - (double)hyp->log_prob) <= tol * (hyp->length + 1),
              "%s: hyp %d token scores sum to %.9g, log_prob %.9g", name, h, sum,
              hyp->log_prob);
        CHECK(cfg->attention ? hyp->attention != NULL && hyp->n_src == src_length
                             : hyp->attention == NULL,
              "%s: hyp %d attention %p over %d sources (source %d, asked %d)", name, h,
              (void *)hyp->attention, hyp->n_src, src_length, cfg->attention);
        for (int32_t j = 0; cfg->attention && hyp->attention && j < hyp->length; j++)
            for (int32_t s = 0; s < src_length; s++) {
                const float want = fake_weight(sentence, hyp->tokens, j, s);
                CHECK(hyp->attention[(size_t)j * src_length + s] == want,
                      "%s: hyp %d token %d source %d: weight %g, the row gave %g", name, h, j, s,
                      hyp->attention[(size_t)j * src_length + s], want);
            }
    }
}

/* Checks what holds for every result: no PAD/BOS/EOS tokens, length within the
 * max, log_prob and score recomputed from the table along the tokens, the
 * attention argmax of the row that produced each token, best first. */
static void check_result(const char *name, const nmt_search_result *res, table_fn table,
                         const void *ctx, int32_t sentence, int32_t vocab,
                         const nmt_search_config *cfg, int32_t src_length)
{
    static float lp[MAX_VOCAB];
    int32_t max_len = nmt_search_max_length(cfg, src_length);
    CHECK(res->n_hypotheses >= 0 && res->n_hypotheses <= cfg->params.n_best, "%s: %d hyps", name,
          res->n_hypotheses);
    check_outputs(name, res, table, ctx, sentence, vocab, cfg, src_length);
    for (int32_t h = 0; h < res->n_hypotheses; h++) {
        const nmt_search_hypothesis *hyp = &res->hypotheses[h];
        CHECK(hyp->length >= 0 && hyp->length + 1 <= max_len, "%s: hyp %d length %d (max %d)",
              name, h, hyp->length, max_len);
        float sum = 0.0f;
        for (int32_t j = 0; j <= hyp->length && j < MAX_LEN; j++) {
            table(ctx, sentence, hyp->tokens, j, vocab, lp);
            int32_t w = j < hyp->length ? hyp->tokens[j] : EOS;
            CHECK(j == hyp->length || (w != PAD && w != BOS && w != EOS && w < vocab),
                  "%s: hyp %d token %d is %d", name, h, j, w);
            if (j < hyp->length)
                CHECK(hyp->attn_argmax[j] == fake_attn(sentence, hyp->tokens, j),
                      "%s: hyp %d attn[%d] = %d", name, h, j, hyp->attn_argmax[j]);
            sum += lp[w];
        }
        CHECK(hyp->log_prob == sum, "%s: hyp %d log_prob %g, tokens sum to %g", name, h,
              hyp->log_prob, sum);
        CHECK(hyp->score == hyp->log_prob / powf((float)(hyp->length + 1), cfg->params.alpha),
              "%s: hyp %d score %g", name, h, hyp->score);
        if (h > 0)
            CHECK(hyp->score <= res->hypotheses[h - 1].score, "%s: hyp %d not sorted", name, h);
    }
}

#include "beam_search_hand_cases.h"

/* --- random tables: log-probs hashed from (seed, sentence, prefix, word) ---- */
typedef struct random_table {
    uint64_t seed;
    int quantized; /* few distinct values: exact ties everywhere */
    int finite;    /* no -inf entries (as a log-softmax; the onmt part) */
} random_table;

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void random_lookup(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                          int32_t vocab, float *out)
{
    const random_table *t = ctx;
    uint64_t h = mix64(t->seed ^ (uint64_t)(sentence + 1) * 0x9E3779B97F4A7C15ull);
    for (int32_t j = 0; j < len; j++)
        h = mix64(h ^ (uint64_t)(prefix[j] + 7));
    for (int32_t w = 0; w < vocab; w++) {
        uint64_t r = mix64(h + (uint64_t)w * 0x632BE59BD9B4E019ull);
        if (r % 100 < 8 && !t->finite)
            out[w] = -INFINITY;
        else if (t->quantized)
            out[w] = -0.5f * (float)((r >> 8) % 6);
        else
            out[w] = -6.0f * (float)((r >> 11) * 0x1.0p-53);
    }
}

/* --- the reference: the rules as written, one sentence, full sorts ---------- */
typedef struct ref_hyp {
    int32_t tokens[MAX_LEN], len;
    float log_prob, score;
} ref_hyp;

typedef struct ref_cand {
    float score;
    int32_t hyp, word;
} ref_cand;

static int ref_cand_cmp(const void *pa, const void *pb)
{
    const ref_cand *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (a->hyp != b->hyp)
        return a->hyp < b->hyp ? -1 : 1;
    return a->word < b->word ? -1 : a->word > b->word;
}

/* Returns the number of hypotheses written to out (best first). */
static int32_t ref_search(table_fn table, const void *ctx, int32_t sentence, int32_t vocab,
                          const nmt_search_config *cfg, int32_t src_length, ref_hyp *out)
{
    static ref_hyp alive[MAX_ROWS], next[MAX_ROWS], finished[2 * MAX_ROWS];
    static ref_cand cands[MAX_ROWS * MAX_VOCAB];
    static float lp[MAX_VOCAB];
    int32_t beam = cfg->params.beam_size, max_len = nmt_search_max_length(cfg, src_length);
    int32_t n_alive = 1, n_finished = 0;
    memset(&alive[0], 0, sizeof alive[0]);
    for (int32_t t = 1; t <= max_len; t++) {
        int32_t n = 0, n_next = 0;
        for (int32_t k = 0; k < n_alive; k++) {
            table(ctx, sentence, alive[k].tokens, alive[k].len, vocab, lp);
            for (int32_t w = 0; w < vocab; w++) {
                float s = alive[k].log_prob + lp[w];
                if (w != PAD && w != BOS && (t < max_len || w == EOS) && s != -INFINITY)
                    cands[n++] = (ref_cand){s, k, w};
            }
        }
        qsort(cands, (size_t)n, sizeof cands[0], ref_cand_cmp);
        for (int32_t c = 0; c < n && c < 2 * beam; c++) {
            ref_hyp h = alive[cands[c].hyp];
            h.log_prob = cands[c].score;
            if (cands[c].word == EOS && c < beam) {
                h.score = h.log_prob / powf((float)(h.len + 1), cfg->params.alpha);
                finished[n_finished++] = h;
            } else if (cands[c].word != EOS && n_next < beam) {
                h.tokens[h.len++] = cands[c].word;
                next[n_next++] = h;
            }
        }
        memcpy(alive, next, sizeof next[0] * (size_t)n_next);
        n_alive = n_next;
        if (n_finished >= beam || n_alive == 0)
            break;
    }
    int32_t n_out = 0;
    for (int32_t i = 0; i < n_finished && n_out < cfg->params.n_best; i++) { /* selection, stable */
        int32_t best = -1;
        for (int32_t j = 0; j < n_finished; j++)
            if (finished[j].len >= 0 && (best < 0 || finished[j].score > finished[best].score))
                best = j;
        out[n_out++] = finished[best];
        finished[best].len = -1; /* taken */
    }
    return n_out;
}

static int32_t onmt_ref_search(table_fn table, const void *ctx, int32_t sentence, int32_t vocab,
                               const nmt_search_config *cfg, int32_t src_length, ref_hyp *out);

static int same_hyp(const nmt_search_hypothesis *a, const ref_hyp *b)
{
    if (a->length != b->len || a->log_prob != b->log_prob || a->score != b->score)
        return 0;
    for (int32_t j = 0; j < a->length; j++)
        if (a->tokens[j] != b->tokens[j])
            return 0;
    return 1;
}

/* Batched search of n sentences, each compared with the reference and with
 * a search of that sentence alone (same result, same rows at every step). */
static void check_batch(const char *name, table_fn table, const void *ctx, int32_t vocab,
                        const nmt_search_config *cfg, int32_t n, const int32_t *src_lengths,
                        fake_model *fake, fake_model *alone_fake)
{
    static ref_hyp ref[MAX_ROWS];
    nmt_search_result res[MAX_SENT], alone;
    nmt_error err = {0};
    const int onmt = cfg->rules == NMT_SEARCH_RULES_ONMT;
    nmt_step_model model = fake_init(fake, table, ctx, vocab, n, NULL);
    fake->feeds_specials = onmt;
    nmt_status st = nmt_beam_search(&model, n, src_lengths, cfg, res, &err);
    CHECK(st == NMT_STATUS_OK, "%s: status %d: %s", name, st, err.message);
    if (st != NMT_STATUS_OK)
        return;
    for (int32_t i = 0; i < n; i++) {
        int32_t n_ref;
        if (onmt) {
            check_outputs(name, &res[i], table, ctx, i, vocab, cfg, src_lengths[i]);
            n_ref = onmt_ref_search(table, ctx, i, vocab, cfg, src_lengths[i], ref);
        } else {
            check_result(name, &res[i], table, ctx, i, vocab, cfg, src_lengths[i]);
            n_ref = ref_search(table, ctx, i, vocab, cfg, src_lengths[i], ref);
        }
        int ok = res[i].n_hypotheses == n_ref;
        for (int32_t h = 0; ok && h < n_ref; h++)
            ok = same_hyp(&res[i].hypotheses[h], &ref[h]);
        CHECK(ok, "%s: sentence %d (B %d N %d alpha %g V %d) differs from the reference "
              "(%d vs %d hyps)", name, i, cfg->params.beam_size, cfg->params.n_best,
              cfg->params.alpha, vocab, res[i].n_hypotheses, n_ref);

        model = fake_init(alone_fake, table, ctx, vocab, 1, &i);
        alone_fake->feeds_specials = onmt;
        st = nmt_beam_search(&model, 1, &src_lengths[i], cfg, &alone, &err);
        CHECK(st == NMT_STATUS_OK, "%s alone: status %d", name, st);
        ok = alone.n_hypotheses == res[i].n_hypotheses;
        for (int32_t h = 0; ok && h < n_ref; h++)
            ok = same_hyp(&alone.hypotheses[h], &ref[h]);
        CHECK(ok, "%s: sentence %d searched alone differs from the batch", name, i);
        /* Once a sentence is done its rows are dropped: the batch gives it
         * exactly the rows it had alone, step by step, and none after. */
        CHECK(alone_fake->n_steps <= fake->n_steps, "%s: more steps alone", name);
        for (int32_t t = 0; t < fake->n_steps; t++) {
            int32_t want = t < alone_fake->n_steps ? alone_fake->rows_at[t][i] : 0;
            CHECK(fake->rows_at[t][i] == want, "%s: sentence %d has %d rows at step %d, want %d",
                  name, i, fake->rows_at[t][i], t + 1, want);
        }
        nmt_search_result_clear(&alone);
        nmt_search_result_clear(&res[i]);
    }
}

static void test_batches(fake_model *fake, fake_model *alone_fake)
{
    /* Hand tables per sentence, different lengths: sentence 0 has B finished at step 2,
     * 1 stops at max length 2, 2 finishes at step 1, 3 needs 3 steps. */
    const rule rules[] = {{0, "", "a:-1 E:-3"}, {0, "a", "E:-0.5 b:-2"},
                          {1, "", "a:-1 b:-2 E:-5"}, {1, "a", "a:-0.1 E:-3"},
                          {1, "b", "a:-0.1 E:-4"},
                          {2, "", "E:-0.1"},
                          {3, "", "c:-0.1 d:-0.2 E:-9"}, {3, "c", "c:-0.1 E:-9"}, {3, "cc", "E:-1"},
                          {0}};
    hand_table t = {rules, -INFINITY};
    nmt_search_config cfg = make_config(2, 2, 1.0f, 0.5f, 1);
    const int32_t src_lengths[] = {9, 3, 4, 20};
    check_batch("hand batch", hand_lookup, &t, 8, &cfg, 4, src_lengths, fake, alone_fake);
    CHECK(fake->n_steps == 3 && fake->rows_at[1][2] == 0 && fake->rows_at[2][1] == 0 &&
          fake->rows_at[2][3] == 1, "hand batch: rows of done sentences not dropped");
}

/* Every finite sequence, when B is large enough that the beam prunes nothing
 * (each step has at most B candidates): the search must return all of them. */
static void test_exhaustive(fake_model *fake, int iterations)
{
    for (int it = 0; it < iterations; it++) {
        random_table t = {test_rand_u64(), 0, 0};
        int32_t vocab = test_rand_int(4, 7), words = vocab - 3; /* non-EOS words */
        int32_t max_len = test_rand_int(1, vocab == 6 ? 4 : 5), total = 0;
        for (int32_t l = 0, p = 1; l < max_len; l++, p *= words)
            total += p; /* sequences of length l + 1 ending in EOS */
        nmt_search_config cfg = make_config(total, total, test_rand_uniform(0.0f, 1.5f), 0.0f,
                                            max_len);
        int32_t src_length = 1;
        nmt_search_result res;
        nmt_error err = {0};
        nmt_step_model model = fake_init(fake, random_lookup, &t, vocab, 1, NULL);
        nmt_status st = nmt_beam_search(&model, 1, &src_length, &cfg, &res, &err);
        CHECK(st == NMT_STATUS_OK, "exhaustive: %s", err.message);
        check_result("exhaustive", &res, random_lookup, &t, 0, vocab, &cfg, src_length);
        /* Enumerate: sequence s of length l is its digits in base `words`. */
        static float want[1024];
        int32_t n_want = 0;
        float lp[8];
        for (int32_t l = 0; l < max_len; l++) {
            int32_t count = 1;
            for (int32_t j = 0; j < l; j++)
                count *= words;
            for (int32_t s = 0; s < count; s++) {
                int32_t seq[8], rest = s;
                float sum = 0.0f;
                for (int32_t j = 0; j <= l; j++) {
                    random_lookup(&t, 0, seq, j, vocab, lp);
                    seq[j] = j < l ? 3 + rest % words : EOS;
                    rest /= words;
                    sum += lp[seq[j]];
                }
                if (sum != -INFINITY)
                    want[n_want++] = sum / powf((float)(l + 1), cfg.params.alpha);
            }
        }
        for (int32_t i = 1; i < n_want; i++) /* descending */
            for (int32_t j = i; j > 0 && want[j - 1] < want[j]; j--) {
                float tmp = want[j];
                want[j] = want[j - 1];
                want[j - 1] = tmp;
            }
        int ok = res.n_hypotheses == n_want;
        for (int32_t h = 0; ok && h < n_want; h++)
            ok = res.hypotheses[h].score == want[h];
        for (int32_t a = 0; ok && a < res.n_hypotheses; a++) /* distinct sequences */
            for (int32_t b = a + 1; b < res.n_hypotheses; b++) {
                const nmt_search_hypothesis *x = &res.hypotheses[a], *y = &res.hypotheses[b];
                if (x->length == y->length &&
                    (x->length == 0 || !memcmp(x->tokens, y->tokens, sizeof(int32_t) * (size_t)x->length)))
                    ok = 0;
            }
        CHECK(ok, "exhaustive: V %d max_len %d: %d hyps, %d finite sequences", vocab, max_len,
              res.n_hypotheses, n_want);
        nmt_search_result_clear(&res);
    }
}

static void test_random(fake_model *fake, fake_model *alone_fake, int iterations)
{
    for (int it = 0; it < iterations; it++) {
        random_table t = {test_rand_u64(), (int)(test_rand_u64() % 2), 0};
        int large = it % 10 == 9;
        int32_t vocab = large ? test_rand_int(100, MAX_VOCAB) : test_rand_int(4, 9);
        int32_t beam = test_rand_int(1, large ? 9 : 6);
        const float alphas[] = {0.0f, 0.5f, 1.0f, 1.5f};
        nmt_search_config cfg = make_config(beam, test_rand_int(1, beam + 1),
                                            alphas[test_rand_int(0, 4)],
                                            0.5f * (float)test_rand_int(0, 3), test_rand_int(0, 5));
        if (cfg.params.max_len_a == 0.0f && cfg.params.max_len_b == 0)
            cfg.params.max_len_b = 1; /* the same max length 1 (a and b both 0 are refused) */
        cfg.attention = it % 2;
        int32_t n = test_rand_int(1, 5), src_lengths[MAX_SENT];
        for (int32_t i = 0; i < n; i++)
            src_lengths[i] = test_rand_int(1, 6);
        check_batch("random", random_lookup, &t, vocab, &cfg, n, src_lengths, fake, alone_fake);
    }
}


/* A search config of the v1 fields, the rest zero-initialized (off). */
#define CONFIG(B, N, ALPHA, A, LEN_B, PAD_, BOS_, EOS_, RULES)                                \
    {.params = {.beam_size = (B), .n_best = (N), .alpha = (ALPHA), .max_len_a = (A),          \
                .max_len_b = (LEN_B)},                                                        \
     .pad_id = (PAD_), .bos_id = (BOS_), .eos_id = (EOS_), .rules = (RULES)}

static void test_invalid(fake_model *fake)
{
    const rule none[] = {{0}};
    hand_table t = {none, -1.0f};
    nmt_step_model model = fake_init(fake, hand_lookup, &t, 8, 1, NULL);
    int32_t one = 1, zero = 0;
    nmt_search_result res;
    nmt_error err;
    struct {
        const char *field;
        nmt_search_config cfg;
        int32_t vocab;
        const int32_t *src_length;
    } cases[] = {
        {"beam_size", CONFIG(0, 1, 1.0f, 2.0f, 10, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 8, &one},
        {"n_best", CONFIG(2, 0, 1.0f, 2.0f, 10, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 8, &one},
        {"n_best", CONFIG(2, 3, 1.0f, 2.0f, 10, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 8, &one},
        {"vocab_size", CONFIG(2, 1, 1.0f, 2.0f, 10, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 3, &one},
        {"src_lengths[0]", CONFIG(2, 1, 1.0f, 2.0f, 10, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 8,
         &zero},
        {"pad_id", CONFIG(2, 1, 1.0f, 2.0f, 10, -1, BOS, EOS, NMT_SEARCH_RULES_V1), 8, &one},
        {"bos_id", CONFIG(2, 1, 1.0f, 2.0f, 10, PAD, 8, EOS, NMT_SEARCH_RULES_V1), 8, &one},
        {"eos_id", CONFIG(2, 1, 1.0f, 2.0f, 10, PAD, BOS, 9, NMT_SEARCH_RULES_V1), 8, &one},
        {"eos_id", CONFIG(2, 1, 1.0f, 2.0f, 10, PAD, BOS, PAD, NMT_SEARCH_RULES_V1), 8, &one},
        {"alpha", CONFIG(2, 1, NAN, 2.0f, 10, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 8, &one},
        {"rules", CONFIG(2, 1, 1.0f, 2.0f, 10, PAD, BOS, EOS, (nmt_search_rules)7), 8, &one},
        {"beam_size", CONFIG(257, 1, 1.0f, 2.0f, 10, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 8, &one},
        {"alpha", CONFIG(2, 1, -0.5f, 2.0f, 10, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 8, &one},
        {"max_len_a", CONFIG(2, 1, 1.0f, NAN, 10, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 8, &one},
        {"max_len_b", CONFIG(2, 1, 1.0f, 2.0f, -1, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 8, &one},
        {"both 0", CONFIG(2, 1, 1.0f, 0.0f, 0, PAD, BOS, EOS, NMT_SEARCH_RULES_V1), 8, &one},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        model.vocab_size = cases[c].vocab;
        memset(&err, 0, sizeof err);
        res.n_hypotheses = 7;
        nmt_status st = nmt_beam_search(&model, 1, cases[c].src_length, &cases[c].cfg, &res, &err);
        CHECK(st == NMT_STATUS_ERROR_ARGUMENT && strstr(err.message, cases[c].field) &&
              res.n_hypotheses == 0, "invalid %s: status %d, message \"%s\"", cases[c].field, st,
              err.message);
    }
    /* Attention weights from a model that gives none. */
    {
        nmt_search_config asks = make_config(2, 1, 1.0f, 2.0f, 10);
        asks.attention = 1;
        model = fake_init(fake, hand_lookup, &t, 8, 1, NULL);
        model.attention = NULL;
        nmt_status st = nmt_beam_search(&model, 1, &one, &asks, &res, &err);
        CHECK(st == NMT_STATUS_ERROR_ARGUMENT && strstr(err.message, "attention") &&
                  res.n_hypotheses == 0,
              "attention without the model's weights: status %d, \"%s\"", st, err.message);
    }
    /* A failing step is passed on and leaves the results empty. */
    nmt_search_config cfg = make_config(2, 1, 1.0f, 2.0f, 10);
    model = fake_init(fake, hand_lookup, &t, 8, 1, NULL);
    fake->fail_at_step = 1; /* the second step */
    nmt_status st = nmt_beam_search(&model, 1, &one, &cfg, &res, &err);
    CHECK(st == NMT_STATUS_ERROR_INTERNAL && res.n_hypotheses == 0 && res.hypotheses == NULL,
          "failing step: status %d", st);
    /* No sentences: nothing to do. */
    CHECK(nmt_beam_search(&model, 0, NULL, &cfg, NULL, &err) == NMT_STATUS_OK, "0 sentences");
    /* Max length: floor(a * S + b), at least 1. */
    cfg = make_config(1, 1, 1.0f, 2.0f, 10);
    CHECK(nmt_search_max_length(&cfg, 7) == 24, "max length 2*7+10");
    cfg = make_config(1, 1, 1.0f, 1.5f, -20);
    CHECK(nmt_search_max_length(&cfg, 3) == 1 && nmt_search_max_length(&cfg, 15) == 2,
          "max length clamps to 1 and floors");
}

#include "beam_search_onmt_cases.h"
#include "forced_cases.h"
#include "forced_rules_cases.h"
#include "forced_sample_cases.h"

#ifdef NMT_WITH_CUDA
#include "beam_step.h"

/* The CUDA search's host reading of a done_at entry (beam_step.h): the
 * beam step writes tag << 16 | (step & 0xFFFF); read with the last launched
 * step up to 128 steps later, the entry gives its step back, past 65,535
 * too, and an entry of another tag (or none) gives 0. */
static void test_done_at_step(void)
{
    static const int32_t steps[] = {1, 2, 63, 64, 65535, 65536, 65537, 131071, 131072, 419600};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        for (int32_t later = 0; later <= 128; later += 32) {
            const int32_t step = steps[i], tag = 1 + (int32_t)i * 3271 % 32767;
            const int32_t entry = tag << 16 | (step & 0xFFFF);
            CHECK(nmt_done_at_step(entry, tag, step + later) == step,
                  "done at %d, read at %d: %d", step, step + later,
                  nmt_done_at_step(entry, tag, step + later));
            CHECK(nmt_done_at_step(entry, tag % 32767 + 1, step + later) == 0,
                  "done at %d under tag %d counted for tag %d", step, tag, tag % 32767 + 1);
        }
    CHECK(nmt_done_at_step(0, 5, 70000) == 0, "a cleared entry counted");
}
#endif

int main(void)
{
    test_seed();
#ifdef NMT_WITH_CUDA
    test_done_at_step();
#endif
    fake_model *fake = calloc(1, sizeof *fake), *alone_fake = calloc(1, sizeof *alone_fake);
    if (!fake || !alone_fake)
        return 1;
    test_hand_cases(fake);
    test_batches(fake, alone_fake);
    test_invalid(fake);
    test_exhaustive(fake, 300);
    test_random(fake, alone_fake, 1000);
    test_onmt_hand_cases(fake);
    test_onmt_random(fake, alone_fake, 1000);
    test_forced(fake, alone_fake, 600);
    test_forced_rules(fake);
    test_forced_sampling(fake);
    free(fake);
    free(alone_fake);
    return test_finish("beam_search");
}
