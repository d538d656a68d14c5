/* test_results.c: see test_results.h. */
#include "test_results.h"

#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int test_translate_models(const nmt_model *const *models, const float *weights, int n_models,
                          const nmt_options *o, const char *const *lines, int n,
                          nmt_result *results)
{
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = n_models == 1 && !weights
                        ? nmt_translator_create(models[0], o, &t, &err)
                        : nmt_translator_create_ensemble(models, weights, n_models, o, &t, &err);
    CHECK(st == NMT_STATUS_OK, "translator (device %d): %s", (int)o->device, err.message);
    if (st == NMT_STATUS_OK) {
        CHECK(nmt_translator_device(t) == o->device, "runs on device %d, asked %d",
              (int)nmt_translator_device(t), (int)o->device);
        st = nmt_translate_batch(t, lines, n, results, &err);
        CHECK(st == NMT_STATUS_OK, "translate (device %d): %s", (int)o->device, err.message);
    }
    nmt_translator_free(t);
    return st == NMT_STATUS_OK;
}

static int same_alignment(const nmt_hypothesis *x, const nmt_hypothesis *y)
{
    if (x->n_tokens != y->n_tokens || (x->n_tokens > 0 && (!x->alignment || !y->alignment)))
        return 0;
    for (int t = 0; t < x->n_tokens; t++)
        if (x->alignment[t] != y->alignment[t])
            return 0;
    return 1;
}

int test_identical_line(const nmt_result *a, const nmt_result *b)
{
    if (a->status != b->status || a->n_hypotheses != b->n_hypotheses)
        return 0;
    for (int h = 0; h < a->n_hypotheses; h++) {
        const nmt_hypothesis *x = &a->hypotheses[h], *y = &b->hypotheses[h];
        if (strcmp(x->text, y->text) || x->score != y->score || x->log_prob != y->log_prob ||
            !same_alignment(x, y))
            return 0;
    }
    return 1;
}

/* Floats by their bits: n of them at x and y (either NULL: both must be). */
static int same_bits(const float *x, const float *y, size_t n, size_t *first)
{
    if (!x || !y) {
        *first = 0;
        return (!x && !y) || n == 0;
    }
    for (size_t i = 0; i < n; i++)
        if (memcmp(&x[i], &y[i], sizeof x[i]) != 0) {
            *first = i;
            return 0;
        }
    return 1;
}

static int same_strings(char *const *x, char *const *y, int n)
{
    if (!x || !y)
        return (!x && !y) || n == 0;
    for (int i = 0; i < n; i++)
        if (strcmp(x[i], y[i]) != 0)
            return 0;
    return 1;
}

int test_bitwise_line(const nmt_result *a, const nmt_result *b, char *why, size_t size)
{
    size_t i = 0;
#define DIFFER(...) return snprintf(why, size, __VA_ARGS__), 0
    if (a->status != b->status || strcmp(a->message, b->message) != 0)
        DIFFER("status %d (%s) vs %d (%s)", (int)a->status, a->message, (int)b->status,
               b->message);
    if (a->n_hypotheses != b->n_hypotheses || a->n_src != b->n_src)
        DIFFER("%d vs %d hypotheses, %d vs %d source tokens", a->n_hypotheses, b->n_hypotheses,
               a->n_src, b->n_src);
    if (!same_strings(a->src_tokens, b->src_tokens, a->n_src))
        DIFFER("source tokens");
    for (int h = 0; h < a->n_hypotheses; h++) {
        const nmt_hypothesis *x = &a->hypotheses[h], *y = &b->hypotheses[h];
        const size_t n = (size_t)x->n_tokens;
        if (strcmp(x->text, y->text) != 0 || x->n_tokens != y->n_tokens)
            DIFFER("hypothesis %d: '%s' vs '%s'", h, x->text, y->text);
        if (!same_bits(&x->score, &y->score, 1, &i) ||
            !same_bits(&x->log_prob, &y->log_prob, 1, &i))
            DIFFER("hypothesis %d: score %.9g / %.9g vs %.9g / %.9g", h, x->score, x->log_prob,
                   y->score, y->log_prob);
        if (!same_alignment(x, y))
            DIFFER("hypothesis %d: alignment", h);
        if (!same_bits(x->token_scores, y->token_scores, n + 1, &i))
            DIFFER("hypothesis %d: token score %zu: %.9g vs %.9g", h, i,
                   x->token_scores ? x->token_scores[i] : 0.0f,
                   y->token_scores ? y->token_scores[i] : 0.0f);
        if (!same_bits(x->attention, y->attention, n * (size_t)a->n_src, &i))
            DIFFER("hypothesis %d: attention weight [%zu][%zu]: %.9g vs %.9g", h,
                   a->n_src ? i / (size_t)a->n_src : 0, a->n_src ? i % (size_t)a->n_src : 0,
                   x->attention ? x->attention[i] : 0.0f, y->attention ? y->attention[i] : 0.0f);
        if (!same_strings(x->tokens, y->tokens, x->n_tokens))
            DIFFER("hypothesis %d: target tokens", h);
    }
#undef DIFFER
    if (size)
        why[0] = '\0';
    return 1;
}

