/* test_ensemble.c: ensembles through the public API on the CPU engine
 * (nmt_translator_create_ensemble, nmt_service_create_ensemble;
 * docs/decoding.md, "Ensembles"), on the test model A and its twin B of
 * another seed (the same vocabularies):
 *  - A with itself (weights 1/2 each) is A alone, every output bit for bit
 *    (texts, scores, token scores, alignments, attention, n-best lists);
 *  - weights (1, 0) over A and B are A alone; (0, 1) give B alone's words
 *    and scores (the alignment stays A's: the first model's attention);
 *  - A and B at weights (0.3, 0.9): every hypothesis's token scores and
 *    log-probability are sum_i w_i log p_i(token), each model's step
 *    computed here by hand on the CPU network along the hypothesis's own
 *    tokens; and the result differs from both members' somewhere;
 *  - under a logit rule every row is the log-softmax of the weighted sum
 *    (as on the GPU), by hand; the repetition penalty is refused;
 *  - a service over the ensemble answers as the translator, and scoring
 *    (nmt_score_batch) a hypothesis gives the search's scores of it;
 *  - models that differ (a target or a source token renamed, another
 *    vocabulary size) are refused naming the difference, as are bad
 *    weights, a model count out of range and shrinking. */
#include "nmt.h"

#include "cpu_model.h"
#include "ensemble_fixture.h"
#include "model.h"
#include "source_batch.h"
#include "test_pruned_model.h"
#include "test_results.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N_LINES = 16, MAX_SRC = 16, MAX_WORDS = 64 };

static const char *const words[] = {"der", "die", "das", "und", "ist", "ein", "Haus", "katze",
                                    "Hund", "MANN", "frau", "kind", "sieht", "nicht", "sehr",
                                    "gro\xc3\x9f", "Heute", "wir", "mit", "auf", "gut", "Buch",
                                    "Zebra", "?", "!"};
static char text[N_LINES][512];
static const char *lines[N_LINES];
static nmt_model *model_a, *model_b;

static nmt_options make_options(void)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CPU;
    o.cpu_kernels = NMT_CPU_KERNELS_REFERENCE; /* the network the hand steps run */
    o.beam_size = 4;
    o.n_best = 3;
    o.batch_size = 5;
    o.max_src_tokens = MAX_SRC;
    o.attention_weights = 1;
    return o;
}

static void check_identities(void)
{
    nmt_options o = make_options();
    static nmt_result alone_a[N_LINES], alone_b[N_LINES], got[N_LINES];
    const nmt_model *aa[2] = {model_a, model_a}, *ab[2] = {model_a, model_b};
    if (!test_translate_models(aa, NULL, 1, &o, lines, N_LINES, alone_a) ||
        !test_translate_models(ab + 1, NULL, 1, &o, lines, N_LINES, alone_b))
        return;
    if (test_translate_models(aa, NULL, 2, &o, lines, N_LINES, got))
        CHECK(ensemble_differences("A + A", got, alone_a, N_LINES) == 0,
              "A with itself is not A alone");
    ensemble_clear(got, N_LINES);
    if (test_translate_models(ab, (const float[2]){1.0f, 0.0f}, 2, &o, lines, N_LINES, got))
        CHECK(ensemble_differences("A + B at (1, 0)", got, alone_a, N_LINES) == 0,
              "weights (1, 0) are not the first model alone");
    ensemble_clear(got, N_LINES);
    /* (0, 1): B's words and scores; the alignment (and so UNK replacement) is A's. */
    o.unk_replace = 0;
    nmt_options o_plain = o;
    o_plain.attention_weights = 0;
    ensemble_clear(alone_b, N_LINES);
    if (test_translate_models(ab + 1, NULL, 1, &o_plain, lines, N_LINES, alone_b) &&
        test_translate_models(ab, (const float[2]){0.0f, 1.0f}, 2, &o_plain, lines, N_LINES, got)) {
        int same = 1;
        for (int i = 0; i < N_LINES; i++) {
            same &= got[i].n_hypotheses == alone_b[i].n_hypotheses;
            for (int h = 0; same && h < got[i].n_hypotheses; h++) {
                const nmt_hypothesis *x = &got[i].hypotheses[h], *y = &alone_b[i].hypotheses[h];
                same &= !strcmp(x->text, y->text) && x->score == y->score &&
                        x->log_prob == y->log_prob && x->n_tokens == y->n_tokens &&
                        !memcmp(x->token_scores, y->token_scores,
                                sizeof(float) * (size_t)(x->n_tokens + 1));
            }
        }
        CHECK(same, "weights (0, 1) do not give the second model's words and scores");
    }
    ensemble_clear(got, N_LINES);
    ensemble_clear(alone_a, N_LINES);
    ensemble_clear(alone_b, N_LINES);
}

