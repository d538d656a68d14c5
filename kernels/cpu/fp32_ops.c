/* fp32_ops.c: the fast kernels' fp32 cell, tanh, attention and log-softmax
 * (kernels/fp32_ops.h). Built with -O3 -ffp-contract=off (CMakeLists.txt): the
 * loops vectorize, and no multiply-add is fused in one loop version and not
 * in another, so a vector lane and the scalar tail give the same bits. Sums
 * keep kLanes partial sums combined in a fixed tree: the compiler vectorizes
 * them without reassociating anything. */
#include "fp32_ops.h"

#include "clones_impl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

enum { kLanes = 16 };

/* Each entry point is built for AVX-512, AVX2 and the baseline (NMT_CLONES). */
#define CLONES NMT_CLONES

/* exp(x) for x clamped to [-87, 88] (normal results, no overflow): x = n ln2
 * + r with n = round(x / ln2) (the 1.5 * 2^23 trick: basic operations only),
 * ln2 split in two so r is exact enough, Cephes's degree-7 polynomial for
 * exp(r) on |r| <= ln2/2, and 2^n built in the exponent bits. */
static inline float fast_expf(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    const float shifter = 12582912.0f;
    const float n = (x * 1.44269504088896341f + shifter) - shifter;
    const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    union {
        int32_t i;
        float f;
    } scale = {.i = ((int32_t)n + 127) * (1 << 23)};
    return p * scale.f;
}

static inline float fast_sigmoidf(float x)
{
    return 1.0f / (1.0f + fast_expf(-x));
}

/* 1 - 2 / (1 + e^{2x}): exact 0 at 0, +-1 at the clamps; absolute error
 * ~1e-7 (relative error grows for |x| below ~1e-3, where tanh(x) ~ x). */
static inline float fast_tanhf(float x)
{
    return 1.0f - 2.0f / (1.0f + fast_expf(2.0f * x));
}

/* The lane sums' fixed combination: lanes l and l + w, halving w. */
static inline float lanes_sum(float *acc)
{
    for (int w = kLanes / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++)
            acc[l] += acc[l + w];
    return acc[0];
}

static inline float dot(int32_t n, const float *a, const float *b)
{
    float acc[kLanes] = {0};
    int32_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; l++)
            acc[l] += a[i + l] * b[i + l];
    for (int l = 0; i + l < n; l++)
        acc[l] += a[i + l] * b[i + l];
    return lanes_sum(acc);
}

static inline float max_of(int32_t n, const float *x)
{
    float acc[kLanes];
    for (int l = 0; l < kLanes; l++)
        acc[l] = -INFINITY;
    int32_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; l++)
            acc[l] = x[i + l] > acc[l] ? x[i + l] : acc[l];
    for (int l = 0; i + l < n; l++)
        acc[l] = x[i + l] > acc[l] ? x[i + l] : acc[l];
    float m = acc[0];
    for (int l = 1; l < kLanes; l++)
        m = acc[l] > m ? acc[l] : m;
    return m;
}

static inline float sum_of(int32_t n, const float *x)
{
    float acc[kLanes] = {0};
    int32_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; l++)
            acc[l] += x[i + l];
    for (int l = 0; i + l < n; l++)
        acc[l] += x[i + l];
    return lanes_sum(acc);
}

/* sum_i exp(x[i] - shift). */
static inline float sum_exp(int32_t n, const float *x, float shift)
{
    float acc[kLanes] = {0};
    int32_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; l++)
            acc[l] += fast_expf(x[i + l] - shift);
    for (int l = 0; i + l < n; l++)
        acc[l] += fast_expf(x[i + l] - shift);
    return lanes_sum(acc);
}

/* One row of the cell; has_h and has_bias are constants at each call, so
 * each variant is its own loop without a branch inside. */
static inline __attribute__((always_inline)) void
cell_row(int32_t H, const float *restrict gx, const float *restrict gh,
         const float *restrict bias, int has_h, int has_bias, const float *c_prev, float *c_out,
         float *restrict h_out)
{
    for (int32_t j = 0; j < H; j++) {
        float g[4];
        for (int q = 0; q < 4; q++) {
            g[q] = gx[q * H + j];
            if (has_h)
                g[q] += gh[q * H + j];
            if (has_bias)
                g[q] += bias[q * H + j];
        }
        /* Read c_prev before writing c_out: they may alias (same index). */
        const float c = fast_sigmoidf(g[1]) * c_prev[j] + fast_sigmoidf(g[0]) * fast_tanhf(g[2]);
        c_out[j] = c;
        h_out[j] = fast_sigmoidf(g[3]) * fast_tanhf(c);
    }
}