void test_clear_results(nmt_result *results, int n)
{
    for (int i = 0; i < n; i++)
        nmt_result_clear(&results[i]);
}

int test_same_line(const nmt_result *a, const nmt_result *b)
{
    if (a->status != b->status || a->n_hypotheses != b->n_hypotheses)
        return 0;
    for (int h = 0; h < a->n_hypotheses; h++) {
        const nmt_hypothesis *x = &a->hypotheses[h], *y = &b->hypotheses[h];
        if (strcmp(x->text, y->text) || x->n_tokens != y->n_tokens || !same_alignment(x, y) ||
            fabsf(x->score - y->score) > 1e-3f || fabsf(x->log_prob - y->log_prob) > 1e-3f)
            return 0;
    }
    return 1;
}

int test_at_max_length(const nmt_result *r, float max_len_a, int max_len_b)
{
    const double limit = floor((double)max_len_a * r->n_src + max_len_b);
    for (int h = 0; h < r->n_hypotheses; h++)
        if (r->hypotheses[h].n_tokens + 1 >= limit)
            return 1;
    return 0;
}

int test_count_differing(const nmt_result *a, const nmt_result *b, int n, test_line_compare same,
                         const char *label, const char *const *lines)
{
    int differing = 0;
    for (int i = 0; i < n; i++) {
        if (same(&a[i], &b[i]))
            continue;
        differing++;
        fprintf(stderr, "%s line %d: %s\n", label, i, lines[i]);
        for (int d = 0; d < 2; d++) {
            const nmt_result *r = d ? &b[i] : &a[i];
            fprintf(stderr, "  %s status %d:", d ? "b" : "a", (int)r->status);
            for (int h = 0; h < r->n_hypotheses; h++)
                fprintf(stderr, " [%.5f / %.5f] %s;", r->hypotheses[h].score,
                        r->hypotheses[h].log_prob, r->hypotheses[h].text);
            fprintf(stderr, "\n");
        }
    }
    return differing;
}

/* The first target token where two token strings differ (0-based). */
static int first_difference(const char *x, const char *y)
{
    int t = 0;
    for (;;) {
        const char *ex = strchr(x, ' '), *ey = strchr(y, ' ');
        const size_t nx = ex ? (size_t)(ex - x) : strlen(x), ny = ey ? (size_t)(ey - y) : strlen(y);
        if (nx != ny || strncmp(x, y, nx) != 0 || !ex || !ey)
            return t;
        x = ex + 1, y = ey + 1, t++;
    }
}

static double prefix_sum(const nmt_hypothesis *h, int through)
{
    double sum = 0.0;
    for (int j = 0; j <= through && j <= h->n_tokens; j++)
        sum += h->token_scores ? h->token_scores[j] : 0.0;
    return sum;
}

