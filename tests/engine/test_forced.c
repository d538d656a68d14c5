/* test_forced.c: scoring, target prefixes and alternatives through the
 * public API (nmt_score_batch, nmt_translate_batch_prefix,
 * return_alternatives; docs/decoding.md), on the CPU's reference kernels
 * (a row's log-probabilities do not depend on the other rows, so the
 * oracles below hold bit for bit) and the test model, lines as tokens
 * (input_tokens, output_tokens: a hypothesis's text reads back as its
 * tokens):
 * - scoring a translation the search found gives that hypothesis's
 *   log-probability, score, token scores, alignment and attention rows, bit
 *   for bit (model-v1's rules; OpenNMT-py's within rounding: its search
 *   carries rank x penalty);
 * - a prefixed translation's every hypothesis starts with the prefix, whose
 *   token scores are the prefix's scored alone; lines without a prefix in
 *   the same call translate as without the call's prefixes;
 * - alternatives: distinct words after the prefix, best first, and
 *   alternative k is the translation with prefix + its word, bit for bit
 *   (OpenNMT-py's rules may propose BOS or PAD, which a prefix refuses);
 * - refusals, one result a line: special tokens, too long, bad UTF-8, an
 *   empty source or no target to score; prefixes on a shrinking translator
 *   and alternatives above the batch size;
 * - the service answers prefixed, alternative and scoring requests as the
 *   translator does, bit for bit. */
#include "forced_fixture.h"
#include "nmt.h"
#include "test_results.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_LINES = 24, TEXT_BYTES = 512 };

static char text[N_LINES][TEXT_BYTES];
static const char *lines[N_LINES];
static nmt_model *model;

static nmt_options options(int beam, int n_best, nmt_search_rules rules)
{
    nmt_options o = forced_options(NMT_DEVICE_CPU, beam, n_best, 5);
    o.search_rules = rules;
    if (rules == NMT_SEARCH_RULES_ONMT)
        o.alpha = 0.6f;
    return o;
}

static nmt_translator *create(const nmt_options *o)
{
    return forced_create(model, o);
}

static int same_bits(const float *a, const float *b, size_t n)
{
    return n == 0 || !memcmp(a, b, sizeof(float) * n);
}

/* The first n tokens of a token text (its first n space-separated words). */
static void first_tokens(const char *text, int n, char *out, size_t size)
{
    size_t at = 0;
    for (int k = 0; *text && k < n; k++) {
        const size_t len = strcspn(text, " ");
        if (at + len + 2 > size)
            break;
        if (k)
            out[at++] = ' ';
        memcpy(out + at, text, len);
        at += len;
        text += len + (text[len] == ' ');
    }
    out[at] = '\0';
}

/* A hypothesis that has an EOS (onmt cuts one at the max length) and no
 * special token (onmt generates them; a target may not hold one). */
static int scorable(const nmt_result *r, int h)
{
    const nmt_hypothesis *hyp = &r->hypotheses[h];
    return hyp->n_tokens + 1 < 2 * r->n_src + 12 && !strstr(hyp->text, "<pad>") &&
           !strstr(hyp->text, "<s>");
}