CLONES void nmt_cpu_fast_lstm_cell(int32_t n_rows, int32_t hidden, const float *gates_x,
                                   int32_t ld_x,
                            const float *gates_h, const float *bias, const float *c_prev,
                            float *c_out, float *h_out, int32_t ld_h, float *h_out2,
                            int32_t ld_h2)
{
    const int32_t H = hidden;
    for (int32_t r = 0; r < n_rows; r++) {
        const float *gx = gates_x + (int64_t)r * ld_x;
        const float *gh = gates_h ? gates_h + (int64_t)r * 4 * H : NULL;
        const float *cp = c_prev + (int64_t)r * H;
        float *co = c_out + (int64_t)r * H, *h = h_out + (int64_t)r * ld_h;
        if (gh && bias)
            cell_row(H, gx, gh, bias, 1, 1, cp, co, h);
        else if (gh)
            cell_row(H, gx, gh, NULL, 1, 0, cp, co, h);
        else if (bias)
            cell_row(H, gx, NULL, bias, 0, 1, cp, co, h);
        else
            cell_row(H, gx, NULL, NULL, 0, 0, cp, co, h);
        if (h_out2)
            memcpy(h_out2 + (int64_t)r * ld_h2, h, sizeof(float) * (size_t)H);
    }
}

CLONES void nmt_cpu_fast_tanh(int64_t n, float *x)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = fast_tanhf(x[i]);
}

CLONES void nmt_cpu_fast_add(int64_t n, const float *restrict x, float *restrict y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = y[i] + x[i];
}

CLONES void nmt_cpu_fast_attention(int32_t n_rows, int32_t hidden, int32_t max_src,
                            const int32_t *row_sentence, const int32_t *src_len, const float *keys,
                            const float *memory, const float *query, int32_t ld_query,
                            float *context, int32_t ld_context, float *weights, int32_t *argmax)
{
    const int32_t H = hidden;
    float prob[max_src > 0 ? max_src : 1]; /* a VLA of max_src floats: no allocation */
    for (int32_t r = 0; r < n_rows; r++) {
        const int32_t s = row_sentence[r];
        const int32_t len = src_len[s] < max_src ? src_len[s] : max_src;
        const float *sent_keys = keys + (int64_t)s * max_src * H;
        const float *sent_memory = memory + (int64_t)s * max_src * H;
        const float *q = query + (int64_t)r * ld_query;
        float *ctx = context + (int64_t)r * ld_context;

        for (int32_t j = 0; j < len; j++)
            prob[j] = dot(H, q, sent_keys + (int64_t)j * H);
        const float max_score = max_of(len, prob);
        for (int32_t j = 0; j < len; j++)
            prob[j] = fast_expf(prob[j] - max_score);
        const float denom = sum_of(len, prob);
        int32_t best = len > 0 ? 0 : -1;
        for (int32_t j = 0; j < len; j++) {
            prob[j] /= denom;
            if (prob[j] > prob[best])
                best = j;
        }
        /* Each output a chain over j ascending: vectorizes along d. */
        memset(ctx, 0, sizeof(float) * (size_t)H);
        for (int32_t j = 0; j < len; j++) {
            const float p = prob[j], *m = sent_memory + (int64_t)j * H;
            for (int32_t d = 0; d < H; d++)
                ctx[d] += p * m[d];
        }
        if (weights) {
            float *w = weights + (int64_t)r * max_src;
            for (int32_t j = 0; j < max_src; j++)
                w[j] = j < len ? prob[j] : 0.0f;
        }
        if (argmax)
            argmax[r] = best;
    }
}

CLONES void nmt_cpu_fast_log_softmax(int32_t n_rows, int32_t vocab, const float *logits, int32_t ld,
                              float *log_probs)
{
    for (int32_t r = 0; r < n_rows; r++) {
        const float *z = logits + (int64_t)r * ld;
        float *out = log_probs + (int64_t)r * vocab;
        const float max_z = max_of(vocab, z);
        /* All -inf (or +inf present): nothing finite to normalize, as the reference. */
        const float lse = isinf(max_z) ? max_z : max_z + logf(sum_exp(vocab, z, max_z));
        for (int32_t w = 0; w < vocab; w++)
            out[w] = z[w] - lse;
    }
}
