/* test_gpu_ensemble_sum.cu: an ensemble step's scores (kernels/ensemble.h) on
 * the GPU against the CPU twin: the weighted sum of log-softmaxes over a
 * table of shapes (rows 1, 7, 333, 1030; V 1, 7, 333, 4778; 1 to 8
 * members; padded leading dimensions; with and without lse; a member of
 * weight 0 whose NaN rows must not count), a row's scores the same bits
 * whatever rows are beside it, and the top-K's values read back by id
 * (ids -1 give -inf). Outputs NaN-poisoned with guard regions after them. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ctx.h"
#include "ensemble.h"
#include "gpu_test_util.h"
#include "test_util.h"

static void *stream;

typedef struct member_data {
    float *logits, *lse;       /* host */
    float *d_logits, *d_lse;   /* device */
} member_data;

/* n members over rows x vocab, member i's rows ld vocab + pad_i; member
 * `zero` (or -1) weighs 0 and holds NaN. Fills host and device tables. */
static void make_members(int rows, int vocab, int n, int zero, member_data *data,
                         nmt_ensemble_members *host, nmt_ensemble_members *dev)
{
    host->n = dev->n = n;
    for (int i = 0; i < n; i++) {
        const int ld = vocab + (i % 3) * 5;
        const size_t cells = (size_t)rows * ld;
        data[i].logits = (float *)host_alloc(cells * sizeof(float));
        test_fill_uniform(data[i].logits, cells, -8.0f, 8.0f);
        if (i == zero)
            test_poison_f32(data[i].logits, cells);
        const int with_lse = i % 2 == 0;
        data[i].lse = with_lse ? (float *)host_alloc(rows * sizeof(float)) : NULL;
        if (with_lse)
            test_fill_uniform(data[i].lse, rows, 5.0f, 12.0f);
        data[i].d_logits = (float *)dev_upload(data[i].logits, cells * sizeof(float));
        data[i].d_lse = with_lse ? (float *)dev_upload(data[i].lse, rows * sizeof(float)) : NULL;
        const float weight = i == zero ? 0.0f : test_rand_uniform(0.05f, 2.0f);
        host->member[i] = nmt_ensemble_member{data[i].logits, ld, data[i].lse, weight};
        dev->member[i] = nmt_ensemble_member{data[i].d_logits, ld, data[i].d_lse, weight};
    }
}

static void free_members(int n, member_data *data)
{
    for (int i = 0; i < n; i++) {
        cudaFree(data[i].d_logits);
        cudaFree(data[i].d_lse);
        free(data[i].logits);
        free(data[i].lse);
    }
}