/* Scoring every hypothesis of a translation gives back its numbers. */
static void test_score_matches_search(nmt_search_rules rules)
{
    const nmt_options o = options(4, 3, rules);
    nmt_translator *t = create(&o);
    if (!t)
        return;
    nmt_result found[N_LINES], scored[N_LINES * 3];
    const char *sources[N_LINES * 3], *targets[N_LINES * 3];
    nmt_error err = {0};
    CHECK(nmt_translate_batch(t, lines, N_LINES, found, &err) == NMT_STATUS_OK, "translate: %s",
          err.message);
    int n = 0;
    for (int i = 0; i < N_LINES; i++)
        for (int h = 0; found[i].status == NMT_STATUS_OK && h < found[i].n_hypotheses; h++) {
            if (!scorable(&found[i], h))
                continue;
            sources[n] = lines[i];
            targets[n++] = found[i].hypotheses[h].text;
        }
    CHECK(n > N_LINES, "only %d hypotheses to score", n);
    CHECK(nmt_score_batch(t, sources, targets, n, scored, &err) == NMT_STATUS_OK, "score: %s",
          err.message);
    int k = 0, exact = 0;
    for (int i = 0; i < N_LINES; i++)
        for (int h = 0; found[i].status == NMT_STATUS_OK && h < found[i].n_hypotheses; h++) {
            const nmt_hypothesis *want = &found[i].hypotheses[h];
            if (!scorable(&found[i], h))
                continue;
            const nmt_result *r = &scored[k++];
            const nmt_hypothesis *got = r->n_hypotheses == 1 ? &r->hypotheses[0] : NULL;
            CHECK(r->status == NMT_STATUS_OK && got && !strcmp(got->text, want->text) &&
                      got->n_tokens == want->n_tokens && r->n_src == found[i].n_src,
                  "line %d hyp %d: scored %d hyps (%s) of \"%s\"", i, h, r->n_hypotheses,
                  r->message, want->text);
            if (!got)
                continue;
            const size_t n_tok = (size_t)want->n_tokens;
            if (rules == NMT_SEARCH_RULES_V1) {
                CHECK(got->log_prob == want->log_prob && got->score == want->score &&
                          same_bits(got->token_scores, want->token_scores, n_tok + 1) &&
                          !memcmp(got->alignment, want->alignment, sizeof(int) * n_tok) &&
                          same_bits(got->attention, want->attention, n_tok * (size_t)r->n_src),
                      "line %d hyp %d: scoring gives %.9g (%.9g), the search %.9g (%.9g)", i, h,
                      got->log_prob, got->score, want->log_prob, want->score);
                exact++;
            } else {
                const double tol = 1e-5 * (fabs((double)want->log_prob) + 1.0);
                CHECK(fabs((double)got->log_prob - want->log_prob) <= tol &&
                          fabs((double)got->score - want->score) <= tol,
                      "onmt line %d hyp %d: scoring %.9g, the search %.9g", i, h, got->log_prob,
                      want->log_prob);
            }
        }
    printf("  scoring, %s rules: %d hypotheses scored (%d bit for bit)\n",
           rules == NMT_SEARCH_RULES_V1 ? "v1" : "onmt", k, exact);
    test_clear_results(found, N_LINES);
    test_clear_results(scored, n);
    nmt_translator_free(t);
}

/* Prefixes of the best translations, every other line without one. */
static void test_prefix(void)
{
    const nmt_options o = options(4, 2, NMT_SEARCH_RULES_V1);
    nmt_translator *t = create(&o);
    if (!t)
        return;
    static char prefix_text[N_LINES][TEXT_BYTES];
    const char *prefixes[N_LINES], *scored_prefix[N_LINES];
    int n_prefix[N_LINES];
    nmt_result plain[N_LINES], got[N_LINES], scored[N_LINES];
    nmt_error err = {0};
    CHECK(nmt_translate_batch(t, lines, N_LINES, plain, &err) == NMT_STATUS_OK, "%s",
          err.message);
    for (int i = 0; i < N_LINES; i++) {
        const int len = plain[i].n_hypotheses ? plain[i].hypotheses[0].n_tokens : 0;
        n_prefix[i] = i % 4 == 0 ? 0 : len > 0 && i % 3 ? test_rand_int(1, len + 1) : 1;
        first_tokens(plain[i].n_hypotheses ? plain[i].hypotheses[0].text : "", n_prefix[i],
                     prefix_text[i], sizeof prefix_text[i]);
        if (n_prefix[i] && (len == 0 || i % 3 == 0))
            strcpy(prefix_text[i], "katze"); /* another word than the search's (UNK) */
        prefixes[i] = n_prefix[i] ? prefix_text[i] : NULL;
        scored_prefix[i] = prefix_text[i];
    }
    CHECK(nmt_translate_batch_prefix(t, lines, prefixes, N_LINES, got, &err) == NMT_STATUS_OK,
          "prefix: %s", err.message);
    CHECK(nmt_score_batch(t, lines, scored_prefix, N_LINES, scored, &err) == NMT_STATUS_OK,
          "score prefixes: %s", err.message);
    int with = 0;
    for (int i = 0; i < N_LINES; i++) {
        char why[512];
        if (!prefixes[i] || got[i].status != NMT_STATUS_OK) {
            CHECK(test_bitwise_line(&plain[i], &got[i], why, sizeof why),
                  "line %d without a prefix differs: %s", i, why);
            continue;
        }
        with++;
        const size_t len = strlen(prefixes[i]);
        const int n = scored[i].hypotheses[0].n_tokens;
        for (int h = 0; h < got[i].n_hypotheses; h++) {
            const nmt_hypothesis *hyp = &got[i].hypotheses[h];
            CHECK(!strncmp(hyp->text, prefixes[i], len) &&
                      (hyp->text[len] == ' ' || hyp->text[len] == '\0') && hyp->n_tokens >= n &&
                      same_bits(hyp->token_scores, scored[i].hypotheses[0].token_scores,
                                (size_t)n),
                  "line %d hyp %d \"%s\" does not continue \"%s\" with its scores", i, h,
                  hyp->text, prefixes[i]);
        }
    }
    CHECK(with == N_LINES - N_LINES / 4, "%d lines with a prefix", with);
    printf("  prefixes: %d lines with one, %d without\n", with, N_LINES - with);
    test_clear_results(plain, N_LINES);
    test_clear_results(got, N_LINES);
    test_clear_results(scored, N_LINES);
    nmt_translator_free(t);
}

