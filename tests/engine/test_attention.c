/* test_attention.c: soft attention weights and per-token scores through the
 * public API on the CPU engine (options.attention_weights,
 * nmt_hypothesis.token_scores / .attention / .tokens, nmt_result.src_tokens).
 *
 * On the test model, random lines (known and unknown words, punctuation),
 * an empty line and a line over max_src_tokens are translated with the
 * weights on and off, under both search rules, n-best lists and
 * pre-tokenized I/O:
 *  - the weights change nothing else: texts, scores, alignments and token
 *    scores are bit-identical with them off, where attention, tokens and
 *    src_tokens are NULL;
 *  - each attention row has n_src weights in [0, 1] summing to 1, and the
 *    --alignment index holds its largest;
 *  - token scores (n_tokens + 1, the EOS's last) are log-probabilities
 *    summing to log_prob; the empty line's is one 0; a refused line has none;
 *  - target tokens make the text (output_tokens: joined by spaces), source
 *    tokens are the input's (input_tokens);
 *  - the service (CPU workers) answers the same, weights included;
 *  - attention_weights outside 0/1 is refused, naming the field. */
#include "nmt.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_LINES = 24, MAX_TOKENS = 16 };

static const char *const words[] = {"der", "die", "das", "und", "ist", "ein", "Haus", "katze",
                                    "Hund", "MANN", "frau", "kind", "sieht", "nicht", "sehr",
                                    "gro\xc3\x9f", "Heute", "wir", "mit", "auf", "gut", "Buch",
                                    "Zebra", "xylophon", "hund,", "?", "!"};
static char text[N_LINES][512];
static const char *lines[N_LINES];

/* Random lines of 1..8 words (at most 16 tokens); the second to last empty, the last over
 * MAX_TOKENS tokens (refused). */
static void make_lines(void)
{
    const int n_words = (int)(sizeof words / sizeof words[0]);
    for (int i = 0; i < N_LINES; i++) {
        const int len = i == N_LINES - 2 ? 0 : i == N_LINES - 1 ? MAX_TOKENS + 4
                                                                 : test_rand_int(1, 9);
        test_random_words(text[i], words, n_words, len);
        lines[i] = text[i];
    }
}

static nmt_options make_options(int beam, int n_best, int onmt, int pretokenized, int weights)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CPU;
    o.beam_size = beam;
    o.n_best = n_best;
    o.batch_size = 7;
    o.max_src_tokens = MAX_TOKENS;
    if (onmt) {
        o.search_rules = NMT_SEARCH_RULES_ONMT;
        o.max_len_a = 1.25f;
        o.max_len_b = 5;
    }
    o.input_tokens = o.output_tokens = pretokenized;
    o.attention_weights = weights;
    return o;
}

static int translate(const nmt_model *model, const nmt_options *o, nmt_result *results)
{
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_translator_create(model, o, &t, &err);
    CHECK(st == NMT_STATUS_OK, "create: %s", err.message);
    if (st == NMT_STATUS_OK) {
        st = nmt_translate_batch(t, lines, N_LINES, results, &err);
        CHECK(st == NMT_STATUS_OK, "translate: %s", err.message);
    }
    nmt_translator_free(t);
    return st == NMT_STATUS_OK;
}

/* The same translation, weights aside. */
static int same_hypothesis(const nmt_hypothesis *a, const nmt_hypothesis *b)
{
    if (strcmp(a->text, b->text) || a->score != b->score || a->log_prob != b->log_prob ||
        a->n_tokens != b->n_tokens || !a->token_scores || !b->token_scores)
        return 0;
    for (int t = 0; t < a->n_tokens; t++)
        if (a->alignment[t] != b->alignment[t])
            return 0;
    return !memcmp(a->token_scores, b->token_scores, sizeof(float) * (size_t)(a->n_tokens + 1));
}