/* test_compare_near_tie with an optional judge: 2 when a text differs away
 * from a near tie and the judge finds it the search's. */
static int compare_judged(const char *what, int line, const nmt_result *a, const nmt_result *b,
                          double tie, double final_tie, double score_tol,
                          double score_tol_token, double *max_diff, test_search_judge judge,
                          void *ctx)
{
    CHECK(a->status == b->status, "%s line %d: status %d vs %d", what, line, (int)a->status,
          (int)b->status);
    CHECK(a->n_hypotheses == b->n_hypotheses, "%s line %d: %d vs %d hypotheses", what, line,
          a->n_hypotheses, b->n_hypotheses);
    if (a->status != b->status || a->n_hypotheses != b->n_hypotheses)
        return -1;
    for (int h = 0; h < a->n_hypotheses; h++) {
        const nmt_hypothesis *x = &a->hypotheses[h], *y = &b->hypotheses[h];
        const double d = fabs((double)x->score - (double)y->score);
        if (strcmp(x->text, y->text) != 0) {
            const int t = first_difference(x->text, y->text);
            const double at = fabs(prefix_sum(x, t) - prefix_sum(y, t));
            fprintf(stderr, "%s line %d hyp %d: a near tie? token %d, log-probs through it "
                    "%.2e apart, scores %.6f vs %.6f\n  a: %s\n  b: %s\n", what, line, h, t, at,
                    x->score, y->score, x->text, y->text);
            if (at <= tie || d <= final_tie)
                return 1;
            if (judge && judge(ctx, line, x->text, y->text)) {
                fprintf(stderr, "%s line %d hyp %d: both engines score both texts alike: the "
                        "searches kept other hypotheses\n", what, line, h);
                return 2;
            }
            CHECK(0, "%s line %d hyp %d: texts differ at token %d, not at a near tie (%.2e "
                  "apart there, scores %.2e)%s", what, line, h, t, at, d,
                  judge ? ", and the engines score them differently" : "");
            return -1;
        }
        *max_diff = d > *max_diff ? d : *max_diff;
        const double bound = score_tol + score_tol_token * (x->n_tokens + 1);
        CHECK(d <= bound, "%s line %d hyp %d: score %.6f vs %.6f (within %.2e)", what, line, h,
              x->score, y->score, bound);
        if (d > bound)
            return -1;
    }
    return 0;
}

int test_compare_near_tie(const char *what, int line, const nmt_result *a, const nmt_result *b,
                          double tie, double final_tie, double score_tol,
                          double score_tol_token, double *max_diff)
{
    return compare_judged(what, line, a, b, tie, final_tie, score_tol, score_tol_token,
                          max_diff, NULL, NULL);
}

test_near_counts test_compare_lines_judged(const char *label, const nmt_result *a,
                                           const nmt_result *b, int n, float max_len_a,
                                           int max_len_b, test_search_judge judge, void *ctx)
{
    test_near_counts c = {0};
    for (int i = 0; i < n; i++) {
        if (test_at_max_length(&a[i], max_len_a, max_len_b) ||
            test_at_max_length(&b[i], max_len_a, max_len_b)) {
            c.looping++;
            CHECK(a[i].status == b[i].status && a[i].n_hypotheses == b[i].n_hypotheses,
                  "%s line %d: status %d vs %d, %d vs %d hypotheses", label, i, (int)a[i].status,
                  (int)b[i].status, a[i].n_hypotheses, b[i].n_hypotheses);
            continue;
        }
        const int r = compare_judged(label, i, &a[i], &b[i], 1e-3, 1e-3, 1e-3, 0.0, &c.max_diff,
                                     judge, ctx);
        c.ties += r == 1;
        c.searched += r == 2;
        c.bad += r < 0;
    }
    return c;
}

