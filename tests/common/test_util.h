/* test_util.h: shared helpers for the C tests: a seeded random source (fresh
 * seed per run unless NMT_TEST_SEED is set, printed so a failure can be
 * replayed), poisoning, tolerant comparison that reports the first
 * mismatches and the max error, and the skip convention (exit 77). */
#ifndef NMT_TEST_UTIL_H
#define NMT_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define NMT_TEST_SKIP 77

/* Seeds from NMT_TEST_SEED or the clock, prints the seed; returns it. */
uint64_t test_seed(void);
uint64_t test_rand_u64(void);
/* The same generator on a state of the caller's (a thread's own stream). */
uint64_t test_rand_next(uint64_t *state);
/* Uniform in [lo, hi). */
float test_rand_uniform(float lo, float hi);
int32_t test_rand_int(int32_t lo, int32_t hi_exclusive);
void test_fill_uniform(float *x, size_t n, float lo, float hi);
/* dst = len words drawn at random from words[0..n_words), separated by single
 * spaces (the engine tests' random lines; dst must have room for them). */
void test_random_words(char *dst, const char *const *words, int n_words, int len);

/* malloc that exits the test (status 1, said) when memory runs out. */
void *test_alloc(size_t bytes);

/* Fills with a NaN payload so unwritten outputs are caught. */
void test_poison_f32(float *x, size_t n);
void test_poison_i32(int32_t *x, size_t n);

/* |a - b| <= atol + rtol * |b| element-wise (NaN never passes); prints the
 * first few mismatches and the max abs error under `what`. Returns 1 if close. */
int test_close_f32(const char *what, const float *a, const float *b, size_t n, double atol,
                   double rtol);

/* Counts failures: CHECK(cond, fmt, ...) prints and increments test_failures. */
extern int test_failures;
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n");                                              \
            test_failures++;                                                    \
        }                                                                       \
    } while (0)

/* Prints a summary and returns the process exit code (0 or 1). */
int test_finish(const char *name);

#endif