/* What every hypothesis of a translated line must satisfy (weights on). */
static void check_hypothesis(const char *label, int line, int k, const nmt_result *r,
                             const nmt_hypothesis *h, int pretokenized)
{
    const int n = h->n_tokens, n_src = r->n_src;
    double sum = 0.0;
    const double slack = 1e-6 * (1.0 + fabs(h->log_prob)); /* rounding of the sums */
    for (int t = 0; t <= n; t++) {
        CHECK(h->token_scores[t] <= slack, "%s line %d hyp %d: token %d scores %g > 0", label,
              line, k, t, h->token_scores[t]);
        sum += h->token_scores[t];
    }
    CHECK(fabs(sum - h->log_prob) <= 1e-6 * (n + 1) * (1.0 + fabs(h->log_prob)),
          "%s line %d hyp %d: token scores sum to %.9g, log_prob %.9g", label, line, k, sum,
          h->log_prob);
    CHECK(h->attention && h->tokens, "%s line %d hyp %d: no attention or tokens", label, line, k);
    if (!h->attention || !h->tokens)
        return;
    for (int t = 0; t < n; t++) {
        const float *row = h->attention + (size_t)t * n_src;
        double total = 0.0;
        float best = 0.0f;
        for (int s = 0; s < n_src; s++) {
            CHECK(row[s] >= 0.0f && row[s] <= 1.0f, "%s line %d hyp %d token %d: weight %g",
                  label, line, k, t, row[s]);
            total += row[s];
            best = row[s] > best ? row[s] : best;
        }
        CHECK(fabs(total - 1.0) <= 1e-5, "%s line %d hyp %d token %d: weights sum to %.9g",
              label, line, k, t, total);
        const int a = h->alignment[t];
        CHECK(a >= 0 && a < n_src && row[a] == best,
              "%s line %d hyp %d token %d: alignment %d has weight %g, the largest is %g", label,
              line, k, t, a, a >= 0 && a < n_src ? row[a] : -1.0f, best);
        CHECK(h->tokens[t] && h->tokens[t][0], "%s line %d hyp %d: token %d empty", label, line,
              k, t);
    }
    if (pretokenized && n > 0) {
        /* The text is the tokens joined by single spaces. */
        char joined[4096] = "";
        for (int t = 0; t < n; t++) {
            if (t)
                strcat(joined, " ");
            strncat(joined, h->tokens[t], sizeof joined - strlen(joined) - 2);
        }
        CHECK(!strcmp(joined, h->text), "%s line %d hyp %d: tokens \"%s\", text \"%s\"", label,
              line, k, joined, h->text);
    }
}

/* The input line's words, when they are its tokens (input_tokens). */
static void check_source(const char *label, int line, const nmt_result *r)
{
    char copy[512];
    snprintf(copy, sizeof copy, "%s", lines[line]);
    int n = 0;
    for (char *w = strtok(copy, " "); w; w = strtok(NULL, " "), n++)
        CHECK(n < r->n_src && !strcmp(r->src_tokens[n], w),
              "%s line %d: source token %d is \"%s\", the input's \"%s\"", label, line, n,
              n < r->n_src ? r->src_tokens[n] : "(none)", w);
    CHECK(n == r->n_src, "%s line %d: %d source tokens, the input has %d", label, line, r->n_src,
          n);
}

static void compare(const nmt_model *model, int beam, int n_best, int onmt, int pretokenized)
{
    static nmt_result on[N_LINES], off[N_LINES];
    char label[64];
    snprintf(label, sizeof label, "beam %d n_best %d %s%s", beam, n_best, onmt ? "onmt" : "v1",
             pretokenized ? " tokens" : "");
    const nmt_options with = make_options(beam, n_best, onmt, pretokenized, 1);
    const nmt_options without = make_options(beam, n_best, onmt, pretokenized, 0);
    if (!translate(model, &with, on) || !translate(model, &without, off))
        return;
    for (int i = 0; i < N_LINES; i++) {
        const nmt_result *a = &on[i], *b = &off[i];
        CHECK(a->status == b->status && a->n_hypotheses == b->n_hypotheses &&
                  a->n_src == b->n_src,
              "%s line %d: status %d/%d, %d/%d hypotheses, %d/%d sources", label, i, a->status,
              b->status, a->n_hypotheses, b->n_hypotheses, a->n_src, b->n_src);
        CHECK(!b->src_tokens, "%s line %d: source tokens without the option", label, i);
        if (i == N_LINES - 1) {
            CHECK(a->status == NMT_STATUS_ERROR_INPUT && a->n_hypotheses == 0 && a->n_src == 0 &&
                      !a->src_tokens,
                  "%s: the refused line: status %d, %d hypotheses, %d sources", label, a->status,
                  a->n_hypotheses, a->n_src);
            continue;
        }
        if (i == N_LINES - 2) {
            const nmt_hypothesis *h = a->n_hypotheses == 1 ? &a->hypotheses[0] : NULL;
            CHECK(a->status == NMT_STATUS_OK && h && h->n_tokens == 0 && h->token_scores &&
                      h->token_scores[0] == 0.0f && h->log_prob == 0.0f && a->n_src == 0,
                  "%s: the empty line", label);
            continue;
        }
        CHECK(a->status == NMT_STATUS_OK && a->n_hypotheses >= 1 && a->n_src >= 1 &&
                  a->src_tokens,
              "%s line %d: status %d, %d hypotheses, %d sources", label, i, a->status,
              a->n_hypotheses, a->n_src);
        if (a->status != NMT_STATUS_OK || a->n_hypotheses != b->n_hypotheses || !a->src_tokens)
            continue;
        for (int s = 0; s < a->n_src; s++)
            CHECK(a->src_tokens[s] && a->src_tokens[s][0], "%s line %d: source token %d empty",
                  label, i, s);
        if (pretokenized)
            check_source(label, i, a);
        for (int k = 0; k < a->n_hypotheses; k++) {
            const nmt_hypothesis *x = &a->hypotheses[k], *y = &b->hypotheses[k];
            CHECK(same_hypothesis(x, y), "%s line %d hyp %d: \"%s\" %.9g with weights, \"%s\" "
                  "%.9g without", label, i, k, x->text, x->score, y->text, y->score);
            CHECK(!y->attention && !y->tokens, "%s line %d hyp %d: weights without the option",
                  label, i, k);
            check_hypothesis(label, i, k, a, x, pretokenized);
        }
    }
    for (int i = 0; i < N_LINES; i++) {
        nmt_result_clear(&on[i]);
        nmt_result_clear(&off[i]);
    }
}

