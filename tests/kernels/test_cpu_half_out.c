/* test_cpu_half_out.c: the 16-bit copies the CPU twins of the decoder step's
 * producers write beside their fp32 outputs (half.h, nmt_half_out): gather
 * segments, the LSTM cell, attention's context and tanh over rows. For
 * each, in both 16-bit formats, on fresh random inputs: the fp32 outputs
 * are bit for bit those of the call without the copy, every copied value is
 * nmt_half_bits of its fp32 value, and the copy's gaps keep their poison.
 * Also nmt_half_bits itself on values whose rounding is known by hand. */
#include "attention.h"
#include "gather.h"
#include "lstm_cell.h"
#include "pointwise.h"
#include "test_half_out.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const nmt_half_kind kinds[2] = {NMT_HALF_BF16, NMT_HALF_FP16};
static const char *const kind_names[2] = {"bf16", "fp16"};

/* A poisoned copy of rows x ld16 values. */
static uint16_t *poisoned_copy(int32_t rows, int32_t ld16)
{
    uint16_t *p = (uint16_t *)test_alloc((size_t)rows * ld16 * sizeof(uint16_t));
    for (size_t i = 0; i < (size_t)rows * ld16; i++)
        p[i] = TEST_HALF_POISON;
    return p;
}

static void test_half_bits(void)
{
    /* fp16: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to even (1);
     * 1 + 3 * 2^-11 halfway between 1 + 2^-10 and 1 + 2^-9: to even (up). */
    CHECK(nmt_half_bits(NMT_HALF_FP16, 1.0f) == 0x3C00u, "fp16 1");
    CHECK(nmt_half_bits(NMT_HALF_FP16, 1.0f + 0x1p-11f) == 0x3C00u, "fp16 tie down to even");
    CHECK(nmt_half_bits(NMT_HALF_FP16, 1.0f + 0x3p-11f) == 0x3C02u, "fp16 tie up to even");
    CHECK(nmt_half_bits(NMT_HALF_FP16, -2.0f) == 0xC000u, "fp16 -2");
    CHECK(nmt_half_bits(NMT_HALF_FP16, 70000.0f) == 0x7C00u, "fp16 overflow to infinity");
    /* bf16: 7 mantissa bits; the same two ties at 2^-8 and 3 * 2^-8. */
    CHECK(nmt_half_bits(NMT_HALF_BF16, 1.0f) == 0x3F80u, "bf16 1");
    CHECK(nmt_half_bits(NMT_HALF_BF16, 1.0f + 0x1p-8f) == 0x3F80u, "bf16 tie down to even");
    CHECK(nmt_half_bits(NMT_HALF_BF16, 1.0f + 0x3p-8f) == 0x3F82u, "bf16 tie up to even");
    CHECK(nmt_half_bits(NMT_HALF_BF16, -0.5f) == 0xBF00u, "bf16 -0.5");
    for (int i = 0; i < 1000; i++) { /* the rounding the GEMMs' twins use, widened */
        const float x = test_rand_uniform(-8.0f, 8.0f);
        for (int k = 0; k < 2; k++) {
            const float back = nmt_half_widen(kinds[k], nmt_half_bits(kinds[k], x));
            const float round = nmt_half_round(kinds[k], x);
            CHECK(memcmp(&back, &round, sizeof back) == 0, "%s: widen(bits(%.9g)) = %.9g, "
                  "nmt_half_round %.9g", kind_names[k], x, back, round);
        }
    }
}

