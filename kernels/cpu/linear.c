/* linear.c: CPU y = x . w^T (+ bias) (+ y) (kernels/linear.h): the plain
 * triple loop, each output one double-accumulated dot product rounded once.
 * w may be a column slice of a wider matrix (pointer to the first column,
 * ldw the full row length). nmt_cpu_linear_chain: the batch-invariant
 * GEMM's order, one fmaf chain an output in float. */
#include "linear.h"

#include "half.h"

#include <math.h>
#include <string.h>

void nmt_cpu_linear(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                    const float *w, int32_t ldw, const float *bias, int accumulate,
                    float *y, int32_t ldy)
{
    for (int32_t i = 0; i < m; i++) {
        const float *x_row = x + (int64_t)i * ldx;
        float *y_row = y + (int64_t)i * ldy;
        for (int32_t j = 0; j < n; j++) {
            const float *w_row = w + (int64_t)j * ldw;
            double sum = accumulate ? (double)y_row[j] : 0.0;
            if (bias)
                sum += (double)bias[j];
            for (int32_t p = 0; p < k; p++)
                sum += (double)x_row[p] * (double)w_row[p];
            y_row[j] = (float)sum;
        }
    }
}

/* TF32 keeps the top 10 of fp32's 23 mantissa bits: add half of the 13
 * dropped bits' weight, then clear them (ties away from zero). */
float nmt_tf32_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u + 0x1000u) & 0xFFFFE000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

void nmt_cpu_tf32_split(int32_t m, int32_t k, const float *x, int32_t ldx, float *split)
{
    for (int32_t i = 0; i < m; i++)
        for (int32_t p = 0; p < k; p++) {
            const float v = x[(int64_t)i * ldx + p], hi = nmt_tf32_round(v);
            split[(int64_t)i * 2 * k + p] = hi;
            split[(int64_t)i * 2 * k + k + p] = nmt_tf32_round(v - hi);
        }
}

int nmt_tf32_exact(const float *values, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &values[i], sizeof u);
        if (u & 0x1FFFu)
            return 0;
    }
    return 1;
}

float nmt_half_round(nmt_half_kind kind, float x)
{
    return nmt_half_widen(kind, nmt_half_bits(kind, x));
}

int nmt_fp16_exact(const float *values, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const float back = nmt_half_round(NMT_HALF_FP16, values[i]);
        if (memcmp(&back, &values[i], sizeof back) != 0)
            return 0;
    }
    return 1;
}

void nmt_cpu_half_round_rows(nmt_half_kind kind, int32_t m, int32_t k, const float *src,
                             int32_t ld, float *dst)
{
    for (int32_t i = 0; i < m; i++)
        for (int32_t p = 0; p < k; p++)
            dst[(int64_t)i * k + p] = nmt_half_round(kind, src[(int64_t)i * ld + p]);
}

void nmt_cpu_linear_chain(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                          nmt_skinny_x x_round, const float *w, int32_t ldw, const float *bias,
                          int tanh_out, float *y, int32_t ldy)
{
    const int rounded = x_round != NMT_SKINNY_X_F32;
    const nmt_half_kind kind = x_round == NMT_SKINNY_X_BF16 ? NMT_HALF_BF16 : NMT_HALF_FP16;
    for (int32_t i = 0; i < m; i++)
        for (int32_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int32_t p = 0; p < k; p++) {
                const float xv = x[(int64_t)i * ldx + p];
                acc = fmaf(rounded ? nmt_half_round(kind, xv) : xv, w[(int64_t)j * ldw + p], acc);
            }
            const float v = acc + (bias ? bias[j] : 0.0f);
            y[(int64_t)i * ldy + j] = tanh_out ? tanhf(v) : v;
        }
}
