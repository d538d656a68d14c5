/* test_gpu_lstm_gathered.cu: nmt_cuda_lstm_cell_gathered (the decoder's
 * first layer from a word table and the products made before the beam step,
 * kernels/cuda/lstm_gathered.cu) against its C twin. Fresh random tables,
 * products, biases and cells; tokens and parents drawn with repeats (two
 * rows continuing one parent, rows continuing none of the first ones);
 * outputs NaN-poisoned with guards, at padded strides whose gaps must keep
 * their poison; one, two and three h outputs; zero to eight parent copies of
 * the next layers' rows; hidden sizes off the block (1, 33, 129) and the
 * shipped model's (512). Exit 77 without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ctx.h"
#include "gpu_test_util.h"
#include "lstm_cell.h"
#include "test_util.h"

static void *stream;

/* An output of rows x ld floats, poisoned in both copies: the twin writes
 * into want, the kernel into the device copy; the gaps must stay NaN. */
typedef struct out_rows {
    float *want, *got, *dev;
    size_t n;
} out_rows;

static out_rows out_make(int rows, int ld)
{
    out_rows o;
    o.n = (size_t)rows * ld;
    o.want = (float *)host_alloc(o.n * sizeof(float));
    o.got = (float *)host_alloc(o.n * sizeof(float));
    memset(o.want, POISON_F32, o.n * sizeof(float));
    o.dev = (float *)dev_output(o.n * sizeof(float), POISON_F32);
    return o;
}

static int out_check(out_rows *o, const char *name, const char *what)
{
    char label[192];
    snprintf(label, sizeof label, "%s %s", what, name);
    dev_download(o->got, o->dev, o->n * sizeof(float), POISON_F32, label);
    int bad = 0;
    for (size_t i = 0; i < o->n; i++) {
        const int want_nan = isnan(o->want[i]), got_nan = isnan(o->got[i]);
        if (want_nan != got_nan ||
            (!want_nan && fabsf(o->got[i] - o->want[i]) > 1e-6f + 1e-5f * fabsf(o->want[i])))
            bad++;
    }
    CHECK(bad == 0, "%s: %d of %zu values differ from the twin", label, bad, o->n);
    cudaFree(o->dev);
    free(o->want);
    free(o->got);
    return bad == 0;
}

