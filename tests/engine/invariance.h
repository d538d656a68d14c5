/* invariance.h: what test_invariance.c and its parts (invariance_*.c) share:
 * the lines with their targets, the model, the search kinds' options and
 * calls, and the comparison with the batch-1 reference. */
#ifndef NMT_TEST_INVARIANCE_H
#define NMT_TEST_INVARIANCE_H

#include "nmt.h"

#include <stdatomic.h>
#include <stdint.h>

enum { MAX_LINES = 512, LINE_BYTES = 1024, MAX_SRC_TOKENS = 32, N_KINDS = 9 };

/* What a kind's calls do with the lines' targets. */
enum { CALL_TRANSLATE = 0, CALL_PREFIX = 1, CALL_SCORE = 2 };

extern nmt_model *model;
extern const char *lines[MAX_LINES];
/* Line i's target: CALL_PREFIX's prefix (NULL: none), CALL_SCORE's target. */
extern const char *prefixes[MAX_LINES], *targets[MAX_LINES];
extern int n_lines;
/* Lines printed for the current batching: the first few say enough. */
extern atomic_int printed;

/* A search kind's translator options (batch size 1) and its call. */
nmt_options kind_options(int kind);
int kind_call(int kind);
/* 1 (the first few printed) when got is not the reference of kind's line,
 * bit for bit. */
int report(const char *what, int kind, int line, const nmt_result *got);
/* order[0 .. n_lines) = the line indices in a random order. */
void shuffled_lines(int *order, uint64_t *state);

/* invariance_service.c: kind's lines through a service of several workers
 * (CUDA: every device; continuous batching or not), submitted by client
 * threads at random times, each answer held against the reference. */
void run_service(int kind, int continuous, int max_delay_us);

#endif /* NMT_TEST_INVARIANCE_H */
