/* test_gpu_linear_half.cu: the 16-bit GEMM path (kernels/linear.h) against
 * its CPU twin.
 * - nmt_cuda_to_half, bf16 and fp16: bit for bit the host's rounding
 *   (core/half.h) on random values and on the edges: ties (even and odd),
 *   the largest finite values, what rounds to infinity, fp16 subnormals and
 *   what underflows, signed zeros, infinities; NaN stays NaN. Padded source
 *   rows; the guard after the output untouched; both kernels (by four where
 *   k and ld are multiples of 4, else one at a time).
 * - nmt_cuda_linear_half: every output within 1e-5 of sum |x w| (+ |bias|)
 *   of the fp64 product of the rounded inputs (fp32 sums on tensor cores:
 *   ~sqrt(k) x 2^-24 typically), i.e. ~100x tighter than the inputs'
 *   rounding (2^-9 for bf16) allows, so a wrong rounding or a dropped term
 *   shows; the scratch holds the rounded activations exactly. Shapes: 1x1x1,
 *   odd sizes, padded leading dimensions (padding columns of y keep their
 *   poison), the decoder's 5 and 320 rows, a wide output layer, and one
 *   shape at 9-13 rows (cuBLASLt plans shared by a row class).
 * - nmt_cuda_linear_half_rounded on that scratch (the activations as their
 *   producers round them, nmt_half_out): the same bits as
 *   nmt_cuda_linear_half, padding columns still poisoned. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ctx.h"
#include "gpu_test_util.h"
#include "half.h"
#include "linear.h"

static nmt_cuda_ctx *ctx;
static const char *const kind_name[] = {"bf16", "fp16"};

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int is_nan_bits(nmt_half_kind kind, uint16_t h)
{
    return kind == NMT_HALF_BF16 ? (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu)
                                 : (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu);
}

/* Edge values for both formats, then random ones over many binades. */
static void fill_edges(float *x, int n)
{
    const uint32_t edges[] = {
        0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, /* 0, -0, inf, NaN */
        0x3F808000u, 0x3F818000u, 0x3F808001u, 0x3F807FFFu, /* bf16 ties to even, odd; near */
        0x7F7FFFFFu, 0x7F7F8000u, 0xFF7FFFFFu,              /* bf16: largest, rounding up */
        0x3F801000u, 0x3F803000u, 0x3F801001u,              /* fp16 ties, near a tie */
        0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x47800000u, /* fp16: 65504, to 65504, to inf */
        0x38800000u, 0x387FFFFFu, 0x33800000u, 0x33000000u, /* fp16: 2^-14, subnormals, 2^-25 */
        0x33000001u, 0x32FFFFFFu, 0x34400000u, 0x00000001u, /* just above / below half the least */
        0x007FFFFFu, 0x80000001u, 0xB3800000u};
    const int n_edges = (int)(sizeof edges / sizeof edges[0]);
    for (int i = 0; i < n; i++) {
        if (i < n_edges) {
            x[i] = from_bits(edges[i]);
        } else {
            const float mant = test_rand_uniform(-2.0f, 2.0f);
            x[i] = ldexpf(mant, test_rand_int(-30, 20));
        }
    }
}

static void test_to_half(nmt_half_kind kind, int m, int k, int pad)
{
    const int ld = k + pad;
    const size_t n_src = (size_t)m * ld, n_dst = (size_t)m * k;
    float *src = (float *)host_alloc(n_src * sizeof(float));
    uint16_t *got = (uint16_t *)host_alloc(n_dst * sizeof(uint16_t));
    fill_edges(src, (int)n_src);
    float *d_src = (float *)dev_upload(src, n_src * sizeof(float));
    void *d_dst = dev_output(n_dst * sizeof(uint16_t), POISON_I32);
    nmt_error err = {};
    const nmt_status st = nmt_cuda_to_half(ctx, kind, m, k, d_src, ld, d_dst, &err);
    CHECK(st == NMT_STATUS_OK, "to_half: %s", err.message);
    char what[96];
    snprintf(what, sizeof what, "to_half %s m %d k %d pad %d", kind_name[kind], m, k, pad);
    int ok = dev_download(got, d_dst, n_dst * sizeof(uint16_t), POISON_I32, what);
    int bad = 0;
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++) {
            const float v = src[(size_t)i * ld + p];
            const uint16_t want = nmt_half_bits(kind, v), have = got[(size_t)i * k + p];
            const int same = want == have || (is_nan_bits(kind, want) && is_nan_bits(kind, have));
            if (!same && bad++ < 3)
                fprintf(stderr, "  %s [%d, %d]: %a -> 0x%04x, want 0x%04x\n", what, i, p, v,
                        have, want);
        }
    report_check(ok && bad == 0, what);
    cudaFree(d_src);
    cudaFree(d_dst);
    free(src);
    free(got);
}