/* Three segments into one row buffer, the middle one with no copy. */
static void test_gather_copy(nmt_half_kind kind, const char *name)
{
    enum { kRows = 9, kSrcRows = 13, kLd = 40, kLd16 = 43 };
    const int32_t width[3] = {7, 11, 16}, col[3] = {0, 8, 20};
    float *src[3];
    int32_t index[3][kRows];
    float *plain = (float *)test_alloc(sizeof(float) * kRows * kLd);
    float *with = (float *)test_alloc(sizeof(float) * kRows * kLd);
    uint16_t *copy = poisoned_copy(kRows, kLd16);
    test_poison_f32(plain, (size_t)kRows * kLd);
    test_poison_f32(with, (size_t)kRows * kLd);
    nmt_gather_segment a[3], b[3];
    for (int g = 0; g < 3; g++) {
        src[g] = (float *)test_alloc(sizeof(float) * kSrcRows * width[g]);
        test_fill_uniform(src[g], (size_t)kSrcRows * width[g], -3.0f, 3.0f);
        for (int r = 0; r < kRows; r++)
            index[g][r] = test_rand_int(0, kSrcRows);
        a[g] = (nmt_gather_segment){.src = src[g], .index = index[g], .dst = plain + col[g],
                                    .width = width[g], .ld_src = width[g], .ld_dst = kLd};
        b[g] = a[g];
        b[g].dst = with + col[g];
        if (g != 1)
            b[g].dst16 = (nmt_half_out){.dst = copy + col[g], .ld = kLd16, .kind = kind};
    }
    nmt_cpu_gather_segments(kRows, 3, a);
    nmt_cpu_gather_segments(kRows, 3, b);
    char what[64];
    snprintf(what, sizeof what, "gather segments %s", name);
    CHECK(memcmp(plain, with, sizeof(float) * kRows * kLd) == 0, "%s: fp32 rows differ", what);
    /* Column by column: the copied segments' values, poison elsewhere. */
    int ok = 1;
    for (int r = 0; r < kRows; r++)
        for (int j = 0; j < kLd16; j++) {
            const int in0 = j < width[0], in2 = j >= col[2] && j < col[2] + width[2];
            const uint16_t got = copy[r * kLd16 + j];
            const uint16_t want = in0 || in2 ? nmt_half_bits(kind, with[r * kLd + j])
                                             : (uint16_t)TEST_HALF_POISON;
            if (got != want && ok) {
                fprintf(stderr, "  %s [%d, %d]: 0x%04x want 0x%04x\n", what, r, j, got, want);
                ok = 0;
            }
        }
    CHECK(ok, "%s: 16-bit copy", what);
    for (int g = 0; g < 3; g++)
        free(src[g]);
    free(plain); free(with); free(copy);
}

static void test_lstm_copy(nmt_half_kind kind, const char *name)
{
    enum { kRows = 6, kHidden = 21, kLdH = 25, kLdH2 = 30, kLd16 = 24 };
    const size_t ng = (size_t)kRows * 4 * kHidden, nc = (size_t)kRows * kHidden;
    float *gx = (float *)test_alloc(sizeof(float) * ng), *gh = (float *)test_alloc(sizeof(float) * ng);
    float *bias = (float *)test_alloc(sizeof(float) * 4 * kHidden);
    float *c_prev = (float *)test_alloc(sizeof(float) * nc);
    test_fill_uniform(gx, ng, -3.0f, 3.0f);
    test_fill_uniform(gh, ng, -3.0f, 3.0f);
    test_fill_uniform(bias, 4 * kHidden, -1.0f, 1.0f);
    test_fill_uniform(c_prev, nc, -2.0f, 2.0f);
    float *c[2], *h[2], *h2[2];
    for (int i = 0; i < 2; i++) {
        c[i] = (float *)test_alloc(sizeof(float) * nc);
        h[i] = (float *)test_alloc(sizeof(float) * kRows * kLdH);
        h2[i] = (float *)test_alloc(sizeof(float) * kRows * kLdH2);
        test_poison_f32(h[i], (size_t)kRows * kLdH);
        test_poison_f32(h2[i], (size_t)kRows * kLdH2);
    }
    uint16_t *copy = poisoned_copy(kRows, kLd16);
    const nmt_half_out h16 = {.dst = copy, .ld = kLd16, .kind = kind};
    for (int i = 0; i < 2; i++) /* without the copy, then with it */
        nmt_cpu_lstm_cell(&(nmt_lstm_cell_args){
            .n_rows = kRows, .hidden = kHidden, .gates_x = gx, .ld_x = 4 * kHidden,
            .gates_h = gh, .bias = bias, .c_prev = c_prev, .c_out = c[i], .h_out = h[i],
            .ld_h = kLdH, .h_out2 = h2[i], .ld_h2 = kLdH2, .h16 = i ? &h16 : NULL});
    char what[64];
    snprintf(what, sizeof what, "lstm cell %s", name);
    CHECK(memcmp(c[0], c[1], sizeof(float) * nc) == 0 &&
              memcmp(h[0], h[1], sizeof(float) * kRows * kLdH) == 0 &&
              memcmp(h2[0], h2[1], sizeof(float) * kRows * kLdH2) == 0,
          "%s: fp32 outputs differ", what);
    CHECK(test_half_copy_ok(what, kind, kRows, kHidden, h[1], kLdH, copy, kLd16), "%s", what);
    for (int i = 0; i < 2; i++) {
        free(c[i]); free(h[i]); free(h2[i]);
    }
    free(gx); free(gh); free(bias); free(c_prev); free(copy);
}