/* Alternative k is the translation of prefix + its word. */
static void test_alternatives(nmt_search_rules rules)
{
    nmt_options o = options(4, 3, rules);
    o.return_alternatives = 1;
    o.batch_size = 7;
    nmt_translator *alt = create(&o);
    o.return_alternatives = 0;
    o.n_best = 1;
    nmt_translator *one = create(&o);
    if (!alt || !one)
        goto done;
    const char *prefixes[N_LINES];
    for (int i = 0; i < N_LINES; i++)
        prefixes[i] = i % 3 == 0 ? NULL : i % 3 == 1 ? "die" : "the house";
    nmt_result got[N_LINES];
    nmt_error err = {0};
    CHECK(nmt_translate_batch_prefix(alt, lines, prefixes, N_LINES, got, &err) == NMT_STATUS_OK,
          "alternatives: %s", err.message);
    int checked = 0;
    for (int i = 0; i < N_LINES; i++) {
        if (got[i].status != NMT_STATUS_OK)
            continue;
        CHECK(got[i].n_hypotheses == 3, "line %d: %d alternatives", i, got[i].n_hypotheses);
        const int n = prefixes[i] ? (int)(1 + (strchr(prefixes[i], ' ') != NULL)) : 0;
        char extended[3][TEXT_BYTES];
        const char *srcs[3], *pre[3];
        for (int h = 0; h < got[i].n_hypotheses && h < 3; h++) {
            const nmt_hypothesis *hyp = &got[i].hypotheses[h];
            first_tokens(hyp->text, n + 1, extended[h], sizeof extended[h]);
            srcs[h] = lines[i];
            pre[h] = extended[h];
            CHECK(hyp->n_tokens > n && (h == 0 || strcmp(extended[h], extended[h - 1])) &&
                      (h == 0 || hyp->token_scores[n] <= got[i].hypotheses[h - 1].token_scores[n]),
                  "line %d alternative %d \"%s\": not a new word after the prefix, best first",
                  i, h, hyp->text);
        }
        nmt_result each[3];
        const int m = got[i].n_hypotheses < 3 ? got[i].n_hypotheses : 3;
        CHECK(nmt_translate_batch_prefix(one, srcs, pre, m, each, &err) == NMT_STATUS_OK, "%s",
              err.message);
        for (int h = 0; h < m; h++) {
            const nmt_hypothesis *a = &got[i].hypotheses[h];
            const nmt_hypothesis *b = each[h].n_hypotheses ? &each[h].hypotheses[0] : NULL;
            const char *word = extended[h] + (n ? strlen(prefixes[i]) + 1 : 0);
            if (rules == NMT_SEARCH_RULES_ONMT && (!strcmp(word, "<s>") || !strcmp(word, "<pad>")))
                continue; /* onmt generates them; a prefix may not hold one */
            CHECK(b && !strcmp(a->text, b->text) && a->log_prob == b->log_prob &&
                      a->score == b->score &&
                      same_bits(a->token_scores, b->token_scores, (size_t)a->n_tokens + 1),
                  "line %d alternative %d \"%s\" is not its prefix's translation \"%s\"", i, h,
                  a->text, b ? b->text : "(none)");
            checked++;
        }
        test_clear_results(each, m);
    }
    printf("  alternatives, %s rules: %d checked against their prefixes\n",
           rules == NMT_SEARCH_RULES_V1 ? "v1" : "onmt", checked);
    CHECK(checked >= N_LINES, "only %d alternatives checked", checked);
    test_clear_results(got, N_LINES);
done:
    nmt_translator_free(alt);
    nmt_translator_free(one);
}

