/* test_gpu_linear_chain_stream.cu: nmt_cuda_linear_chain_stream (the
 * batch-invariant 16-bit product with its weights streamed,
 * kernels/cuda/linear_chain_stream.cu) on fresh random inputs, bf16 and
 * fp16, x given rounded (as the step's producers write it, rows padded):
 * - bit for bit nmt_cuda_linear_chain's outputs on the same operands (the
 *   invariant arithmetic it must keep; it rounds the fp32 x itself);
 * - within 1e-5 of sum |x w| (+ |bias|) of the C twin (nmt_cpu_linear_chain
 *   over the rounded values: the tensor cores' sums of a block are their
 *   own).
 * Outputs NaN-poisoned at a padded stride: the gaps keep their poison, and
 * the guard after the output stays. Shapes: 1x1x16, k not in whole k16
 * blocks or 16-byte chunks (24, 1,000), n not in whole 16-output tiles,
 * rows past one block of 8, the batch-1 decoder's (5 rows; 2,048 x 1,280,
 * 512 x 1,024 with tanh, 4,778 x 512 with the bias), one with more stages
 * than the ring. Refused: misaligned weights or x, rows not 16 bytes apart.
 * NMT_TEST_SMALL=1 (under compute-sanitizer): the four small shapes. Exit
 * 77 without a GPU. */
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

static void test_shape(nmt_half_kind kind, int m, int n, int k, int with_bias, int tanh_out)
{
    const int ldy = n + 3, ldw = (k + 7) / 8 * 8, ldx16 = ldw + 8;
    const size_t ny = (size_t)m * ldy;
    float *x = (float *)host_alloc((size_t)m * k * sizeof(float));
    float *bias = (float *)host_alloc((size_t)n * sizeof(float));
    float *w = (float *)host_alloc((size_t)n * ldw * sizeof(float)); /* the rounded values */
    uint16_t *w16 = (uint16_t *)host_alloc((size_t)n * ldw * sizeof(uint16_t));
    test_fill_uniform(x, (size_t)m * k, -1.0f, 1.0f);
    test_fill_uniform(bias, (size_t)n, -0.5f, 0.5f);
    test_fill_uniform(w, (size_t)n * ldw, -0.2f, 0.2f);
    for (size_t i = 0; i < (size_t)n * ldw; i++) {
        w16[i] = nmt_half_bits(kind, w[i]);
        w[i] = nmt_half_widen(kind, w16[i]);
    }
    uint16_t *x16 = (uint16_t *)host_alloc((size_t)m * ldx16 * sizeof(uint16_t));
    for (int r = 0; r < m; r++)
        for (int p = 0; p < ldx16; p++) /* the padding: values that must not be read */
            x16[(size_t)r * ldx16 + p] =
                p < k ? nmt_half_bits(kind, x[(size_t)r * k + p]) : nmt_half_bits(kind, 1e4f);
    const nmt_skinny_x xr = kind == NMT_HALF_BF16 ? NMT_SKINNY_X_BF16 : NMT_SKINNY_X_FP16;
    const nmt_weight_type wt = kind == NMT_HALF_BF16 ? NMT_WEIGHT_BF16 : NMT_WEIGHT_FP16;
    float *dx = (float *)dev_upload(x, (size_t)m * k * sizeof(float));
    void *dx16 = dev_upload(x16, (size_t)m * ldx16 * sizeof(uint16_t));
    float *db = (float *)dev_upload(bias, (size_t)n * sizeof(float));
    void *dw = dev_upload(w16, (size_t)n * ldw * sizeof(uint16_t));
    float *dy = (float *)dev_output(ny * sizeof(float), POISON_F32);
    float *dref = (float *)dev_output(ny * sizeof(float), POISON_F32);
    nmt_error err = {};
    const float *b = with_bias ? db : NULL;
    char what[160];
    snprintf(what, sizeof what, "chain stream %s m %d n %d k %d bias %d tanh %d",
             kind == NMT_HALF_BF16 ? "bf16" : "fp16", m, n, k, with_bias, tanh_out);
    const nmt_status st = nmt_cuda_linear_chain_stream(ctx, kind, m, n, k, dx16, ldx16, dw, ldw,
                                                       b, tanh_out, dy, ldy, &err);
    CHECK(st == NMT_STATUS_OK, "%s: status %d: %s", what, (int)st, err.message);
    CHECK(nmt_cuda_linear_chain(ctx, m, n, k, dx, k, xr, dw, wt, ldw, b, tanh_out, dref, ldy,
                                &err) == NMT_STATUS_OK,
          "%s: chain: %s", what, err.message);
    float *got = (float *)host_alloc(ny * sizeof(float));
    float *ref = (float *)host_alloc(ny * sizeof(float));
    float *twin = (float *)host_alloc(ny * sizeof(float));
    int ok = dev_download(got, dy, ny * sizeof(float), POISON_F32, what) &&
             dev_download(ref, dref, ny * sizeof(float), POISON_F32, what);
    test_poison_f32(twin, ny);
    nmt_cpu_linear_chain(m, n, k, x, k, xr, w, ldw, with_bias ? bias : NULL, tanh_out, twin, ldy);
    size_t bits = 0, far = 0;
    for (int r = 0; r < m; r++)
        for (int j = 0; j < ldy; j++) {
            const size_t i = (size_t)r * ldy + j;
            if (memcmp(&got[i], &ref[i], sizeof(float)) != 0 && !(isnan(got[i]) && isnan(ref[i])))
                bits++;
            if (j >= n) { /* a gap: still poison */
                far += !isnan(got[i]);
                continue;
            }
            double mag = with_bias ? fabs(bias[j]) : 0.0;
            for (int p = 0; p < k; p++)
                mag += fabs((double)nmt_half_round(kind, x[(size_t)r * k + p]) *
                            w[(size_t)j * ldw + p]);
            far += !(fabs((double)got[i] - twin[i]) <= 1e-5 * mag + 1e-7);
        }
    CHECK(bits == 0, "%s: %zu outputs differ in bits from the chain kernel's", what, bits);
    CHECK(far == 0, "%s: %zu outputs off the twin (or gaps written)", what, far);
    report_check(ok && bits == 0 && far == 0, what);
    cudaFree(dx); cudaFree(dx16); cudaFree(db); cudaFree(dw); cudaFree(dy); cudaFree(dref);
    free(x); free(x16); free(bias); free(w); free(w16); free(got); free(ref); free(twin);
}

