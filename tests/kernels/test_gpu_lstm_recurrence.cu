/* test_gpu_lstm_recurrence.cu: nmt_cuda_lstm_recurrence (a bidirectional
 * layer's recurrence in one launch, kernels/cuda/lstm_recurrence.cu)
 * with each handoff (a cluster barrier a step; remote stores on mbarriers)
 * against two oracles on fresh random inputs:
 * - its C twin (nmt_cpu_lstm_recurrence), within 1e-4: the twin's cell is
 *   computed in double;
 * - the per-step pair it stands for in the batch-invariant encoder
 *   (nmt_cuda_linear_chain into gates_h, zero gates for rows without a
 *   predecessor, nmt_cuda_lstm_cell on a cleared c), bit for bit.
 * Outputs NaN-poisoned with guards: rows no direction runs must keep their
 * poison. Shapes: one sentence of one word, the shipped model's 256 units a
 * direction, 8 units (one a block), 136 (17 a block), up to 8 sentences of
 * lengths with repeats, and a stride past the longest. Sizes it does not
 * take are refused. Exit 77 without a GPU (or before sm_90: skipped).
 * NMT_TEST_SMALL=1 (under compute-sanitizer): the three small shapes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ctx.h"
#include "gpu_test_util.h"
#include "linear.h"
#include "lstm_cell.h"
#include "test_util.h"

static nmt_cuda_ctx *ctx;
static void *stream;

/* The encoder's batch-invariant steps of direction d on the device. */
static void run_pairs(const nmt_lstm_recurrence *dev, int d, float *gates_h)
{
    const int n = dev->n, half = dev->half, H = 2 * half, g = 4 * half;
    int32_t *len = (int32_t *)host_alloc(sizeof(int32_t) * (size_t)n);
    CUDA_OK(cudaMemcpy(len, dev->src_len, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemset(dev->c_final[d], 0, sizeof(float) * (size_t)n * half));
    CUDA_OK(cudaDeviceSynchronize());
    nmt_error err = {};
    for (int s = 0; s < dev->stride; s++) {
        const int t = d ? dev->stride - 1 - s : s, t_prev = d ? t + 1 : t - 1;
        const int active = nmt_lstm_recurrence_active(len, n, dev->stride, t);
        const int prev = nmt_lstm_recurrence_active(len, n, dev->stride, t_prev);
        const int n_rec = active < prev ? active : prev;
        if (active == 0)
            continue;
        if (n_rec > 0)
            CHECK(nmt_cuda_linear_chain(ctx, n_rec, g, half,
                                        dev->out + (int64_t)t_prev * n * H + d * half, H,
                                        NMT_SKINNY_X_F32, dev->w_hh[d], NMT_WEIGHT_F32, half,
                                        NULL, 0, gates_h, g, &err) == NMT_STATUS_OK,
                  "chain: %s", err.message);
        if (n_rec < active)
            CUDA_OK(cudaMemsetAsync(gates_h + (int64_t)n_rec * g, 0,
                                    sizeof(float) * (size_t)(active - n_rec) * g,
                                    (cudaStream_t)stream));
        const nmt_lstm_cell_args cell = {
            .n_rows = active, .hidden = half, .gates_x = dev->gates_x[d] + (int64_t)t * n * g,
            .ld_x = g, .gates_h = gates_h, .bias = dev->b_hh[d], .c_prev = dev->c_final[d],
            .c_out = dev->c_final[d], .h_out = dev->out + (int64_t)t * n * H + d * half,
            .ld_h = H};
        CHECK(nmt_cuda_lstm_cell(&cell, stream, &err) == NMT_STATUS_OK, "cell: %s", err.message);
    }
    CUDA_OK(cudaStreamSynchronize((cudaStream_t)stream));
    free(len);
}

/* got against want: NaN where want is NaN, else within tol (0: bit for bit). */
static int same(const char *what, const float *want, const float *got, size_t n, float tol)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        const int wn = isnan(want[i]), gn = isnan(got[i]);
        const int ok = tol == 0.0f ? memcmp(&want[i], &got[i], sizeof(float)) == 0 || (wn && gn)
                                   : wn == gn && (wn || fabsf(got[i] - want[i]) <= tol);
        if (!ok && bad++ == 0)
            first = i;
    }
    if (bad)
        fprintf(stderr, "  %s: %zu of %zu values differ, first at %zu: %.9g against %.9g\n",
                what, bad, n, first, (double)got[first], (double)want[first]);
    return bad == 0;
}