/* One model's log-probabilities of tokens[0 .. n) then EOS, forced after BOS
 * on line's source, weighted into sum[0 .. n] (and, rows not NULL, every
 * word's into rows[t * V + w]). */
static void add_forced(const nmt_model *m, float weight, const char *line, const int32_t *tokens,
                       int32_t n, double *sum, double *rows)
{
    nmt_cpu_state *state = NULL;
    nmt_source_builder builder = {0};
    nmt_tokens src = {0};
    nmt_error err = {0};
    float *lp = malloc(sizeof(float) * (size_t)m->hp.tgt_vocab);
    int ok = lp && nmt_cpu_state_create(m, 1, 1, MAX_SRC, &state, &err) == NMT_STATUS_OK &&
             nmt_source_builder_init(&builder, m, 1, MAX_SRC, &err) == NMT_STATUS_OK &&
             nmt_tokenize(line, strlen(line), &src, &err) == NMT_STATUS_OK;
    if (ok) {
        nmt_source_word_ids(&builder, &src);
        ok = nmt_source_builder_add(&builder, &src, 0, &err) == NMT_STATUS_OK;
    }
    const nmt_source_batch batch = nmt_source_builder_batch(&builder);
    ok = ok && nmt_cpu_encode(state, &batch, &err) == NMT_STATUS_OK;
    int32_t prev = NMT_BOS_ID, argmax = 0;
    for (int32_t t = 0; ok && t <= n; t++) {
        ok = nmt_cpu_decoder_step(state, 1, &prev, &argmax, &err) == NMT_STATUS_OK &&
             nmt_cpu_output_layer(state, 1, lp, &err) == NMT_STATUS_OK;
        prev = t < n ? tokens[t] : NMT_EOS_ID;
        if (ok)
            sum[t] += (double)weight * (double)lp[prev];
        for (int32_t w = 0; ok && rows && w < m->hp.tgt_vocab; w++)
            rows[(size_t)t * (size_t)m->hp.tgt_vocab + (size_t)w] += (double)weight * lp[w];
    }
    CHECK(ok, "forced steps: %s", err.message);
    nmt_tokens_clear(&src);
    nmt_source_builder_free(&builder);
    nmt_cpu_state_free(state);
    free(lp);
}