static void test_gathered(int rows, int hidden, int vocab, int parents, int n_outs, int n_copies,
                          int with_bias)
{
    const int G = 4 * hidden, pad = 3;
    int32_t *token = (int32_t *)host_alloc(sizeof(int32_t) * (size_t)rows);
    int32_t *parent = (int32_t *)host_alloc(sizeof(int32_t) * (size_t)rows);
    for (int r = 0; r < rows; r++) {
        token[r] = test_rand_int(0, vocab);
        parent[r] = test_rand_int(0, parents);
    }
    float *table = host_uniform((size_t)vocab * G, -2.0f, 2.0f);
    float *proj = host_uniform((size_t)parents * G, -2.0f, 2.0f);
    float *bias = host_uniform((size_t)G, -1.0f, 1.0f);
    float *c_prev = host_uniform((size_t)parents * hidden, -2.0f, 2.0f);
    float *src[NMT_LSTM_GATHERED_COPIES];
    int ld_src = hidden + 1;
    for (int i = 0; i < n_copies; i++)
        src[i] = host_uniform((size_t)parents * ld_src, -5.0f, 5.0f);

    nmt_lstm_gathered want, dev;
    memset(&want, 0, sizeof want);
    want.n_rows = rows, want.hidden = hidden, want.token = token, want.parent = parent;
    want.table = table, want.proj = proj, want.bias = with_bias ? bias : NULL;
    want.c_prev = c_prev;
    dev = want;
    dev.token = (int32_t *)dev_upload(token, sizeof(int32_t) * (size_t)rows);
    dev.parent = (int32_t *)dev_upload(parent, sizeof(int32_t) * (size_t)rows);
    dev.table = (float *)dev_upload(table, sizeof(float) * (size_t)vocab * G);
    dev.proj = (float *)dev_upload(proj, sizeof(float) * (size_t)parents * G);
    dev.bias = with_bias ? (float *)dev_upload(bias, sizeof(float) * (size_t)G) : NULL;
    dev.c_prev = (float *)dev_upload(c_prev, sizeof(float) * (size_t)parents * hidden);

    out_rows c = out_make(rows, hidden), h[NMT_LSTM_GATHERED_OUTS], cp[NMT_LSTM_GATHERED_COPIES];
    want.c_out = c.want, dev.c_out = c.dev;
    for (int i = 0; i < n_outs; i++) {
        const int ld = hidden + i * pad; /* packed, then padded strides */
        h[i] = out_make(rows, ld);
        want.h_out[i] = h[i].want, dev.h_out[i] = h[i].dev;
        want.ld_h[i] = dev.ld_h[i] = ld;
    }
    want.n_copies = dev.n_copies = n_copies;
    for (int i = 0; i < n_copies; i++) {
        const int ld_dst = hidden + (i % 2) * pad;
        cp[i] = out_make(rows, ld_dst);
        want.copies[i] = (nmt_lstm_gathered_copy){src[i], ld_src, cp[i].want, ld_dst};
        dev.copies[i] = (nmt_lstm_gathered_copy){
            (float *)dev_upload(src[i], sizeof(float) * (size_t)parents * ld_src), ld_src,
            cp[i].dev, ld_dst};
    }

    nmt_cpu_lstm_cell_gathered(&want);
    nmt_error err = {};
    const nmt_status st = nmt_cuda_lstm_cell_gathered(&dev, stream, &err);
    char what[160];
    snprintf(what, sizeof what,
             "lstm_cell_gathered rows %d hidden %d vocab %d parents %d outs %d copies %d bias %d",
             rows, hidden, vocab, parents, n_outs, n_copies, with_bias);
    CHECK(st == NMT_STATUS_OK, "%s: status %d: %s", what, (int)st, err.message);
    int ok = out_check(&c, "c", what);
    for (int i = 0; i < n_outs; i++)
        ok &= out_check(&h[i], "h", what);
    for (int i = 0; i < n_copies; i++) {
        ok &= out_check(&cp[i], "copy", what);
        cudaFree((void *)dev.copies[i].src);
        free(src[i]);
    }
    report_check(ok, what);
    cudaFree((void *)dev.token);
    cudaFree((void *)dev.parent);
    cudaFree((void *)dev.table);
    cudaFree((void *)dev.proj);
    cudaFree((void *)dev.bias);
    cudaFree((void *)dev.c_prev);
    free(token); free(parent); free(table); free(proj); free(bias); free(c_prev);
}

int main(void)
{
    nmt_cuda_ctx *ctx = gpu_test_start("test_gpu_lstm_gathered");
    stream = nmt_cuda_ctx_stream(ctx);

    test_gathered(1, 1, 1, 1, 1, 0, 1);
    test_gathered(5, 512, 4778, 5, 3, 2, 1);  /* the shipped model's layer 0 at beam 5 */
    test_gathered(8, 33, 50, 3, 2, 8, 0);     /* more rows than parents: repeats */
    test_gathered(3, 129, 7, 40, 1, 1, 1);    /* parents past the rows */
    test_gathered(333, 256, 300, 333, 3, 4, 1);

    /* Refused: no h output, too many copies. */
    nmt_lstm_gathered bad;
    memset(&bad, 0, sizeof bad);
    bad.n_rows = 1, bad.hidden = 1;
    nmt_error err = {};
    CHECK(nmt_cuda_lstm_cell_gathered(&bad, stream, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "no outputs: accepted");
    bad.n_copies = NMT_LSTM_GATHERED_COPIES + 1;
    CHECK(nmt_cuda_lstm_cell_gathered(&bad, stream, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "too many copies: accepted");

    nmt_cuda_ctx_free(ctx);
    return test_finish("test_gpu_lstm_gathered");
}