static void test_linear_half(nmt_half_kind kind, int m, int n, int k, int pad, int with_bias)
{
    const int ldx = k + pad, ldw = k + pad, ldy = n + pad;
    const size_t nx = (size_t)m * ldx, nw = (size_t)n * ldw, ny = (size_t)m * ldy;
    float *x = (float *)host_alloc(nx * sizeof(float));
    float *w = (float *)host_alloc(nw * sizeof(float));
    float *bias = (float *)host_alloc((size_t)n * sizeof(float));
    float *x_r = (float *)host_alloc((size_t)m * k * sizeof(float));
    float *w_r = (float *)host_alloc((size_t)n * k * sizeof(float));
    float *want = (float *)host_alloc(ny * sizeof(float));
    float *got = (float *)host_alloc(ny * sizeof(float));
    uint16_t *x16 = (uint16_t *)host_alloc((size_t)m * k * sizeof(uint16_t));
    test_fill_uniform(x, nx, -2.0f, 2.0f);
    test_fill_uniform(w, nw, -1.0f, 1.0f);
    test_fill_uniform(bias, n, -1.0f, 1.0f);
    nmt_cpu_half_round_rows(kind, m, k, x, ldx, x_r);
    nmt_cpu_half_round_rows(kind, n, k, w, ldw, w_r);
    nmt_cpu_linear(m, n, k, x_r, k, w_r, k, with_bias ? bias : NULL, 0, want, ldy);

    float *d_x = (float *)dev_upload(x, nx * sizeof(float));
    float *d_w = (float *)dev_upload(w, nw * sizeof(float));
    float *d_b = (float *)dev_upload(bias, (size_t)n * sizeof(float));
    void *d_w16 = dev_output((size_t)n * ldw * sizeof(uint16_t), POISON_I32);
    void *d_x16 = dev_output((size_t)m * k * sizeof(uint16_t), POISON_I32);
    float *d_y = (float *)dev_output(ny * sizeof(float), POISON_F32);
    nmt_error err = {};
    /* The weights as the model keeps them: rounded once, rows ldw apart. */
    CHECK(nmt_cuda_to_half(ctx, kind, n, ldw, d_w, ldw, d_w16, &err) == NMT_STATUS_OK,
          "weights: %s", err.message);
    const nmt_status st = nmt_cuda_linear_half(ctx, kind, m, n, k, d_x, ldx, d_w16, ldw,
                                               with_bias ? d_b : NULL, d_y, ldy, d_x16, &err);
    CHECK(st == NMT_STATUS_OK, "linear_half: %s", err.message);
    char what[128];
    snprintf(what, sizeof what, "linear_half %s m %d n %d k %d pad %d bias %d", kind_name[kind],
             m, n, k, pad, with_bias);
    int ok = dev_download(got, d_y, ny * sizeof(float), POISON_F32, what);
    ok &= dev_download(x16, d_x16, (size_t)m * k * sizeof(uint16_t), POISON_I32, what);
    int bad = 0;
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++)
            if (x16[(size_t)i * k + p] != nmt_half_bits(kind, x[(size_t)i * ldx + p]) && bad++ < 3)
                fprintf(stderr, "  %s: scratch [%d, %d] is not the rounded activation\n", what,
                        i, p);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldy; j++) {
            const float g = got[(size_t)i * ldy + j];
            if (j >= n) { /* padding: never written */
                if (!isnan(g) && bad++ < 3)
                    fprintf(stderr, "  %s: padding [%d, %d] written\n", what, i, j);
                continue;
            }
            double mag = with_bias ? fabs(bias[j]) : 0.0;
            for (int p = 0; p < k; p++)
                mag += fabs((double)x_r[(size_t)i * k + p] * w_r[(size_t)j * k + p]);
            const double diff = fabs((double)g - want[(size_t)i * ldy + j]);
            if (!(diff <= 1e-5 * mag + 1e-30) && bad++ < 3)
                fprintf(stderr, "  %s [%d, %d]: %.9g want %.9g (|x w| %.3g)\n", what, i, j, g,
                        want[(size_t)i * ldy + j], mag);
        }
    report_check(ok && bad == 0, what);

    /* The same product from the rounded activations: the same bits. */
    float *d_y2 = (float *)dev_output(ny * sizeof(float), POISON_F32);
    float *got2 = (float *)host_alloc(ny * sizeof(float));
    CHECK(nmt_cuda_linear_half_rounded(ctx, kind, m, n, k, d_x, ldx, d_x16, d_w16, ldw,
                                       with_bias ? d_b : NULL, d_y2, ldy, &err) == NMT_STATUS_OK,
          "linear_half_rounded: %s", err.message);
    snprintf(what, sizeof what, "linear_half_rounded %s m %d n %d k %d pad %d bias %d",
             kind_name[kind], m, n, k, pad, with_bias);
    ok = dev_download(got2, d_y2, ny * sizeof(float), POISON_F32, what);
    report_check(ok && memcmp(got, got2, ny * sizeof(float)) == 0, what);
    cudaFree(d_x); cudaFree(d_w); cudaFree(d_b); cudaFree(d_w16); cudaFree(d_x16); cudaFree(d_y);
    cudaFree(d_y2);
    free(x); free(w); free(bias); free(x_r); free(w_r); free(want); free(got); free(got2);
    free(x16);
}