static void check_hand_sums(void)
{
    nmt_options o = make_options();
    o.unk_replace = 0;
    o.output_tokens = 1; /* texts are the target tokens, joined by spaces */
    static nmt_result got[N_LINES], alone_a[N_LINES], alone_b[N_LINES];
    const float weights[2] = {0.3f, 0.9f};
    const nmt_model *ab[2] = {model_a, model_b};
    if (!test_translate_models(ab, weights, 2, &o, lines, N_LINES, got) ||
        !test_translate_models(ab, NULL, 1, &o, lines, N_LINES, alone_a) ||
        !test_translate_models(ab + 1, NULL, 1, &o, lines, N_LINES, alone_b))
        return;
    int checked = 0;
    for (int i = 0; i < N_LINES; i++) {
        const int searched = got[i].status == NMT_STATUS_OK && got[i].n_src > 0;
        for (int h = 0; searched && h < got[i].n_hypotheses; h++) {
            const nmt_hypothesis *hyp = &got[i].hypotheses[h];
            int32_t ids[MAX_WORDS];
            double sum[MAX_WORDS + 1] = {0};
            const int32_t n = hyp->n_tokens;
            if (n >= MAX_WORDS)
                continue;
            for (int32_t t = 0; t < n; t++)
                ids[t] = nmt_vocab_lookup(model_a->tgt_vocab, hyp->tokens[t],
                                          strlen(hyp->tokens[t]), -1);
            add_forced(model_a, weights[0], lines[i], ids, n, sum, NULL);
            add_forced(model_b, weights[1], lines[i], ids, n, sum, NULL);
            double total = 0.0;
            int close = 1;
            for (int32_t t = 0; t <= n; t++) {
                const float step = (float)sum[t]; /* the ensemble's score of the token */
                total += step;
                close &= fabs(hyp->token_scores[t] - step) <= 1e-4 * (1.0 + fabs(step));
            }
            CHECK(close && fabs(hyp->log_prob - total) <= 1e-4 * (1.0 + fabs(total)),
                  "line %d hypothesis %d: log_prob %g, the hand sum %g (or a token's score "
                  "differs)", i, h, hyp->log_prob, total);
            checked++;
        }
    }
    CHECK(checked >= N_LINES, "only %d hypotheses checked", checked);
    int differs_a = 0, differs_b = 0;
    for (int i = 0; i < N_LINES; i++) {
        differs_a += !test_identical_line(&got[i], &alone_a[i]);
        differs_b += !test_identical_line(&got[i], &alone_b[i]);
    }
    CHECK(differs_a > 0 && differs_b > 0, "the ensemble equals a member on every line (%d, %d "
          "differ)", differs_a, differs_b);
    /* The service over the same ensemble answers the same, bit for bit. */
    nmt_service_options so;
    nmt_service_options_init(&so);
    so.translator = o;
    so.translator.batch_size = 3;
    so.cpu_workers = 2;
    ensemble_check_service(ab, weights, 2, &so, lines, N_LINES, got);
    /* Scoring the best hypotheses (as tokens: input and output) gives the
     * search's scores of them. */
    static nmt_result searched[N_LINES], scored[N_LINES];
    const char *targets[N_LINES];
    o.input_tokens = 1;
    if (test_translate_models(ab, weights, 2, &o, lines, N_LINES, searched)) {
        ensemble_best_texts(searched, N_LINES, targets);
        if (ensemble_score(ab, weights, 2, &o, lines, targets, N_LINES, scored)) {
            for (int i = 0; i < N_LINES; i++) {
                if (searched[i].status != NMT_STATUS_OK || searched[i].n_src == 0)
                    continue;
                const nmt_hypothesis *h = &searched[i].hypotheses[0];
                const nmt_hypothesis *s = scored[i].n_hypotheses ? scored[i].hypotheses : NULL;
                int close = s && s->n_tokens == h->n_tokens &&
                            fabs(s->log_prob - h->log_prob) <= 1e-4 * (1 + fabs(h->log_prob));
                for (int t = 0; close && t <= h->n_tokens; t++)
                    close = fabs(s->token_scores[t] - h->token_scores[t]) <= 1e-4;
                CHECK(close, "line %d: scoring its translation gives %g, the search %g", i,
                      s ? s->log_prob : NAN, h->log_prob);
            }
        }
        ensemble_clear(scored, N_LINES);
    }
    ensemble_clear(searched, N_LINES);
    ensemble_clear(got, N_LINES);
    ensemble_clear(alone_a, N_LINES);
    ensemble_clear(alone_b, N_LINES);
}

static void expect_refused(const nmt_model *const *models, const float *weights, int n,
                           const nmt_options *o, nmt_status status, const char *expect)
{
    nmt_translator *t = NULL;
    nmt_error err = {0};
    const nmt_status st = nmt_translator_create_ensemble(models, weights, n, o, &t, &err);
    CHECK(st == status && !t && strstr(err.message, expect),
          "expected %d naming '%s', got %d: '%s'", (int)status, expect, (int)st, err.message);
    nmt_translator_free(t);
}

static nmt_model *load(const char *path)
{
    nmt_model *m = NULL;
    nmt_error err = {0};
    CHECK(nmt_model_load(path, &m, &err) == NMT_STATUS_OK, "%s: %s", path, err.message);
    return m;
}

