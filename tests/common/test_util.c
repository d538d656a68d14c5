/* test_util.c: see test_util.h. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int test_failures = 0;
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

uint64_t test_seed(void)
{
    const char *env = getenv("NMT_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)clock();
    rng_state = seed ? seed : 1;
    fprintf(stderr, "seed %llu (set NMT_TEST_SEED to replay)\n", (unsigned long long)seed);
    return seed;
}

uint64_t test_rand_next(uint64_t *state)
{
    /* splitmix64: small, good enough for test data. */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t test_rand_u64(void)
{
    return test_rand_next(&rng_state);
}

float test_rand_uniform(float lo, float hi)
{
    double u = (double)(test_rand_u64() >> 11) / 9007199254740992.0;
    return (float)(lo + (hi - lo) * u);
}

int32_t test_rand_int(int32_t lo, int32_t hi_exclusive)
{
    return lo + (int32_t)(test_rand_u64() % (uint64_t)(hi_exclusive - lo));
}

void test_fill_uniform(float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = test_rand_uniform(lo, hi);
}

void test_poison_f32(float *x, size_t n)
{
    const uint32_t nan_bits = 0x7FC0DEADu;
    for (size_t i = 0; i < n; i++)
        memcpy(&x[i], &nan_bits, sizeof nan_bits);
}

void test_poison_i32(int32_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (int32_t)0xDEADBEEF;
}

int test_close_f32(const char *what, const float *a, const float *b, size_t n, double atol,
                   double rtol)
{
    size_t bad = 0;
    double max_err = 0.0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)a[i] - (double)b[i]);
        int same_inf = isinf(a[i]) && isinf(b[i]) && (a[i] > 0) == (b[i] > 0);
        int ok = same_inf || (!isnan(a[i]) && !isnan(b[i]) && err <= atol + rtol * fabs((double)b[i]));
        if (!same_inf && err > max_err)
            max_err = err;
        if (!ok) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: got %.9g want %.9g\n", what, i, a[i], b[i]);
            bad++;
        }
    }
    if (bad)
        fprintf(stderr, "%s: %zu of %zu mismatches, max abs error %.3g\n", what, bad, n, max_err);
    return bad == 0;
}

int test_finish(const char *name)
{
    if (test_failures) {
        fprintf(stderr, "%s: FAILED (%d checks)\n", name, test_failures);
        return 1;
    }
    fprintf(stderr, "%s: passed\n", name);
    return 0;
}

void test_random_words(char *dst, const char *const *words, int n_words, int len)
{
    dst[0] = '\0';
    for (int w = 0; w < len; w++) {
        if (w)
            strcat(dst, " ");
        strcat(dst, words[test_rand_int(0, n_words)]);
    }
}

void *test_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}