int main(void)
{
    ctx = gpu_test_start("test_gpu_linear_half");
    nmt_error err = {};
    const int small = getenv("NMT_TEST_SMALL") != NULL;
    for (int kind = 0; kind < 2; kind++) {
        const nmt_half_kind h = (nmt_half_kind)kind;
        test_to_half(h, 1, 40, 0); /* every edge value in one row */
        test_to_half(h, 7, 33, 5);
        test_to_half(h, 300, 257, 3);
        test_to_half(h, 333, 1280, 4); /* by four (a decoder layer's input), padded rows */
        test_to_half(h, 3, 8, 0);
        test_linear_half(h, 1, 1, 1, 0, 0);
        test_linear_half(h, 7, 33, 5, 3, 1);
        test_linear_half(h, 5, 2048, 1280, 0, 0); /* a batch-1 decoder layer at beam 5 */
        test_linear_half(h, 64, 300, 257, 1, 1);
        /* One shape at consecutive row counts: 9-12 share the plan chosen
         * for 12 rows (their row class, kernels/cuda/linear_lt.cu), 13 is
         * the next class. */
        for (int32_t m = 9; m <= 13; m++)
            test_linear_half(h, m, 512, 1024, 0, 0);
        if (!small) {
            test_linear_half(h, 320, 1024, 1280, 0, 1); /* batch 64, beam 5 */
            test_linear_half(h, 33, 10007, 256, 2, 1);  /* an output layer, odd V */
        }
    }
    /* Arguments refused, not run. */
    CHECK(nmt_cuda_linear_half(ctx, NMT_HALF_BF16, 2, 2, 0, NULL, 1, NULL, 1, NULL, NULL, 2,
                               NULL, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "k = 0 not refused");
    CHECK(nmt_cuda_linear_half_rounded(ctx, NMT_HALF_FP16, 2, 2, 2, (const float *)&err, 2, NULL,
                                       (const void *)&err, 2, NULL, (float *)&err, 2,
                                       &err) == NMT_STATUS_ERROR_ARGUMENT,
          "linear_half_rounded without x16 not refused");
    CHECK(nmt_cuda_to_half(ctx, (nmt_half_kind)7, 1, 1, NULL, 1, NULL, &err) ==
              NMT_STATUS_ERROR_ARGUMENT,
          "an unknown kind not refused");
    nmt_cuda_ctx_free(ctx);
    return test_finish("test_gpu_linear_half");
}