static void check_refusals(void)
{
    const nmt_options o = make_options();
    char renamed_tgt[] = "/tmp/nmt_test_ensemble_tgt_XXXXXX";
    char renamed_src[] = "/tmp/nmt_test_ensemble_src_XXXXXX";
    int fd_tgt = mkstemp(renamed_tgt), fd_src = mkstemp(renamed_src);
    CHECK(fd_tgt >= 0 && fd_src >= 0, "temporary files");
    if (fd_tgt < 0 || fd_src < 0)
        return;
    close(fd_tgt);
    close(fd_src);
    nmt_model *tgt = NULL, *src = NULL, *shipped = NULL;
    if (test_write_renamed_model(model_a, renamed_tgt, 1, 5, "zebra") &&
        test_write_renamed_model(model_a, renamed_src, 0, 3, "zebra")) {
        tgt = load(renamed_tgt);
        src = load(renamed_src);
    }
    shipped = load(NMT_SOURCE_DIR "/models/multi30k-de-en.bin");
    if (tgt)
        expect_refused((const nmt_model *[]){model_a, model_b, tgt}, NULL, 3, &o,
                       NMT_STATUS_ERROR_ARGUMENT,
                       "target token 5 is 'The' in model 1 and 'zebra' in model 3");
    if (src)
        expect_refused((const nmt_model *[]){model_a, src}, NULL, 2, &o,
                       NMT_STATUS_ERROR_ARGUMENT,
                       "source token 3 is 'die' in model 1 and 'zebra' in model 2");
    if (shipped)
        expect_refused((const nmt_model *[]){model_a, shipped}, NULL, 2, &o,
                       NMT_STATUS_ERROR_ARGUMENT,
                       "model 2's target vocabulary has 4778 tokens, model 1's 32");
    const nmt_model *ab[2] = {model_a, model_b};
    expect_refused(ab, (const float[2]){1.0f, -1.0f}, 2, &o, NMT_STATUS_ERROR_ARGUMENT,
                   "weight 2 is -1");
    expect_refused(ab, (const float[2]){0.0f, 0.0f}, 2, &o, NMT_STATUS_ERROR_ARGUMENT,
                   "every weight is 0");
    expect_refused(ab, NULL, 0, &o, NMT_STATUS_ERROR_ARGUMENT, "0 models");
    const nmt_model *nine[9] = {model_a, model_a, model_a, model_a, model_a,
                                model_a, model_a, model_a, model_a};
    expect_refused(nine, NULL, 9, &o, NMT_STATUS_ERROR_ARGUMENT, "9 models, must be 1..8");
    expect_refused((const nmt_model *[]){model_a, NULL}, NULL, 2, &o, NMT_STATUS_ERROR_ARGUMENT,
                   "model 2 is NULL");
    nmt_options shrunk = o;
    shrunk.shrink.mode = NMT_SHRINK_TOP;
    shrunk.shrink.top = 20;
    expect_refused(ab, NULL, 2, &shrunk, NMT_STATUS_ERROR_UNSUPPORTED,
                   "shrinking (LSH, TOP) with an ensemble");
    nmt_service_options so;
    nmt_service_options_init(&so);
    so.translator = o;
    nmt_service *service = NULL;
    nmt_error err = {0};
    CHECK(nmt_service_create_ensemble(ab, (const float[2]){1.0f, NAN}, 2, &so, &service, &err) ==
                  NMT_STATUS_ERROR_ARGUMENT && !service && strstr(err.message, "weight 2 is nan"),
          "service, a NaN weight: '%s'", err.message);
    nmt_model_free(tgt);
    nmt_model_free(src);
    nmt_model_free(shipped);
    unlink(renamed_tgt);
    unlink(renamed_src);
}

/* The logit rules over an ensemble (A and B at (0.3, 0.9), min_length 1:
 * EOS banned at the first step): every row of every step gets the
 * log-softmax of the weighted sum (the GPU's rules pass renormalizes every
 * row), so each token's score is the hand sum minus its row's
 * log-sum-exp (the first step's without EOS). The repetition penalty is
 * refused, at create and per request. */
