/* test_results.c: see test_results.h. */
#include "test_results.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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