/* 1 when both results are the same, weights and tokens included. */
static int identical(const nmt_result *a, const nmt_result *b)
{
    if (a->status != b->status || a->n_hypotheses != b->n_hypotheses || a->n_src != b->n_src ||
        !a->src_tokens != !b->src_tokens)
        return 0;
    for (int s = 0; a->src_tokens && s < a->n_src; s++)
        if (strcmp(a->src_tokens[s], b->src_tokens[s]))
            return 0;
    for (int k = 0; k < a->n_hypotheses; k++) {
        const nmt_hypothesis *x = &a->hypotheses[k], *y = &b->hypotheses[k];
        if (!same_hypothesis(x, y) || !x->attention != !y->attention)
            return 0;
        if (x->attention && memcmp(x->attention, y->attention,
                                   sizeof(float) * (size_t)x->n_tokens * (size_t)a->n_src))
            return 0;
        for (int t = 0; x->tokens && t < x->n_tokens; t++)
            if (strcmp(x->tokens[t], y->tokens[t]))
                return 0;
    }
    return 1;
}

/* The service with the weights on answers what nmt_translate_batch does. */
static void check_service(const nmt_model *model)
{
    static nmt_result want[N_LINES];
    nmt_service_options so;
    nmt_service_options_init(&so);
    so.translator = make_options(4, 2, 0, 0, 1);
    so.cpu_workers = 2;
    if (!translate(model, &so.translator, want))
        return;
    nmt_service *service = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_service_create(model, &so, &service, &err);
    CHECK(st == NMT_STATUS_OK, "service: %s", err.message);
    nmt_request *requests[N_LINES] = {NULL};
    for (int i = 0; st == NMT_STATUS_OK && i < N_LINES; i++) {
        nmt_status s = nmt_service_submit(service, lines[i], NULL, NULL, NULL, &requests[i], &err);
        CHECK(s == NMT_STATUS_OK, "submit %d: %s", i, err.message);
    }
    for (int i = 0; i < N_LINES; i++) {
        if (!requests[i])
            continue;
        nmt_request_wait(requests[i], -1.0);
        CHECK(identical(nmt_request_result(requests[i]), &want[i]),
              "service line %d differs from nmt_translate_batch", i);
        nmt_request_free(requests[i]);
    }
    nmt_service_free(service);
    for (int i = 0; i < N_LINES; i++)
        nmt_result_clear(&want[i]);
}

int main(void)
{
    test_seed();
    nmt_model *model = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    if (nmt_model_load(NMT_TEST_MODEL, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "test model: %s\n", err.message);
        return 1;
    }
    make_lines();
    compare(model, 5, 3, 0, 0);
    compare(model, 1, 1, 0, 0);
    compare(model, 4, 4, 1, 0);
    compare(model, 3, 2, 0, 1);
    compare(model, 5, 2, 1, 1);
    check_service(model);

    nmt_options bad = make_options(2, 1, 0, 0, 2);
    nmt_translator *t = NULL;
    CHECK(nmt_translator_create(model, &bad, &t, &err) == NMT_STATUS_ERROR_ARGUMENT &&
              strstr(err.message, "attention_weights"),
          "attention_weights 2 not refused by name: %s", err.message);
    nmt_translator_free(t);
    nmt_model_free(model);
    return test_finish("test_attention");
}