test_near_counts test_compare_lines_near_tie(const char *label, const nmt_result *a,
                                             const nmt_result *b, int n, float max_len_a,
                                             int max_len_b)
{
    return test_compare_lines_judged(label, a, b, n, max_len_a, max_len_b, NULL, NULL);
}

/* The source's tokens as the translator of options o splits it, joined by
 * spaces into buf (the scoring below takes them as they are, as it does the
 * targets, whose joiner tokens raw text would split again); 0 on failure. */
static int source_tokens(const nmt_model *model, const nmt_options *o, const char *source,
                         char *buf, size_t size)
{
    nmt_options to = *o;
    to.attention_weights = 1; /* the result then lists the source's tokens */
    to.beam_size = 1;
    to.n_best = 1;
    to.batch_size = 1;
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_result r;
    memset(&r, 0, sizeof r);
    int ok = nmt_translator_create(model, &to, &t, &err) == NMT_STATUS_OK &&
             nmt_translate_batch(t, &source, 1, &r, &err) == NMT_STATUS_OK &&
             r.status == NMT_STATUS_OK && r.src_tokens;
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; ok && i < r.n_src; i++) {
        const int n = snprintf(buf + used, size - used, "%s%s", i ? " " : "", r.src_tokens[i]);
        ok = n >= 0 && (size_t)n < size - used;
        used += ok ? (size_t)n : 0;
    }
    nmt_result_clear(&r);
    if (t)
        nmt_translator_free(t);
    return ok;
}

/* The scores of texts x and y (token strings) of a source under options o;
 * 0 when either cannot be scored or comes back as another text (said). */
static int score_pair(const nmt_model *model, const nmt_options *o, const char *source,
                      const char *x, const char *y, double scores[2])
{
    char tokens[4096];
    nmt_options so = *o;
    so.n_best = 1;
    so.batch_size = 2;
    so.input_tokens = 1;
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_result r[2];
    memset(r, 0, sizeof r);
    const char *sources[2] = {tokens, tokens}, *targets[2] = {x, y};
    int ok = source_tokens(model, o, source, tokens, sizeof tokens) &&
             nmt_translator_create(model, &so, &t, &err) == NMT_STATUS_OK &&
             nmt_score_batch(t, sources, targets, 2, r, &err) == NMT_STATUS_OK;
    for (int i = 0; ok && i < 2; i++) {
        ok = r[i].status == NMT_STATUS_OK && r[i].n_hypotheses == 1 &&
             strcmp(r[i].hypotheses[0].text, targets[i]) == 0;
        scores[i] = ok ? r[i].hypotheses[0].score : 0.0;
    }
    if (!ok)
        fprintf(stderr, "  cross-scoring on device %d failed: %s\n", (int)o->device,
                err.message[0] ? err.message : "a text not scored as itself");
    nmt_result_clear(&r[0]);
    nmt_result_clear(&r[1]);
    if (t)
        nmt_translator_free(t);
    return ok;
}

/* See test_results.h. */
int test_judge_by_scores(void *ctx, int line, const char *x, const char *y)
{
    const test_score_judge *j = (const test_score_judge *)ctx;
    double sa[2], sb[2];
    if (!score_pair(j->model, j->a, j->lines[line], x, y, sa) ||
        !score_pair(j->model, j->b, j->lines[line], x, y, sb))
        return 0;
    fprintf(stderr, "  cross-scored: a's text %.6f (a) %.6f (b), b's text %.6f (a) %.6f (b)\n",
            sa[0], sb[0], sa[1], sb[1]);
    const double apart = fmax(fabs(sa[0] - sb[0]), fabs(sa[1] - sb[1]));
    const double margin_a = sa[1] - sa[0], margin_b = sb[1] - sb[0];
    const int same_rank = (margin_a > 0) == (margin_b > 0) &&
                          fmin(fabs(margin_a), fabs(margin_b)) > apart;
    return apart <= 1e-3 || same_rank;
}
