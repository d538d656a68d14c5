/* test_gpu_pick_log_prob.cu: nmt_cuda_pick_log_prob (scoring's output-layer
 * reduction, kernels/pick_log_prob.h) against its CPU oracle over a shape
 * table (1, 7, 333 rows; 1, 7, 33, 333 and 30,000 columns, padded leading
 * dimensions whose padding is NaN, so a read past the row shows), a word
 * outside the row (NaN), -inf logits (a shrunk row's), and rows whose
 * results must not depend on the rows around them: each row computed alone
 * gives the bits it has in the batch. Outputs NaN-poisoned, with a guard. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "pick_log_prob.h"

static void *stream;

static void test_shape(int32_t rows, int32_t cols, int32_t pad)
{
    const int32_t ld = cols + pad;
    const size_t n = (size_t)rows * ld;
    float *x = (float *)host_alloc(n * sizeof(float));
    int32_t *words = (int32_t *)host_alloc(rows * sizeof(int32_t));
    float *want = (float *)host_alloc(rows * sizeof(float));
    float *got = (float *)host_alloc(rows * sizeof(float));
    float *alone = (float *)host_alloc(rows * sizeof(float));
    test_fill_uniform(x, n, -12.0f, 12.0f);
    for (int32_t r = 0; r < rows; r++) {
        for (int32_t j = cols; j < ld; j++)
            x[(size_t)r * ld + j] = NAN;
        words[r] = test_rand_int(0, cols);
        if (r % 5 == 3)
            x[(size_t)r * ld + test_rand_int(0, cols)] = -INFINITY;
    }
    if (rows > 2)
        words[2] = cols; /* outside: NaN */
    nmt_cpu_pick_log_prob(rows, cols, x, ld, words, want);
    float *d_x = (float *)dev_upload(x, n * sizeof(float));
    int32_t *d_words = (int32_t *)dev_upload(words, rows * sizeof(int32_t));
    float *d_out = (float *)dev_output(rows * sizeof(float), POISON_F32);
    nmt_error err = {};
    nmt_status st = nmt_cuda_pick_log_prob(rows, cols, d_x, ld, d_words, d_out, stream, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[128];
    snprintf(what, sizeof what, "pick rows %d cols %d ld %d", rows, cols, ld);
    dev_download(got, d_out, rows * sizeof(float), POISON_F32, what);
    int bad = 0;
    for (int32_t r = 0; r < rows; r++) {
        const int ok = isnan(want[r])   ? isnan(got[r])
                       : isinf(want[r]) ? got[r] == want[r] /* a -inf word: -inf, no tolerance */
                                        : fabs((double)got[r] - want[r]) <=
                                            2e-6 * (fabs((double)want[r]) + 1.0) + 1e-6 * log((double)cols + 1.0);
        if (!ok && bad++ < 3)
            fprintf(stderr, "  %s: row %d word %d: %.9g, the oracle %.9g\n", what, r, words[r],
                    got[r], want[r]);
    }
    report_check(bad == 0, what);
    /* Each row alone: the same bits as in the batch. */
    for (int32_t r = 0; r < rows && r < 16; r++) {
        float *d_one = (float *)dev_output(sizeof(float), POISON_F32);
        st = nmt_cuda_pick_log_prob(1, cols, d_x + (size_t)r * ld, ld, d_words + r, d_one,
                                    stream, &err);
        CHECK(st == NMT_STATUS_OK, "alone: %s", err.message);
        dev_download(&alone[r], d_one, sizeof(float), POISON_F32, what);
        CHECK(!memcmp(&alone[r], &got[r], sizeof(float)), "%s: row %d alone %.9g, in the batch "
              "%.9g", what, r, alone[r], got[r]);
        CUDA_OK(cudaFree(d_one));
    }
    CUDA_OK(cudaFree(d_x));
    CUDA_OK(cudaFree(d_words));
    CUDA_OK(cudaFree(d_out));
    free(x);
    free(words);
    free(want);
    free(got);
    free(alone);
}

int main(void)
{
    nmt_cuda_ctx *ctx = gpu_test_start("test_gpu_pick_log_prob");
    stream = nmt_cuda_ctx_stream(ctx);
    const int32_t rows[] = {1, 7, 333};
    const int32_t cols[] = {1, 7, 33, 333, 30000};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            test_shape(rows[i], cols[j], j % 2 ? 3 : 0);
    nmt_error err = {};
    CHECK(nmt_cuda_pick_log_prob(2, 8, NULL, 4, NULL, NULL, stream, &err) ==
              NMT_STATUS_ERROR_ARGUMENT,
          "ld below cols accepted");
    CHECK(nmt_cuda_pick_log_prob(0, 8, NULL, 8, NULL, NULL, stream, &err) == NMT_STATUS_OK,
          "0 rows refused");
    nmt_cuda_ctx_free(ctx);
    return test_finish("test_gpu_pick_log_prob");
}