static void test_refusals(void)
{
    nmt_options o = options(3, 1, NMT_SEARCH_RULES_V1);
    nmt_translator *t = create(&o);
    if (!t)
        return;
    char many[TEXT_BYTES] = "";
    for (int k = 0; k < 70; k++) /* the longest translation: 2 x 24 + 12 - 1 tokens */
        strcat(many, k ? " the" : "the");
    const char *srcs[] = {"der hund", "der hund", "der hund", "", "der hund", "der hund",
                          "der hund"};
    const char *tgts[] = {"the </s> dog", many, "the \xff dog", "the dog", NULL, "<s>",
                          "the dog"};
    const char *why[] = {"special", "tokens", "UTF-8", "empty", "none given", "special", NULL};
    enum { N = 7 };
    nmt_result r[N];
    nmt_error err = {0};
    for (int score = 0; score < 2; score++) {
        CHECK(score ? nmt_score_batch(t, srcs, tgts, N, r, &err) == NMT_STATUS_OK
                    : nmt_translate_batch_prefix(t, srcs, tgts, N, r, &err) == NMT_STATUS_OK,
              "%s: %s", score ? "score" : "prefix", err.message);
        for (int i = 0; i < N; i++) {
            /* Prefixes: no prefix is none, an empty source an empty line. */
            const int ok = !why[i] || (!score && (i == 3 || i == 4));
            CHECK(ok ? r[i].status == NMT_STATUS_OK && r[i].n_hypotheses == 1
                     : r[i].status != NMT_STATUS_OK && strstr(r[i].message, why[i]),
                  "%s line %d: status %d \"%s\"", score ? "score" : "prefix", i, r[i].status,
                  r[i].message);
        }
        test_clear_results(r, N);
    }
    nmt_translator_free(t);
    /* A shrinking translator refuses prefixes (the whole call), and scores
     * with the full softmax: the unshrunk translator's numbers. */
    nmt_translator *full = create(&o);
    o.shrink.mode = NMT_SHRINK_TOP;
    o.shrink.top = 20;
    t = create(&o);
    if (t && full) {
        const nmt_status st = nmt_translate_batch_prefix(t, srcs, tgts, N, r, &err);
        CHECK(st == NMT_STATUS_ERROR_ARGUMENT && strstr(err.message, "full softmax") &&
                  r[0].status == st && r[N - 1].status == st,
              "prefix on a shrinking translator: %d \"%s\"", st, err.message);
        test_clear_results(r, N);
        nmt_result f[1];
        CHECK(nmt_score_batch(t, srcs + 6, tgts + 6, 1, r, &err) == NMT_STATUS_OK &&
                  nmt_score_batch(full, srcs + 6, tgts + 6, 1, f, &err) == NMT_STATUS_OK,
              "score: %s", err.message);
        char diff[256];
        CHECK(test_bitwise_line(&r[0], &f[0], diff, sizeof diff),
              "scoring on a shrinking translator: %s", diff);
        test_clear_results(r, 1);
        test_clear_results(f, 1);
    }
    nmt_translator_free(t);
    nmt_translator_free(full);
    /* Alternatives need a batch of n_best sentences. */
    o = options(4, 3, NMT_SEARCH_RULES_V1);
    o.return_alternatives = 1;
    o.batch_size = 2;
    t = NULL;
    CHECK(nmt_translator_create(model, &o, &t, &err) == NMT_STATUS_ERROR_ARGUMENT &&
              strstr(err.message, "return_alternatives"),
          "alternatives above the batch size: \"%s\"", err.message);
    nmt_translator_free(t);
    o.return_alternatives = 2;
    o.batch_size = 8;
    CHECK(nmt_translator_create(model, &o, &t, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "return_alternatives 2 accepted");
    nmt_translator_free(t);
}

/* The service's answers are the translator's, bit for bit. */
static void test_service(void)
{
    nmt_service_options so;
    nmt_service_options_init(&so);
    so.translator = options(4, 2, NMT_SEARCH_RULES_V1);
    so.cpu_workers = 2;
    nmt_service *s = NULL;
    nmt_error err = {0};
    CHECK(nmt_service_create(model, &so, &s, &err) == NMT_STATUS_OK, "service: %s", err.message);
    nmt_translator *t = create(&so.translator);
    so.translator.return_alternatives = 1;
    nmt_translator *alt = create(&so.translator);
    if (!s || !t || !alt)
        goto done;
    const char *prefixes[N_LINES], *targets[N_LINES];
    for (int i = 0; i < N_LINES; i++) {
        prefixes[i] = i % 2 ? "the" : NULL;
        targets[i] = i % 3 ? "the dog is a house ." : "a";
    }
    nmt_result want[3][N_LINES];
    CHECK(nmt_translate_batch_prefix(t, lines, prefixes, N_LINES, want[0], &err) ==
                  NMT_STATUS_OK &&
              nmt_translate_batch_prefix(alt, lines, prefixes, N_LINES, want[1], &err) ==
                  NMT_STATUS_OK &&
              nmt_score_batch(t, lines, targets, N_LINES, want[2], &err) == NMT_STATUS_OK,
          "offline: %s", err.message);
    nmt_request *req[3][N_LINES] = {{0}};
    for (int i = 0; i < N_LINES; i++)
        for (int kind = 0; kind < 3; kind++) {
            nmt_request_options ro;
            nmt_request_options_init(&ro);
            if (kind < 2)
                ro.target_prefix = prefixes[i];
            ro.return_alternatives = kind == 1;
            if (kind == 2)
                ro.target = targets[i];
            CHECK(nmt_service_submit(s, lines[i], &ro, NULL, NULL, &req[kind][i], &err) ==
                      NMT_STATUS_OK,
                  "submit: %s", err.message);
        }
    int differ = 0;
    for (int kind = 0; kind < 3; kind++)
        for (int i = 0; i < N_LINES; i++) {
            if (!req[kind][i])
                continue;
            nmt_request_wait(req[kind][i], -1.0);
            char why[512];
            if (!test_bitwise_line(&want[kind][i], nmt_request_result(req[kind][i]), why,
                                   sizeof why)) {
                differ++;
                fprintf(stderr, "service kind %d line %d: %s\n", kind, i, why);
            }
            nmt_request_free(req[kind][i]);
        }
    CHECK(differ == 0, "%d service answers differ", differ);
    printf("  service: %d prefixed, alternative and scoring requests\n", 3 * N_LINES);
    nmt_request_options ro;
    nmt_request_options_init(&ro);
    ro.target = "a";
    ro.target_prefix = "a";
    CHECK(nmt_service_submit(s, "der", &ro, NULL, NULL, NULL, &err) ==
              NMT_STATUS_ERROR_ARGUMENT,
          "a target and a prefix accepted");
    for (int kind = 0; kind < 3; kind++)
        test_clear_results(want[kind], N_LINES);
done:
    nmt_translator_free(t);
    nmt_translator_free(alt);
    nmt_service_free(s);
}

int main(void)
{
    test_seed();
    nmt_error err = {0};
    if (nmt_model_load(NMT_TEST_MODEL, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    forced_lines(text, lines, N_LINES, 14);
    test_score_matches_search(NMT_SEARCH_RULES_V1);
    test_score_matches_search(NMT_SEARCH_RULES_ONMT);
    test_prefix();
    test_alternatives(NMT_SEARCH_RULES_V1);
    test_alternatives(NMT_SEARCH_RULES_ONMT);
    test_refusals();
    test_service();
    nmt_model_free(model);
    return test_finish("test_forced");
}