static void test_recurrence(int n, int stride, int half, const int32_t *len_in)
{
    const int H = 2 * half, g = 4 * half;
    int32_t *len = (int32_t *)host_alloc(sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < n; i++)
        len[i] = len_in ? len_in[i] : test_rand_int(1, stride + 1);
    for (int i = 1; i < n; i++) /* longest first */
        for (int j = i; j > 0 && len[j] > len[j - 1]; j--) {
            const int32_t tmp = len[j];
            len[j] = len[j - 1];
            len[j - 1] = tmp;
        }
    const size_t rows = (size_t)stride * n, n_out = rows * H, n_c = (size_t)n * half;
    nmt_lstm_recurrence want = {.n = n, .stride = stride, .half = half, .src_len = len};
    nmt_lstm_recurrence dev = want, pair;
    dev.src_len = (int32_t *)dev_upload(len, sizeof(int32_t) * (size_t)n);
    float *host_in[3][2];
    for (int d = 0; d < 2; d++) {
        host_in[0][d] = host_uniform(rows * g, -2.0f, 2.0f);
        host_in[1][d] = host_uniform((size_t)g * half, -0.3f, 0.3f);
        host_in[2][d] = host_uniform((size_t)g, -1.0f, 1.0f);
        want.gates_x[d] = host_in[0][d], want.w_hh[d] = host_in[1][d], want.b_hh[d] = host_in[2][d];
        dev.gates_x[d] = (float *)dev_upload(host_in[0][d], rows * g * sizeof(float));
        dev.w_hh[d] = (float *)dev_upload(host_in[1][d], (size_t)g * half * sizeof(float));
        dev.b_hh[d] = (float *)dev_upload(host_in[2][d], (size_t)g * sizeof(float));
        want.c_final[d] = (float *)host_alloc(n_c * sizeof(float));
        memset(want.c_final[d], POISON_F32, n_c * sizeof(float));
        dev.c_final[d] = (float *)dev_output(n_c * sizeof(float), POISON_F32);
    }
    want.out = (float *)host_alloc(n_out * sizeof(float));
    memset(want.out, POISON_F32, n_out * sizeof(float));
    dev.out = (float *)dev_output(n_out * sizeof(float), POISON_F32);
    pair = dev;
    pair.out = (float *)dev_output(n_out * sizeof(float), POISON_F32);
    for (int d = 0; d < 2; d++)
        pair.c_final[d] = (float *)dev_output(n_c * sizeof(float), POISON_F32);
    float *gates_h = (float *)dev_output((size_t)n * g * sizeof(float), POISON_F32);

    nmt_cpu_lstm_recurrence(&want);
    run_pairs(&pair, 0, gates_h);
    run_pairs(&pair, 1, gates_h);
    float *got = (float *)host_alloc(n_out * sizeof(float));
    float *got_pair = (float *)host_alloc(n_out * sizeof(float));
    float *c = (float *)host_alloc(n_c * sizeof(float));
    float *c_pair = (float *)host_alloc(n_c * sizeof(float));
    char what[192];
    dev_download(got_pair, pair.out, n_out * sizeof(float), POISON_F32, "pair"); /* counts */
    for (int handoff = NMT_RECURRENCE_HANDOFF_BARRIER; handoff <= NMT_RECURRENCE_HANDOFF_ASYNC;
         handoff++) {
        snprintf(what, sizeof what, "lstm_recurrence %s n %d stride %d half %d lengths %d..%d",
                 handoff == NMT_RECURRENCE_HANDOFF_ASYNC ? "async" : "barrier", n, stride, half,
                 (int)len[n - 1], (int)len[0]);
        CUDA_OK(cudaMemset(dev.out, POISON_F32, n_out * sizeof(float)));
        for (int d = 0; d < 2; d++)
            CUDA_OK(cudaMemset(dev.c_final[d], POISON_F32, n_c * sizeof(float)));
        CUDA_OK(cudaDeviceSynchronize());
        dev.handoff = (nmt_recurrence_handoff)handoff;
        nmt_error err = {};
        const nmt_status st = nmt_cuda_lstm_recurrence(&dev, stream, &err);
        CHECK(st == NMT_STATUS_OK, "%s: status %d: %s", what, (int)st, err.message);
        int run_ok = st == NMT_STATUS_OK &&
                     dev_download(got, dev.out, n_out * sizeof(float), POISON_F32, what);
        run_ok &= same("h against the twin", want.out, got, n_out, 1e-4f);
        run_ok &= same("h against the per-step pair", got_pair, got, n_out, 0.0f);
        for (int d = 0; d < 2; d++) {
            run_ok &= dev_download(c, dev.c_final[d], n_c * sizeof(float), POISON_F32, what) &&
                      dev_download(c_pair, pair.c_final[d], n_c * sizeof(float), POISON_F32,
                                   what);
            run_ok &= same(d ? "backward c against the twin" : "forward c against the twin",
                           want.c_final[d], c, n_c, 1e-4f);
            run_ok &= same(d ? "backward c against the pair" : "forward c against the pair",
                           c_pair, c, n_c, 0.0f);
        }
        report_check(run_ok, what);
    }
    for (int d = 0; d < 2; d++) {
        cudaFree((void *)dev.gates_x[d]);
        cudaFree((void *)dev.w_hh[d]);
        cudaFree((void *)dev.b_hh[d]);
        cudaFree(dev.c_final[d]);
        cudaFree(pair.c_final[d]);
        free(want.c_final[d]);
        for (int i = 0; i < 3; i++)
            free(host_in[i][d]);
    }
    free(c);
    free(c_pair);
    cudaFree((void *)dev.src_len);
    cudaFree(dev.out);
    cudaFree(pair.out);
    cudaFree(gates_h);
    free(want.out);
    free(got);
    free(got_pair);
    free(len);
}

