/* test_philox.c: the C Philox4x32-10 (kernels/philox.h) and the sampling
 * uniform built on it (decoder/logit_rules.h) against known answers:
 * - the three philox4x32-10 vectors of Random123's known-answer file
 *   (kat_vectors: counter and key all zeros, all ones, and the digits of pi);
 * - blocks and uniforms at the sampling counters' layout (step, sample, line
 *   key low, line key high; key = the seed), computed independently by the
 *   Python implementation of tests/kernels/test_philox_reference.py (which
 *   also checks itself against the same published vectors);
 * - nmt_cpu_philox over many counters equals one call each;
 * - the uniform is in [0, 1) with the mean and variance of one over many
 *   draws (a fixed set of counters: a deterministic check). */
#include "logit_rules.h"
#include "philox.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct known_block {
    uint32_t counter[4], key[2], out[4];
} known_block;

static const known_block published[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

typedef struct known_uniform {
    uint64_t seed, line_key;
    int32_t sample, step;
    uint32_t block[4];
    double uniform;
} known_uniform;

/* python3 tests/kernels/test_philox_reference.py --print */
static const known_uniform sampled[] = {
    {0, 0, 0, 1, {0xf8e4cca4, 0x5cb200db, 0xb1a574eb, 0x097eff67}, 0.9722412032044762},
    {0x0123456789abcdefull, 42, 3, 7, {0x6ea3822b, 0x24d6bc50, 0x3369442b, 0x0acea251},
     0.4321824397437394},
    {5, 0xfedcba9876543210ull, 255, 1000, {0x5721d6a7, 0x80981fea, 0x68e06190, 0x54a1709c},
     0.3403600864285322},
};

int main(void)
{
    for (size_t i = 0; i < sizeof published / sizeof published[0]; i++) {
        uint32_t out[4];
        nmt_philox(published[i].counter, published[i].key, out);
        CHECK(!memcmp(out, published[i].out, sizeof out),
              "known answer %zu: %08x %08x %08x %08x, expected %08x %08x %08x %08x", i, out[0],
              out[1], out[2], out[3], published[i].out[0], published[i].out[1],
              published[i].out[2], published[i].out[3]);
    }
    for (size_t i = 0; i < sizeof sampled / sizeof sampled[0]; i++) {
        const known_uniform *k = &sampled[i];
        const uint32_t counter[4] = {(uint32_t)k->step, (uint32_t)k->sample,
                                     (uint32_t)k->line_key, (uint32_t)(k->line_key >> 32)};
        const uint32_t key[2] = {(uint32_t)k->seed, (uint32_t)(k->seed >> 32)};
        uint32_t out[4];
        nmt_philox(counter, key, out);
        CHECK(!memcmp(out, k->block, sizeof out), "sampling block %zu differs", i);
        const double u = nmt_rule_sample_uniform(k->seed, k->line_key, k->sample, k->step);
        CHECK(u == k->uniform, "uniform %zu: %.17g, expected %.17g", i, u, k->uniform);
    }

    /* The fill over many counters is one call each. */
    enum { N = 1000 };
    static uint32_t counters[4 * N], filled[4 * N];
    for (int i = 0; i < 4 * N; i++)
        counters[i] = (uint32_t)(i * 2654435761u);
    const uint32_t key[2] = {0xdeadbeef, 7};
    nmt_cpu_philox(N, counters, key, filled);
    int same = 1;
    for (int i = 0; i < N; i++) {
        uint32_t one[4];
        nmt_philox(counters + 4 * i, key, one);
        same &= !memcmp(one, filled + 4 * i, sizeof one);
    }
    CHECK(same, "nmt_cpu_philox differs from one call a counter");

    /* The uniform's range and first two moments over 200,000 draws. */
    double sum = 0.0, sum2 = 0.0;
    int in_range = 1;
    const int draws = 200000;
    for (int i = 0; i < draws; i++) {
        const double u = nmt_rule_sample_uniform(11, (uint64_t)i / 50, i % 50, 1 + i % 7);
        in_range &= u >= 0.0 && u < 1.0;
        sum += u;
        sum2 += u * u;
    }
    const double mean = sum / draws, var = sum2 / draws - mean * mean;
    CHECK(in_range, "a uniform outside [0, 1)");
    /* Standard errors: 0.00065 for the mean, 0.0002 for the variance. */
    CHECK(fabs(mean - 0.5) < 0.004, "mean %.5f, expected 0.5", mean);
    CHECK(fabs(var - 1.0 / 12.0) < 0.0015, "variance %.5f, expected %.5f", var, 1.0 / 12.0);
    return test_finish("test_philox");
}
