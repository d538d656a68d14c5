/* test_results.h: translating lines for a comparison and comparing two
 * runs' nmt_results line by line, for the engine tests that hold one
 * configuration against another (CPU against CUDA, graphs against plain
 * launches, sparse against dense, an ensemble against its models). */
#ifndef NMT_TEST_RESULTS_H
#define NMT_TEST_RESULTS_H

#include "nmt.h"

#include <stddef.h>

/* Translates lines[0 .. n) with a translator of models[0 .. n_models) made
 * for o (one model and no weights: nmt_translator_create; else the
 * ensemble), which must run on o->device; every call CHECKed: 1 when
 * results holds the n answers. */
int test_translate_models(const nmt_model *const *models, const float *weights, int n_models,
                          const nmt_options *o, const char *const *lines, int n,
                          nmt_result *results);

/* nmt_result_clear on results[0 .. n). */
void test_clear_results(nmt_result *results, int n);

/* 1 when both runs gave bit-identical hypotheses (alignments included). */
int test_identical_line(const nmt_result *a, const nmt_result *b);
/* 1 when a and b are the same bits: status (and a refused line's message),
 * the source tokens, and every hypothesis's text, score, log-probability,
 * alignment, token scores, attention weights and target tokens (floats
 * compared by their bits, so -0 is not 0 and a NaN equals only its own
 * bits); 0 with the first difference written into why (size bytes). */
int test_bitwise_line(const nmt_result *a, const nmt_result *b, char *why, size_t size);

/* 1 when every hypothesis has the same text, length and alignment and a
 * score and log-prob within 1e-3 (another summation order's). */
int test_same_line(const nmt_result *a, const nmt_result *b);

/* 1 when a hypothesis of r has as many tokens as the maximum length
 * floor(max_len_a x n_src + max_len_b) allows (EOS counted; a hypothesis
 * the onmt rules cut there included). A random or pruned test model's line
 * that runs that long is a loop of a few words, and rounding differences
 * grow along it: two runs' scores drift apart even where the words agree. */
int test_at_max_length(const nmt_result *r, float max_len_a, int max_len_b);

typedef int (*test_line_compare)(const nmt_result *a, const nmt_result *b);

/* How many of the n lines `same` finds different, each printed under
 * `label` with both runs' hypotheses (lines: the sources, for the print). */
int test_count_differing(const nmt_result *a, const nmt_result *b, int n, test_line_compare same,
                         const char *label, const char *const *lines);

/* Two runs that add the same products in another order (batch against
 * stream, CPU against CUDA, sparse against dense), texts as token strings
 * (options.output_tokens): 0 when every hypothesis has the same text and
 * scores within score_tol + score_tol_token x (tokens + 1); 1 when a text
 * differs at a near tie, which another rounding can order either way (where
 * the token strings first differ, the two runs' log-probabilities through
 * that token are within tie), or the two hypotheses' final scores are within
 * final_tie (n-best order at tie; a larger final_tie where a tie among
 * hypotheses the beam then drops can change the best one without a tie
 * where the two texts differ), printed; -1 otherwise (a CHECK fails, naming
 * `what` and the line). *max_diff: the largest score difference of equal
 * texts so far. */
int test_compare_near_tie(const char *what, int line, const nmt_result *a, const nmt_result *b,
                          double tie, double final_tie, double score_tol,
                          double score_tol_token, double *max_diff);

/* A second opinion on texts that part away from a near tie: 1 when the
 * difference is the search's, not the arithmetic's (the beams only kept
 * other hypotheses at some earlier near tie; test_judge_by_scores below
 * decides it by cross-scoring), else 0. ctx: the caller's; line: the
 * line's index. */
typedef int (*test_search_judge)(void *ctx, int line, const char *text_a, const char *text_b);

/* test_compare_near_tie (ties, final ties and scores within 1e-3) over n
 * lines of two runs; a line either run takes to the maximum length
 * (test_at_max_length) is not compared but must have the same status and
 * hypothesis count (a CHECK naming label). With a judge (NULL: none), a
 * text that differs away from a near tie is a search difference when the
 * judge says so, and fails only when it does not. */
typedef struct test_near_counts {
    int ties, bad, looping; /* near ties, other differences, lines at the maximum length */
    int searched;           /* differences the judge found to be the search's */
    double max_diff;        /* the largest score difference of equal texts */
} test_near_counts;
test_near_counts test_compare_lines_near_tie(const char *label, const nmt_result *a,
                                             const nmt_result *b, int n, float max_len_a,
                                             int max_len_b);
test_near_counts test_compare_lines_judged(const char *label, const nmt_result *a,
                                           const nmt_result *b, int n, float max_len_a,
                                           int max_len_b, test_search_judge judge, void *ctx);

/* A test_search_judge by cross-scoring: the engines of options a (the
 * reference run's) and b (the compared run's) each score both texts of
 * source lines[line] (nmt_score_batch, teacher forced). The difference is
 * the search's (the beams kept other hypotheses at some earlier near tie; a
 * loop of one word does that without a near tie where the texts part) when
 * the engines agree on each text within 1e-3, or when both rank the two
 * texts alike by more than they disagree on either: one engine's search
 * missed the text its own scoring prefers. A loop's scores drift ~1e-3
 * apart between engines (and between an engine's search and its scoring)
 * on the same words, so agreement alone is too strict there; a
 * disagreement as large as the margin is not the search's. ctx: a
 * test_score_judge; the scores are printed. */
typedef struct test_score_judge {
    const nmt_model *model;
    const nmt_options *a, *b;
    const char *const *lines;
} test_score_judge;
int test_judge_by_scores(void *ctx, int line, const char *text_a, const char *text_b);

#endif