int main(void)
{
    ctx = gpu_test_start("test_gpu_linear_chain_stream");
    const char *small_env = getenv("NMT_TEST_SMALL"); /* under compute-sanitizer */
    const int small = small_env && *small_env == '1';
    for (int kind = NMT_HALF_BF16; kind <= NMT_HALF_FP16; kind++) {
        const nmt_half_kind h = (nmt_half_kind)kind;
        test_shape(h, 1, 1, 16, 1, 0);
        test_shape(h, 3, 37, 24, 0, 0);        /* k in no whole 16-byte chunk past 16 */
        test_shape(h, 13, 100, 1000, 1, 1);    /* two row blocks; k not in k16 blocks */
        test_shape(h, 8, 64, 4096, 1, 0);      /* 64 stages: the ring turns 8 times */
        if (small)
            continue;
        test_shape(h, 5, 2048, 1280, 0, 0);    /* the decoder's layer 0 at beam 5 */
        test_shape(h, 5, 512, 1024, 0, 1);     /* W_c with its tanh */
        test_shape(h, 5, 4778, 512, 1, 0);     /* W_out with its bias */
        test_shape(h, test_rand_int(1, 9), test_rand_int(1, 3000), test_rand_int(1, 1500), 1,
                   0);
    }
    /* Refused: weights or x off 16 bytes, rows not 16 bytes apart. */
    nmt_error err = {};
    uint16_t *w = NULL, *x = NULL;
    float *y = NULL;
    CUDA_OK(cudaMalloc(&w, 4096));
    CUDA_OK(cudaMalloc(&y, 4096));
    CUDA_OK(cudaMalloc(&x, 4096));
    const nmt_half_kind f16 = NMT_HALF_FP16;
    CHECK(nmt_cuda_linear_chain_stream(ctx, f16, 1, 8, 16, x, 16, w + 1, 16, NULL, 0, y, 8,
                                       &err) == NMT_STATUS_ERROR_UNSUPPORTED,
          "misaligned weights: accepted");
    CHECK(nmt_cuda_linear_chain_stream(ctx, f16, 1, 8, 16, x + 1, 16, w, 16, NULL, 0, y, 8,
                                       &err) == NMT_STATUS_ERROR_UNSUPPORTED,
          "misaligned x: accepted");
    CHECK(nmt_cuda_linear_chain_stream(ctx, f16, 1, 8, 16, x, 16, w, 20, NULL, 0, y, 8,
                                       &err) == NMT_STATUS_ERROR_UNSUPPORTED,
          "weight rows 40 bytes apart: accepted");
    CHECK(nmt_cuda_linear_chain_stream(ctx, f16, 1, 8, 16, x, 20, w, 16, NULL, 0, y, 8,
                                       &err) == NMT_STATUS_ERROR_UNSUPPORTED,
          "x rows 40 bytes apart: accepted");
    cudaFree(w); cudaFree(y); cudaFree(x);
    nmt_cuda_ctx_free(ctx);
    return test_finish("test_gpu_linear_chain_stream");
}