static void check_rules(void)
{
    nmt_options o = make_options();
    o.unk_replace = 0;
    o.output_tokens = 1;
    o.min_length = 1;
    static nmt_result got[N_LINES];
    const float weights[2] = {0.3f, 0.9f};
    const nmt_model *ab[2] = {model_a, model_b};
    const int32_t V = model_a->hp.tgt_vocab;
    double *rows = malloc(sizeof(double) * (size_t)(MAX_WORDS + 1) * (size_t)V);
    CHECK(rows != NULL, "out of memory");
    int checked = 0;
    for (int i = 0;
         rows && i < N_LINES && test_translate_models(ab, weights, 2, &o, lines + i, 1, &got[i]);
         i++) {
        for (int h = 0; got[i].status == NMT_STATUS_OK && h < got[i].n_hypotheses; h++) {
            const nmt_hypothesis *hyp = &got[i].hypotheses[h];
            int32_t ids[MAX_WORDS];
            double sum[MAX_WORDS + 1] = {0};
            const int32_t n = hyp->n_tokens;
            if (got[i].n_src == 0 || n >= MAX_WORDS)
                continue;
            for (int32_t t = 0; t < n; t++)
                ids[t] = nmt_vocab_lookup(model_a->tgt_vocab, hyp->tokens[t],
                                          strlen(hyp->tokens[t]), -1);
            memset(rows, 0, sizeof(double) * (size_t)(n + 1) * (size_t)V);
            add_forced(model_a, weights[0], lines[i], ids, n, sum, rows);
            add_forced(model_b, weights[1], lines[i], ids, n, sum, rows);
            int close = 1;
            for (int32_t t = 0; t <= n; t++) {
                double lse = 0.0;
                for (int32_t w = 0; w < V; w++)
                    if (t > 0 || w != NMT_EOS_ID)
                        lse += exp(rows[(size_t)t * (size_t)V + (size_t)w]);
                const double want = sum[t] - log(lse);
                close &= fabs(hyp->token_scores[t] - want) <= 1e-4 * (1.0 + fabs(want)) &&
                         want > sum[t] + 1e-3; /* renormalized: the sum is not */
            }
            CHECK(close, "line %d hypothesis %d: a token's score is not the log-softmax of "
                  "the weighted sum", i, h);
            checked++;
        }
    }
    CHECK(checked >= N_LINES, "only %d hypotheses checked", checked);
    ensemble_clear(got, N_LINES);
    free(rows);
    nmt_options penalized = make_options();
    penalized.repetition_penalty = 1.5f;
    expect_refused(ab, NULL, 2, &penalized, NMT_STATUS_ERROR_UNSUPPORTED,
                   "repetition_penalty with an ensemble: not supported");
    nmt_service_options so;
    nmt_service_options_init(&so);
    so.translator = make_options();
    nmt_service *service = NULL;
    nmt_error err = {0};
    CHECK(nmt_service_create_ensemble(ab, weights, 2, &so, &service, &err) == NMT_STATUS_OK,
          "service: %s", err.message);
    if (service) {
        nmt_request_options ro;
        nmt_request_options_init(&ro);
        ro.repetition_penalty = 1.5f;
        CHECK(nmt_service_submit(service, "der", &ro, NULL, NULL, NULL, &err) !=
                      NMT_STATUS_OK &&
                  strstr(err.message, "repetition_penalty with an ensemble"),
              "a request's repetition penalty over an ensemble: '%s'", err.message);
    }
    nmt_service_free(service);
}

int main(void)
{
    test_seed();
    const int n_words = (int)(sizeof words / sizeof words[0]);
    for (int i = 0; i < N_LINES; i++) {
        const int len = i == N_LINES - 2 ? 0 : i == N_LINES - 1 ? MAX_SRC + 2
                                                                 : test_rand_int(1, 9);
        test_random_words(text[i], words, n_words, len);
        lines[i] = text[i];
    }
    model_a = load(NMT_TEST_MODEL);
    model_b = load(NMT_TEST_MODEL_SEED2);
    if (model_a && model_b) {
        check_identities();
        check_hand_sums();
        check_refusals();
        check_rules();
    }
    nmt_model_free(model_a);
    nmt_model_free(model_b);
    return test_finish("test_ensemble");
}
