/* test_results.h: comparing two runs' nmt_results line by line, for the
 * engine tests that hold one configuration against another (CPU against
 * CUDA, graphs against plain launches, sparse against dense). */
#ifndef NMT_TEST_RESULTS_H
#define NMT_TEST_RESULTS_H

#include "nmt.h"

/* 1 when both runs gave bit-identical hypotheses (alignments included). */
int test_identical_line(const nmt_result *a, const nmt_result *b);
/* 1 when every hypothesis has the same text, length and alignment and a
 * score and log-prob within 1e-3 (another summation order's). */
int test_same_line(const nmt_result *a, const nmt_result *b);

typedef int (*test_line_compare)(const nmt_result *a, const nmt_result *b);

/* How many of the n lines `same` finds different, each printed under
 * `label` with both runs' hypotheses (lines: the sources, for the print). */
int test_count_differing(const nmt_result *a, const nmt_result *b, int n, test_line_compare same,
                         const char *label, const char *const *lines);

#endif