static void test_attention_copy(nmt_half_kind kind, const char *name)
{
    enum { kSent = 3, kRows = 7, kHidden = 19, kMaxSrc = 6, kLd = 2 * kHidden, kLd16 = kLd };
    int32_t len[kSent] = {kMaxSrc, 0, 3}, sent[kRows];
    for (int r = 0; r < kRows; r++)
        sent[r] = test_rand_int(0, kSent);
    const size_t nk = (size_t)kSent * kMaxSrc * kHidden;
    float *keys = (float *)test_alloc(sizeof(float) * nk), *mem = (float *)test_alloc(sizeof(float) * nk);
    float query[kRows * kHidden];
    test_fill_uniform(keys, nk, -0.5f, 0.5f);
    test_fill_uniform(mem, nk, -1.0f, 1.0f);
    test_fill_uniform(query, (size_t)kRows * kHidden, -1.0f, 1.0f);
    float ctx[2][kRows * kLd], weights[2][kRows * kMaxSrc];
    int32_t argmax[2][kRows];
    for (int i = 0; i < 2; i++)
        test_poison_f32(ctx[i], (size_t)kRows * kLd);
    uint16_t *copy = poisoned_copy(kRows, kLd16);
    /* The context in the first half of a [context; h] row, as the decoder's. */
    const nmt_half_out c16 = {.dst = copy, .ld = kLd16, .kind = kind};
    nmt_cpu_attention(kRows, kHidden, kMaxSrc, sent, len, keys, mem, query, kHidden, ctx[0], kLd,
                      NULL, weights[0], argmax[0]);
    nmt_cpu_attention(kRows, kHidden, kMaxSrc, sent, len, keys, mem, query, kHidden, ctx[1], kLd,
                      &c16, weights[1], argmax[1]);
    char what[64];
    snprintf(what, sizeof what, "attention %s", name);
    CHECK(memcmp(ctx[0], ctx[1], sizeof ctx[0]) == 0 &&
              memcmp(weights[0], weights[1], sizeof weights[0]) == 0 &&
              memcmp(argmax[0], argmax[1], sizeof argmax[0]) == 0,
          "%s: fp32 outputs differ", what);
    CHECK(test_half_copy_ok(what, kind, kRows, kHidden, ctx[1], kLd, copy, kLd16), "%s", what);
    free(keys); free(mem); free(copy);
}

static void test_tanh_copy(nmt_half_kind kind, const char *name)
{
    enum { kRows = 5, kWidth = 17, kLd = 20, kLd16 = 18 };
    float x[2][kRows * kLd];
    test_fill_uniform(x[0], (size_t)kRows * kLd, -4.0f, 4.0f);
    memcpy(x[1], x[0], sizeof x[0]);
    uint16_t *copy = poisoned_copy(kRows, kLd16);
    const nmt_half_out x16 = {.dst = copy, .ld = kLd16, .kind = kind};
    nmt_cpu_tanh_rows(kRows, kWidth, x[0], kLd, NULL);
    nmt_cpu_tanh_rows(kRows, kWidth, x[1], kLd, &x16);
    char what[64];
    snprintf(what, sizeof what, "tanh rows %s", name);
    CHECK(memcmp(x[0], x[1], sizeof x[0]) == 0, "%s: fp32 rows differ", what);
    CHECK(test_half_copy_ok(what, kind, kRows, kWidth, x[1], kLd, copy, kLd16), "%s", what);
    free(copy);
}

int main(void)
{
    test_seed();
    test_half_bits();
    for (int k = 0; k < 2; k++) {
        test_gather_copy(kinds[k], kind_names[k]);
        test_lstm_copy(kinds[k], kind_names[k]);
        test_attention_copy(kinds[k], kind_names[k]);
        test_tanh_copy(kinds[k], kind_names[k]);
    }
    return test_finish("test_cpu_half_out");
}