static void test_log_probs(int rows, int vocab, int n, int zero, int pad)
{
    member_data data[NMT_MAX_ENSEMBLE_MODELS];
    nmt_ensemble_members host, dev;
    make_members(rows, vocab, n, zero, data, &host, &dev);
    const int ld = vocab + pad;
    const size_t cells = (size_t)rows * ld;
    float *want = (float *)host_alloc(cells * sizeof(float));
    float *got = (float *)host_alloc(cells * sizeof(float));
    test_poison_f32(want, cells);
    nmt_cpu_ensemble_log_probs(rows, vocab, &host, want, ld);
    float *d_out = (float *)dev_output(cells * sizeof(float), POISON_F32);
    nmt_error err = {};
    nmt_status st = nmt_cuda_ensemble_log_probs(rows, vocab, &dev, d_out, ld, stream, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[128];
    snprintf(what, sizeof what, "ensemble log_probs rows %d V %d members %d (zero %d) pad %d",
             rows, vocab, n, zero, pad);
    dev_download(got, d_out, cells * sizeof(float), POISON_F32, what);
    int pads_kept = 1;
    for (size_t k = 0; k < cells; k++)
        if ((int)(k % ld) >= vocab)
            pads_kept &= isnan(got[k]) && isnan(want[k]);
    CHECK(pads_kept, "%s: a padding column was written", what);
    /* Padding columns are NaN on both sides: compare the words only. */
    for (size_t k = 0; k < cells; k++)
        if ((int)(k % ld) >= vocab)
            got[k] = want[k] = 0.0f;
    report_check(test_close_f32(what, got, want, cells, 1e-5, 1e-6), what);

    /* Batch invariance: the last row alone gives the same bits. */
    if (rows > 1) {
        nmt_ensemble_members last = dev;
        for (int i = 0; i < n; i++) {
            last.member[i].logits += (size_t)(rows - 1) * last.member[i].ld;
            if (last.member[i].lse)
                last.member[i].lse += rows - 1;
        }
        float *d_row = (float *)dev_output((size_t)ld * sizeof(float), POISON_F32);
        float *row = (float *)host_alloc((size_t)ld * sizeof(float));
        st = nmt_cuda_ensemble_log_probs(1, vocab, &last, d_row, ld, stream, &err);
        CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
        dev_download(row, d_row, (size_t)ld * sizeof(float), POISON_F32, what);
        dev_download(got, d_out, cells * sizeof(float), POISON_F32, what);
        CHECK(!memcmp(row, got + (size_t)(rows - 1) * ld, (size_t)vocab * sizeof(float)),
              "%s: the last row alone has other bits", what);
        cudaFree(d_row);
        free(row);
    }
    cudaFree(d_out);
    free(want);
    free(got);
    free_members(n, data);
}

static void test_gather_top_values(int rows, int k, int vocab)
{
    const int ld = vocab + 3;
    const size_t cells = (size_t)rows * ld, slots = (size_t)rows * k;
    float *scores = (float *)host_alloc(cells * sizeof(float));
    int32_t *ids = (int32_t *)host_alloc(slots * sizeof(int32_t));
    float *want = (float *)host_alloc(slots * sizeof(float));
    float *got = (float *)host_alloc(slots * sizeof(float));
    test_fill_uniform(scores, cells, -20.0f, 0.0f);
    for (size_t i = 0; i < slots; i++)
        ids[i] = test_rand_int(0, 8) == 0 ? -1 : test_rand_int(0, vocab);
    nmt_cpu_gather_top_values(rows, k, scores, ld, ids, want);
    float *d_scores = (float *)dev_upload(scores, cells * sizeof(float));
    int32_t *d_ids = (int32_t *)dev_upload(ids, slots * sizeof(int32_t));
    float *d_values = (float *)dev_output(slots * sizeof(float), POISON_F32);
    nmt_error err = {};
    nmt_status st = nmt_cuda_gather_top_values(rows, k, d_scores, ld, d_ids, d_values, stream,
                                               &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[96];
    snprintf(what, sizeof what, "gather top values rows %d k %d V %d", rows, k, vocab);
    dev_download(got, d_values, slots * sizeof(float), POISON_F32, what);
    int same = 1;
    for (size_t i = 0; i < slots; i++)
        same &= got[i] == want[i]; /* -inf == -inf; a NaN (unwritten) fails */
    report_check(same, what);
    cudaFree(d_scores);
    cudaFree(d_ids);
    cudaFree(d_values);
    free(scores);
    free(ids);
    free(want);
    free(got);
}

int main(void)
{
    nmt_cuda_ctx *ctx = gpu_test_start("test_gpu_ensemble_sum");
    stream = nmt_cuda_ctx_stream(ctx);
    test_log_probs(1, 1, 1, -1, 0);
    test_log_probs(7, 7, 2, -1, 3);
    test_log_probs(7, 333, 3, 1, 0);
    test_log_probs(333, 333, 2, -1, 29);
    test_log_probs(64 * 5, 4778, 2, -1, 14); /* the shipped model's vocabulary, batch 64 beam 5 */
    test_log_probs(1030, 7, NMT_MAX_ENSEMBLE_MODELS, 5, 1);
    test_log_probs(3, 4778, NMT_MAX_ENSEMBLE_MODELS, -1, 0);
    test_gather_top_values(1, 1, 1);
    test_gather_top_values(7, 10, 333);
    test_gather_top_values(333, 64, 4778);
    nmt_error err = {};
    nmt_ensemble_members none = {};
    CHECK(nmt_cuda_ensemble_log_probs(2, 3, &none, NULL, 3, stream, &err) ==
              NMT_STATUS_ERROR_ARGUMENT,
          "no members: accepted");
    nmt_cuda_ctx_free(ctx);
    return test_finish("test_gpu_ensemble_sum");
}