int main(void)
{
    ctx = gpu_test_start("test_gpu_lstm_recurrence");
    stream = nmt_cuda_ctx_stream(ctx);
    const nmt_lstm_recurrence shipped = {.n = 1, .stride = 1, .half = 256};
    if (!nmt_cuda_lstm_recurrence_fits(&shipped)) {
        fprintf(stderr, "test_gpu_lstm_recurrence: skipped: the device has no clusters\n");
        nmt_cuda_ctx_free(ctx);
        return NMT_TEST_SKIP;
    }
    const int32_t one[1] = {1}, ties[8] = {9, 9, 7, 7, 7, 3, 1, 1}, short_of[3] = {5, 4, 4};
    const int32_t ties4[8] = {4, 4, 3, 3, 3, 2, 1, 1};
    /* NMT_TEST_SMALL=1 (under compute-sanitizer): the small shapes only. */
    const char *small_env = getenv("NMT_TEST_SMALL");
    const int small = small_env && *small_env == '1';
    test_recurrence(1, 1, 8, one);            /* one word, one unit a block */
    test_recurrence(3, 7, 16, short_of);      /* a stride past the longest sentence */
    test_recurrence(8, 4, 24, ties4);         /* repeats: rows join the backward pass in steps */
    if (!small) {
        test_recurrence(1, 13, 256, NULL);    /* the shipped model at batch 1 */
        test_recurrence(8, 9, 256, ties);
        test_recurrence(5, 21, 136, NULL);    /* 17 units a block */
        test_recurrence(test_rand_int(1, 9), test_rand_int(1, 41), 8 * test_rand_int(1, 33),
                        NULL);
    }

    /* Refused: too many sentences, units not a multiple of 8 or past 256, w_hh
     * off 16 bytes. */
    static const int32_t sizes[3][2] = {{9, 256}, {1, 12}, {1, 264}};
    for (int i = 0; i < 3; i++) {
        const nmt_lstm_recurrence r = {.n = sizes[i][0], .stride = 1, .half = sizes[i][1]};
        CHECK(!nmt_cuda_lstm_recurrence_fits(&r), "%d sentences of %d units fit", r.n, r.half);
    }
    const float *odd = (const float *)(uintptr_t)4;
    const nmt_lstm_recurrence misaligned = {.n = 1, .stride = 1, .half = 256, .w_hh = {odd, NULL}};
    CHECK(!nmt_cuda_lstm_recurrence_fits(&misaligned), "a misaligned w_hh fits");
    nmt_lstm_recurrence bad = {.n = 9, .stride = 1, .half = 8};
    nmt_error err = {};
    CHECK(nmt_cuda_lstm_recurrence(&bad, stream, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "no buffers: accepted");

    nmt_cuda_ctx_free(ctx);
    return test_finish("test_gpu_lstm_recurrence");
}
