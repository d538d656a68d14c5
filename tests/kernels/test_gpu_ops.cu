/* test_gpu_ops.cu: the smaller CUDA ops against their CPU twins: nhot lookup
 * (ragged N, N = 0 rows, Argueta's 100 x 10240 x 512 shape), linear (padded
 * leading dimensions must keep their contents, bias, accumulate, k = 0),
 * lstm_cell (aliased c, padded ld_x/ld_h, optional gates_h and bias),
 * attention (every variant; ragged and empty sentences; key and memory rows
 * past the length are NaN so any read of them shows), gather_rows and
 * gather_segments, tanh_rows; the 16-bit copies of lstm_cell, attention,
 * gather_segments and tanh_rows (half.h): nmt_half_bits of the kernel's own
 * fp32 output, bit for bit, the gaps poisoned. All on the context's
 * stream. Outputs are NaN-poisoned with guard regions after them. */
#include <math.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "attention.h"
#include "cuda_ctx.h"
#include "gather.h"
#include "gpu_test_util.h"
#include "linear.h"
#include "lstm_cell.h"
#include "nhot.h"
#include "pointwise.h"
#include "test_util.h"

static nmt_cuda_ctx *ctx;
static void *stream;

static void test_nhot(int n_rows, int dim, int table_rows, int n_min, int n_max)
{
    int32_t *row_ptr = (int32_t *)host_alloc((n_rows + 1) * sizeof(int32_t));
    row_ptr[0] = 0;
    for (int r = 0; r < n_rows; r++)
        row_ptr[r + 1] = row_ptr[r] + test_rand_int(n_min, n_max + 1);
    int nnz = row_ptr[n_rows];
    int32_t *cols = (int32_t *)host_alloc(nnz * sizeof(int32_t));
    float *values = (float *)host_alloc(nnz * sizeof(float));
    for (int e = 0; e < nnz; e++) {
        cols[e] = test_rand_int(0, table_rows);
        values[e] = test_rand_uniform(-1.0f, 1.0f);
    }
    size_t n_table = (size_t)table_rows * dim, n_out = (size_t)n_rows * dim;
    float *table = (float *)host_alloc(n_table * sizeof(float));
    test_fill_uniform(table, n_table, -1.0f, 1.0f);
    float *want = (float *)host_alloc(n_out * sizeof(float));
    float *got = (float *)host_alloc(n_out * sizeof(float));
    nmt_error err = {};
    CHECK(nmt_cpu_nhot_lookup(n_rows, dim, table_rows, row_ptr, cols, values, table, want, &err) ==
              NMT_STATUS_OK, "cpu: %s", err.message);
    int32_t *d_rp = (int32_t *)dev_upload(row_ptr, (n_rows + 1) * sizeof(int32_t));
    int32_t *d_cols = (int32_t *)dev_upload(cols, nnz * sizeof(int32_t));
    float *d_vals = (float *)dev_upload(values, nnz * sizeof(float));
    float *d_table = (float *)dev_upload(table, n_table * sizeof(float));
    float *d_out = (float *)dev_output(n_out * sizeof(float), POISON_F32);
    nmt_status st = nmt_cuda_nhot_lookup(n_rows, dim, table_rows, d_rp, d_cols, d_vals, d_table,
                                         d_out, stream, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[128];
    snprintf(what, sizeof what, "nhot rows %d dim %d table %d N %d..%d", n_rows, dim, table_rows,
             n_min, n_max);
    dev_download(got, d_out, n_out * sizeof(float), POISON_F32, what);
    report_check(test_close_f32(what, got, want, n_out, 1e-5, 1e-5), what);
    cudaFree(d_rp); cudaFree(d_cols); cudaFree(d_vals); cudaFree(d_table); cudaFree(d_out);
    free(row_ptr); free(cols); free(values); free(table); free(want); free(got);
}

static void test_linear(int m, int n, int k, int pad, int with_bias, int accumulate)
{
    int ldx = k + pad, ldw = k + pad, ldy = n + pad;
    size_t nx = (size_t)m * (ldx ? ldx : 1), nw = (size_t)n * (ldw ? ldw : 1), ny = (size_t)m * ldy;
    float *x = (float *)host_alloc(nx * sizeof(float));
    float *w = (float *)host_alloc(nw * sizeof(float));
    float *bias = (float *)host_alloc(n * sizeof(float));
    float *want = (float *)host_alloc(ny * sizeof(float));
    float *got = (float *)host_alloc(ny * sizeof(float));
    test_fill_uniform(x, nx, -1.0f, 1.0f);
    test_fill_uniform(w, nw, -1.0f, 1.0f);
    test_fill_uniform(bias, n, -1.0f, 1.0f);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldy; j++)
            want[(size_t)i * ldy + j] = j >= n ? 12345.0f
                                        : accumulate ? test_rand_uniform(-1.0f, 1.0f) : NAN;
    float *d_x = (float *)dev_upload(x, nx * sizeof(float));
    float *d_w = (float *)dev_upload(w, nw * sizeof(float));
    float *d_b = (float *)dev_upload(bias, n * sizeof(float));
    float *d_y = (float *)dev_output(ny * sizeof(float), POISON_F32);
    dev_fill(d_y, want, ny * sizeof(float));
    nmt_cpu_linear(m, n, k, x, ldx, w, ldw, with_bias ? bias : NULL, accumulate, want, ldy);
    nmt_error err = {};
    nmt_status st = nmt_cuda_linear(ctx, m, n, k, d_x, ldx > 0 ? ldx : 1, d_w, ldw > 0 ? ldw : 1,
                                    with_bias ? d_b : NULL, accumulate, d_y, ldy, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[128];
    snprintf(what, sizeof what, "linear m %d n %d k %d pad %d bias %d acc %d", m, n, k, pad,
             with_bias, accumulate);
    dev_download(got, d_y, ny * sizeof(float), POISON_F32, what);
    report_check(test_close_f32(what, got, want, ny, 1e-5 * sqrt((double)k + 1), 1e-5), what);
    cudaFree(d_x); cudaFree(d_w); cudaFree(d_b); cudaFree(d_y);
    free(x); free(w); free(bias); free(want); free(got);
}

/* The split-activation TF32 GEMM against the fp64-accumulated CPU product:
 * weights rounded to TF32 (as an fp16 model's are), the split scratch equal
 * to nmt_cpu_tf32_split's, and every output within 4e-6 of sum |x w| (+ the
 * bias's rounding): ~100x tighter than plain TF32 (2^-11 per input) allows. */
static void test_linear_tf32x2(int m, int n, int k, int pad, int with_bias)
{
    const int ldx = k + pad, ldw2 = 2 * k + pad, ldy = n + pad;
    const size_t nx = (size_t)m * ldx, nw2 = (size_t)n * ldw2, ny = (size_t)m * ldy;
    float *x = (float *)host_alloc(nx * sizeof(float));
    float *w = (float *)host_alloc((size_t)n * k * sizeof(float));
    float *w2 = (float *)host_alloc(nw2 * sizeof(float));
    float *bias = (float *)host_alloc(n * sizeof(float));
    float *want = (float *)host_alloc(ny * sizeof(float));
    float *got = (float *)host_alloc(ny * sizeof(float));
    float *split_want = (float *)host_alloc((size_t)m * 2 * k * sizeof(float));
    float *split_got = (float *)host_alloc((size_t)m * 2 * k * sizeof(float));
    test_fill_uniform(x, nx, -2.0f, 2.0f);
    test_fill_uniform(w, (size_t)n * k, -1.0f, 1.0f);
    test_fill_uniform(bias, n, -1.0f, 1.0f);
    for (int j = 0; j < n; j++)
        for (int p = 0; p < k; p++) {
            w[(size_t)j * k + p] = nmt_tf32_round(w[(size_t)j * k + p]);
            w2[(size_t)j * ldw2 + p] = w2[(size_t)j * ldw2 + k + p] = w[(size_t)j * k + p];
        }
    CHECK(nmt_tf32_exact(w, (size_t)n * k), "rounded weights not exact in TF32");
    nmt_cpu_linear(m, n, k, x, ldx, w, k, with_bias ? bias : NULL, 0, want, ldy);
    nmt_cpu_tf32_split(m, k, x, ldx, split_want);
    float *d_x = (float *)dev_upload(x, nx * sizeof(float));
    float *d_w2 = (float *)dev_upload(w2, nw2 * sizeof(float));
    float *d_b = (float *)dev_upload(bias, n * sizeof(float));
    float *d_y = (float *)dev_output(ny * sizeof(float), POISON_F32);
    float *d_split = (float *)dev_output((size_t)m * 2 * k * sizeof(float), POISON_F32);
    nmt_error err = {};
    nmt_status st = nmt_cuda_linear_tf32x2(ctx, m, n, k, d_x, ldx, d_w2, ldw2,
                                           with_bias ? d_b : NULL, d_y, ldy, d_split, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[128];
    snprintf(what, sizeof what, "linear_tf32x2 m %d n %d k %d pad %d bias %d", m, n, k, pad,
             with_bias);
    dev_download(split_got, d_split, (size_t)m * 2 * k * sizeof(float), POISON_F32, what);
    int bad_split = memcmp(split_got, split_want, (size_t)m * 2 * k * sizeof(float)) != 0;
    CHECK(!bad_split, "%s: split differs from nmt_cpu_tf32_split", what);
    /* Padding columns are not written: download the rows' first n only. */
    CUDA_OK(cudaMemcpy2D(got, ldy * sizeof(float), d_y, ldy * sizeof(float), n * sizeof(float),
                         m, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double mag = with_bias ? fabs(bias[j]) : 0.0;
            for (int p = 0; p < k; p++)
                mag += fabs((double)x[(size_t)i * ldx + p] * w[(size_t)j * k + p]);
            const double diff = fabs((double)got[(size_t)i * ldy + j] - want[(size_t)i * ldy + j]);
            if (!(diff <= 4e-6 * mag + 1e-30)) {
                if (bad++ < 3)
                    fprintf(stderr, "  %s [%d, %d]: %.9g want %.9g (|x w| %.3g)\n", what, i, j,
                            got[(size_t)i * ldy + j], want[(size_t)i * ldy + j], mag);
            }
        }
    report_check(bad == 0 && !bad_split, what);
    cudaFree(d_x); cudaFree(d_w2); cudaFree(d_b); cudaFree(d_y); cudaFree(d_split);
    free(x); free(w); free(w2); free(bias); free(want); free(got); free(split_want);
    free(split_got);
}

/* c_mode: c_prev its own buffer (0), aliased with c_out (1), or read by
 * row index (2: c_rows, parents among rows + 3 rows, checked also against
 * the cell over a gathered copy, bit for bit). kind16 (nmt_half_kind, or
 * -1: none): h's 16-bit copy too, rows hidden + 3 apart. */
static void test_lstm(int rows, int hidden, int pad, int with_h, int with_bias, int c_mode,
                      int second, int kind16)
{
    const int alias = c_mode == 1, by_row = c_mode == 2, c_rows_n = by_row ? rows + 3 : rows;
    int ld_x = 4 * hidden + pad, ld_h = hidden + pad;
    size_t ngx = (size_t)rows * ld_x, ngh = (size_t)rows * 4 * hidden, nc = (size_t)rows * hidden,
           nh = (size_t)rows * ld_h, ncp = (size_t)c_rows_n * hidden;
    float *gx = (float *)host_alloc(ngx * sizeof(float));
    float *gh = (float *)host_alloc(ngh * sizeof(float));
    float *b = (float *)host_alloc(4 * hidden * sizeof(float));
    float *c_prev = (float *)host_alloc(ncp * sizeof(float));
    int32_t *c_rows = (int32_t *)host_alloc(rows * sizeof(int32_t));
    test_fill_uniform(gx, ngx, -3.0f, 3.0f);
    test_fill_uniform(gh, ngh, -3.0f, 3.0f);
    test_fill_uniform(b, 4 * hidden, -1.0f, 1.0f);
    test_fill_uniform(c_prev, ncp, -2.0f, 2.0f);
    for (int r = 0; r < rows; r++)
        c_rows[r] = test_rand_int(0, c_rows_n);
    int32_t *d_c_rows = by_row ? (int32_t *)dev_upload(c_rows, rows * sizeof(int32_t)) : NULL;
    float *want_c = (float *)host_alloc(nc * sizeof(float));
    float *want_h = (float *)host_alloc(nh * sizeof(float));
    float *got_c = (float *)host_alloc(nc * sizeof(float));
    float *got_h = (float *)host_alloc(nh * sizeof(float));
    for (size_t i = 0; i < nh; i++)
        want_h[i] = (i % ld_h) >= (size_t)hidden ? 777.0f : NAN; /* padding must survive */
    float *d_gx = (float *)dev_upload(gx, ngx * sizeof(float));
    float *d_gh = (float *)dev_upload(gh, ngh * sizeof(float));
    float *d_b = (float *)dev_upload(b, 4 * hidden * sizeof(float));
    float *d_c = (float *)dev_output(nc * sizeof(float), POISON_F32);
    float *d_h = (float *)dev_output(nh * sizeof(float), POISON_F32);
    dev_fill(d_h, want_h, nh * sizeof(float));
    float *d_cprev = alias ? d_c : (float *)dev_upload(c_prev, ncp * sizeof(float));
    if (alias)
        dev_fill(d_c, c_prev, nc * sizeof(float));
    /* second: a copy of h at a wider stride (ld_h2), poisoned around it. */
    const int ld_h2 = hidden + 5;
    const size_t nh2 = (size_t)rows * ld_h2;
    float *d_h2 = second ? (float *)dev_output(nh2 * sizeof(float), POISON_F32) : NULL;
    nmt_half_out h16 = dev_half_out(kind16, rows, hidden + 3);
    const nmt_lstm_cell_args want = {
        .n_rows = rows, .hidden = hidden, .gates_x = gx, .ld_x = ld_x,
        .gates_h = with_h ? gh : NULL, .bias = with_bias ? b : NULL, .c_prev = c_prev,
        .c_rows = by_row ? c_rows : NULL, .c_out = want_c, .h_out = want_h, .ld_h = ld_h};
    nmt_cpu_lstm_cell(&want);
    nmt_lstm_cell_args a = want;
    a.gates_x = d_gx, a.gates_h = with_h ? d_gh : NULL, a.bias = with_bias ? d_b : NULL;
    a.c_prev = d_cprev, a.c_rows = d_c_rows, a.c_out = d_c, a.h_out = d_h;
    a.h_out2 = d_h2, a.ld_h2 = ld_h2, a.h16 = &h16;
    nmt_error err = {};
    nmt_status st = nmt_cuda_lstm_cell(&a, stream, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[128];
    snprintf(what, sizeof what,
             "lstm_cell rows %d hidden %d pad %d gates_h %d bias %d c_mode %d second %d "
             "16-bit %d", rows, hidden, pad, with_h, with_bias, c_mode, second, kind16);
    if (second) {
        /* h_out2 equals the GPU's own h exactly; the gaps keep their poison. */
        float *got_h2 = (float *)host_alloc(nh2 * sizeof(float));
        float *got_h1 = (float *)host_alloc(nh * sizeof(float));
        dev_download(got_h2, d_h2, nh2 * sizeof(float), POISON_F32, what);
        CUDA_OK(cudaMemcpy(got_h1, d_h, nh * sizeof(float), cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < ld_h2; j++) {
                uint32_t bits;
                memcpy(&bits, &got_h2[(size_t)r * ld_h2 + j], 4);
                if (j < hidden ? got_h2[(size_t)r * ld_h2 + j] != got_h1[(size_t)r * ld_h + j]
                               : bits != 0xFFFFFFFFu)
                    bad++;
            }
        CHECK(bad == 0, "%s: %d elements of h_out2 wrong", what, bad);
        cudaFree(d_h2);
        free(got_h2); free(got_h1);
    }
    dev_download(got_c, d_c, nc * sizeof(float), POISON_F32, what);
    dev_download(got_h, d_h, nh * sizeof(float), POISON_F32, what);
    int ok = test_close_f32("c", got_c, want_c, nc, 1e-6, 1e-5);
    ok &= test_close_f32("h", got_h, want_h, nh, 1e-6, 1e-5);
    ok &= dev_half_out_check(what, &h16, rows, hidden, got_h, ld_h);
    if (by_row) { /* the same cell over the parents' c gathered first: the same bits */
        float *gathered = (float *)host_alloc(nc * sizeof(float));
        nmt_cpu_gather_rows(rows, hidden, c_prev, c_rows, gathered);
        dev_fill(d_c, gathered, nc * sizeof(float));
        a.c_prev = a.c_out = d_c, a.c_rows = NULL, a.h16 = NULL, a.h_out2 = NULL; /* freed */
        CHECK(nmt_cuda_lstm_cell(&a, stream, &err) == NMT_STATUS_OK, "%s", err.message);
        float *c2 = (float *)host_alloc(nc * sizeof(float));
        float *h2 = (float *)host_alloc(nh * sizeof(float));
        dev_download(c2, d_c, nc * sizeof(float), POISON_F32, what);
        dev_download(h2, d_h, nh * sizeof(float), POISON_F32, what);
        ok &= memcmp(c2, got_c, nc * sizeof(float)) == 0 &&
              memcmp(h2, got_h, nh * sizeof(float)) == 0;
        free(gathered); free(c2); free(h2);
        cudaFree(d_c_rows);
    }
    report_check(ok, what);
    cudaFree(d_gx); cudaFree(d_gh); cudaFree(d_b); cudaFree(d_c); cudaFree(d_h);
    if (!alias)
        cudaFree(d_cprev);
    free(gx); free(gh); free(b); free(c_prev); free(c_rows); free(want_c); free(want_h);
    free(got_c); free(got_h);
}

/* One variant's outputs, downloaded. */
typedef struct attention_out {
    float *ctx, *w;
    int32_t *a;
    int ran; /* 0: the variant refused the shape (UNSUPPORTED) */
} attention_out;

/* pad > 0: query and context rows hidden + pad floats apart; the query's
 * gaps are NaN (never read) and the context's must keep their poison. Every
 * variant (AUTO, BLOCK, WARP where it runs) against the CPU; where the rows
 * fill the SMs (the block variant's one slice) WARP must give BLOCK's bits.
 * kind16 (nmt_half_kind, or -1: none): the context's 16-bit copy too,
 * checked against each variant's own context; its rows ld apart at fp16
 * (8-byte stores), ld + 2 at bf16 (every other row's float4 lanes are
 * stored one value at a time). */
static void test_attention(int n_sent, int rows, int hidden, int max_src, int with_weights,
                           int pad, int kind16)
{
    const int ld = hidden + pad;
    int32_t *sent = (int32_t *)host_alloc(rows * sizeof(int32_t));
    int32_t *len = (int32_t *)host_alloc(n_sent * sizeof(int32_t));
    for (int s = 0; s < n_sent; s++)
        len[s] = test_rand_int(1, max_src + 1);
    if (n_sent > 2)
        len[1] = 0; /* an empty sentence */
    len[0] = max_src;
    for (int r = 0; r < rows; r++)
        sent[r] = test_rand_int(0, n_sent);
    size_t nk = (size_t)n_sent * max_src * hidden, nq = (size_t)rows * ld,
           nwt = (size_t)rows * max_src;
    float *keys = (float *)host_alloc(nk * sizeof(float));
    float *mem = (float *)host_alloc(nk * sizeof(float));
    float *query = (float *)host_alloc(nq * sizeof(float));
    test_fill_uniform(keys, nk, -0.3f, 0.3f);
    test_fill_uniform(mem, nk, -1.0f, 1.0f);
    test_fill_uniform(query, nq, -0.3f, 0.3f);
    for (size_t i = 0; i < nq; i++)
        if ((int)(i % ld) >= hidden)
            query[i] = NAN;
    for (int s = 0; s < n_sent; s++) /* past the length: NaN, must never be read */
        for (size_t i = (size_t)len[s] * hidden; i < (size_t)max_src * hidden; i++)
            keys[(size_t)s * max_src * hidden + i] = mem[(size_t)s * max_src * hidden + i] = NAN;
    float *want_ctx = (float *)host_alloc(nq * sizeof(float)), *cmp = (float *)host_alloc(nq * sizeof(float));
    float *want_w = (float *)host_alloc(nwt * sizeof(float));
    int32_t *want_a = (int32_t *)host_alloc(rows * sizeof(int32_t));
    memset(want_ctx, 0xFF, nq * sizeof(float)); /* the gaps: poison, as on the device */
    nmt_cpu_attention(rows, hidden, max_src, sent, len, keys, mem, query, ld, want_ctx, ld, NULL,
                      want_w, want_a);
    for (int r = 0; r < rows; r++) /* compacted for the comparison */
        memcpy(cmp + (size_t)r * hidden, want_ctx + (size_t)r * ld, hidden * sizeof(float));
    int32_t *d_sent = (int32_t *)dev_upload(sent, rows * sizeof(int32_t));
    int32_t *d_len = (int32_t *)dev_upload(len, n_sent * sizeof(int32_t));
    float *d_keys = (float *)dev_upload(keys, nk * sizeof(float));
    float *d_mem = (float *)dev_upload(mem, nk * sizeof(float));
    float *d_query = (float *)dev_upload(query, nq * sizeof(float));

    static const nmt_attention_variant variants[] = {NMT_ATTENTION_AUTO, NMT_ATTENTION_BLOCK,
                                                     NMT_ATTENTION_WARP};
    static const char *const names[] = {"auto", "block", "warp"};
    attention_out out[3];
    for (int v = 0; v < 3; v++) {
        attention_out *o = &out[v];
        o->ctx = (float *)host_alloc(nq * sizeof(float));
        o->w = (float *)host_alloc(nwt * sizeof(float));
        o->a = (int32_t *)host_alloc(rows * sizeof(int32_t));
        float *d_ctx = (float *)dev_output(nq * sizeof(float), POISON_F32);
        float *d_w = (float *)dev_output(nwt * sizeof(float), POISON_F32);
        int32_t *d_a = (int32_t *)dev_output(rows * sizeof(int32_t), POISON_I32);
        nmt_half_out c16 = dev_half_out(kind16, rows, kind16 == NMT_HALF_FP16 ? ld : ld + 2);
        nmt_error err = {};
        nmt_status st = nmt_cuda_attention_with(variants[v], rows, hidden, max_src, d_sent, d_len,
                                                d_keys, d_mem, d_query, ld, d_ctx, ld, &c16,
                                                with_weights ? d_w : NULL, d_a, stream, &err);
        /* The warp variant's shapes (attention.h): hidden % 4 == 0 in [68, 1024]. */
        const int warp_runs = hidden % 4 == 0 && hidden >= 68 && hidden <= 1024 && ld % 4 == 0;
        o->ran = st == NMT_STATUS_OK;
        char what[160];
        snprintf(what, sizeof what,
                 "attention %s sentences %d rows %d hidden %d max_src %d weights %d pad %d "
                 "16-bit %d", names[v], n_sent, rows, hidden, max_src, with_weights, pad, kind16);
        if (variants[v] == NMT_ATTENTION_WARP && !warp_runs) {
            CHECK(st == NMT_STATUS_ERROR_UNSUPPORTED, "%s: status %d, not refused", what, (int)st);
        } else {
            CHECK(st == NMT_STATUS_OK, "%s: status %d: %s", what, (int)st, err.message);
        }
        if (o->ran) {
            dev_download(o->ctx, d_ctx, nq * sizeof(float), POISON_F32, what);
            dev_download(o->a, d_a, rows * sizeof(int32_t), POISON_I32, what);
            int ok = dev_half_out_check(what, &c16, rows, hidden, o->ctx, ld);
            for (size_t i = 0; i < nq; i++) {
                uint32_t bits;
                memcpy(&bits, &o->ctx[i], 4);
                if ((int)(i % ld) >= hidden && bits != 0xFFFFFFFFu) {
                    fprintf(stderr, "  context gap element %zu was written\n", i);
                    ok = 0;
                    break;
                }
            }
            for (int r = 0; r < rows; r++) /* compact the rows */
                memmove(o->ctx + (size_t)r * hidden, o->ctx + (size_t)r * ld,
                        hidden * sizeof(float));
            ok &= test_close_f32("context", o->ctx, cmp, (size_t)rows * hidden, 1e-5, 1e-4);
            if (with_weights) {
                dev_download(o->w, d_w, nwt * sizeof(float), POISON_F32, what);
                ok &= test_close_f32("weights", o->w, want_w, nwt, 1e-6, 1e-4);
            }
            for (int r = 0; r < rows; r++) {
                if (o->a[r] == want_a[r])
                    continue;
                /* Accept the other index only when the two weights tie within rounding. */
                int tie = o->a[r] >= 0 && want_a[r] >= 0 &&
                          fabsf(want_w[(size_t)r * max_src + o->a[r]] -
                                want_w[(size_t)r * max_src + want_a[r]]) < 1e-6f;
                if (!tie) {
                    fprintf(stderr, "  argmax[%d]: got %d want %d\n", r, o->a[r], want_a[r]);
                    ok = 0;
                }
            }
            report_check(ok, what);
        }
        cudaFree(d_ctx); cudaFree(d_w); cudaFree(d_a);
        if (c16.dst) /* a refused call's */
            cudaFree(c16.dst);
    }
    int device = 0;
    CUDA_OK(cudaGetDevice(&device));
    if (out[1].ran && out[2].ran && rows >= nmt_cuda_sm_count(device)) {
        char what[160];
        snprintf(what, sizeof what, "attention warp = block bits, rows %d hidden %d max_src %d",
                 rows, hidden, max_src);
        const int same = memcmp(out[1].ctx, out[2].ctx, (size_t)rows * hidden * sizeof(float)) == 0 &&
                         memcmp(out[1].a, out[2].a, rows * sizeof(int32_t)) == 0 &&
                         (!with_weights || memcmp(out[1].w, out[2].w, nwt * sizeof(float)) == 0);
        report_check(same, what);
    }
    for (int v = 0; v < 3; v++) {
        free(out[v].ctx); free(out[v].w); free(out[v].a);
    }
    cudaFree(d_sent); cudaFree(d_len); cudaFree(d_keys); cudaFree(d_mem); cudaFree(d_query);
    free(sent); free(len); free(keys); free(mem); free(query);
    free(want_ctx); free(cmp); free(want_w); free(want_a);
}

static void test_gather(int rows, int dim, int src_rows)
{
    size_t ns = (size_t)src_rows * dim, nd = (size_t)rows * dim;
    float *src = (float *)host_alloc(ns * sizeof(float));
    int32_t *index = (int32_t *)host_alloc(rows * sizeof(int32_t));
    test_fill_uniform(src, ns, -1.0f, 1.0f);
    for (int r = 0; r < rows; r++)
        index[r] = test_rand_int(0, src_rows);
    float *want = (float *)host_alloc(nd * sizeof(float)), *got = (float *)host_alloc(nd * sizeof(float));
    nmt_cpu_gather_rows(rows, dim, src, index, want);
    float *d_src = (float *)dev_upload(src, ns * sizeof(float));
    int32_t *d_index = (int32_t *)dev_upload(index, rows * sizeof(int32_t));
    float *d_dst = (float *)dev_output(nd * sizeof(float), POISON_F32);
    nmt_error err = {};
    nmt_status st = nmt_cuda_gather_rows(rows, dim, d_src, d_index, d_dst, stream, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[96];
    snprintf(what, sizeof what, "gather rows %d dim %d src %d", rows, dim, src_rows);
    dev_download(got, d_dst, nd * sizeof(float), POISON_F32, what);
    report_check(test_close_f32(what, got, want, nd, 0.0, 0.0), what);
    cudaFree(d_src); cudaFree(d_index); cudaFree(d_dst);
    free(src); free(index); free(want); free(got);
}

/* Up to n_seg segments of random widths between random row buffers, the
 * destinations interleaved in one poisoned buffer (gaps must survive);
 * kind16 (nmt_half_kind, or -1: none): every other segment also writes a
 * 16-bit copy of its own, rows width + 2 apart. */
static void test_gather_segments(int rows, int n_seg, int max_width, int kind16)
{
    enum { kSrcRows = 37 };
    nmt_gather_segment seg[NMT_GATHER_MAX_SEGMENTS], dseg[NMT_GATHER_MAX_SEGMENTS];
    float *src[NMT_GATHER_MAX_SEGMENTS], *d_src[NMT_GATHER_MAX_SEGMENTS];
    int32_t *index[NMT_GATHER_MAX_SEGMENTS], *d_index[NMT_GATHER_MAX_SEGMENTS];
    int32_t ld_dst = 0, col[NMT_GATHER_MAX_SEGMENTS];
    for (int g = 0; g < n_seg; g++) {
        const int32_t width = test_rand_int(g == 0 ? 1 : 0, max_width + 1);
        const int32_t ld_src = width + test_rand_int(0, 4);
        const size_t n_src = (size_t)kSrcRows * (ld_src > 0 ? ld_src : 1);
        src[g] = (float *)host_alloc(n_src * sizeof(float));
        test_fill_uniform(src[g], n_src, -1.0f, 1.0f);
        index[g] = (int32_t *)host_alloc(rows * sizeof(int32_t));
        for (int r = 0; r < rows; r++)
            index[g][r] = test_rand_int(0, kSrcRows);
        d_src[g] = (float *)dev_upload(src[g], n_src * sizeof(float));
        d_index[g] = (int32_t *)dev_upload(index[g], rows * sizeof(int32_t));
        col[g] = ld_dst;
        ld_dst += width + 1; /* one poisoned column after each segment */
        seg[g] = (nmt_gather_segment){.src = src[g], .index = index[g], .width = width,
                                      .ld_src = ld_src};
        dseg[g] = (nmt_gather_segment){.src = d_src[g], .index = d_index[g], .width = width,
                                       .ld_src = ld_src};
        dseg[g].dst16 = dev_half_out(g % 2 == 0 ? kind16 : -1, rows, width + 2);
    }
    const size_t nd = (size_t)rows * ld_dst;
    float *want = (float *)host_alloc(nd * sizeof(float)), *got = (float *)host_alloc(nd * sizeof(float));
    memset(want, 0xFF, nd * sizeof(float));
    float *d_dst = (float *)dev_output(nd * sizeof(float), POISON_F32);
    for (int g = 0; g < n_seg; g++) {
        seg[g].dst = want + col[g];
        dseg[g].dst = d_dst + col[g];
        seg[g].ld_dst = dseg[g].ld_dst = ld_dst;
    }
    nmt_cpu_gather_segments(rows, n_seg, seg);
    nmt_error err = {};
    nmt_status st = nmt_cuda_gather_segments(rows, n_seg, dseg, stream, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[96];
    snprintf(what, sizeof what, "gather segments rows %d segments %d width <= %d 16-bit %d", rows,
             n_seg, max_width, kind16);
    dev_download(got, d_dst, nd * sizeof(float), POISON_F32, what);
    /* Bitwise: copies are exact and the poisoned gaps compare as bits. */
    int ok = memcmp(got, want, nd * sizeof(float)) == 0;
    for (int g = 0; g < n_seg; g++)
        ok &= dev_half_out_check(what, &dseg[g].dst16, rows, dseg[g].width, got + col[g], ld_dst);
    report_check(ok, what);
    for (int g = 0; g < n_seg; g++) {
        cudaFree(d_src[g]); cudaFree(d_index[g]);
        free(src[g]); free(index[g]);
    }
    cudaFree(d_dst);
    free(want); free(got);
}

/* kind16 (nmt_half_kind, or -1: none): the 16-bit copy too, rows width + 1 apart. */
static void test_tanh_rows(int rows, int width, int pad, int kind16)
{
    const int ld = width + pad;
    const size_t n = (size_t)rows * ld;
    float *x = (float *)host_alloc(n * sizeof(float)), *got = (float *)host_alloc(n * sizeof(float));
    test_fill_uniform(x, n, -6.0f, 6.0f);
    float *d_x = (float *)dev_output(n * sizeof(float), POISON_F32);
    dev_fill(d_x, x, n * sizeof(float));
    nmt_cpu_tanh_rows(rows, width, x, ld, NULL); /* x becomes the expected result */
    nmt_half_out x16 = dev_half_out(kind16, rows, width + 1);
    nmt_error err = {};
    nmt_status st = nmt_cuda_tanh_rows(rows, width, d_x, ld, &x16, stream, &err);
    CHECK(st == NMT_STATUS_OK, "status %d: %s", (int)st, err.message);
    char what[96];
    snprintf(what, sizeof what, "tanh rows %d width %d pad %d 16-bit %d", rows, width, pad, kind16);
    dev_download(got, d_x, n * sizeof(float), POISON_F32, what);
    const int ok = test_close_f32(what, got, x, n, 1e-6, 1e-6);
    report_check(ok && dev_half_out_check(what, &x16, rows, width, got, ld), what);
    cudaFree(d_x);
    free(x); free(got);
}

int main(void)
{
    ctx = gpu_test_start("test_gpu_ops");
    stream = nmt_cuda_ctx_stream(ctx);

    test_nhot(1, 1, 1, 1, 1);
    test_nhot(7, 7, 33, 0, 5);
    test_nhot(100, 512, 10240, 10, 10);
    test_nhot(333, 333, 1000, 0, 100);
    test_nhot(5, 1024, 50, 50, 50);
    test_nhot(64, 1000, 4000, 0, 3);
    test_nhot(3, 4100, 70, 30, 40); /* 33 warp segments a row, > 32 pairs */

    test_linear(1, 1, 1, 0, 0, 0);
    test_linear(7, 33, 5, 3, 1, 0);
    test_linear(333, 130, 257, 1, 1, 1);
    test_linear(5, 2000, 512, 0, 1, 1);
    test_linear(64, 1024, 1024, 0, 0, 0);
    test_linear(3, 4, 0, 2, 1, 0);
    test_linear_tf32x2(1, 1, 1, 0, 0);
    test_linear_tf32x2(7, 33, 5, 3, 1);
    test_linear_tf32x2(64, 300, 257, 1, 1);
    test_linear_tf32x2(320, 2048, 1280, 0, 0);

    /* The last argument: the 16-bit copy (0 bf16, 1 fp16, -1 none). */
    test_lstm(1, 1, 0, 1, 1, 0, 0, NMT_HALF_FP16);
    test_lstm(7, 33, 3, 1, 1, 1, 1, NMT_HALF_BF16);
    test_lstm(333, 256, 0, 1, 1, 0, 1, NMT_HALF_FP16);
    test_lstm(5, 1000, 1, 0, 0, 1, 0, -1);
    test_lstm(5120, 512, 0, 0, 1, 1, 1, NMT_HALF_FP16); /* the decoder's rows at batch 1,024 */
    test_lstm(1, 3, 0, 1, 1, 2, 0, -1);                 /* c_prev by row (the beam's parents) */
    test_lstm(333, 256, 2, 0, 1, 2, 1, NMT_HALF_BF16);
    test_lstm(5120, 512, 0, 0, 1, 2, 1, NMT_HALF_FP16);

    test_attention(1, 1, 1, 1, 1, 0, -1);
    test_attention(3, 7, 33, 7, 1, 5, NMT_HALF_FP16);
    test_attention(4, 20, 256, 50, 1, 0, NMT_HALF_BF16);
    test_attention(10, 333, 500, 100, 0, 0, -1);
    test_attention(8, 64, 1024, 333, 1, 0, NMT_HALF_FP16);
    test_attention(1, 5, 512, 13, 1, 0, NMT_HALF_BF16); /* a beam: 4 slices of H, 8 groups */
    test_attention(1, 5, 512, 13, 1, 512, NMT_HALF_FP16); /* the decoder's [context; h_top] */
    test_attention(6, 2, 333, 40, 1, 0, NMT_HALF_FP16); /* scalar lanes, 2 slices */
    test_attention(8, 200, 1024, 40, 1, 4, NMT_HALF_BF16); /* 1 slice past half the block: G = 1 */
    test_attention(5, 150, 333, 30, 1, 0, -1); /* G = 1, scalar, 2 columns a thread */
    /* Rows past the SMs (one slice): warp = block bits, every group count. */
    test_attention(300, 1500, 512, 60, 1, 0, NMT_HALF_FP16); /* batch 300, beam 5: G = 2 */
    test_attention(40, 640, 512, 13, 0, 512, NMT_HALF_FP16); /* the decoder's rows, no weights */
    test_attention(9, 400, 256, 33, 1, 4, -1);               /* G = 4 */
    test_attention(7, 300, 128, 20, 1, 0, NMT_HALF_BF16);    /* G = 8 */
    test_attention(6, 200, 68, 9, 1, 0, NMT_HALF_BF16);      /* 17 float4: the warp's smallest */
    test_attention(5, 260, 1000, 70, 1, 0, NMT_HALF_FP16);   /* G = 1, 8 float4 a lane */
    test_attention(4, 133, 1024, 3, 1, 0, NMT_HALF_BF16);    /* the warp's widest, < 8 positions */
    test_attention(3, 140, 1028, 10, 1, 0, NMT_HALF_FP16);   /* past the warp's widest: refused */
    test_attention(2, 140, 512, 2000, 0, 0, -1);             /* 64 KB of shared memory */

    test_gather(1, 1, 1);
    test_gather(7, 33, 5);
    test_gather(333, 1024, 400);
    test_gather(5, 7, 9);

    test_gather_segments(1, 1, 1, NMT_HALF_FP16);
    test_gather_segments(5, 5, 1024, -1);
    test_gather_segments(7, NMT_GATHER_MAX_SEGMENTS, 33, NMT_HALF_BF16);
    test_gather_segments(333, 3, 700, NMT_HALF_FP16);
    test_gather_segments(5120, 6, 512, NMT_HALF_BF16); /* the decoder's rows at batch 1,024 */

    test_tanh_rows(1, 1, 0, NMT_HALF_BF16);
    test_tanh_rows(5, 512, 768, -1);
    test_tanh_rows(333, 257, 3, NMT_HALF_FP16);
    test_tanh_rows(5120, 512, 1024, NMT_HALF_FP16); /* the feed in the decoder's layer-0 rows */

    nmt_cuda_ctx_free(ctx);
    return test_finish("test_gpu_ops");
}
