/* test_gpu_linear_skinny.cu: the few-row product nmt_cuda_linear_skinny
 * (kernels/linear.h) and the fused LSTM step built on it,
 * nmt_cuda_lstm_skinny (kernels/lstm_cell.h), against their CPU twins, on
 * fresh random inputs.
 * - Every pairing the engine uses: fp32 activations with fp32 weights and
 *   with a 16-bit copy of fp16-exact weights; bf16 and fp16 (activations
 *   rounded in the kernel, weights already rounded). Each output within
 *   1e-5 of sum |x w| (+ |bias|) of the fp64 product of the values
 *   multiplied (fp32 sums over k: about (k / 32 + 5) x 2^-24 at worst), tanh
 *   within 1e-6 after it.
 * - Shapes: 1 to 8 rows; n of 1, odd, W_c's 512 (one output a warp) and a
 *   wide output layer (four a warp); k of 1, odd, 8 and the decoder's; padded
 *   leading dimensions (y's padding keeps its poison); weights one value off
 *   alignment (the scalar path).
 * - Batch invariance: each row computed alone and in a call of 8 rows in
 *   another order gives the same bits, under one policy (outputs a warp,
 *   unroll, k split), for several.
 * - The LSTM step: c and h within 1e-5 of the CPU's (nmt_cpu_linear then
 *   nmt_cpu_lstm_cell; rows from n_dot without a product), c updated in
 *   place, h's second copy, padded rows; and the same bits as the skinny
 *   product (no k split) into gates_h followed by nmt_cuda_lstm_cell; two
 *   steps in one launch (the encoder's directions) each its own launch's
 *   bits. A decoder layer's form (no input gates; every weight and
 *   rounding pairing; k split 1, 2, 4) against the CPU and, bit for bit,
 *   against the skinny product with that split then the cell.
 * - Arguments refused: 0 or 9 rows, a policy value not listed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ctx.h"
#include "gpu_test_util.h"
#include "half.h"
#include "linear.h"
#include "lstm_cell.h"

static nmt_cuda_ctx *ctx;
static const char *const x_name[] = {"x f32", "x bf16", "x fp16"};
static const char *const w_name[] = {"w f32", "w bf16", "w fp16"};

/* The weights in their device format (rows ldw apart, `offset` values into
 * the allocation) and, in w_used, the values the product multiplies. */
static void *upload_weights(nmt_weight_type type, const float *w, size_t count, int offset,
                            float *w_used, void **base)
{
    const size_t size = type == NMT_WEIGHT_F32 ? 4 : 2;
    unsigned char *host = (unsigned char *)host_alloc((count + offset) * size);
    for (size_t i = 0; i < count; i++) {
        float v = w[i];
        if (type == NMT_WEIGHT_F32) {
            memcpy(host + (i + offset) * size, &v, 4);
        } else {
            const uint16_t h = type == NMT_WEIGHT_BF16 ? nmt_f32_to_bf16(v) : nmt_f32_to_f16(v);
            v = type == NMT_WEIGHT_BF16 ? nmt_bf16_to_f32(h) : nmt_f16_to_f32(h);
            memcpy(host + (i + offset) * size, &h, 2);
        }
        w_used[i] = v;
    }
    *base = dev_upload(host, (count + offset) * size);
    free(host);
    return (unsigned char *)*base + (size_t)offset * size;
}

static float x_used(nmt_skinny_x x_round, float v)
{
    return x_round == NMT_SKINNY_X_F32   ? v
           : x_round == NMT_SKINNY_X_BF16 ? nmt_half_round(NMT_HALF_BF16, v)
                                          : nmt_half_round(NMT_HALF_FP16, v);
}

typedef struct shape {
    int m, n, k, pad, misalign, bias, tanh_out;
} shape;

static void test_shape(nmt_skinny_x x_round, nmt_weight_type w_type, shape s)
{
    const int ldx = s.k + s.pad, ldw = s.k + s.pad, ldy = s.n + s.pad;
    const size_t nx = (size_t)s.m * ldx, nw = (size_t)s.n * ldw, ny = (size_t)s.m * ldy;
    float *x = (float *)host_alloc(nx * sizeof(float));
    float *w = (float *)host_alloc(nw * sizeof(float));
    float *w_r = (float *)host_alloc(nw * sizeof(float));
    float *x_r = (float *)host_alloc(nx * sizeof(float));
    float *bias = (float *)host_alloc((size_t)s.n * sizeof(float));
    float *want = (float *)host_alloc(ny * sizeof(float));
    float *got = (float *)host_alloc(ny * sizeof(float));
    test_fill_uniform(x, nx, -2.0f, 2.0f);
    test_fill_uniform(w, nw, -1.0f, 1.0f);
    test_fill_uniform(bias, (size_t)s.n, -1.0f, 1.0f);
    if (x_round == NMT_SKINNY_X_F32 && w_type == NMT_WEIGHT_FP16)
        for (size_t i = 0; i < nw; i++) /* the fp16-exact weights of a model file */
            w[i] = nmt_half_round(NMT_HALF_FP16, w[i]);
    for (size_t i = 0; i < nx; i++)
        x_r[i] = x_used(x_round, x[i]);
    void *w_base = NULL;
    const void *d_w = upload_weights(w_type, w, nw, s.misalign, w_r, &w_base);
    nmt_cpu_linear(s.m, s.n, s.k, x_r, ldx, w_r, ldw, s.bias ? bias : NULL, 0, want, ldy);

    float *d_x = (float *)dev_upload(x, nx * sizeof(float));
    float *d_b = (float *)dev_upload(bias, (size_t)s.n * sizeof(float));
    float *d_y = (float *)dev_output(ny * sizeof(float), POISON_F32);
    nmt_error err = {};
    const nmt_status st =
        nmt_cuda_linear_skinny(ctx, s.m, s.n, s.k, d_x, ldx, x_round, d_w, w_type, ldw,
                               s.bias ? d_b : NULL, s.tanh_out, d_y, ldy, NULL, &err);
    char what[160];
    snprintf(what, sizeof what, "skinny %s %s m %d n %d k %d pad %d misalign %d bias %d tanh %d",
             x_name[x_round], w_name[w_type], s.m, s.n, s.k, s.pad, s.misalign, s.bias,
             s.tanh_out);
    CHECK(st == NMT_STATUS_OK, "%s: %s", what, err.message);
    int ok = dev_download(got, d_y, ny * sizeof(float), POISON_F32, what);
    int bad = 0;
    for (int i = 0; i < s.m; i++)
        for (int j = 0; j < ldy; j++) {
            const float g = got[(size_t)i * ldy + j];
            if (j >= s.n) {
                if (!isnan(g) && bad++ < 3)
                    fprintf(stderr, "  %s: padding [%d, %d] written\n", what, i, j);
                continue;
            }
            double mag = s.bias ? fabs(bias[j]) : 0.0;
            for (int p = 0; p < s.k; p++)
                mag += fabs((double)x_r[(size_t)i * ldx + p] * w_r[(size_t)j * ldw + p]);
            double w_ij = want[(size_t)i * ldy + j], tol = 1e-5 * mag + 1e-30;
            if (s.tanh_out) { /* |tanh'| <= 1 */
                w_ij = tanh(w_ij);
                tol += 1e-6;
            }
            if (!(fabs((double)g - w_ij) <= tol) && bad++ < 3)
                fprintf(stderr, "  %s [%d, %d]: %.9g want %.9g (|x w| %.3g)\n", what, i, j, g,
                        w_ij, mag);
        }
    report_check(ok && bad == 0, what);
    cudaFree(d_x); cudaFree(w_base); cudaFree(d_b); cudaFree(d_y);
    free(x); free(w); free(w_r); free(x_r); free(bias); free(want); free(got);
}

/* Rows alone and in a call of 8 rows (reversed) give the same bits. */
static void test_invariance(nmt_skinny_x x_round, nmt_weight_type w_type, int n, int k,
                            int policy_outputs, int policy_unroll, int policy_split)
{
    const int m = NMT_SKINNY_MAX_ROWS;
    const size_t nx = (size_t)m * k, nw = (size_t)n * k, ny = (size_t)m * n;
    float *x = (float *)host_alloc(nx * sizeof(float));
    float *x_rev = (float *)host_alloc(nx * sizeof(float));
    float *w = (float *)host_alloc(nw * sizeof(float));
    float *w_r = (float *)host_alloc(nw * sizeof(float));
    float *all = (float *)host_alloc(ny * sizeof(float));
    float *one = (float *)host_alloc(ny * sizeof(float));
    test_fill_uniform(x, nx, -2.0f, 2.0f);
    test_fill_uniform(w, nw, -1.0f, 1.0f);
    for (int r = 0; r < m; r++)
        memcpy(x_rev + (size_t)(m - 1 - r) * k, x + (size_t)r * k, (size_t)k * sizeof(float));
    void *w_base = NULL;
    const void *d_w = upload_weights(w_type, w, nw, 0, w_r, &w_base);
    float *d_x = (float *)dev_upload(x, nx * sizeof(float));
    float *d_xr = (float *)dev_upload(x_rev, nx * sizeof(float));
    float *d_all = (float *)dev_output(ny * sizeof(float), POISON_F32);
    float *d_one = (float *)dev_output(ny * sizeof(float), POISON_F32);
    nmt_error err = {};
    const nmt_skinny_policy policy = {policy_outputs, policy_unroll, policy_split};
    int ok = nmt_cuda_linear_skinny(ctx, m, n, k, d_xr, k, x_round, d_w, w_type, k, NULL, 0,
                                    d_all, n, &policy, &err) == NMT_STATUS_OK;
    for (int r = 0; r < m; r++)
        ok &= nmt_cuda_linear_skinny(ctx, 1, n, k, d_x + (size_t)r * k, k, x_round, d_w, w_type,
                                     k, NULL, 0, d_one + (size_t)r * n, n, &policy,
                                     &err) == NMT_STATUS_OK;
    char what[128];
    snprintf(what, sizeof what,
             "skinny %s %s n %d k %d: 8 rows = each alone (policy %dx%dx%d), bit for bit",
             x_name[x_round], w_name[w_type], n, k, policy_outputs, policy_unroll, policy_split);
    ok &= dev_download(all, d_all, ny * sizeof(float), POISON_F32, what);
    ok &= dev_download(one, d_one, ny * sizeof(float), POISON_F32, what);
    size_t differ = 0;
    for (int r = 0; r < m; r++)
        differ += memcmp(one + (size_t)r * n, all + (size_t)(m - 1 - r) * n,
                         (size_t)n * sizeof(float)) != 0;
    if (differ)
        fprintf(stderr, "  %s: %zu rows differ\n", what, differ);
    report_check(ok && differ == 0, what);
    cudaFree(d_x); cudaFree(d_xr); cudaFree(w_base); cudaFree(d_all); cudaFree(d_one);
    free(x); free(x_rev); free(w); free(w_r); free(all); free(one);
}

/* The fused LSTM step against the CPU and against its two-launch form. */
static void test_lstm(int n_rows, int n_dot, int hidden, int k, int pad)
{
    const int g4 = 4 * hidden, ldx = k + pad, ld_x = g4 + pad, ld_h = hidden + pad;
    const size_t nx = (size_t)n_rows * ldx, nw = (size_t)g4 * k, ngx = (size_t)n_rows * ld_x;
    const size_t nc = (size_t)n_rows * hidden, nh = (size_t)n_rows * ld_h;
    float *x = (float *)host_alloc(nx * sizeof(float));
    float *w = (float *)host_alloc(nw * sizeof(float));
    float *gx = (float *)host_alloc(ngx * sizeof(float));
    float *bias = (float *)host_alloc((size_t)g4 * sizeof(float));
    float *c0 = (float *)host_alloc(nc * sizeof(float));
    float *gh = (float *)host_alloc((size_t)n_rows * g4 * sizeof(float));
    float *c_want = (float *)host_alloc(nc * sizeof(float));
    float *h_want = (float *)host_alloc(nh * sizeof(float));
    float *got[3], *two[2]; /* c, h, h's copy; the two-launch c, h */
    for (int i = 0; i < 3; i++)
        got[i] = (float *)host_alloc((i ? nh : nc) * sizeof(float));
    for (int i = 0; i < 2; i++)
        two[i] = (float *)host_alloc((i ? nh : nc) * sizeof(float));
    test_fill_uniform(x, nx, -1.0f, 1.0f);
    test_fill_uniform(w, nw, -0.2f, 0.2f);
    test_fill_uniform(gx, ngx, -2.0f, 2.0f);
    test_fill_uniform(bias, (size_t)g4, -1.0f, 1.0f);
    test_fill_uniform(c0, nc, -1.0f, 1.0f);
    memset(gh, 0, (size_t)n_rows * g4 * sizeof(float));
    nmt_cpu_linear(n_dot, g4, k, x, ldx, w, k, NULL, 0, gh, g4);
    const nmt_lstm_cell_args want = {.n_rows = n_rows, .hidden = hidden, .gates_x = gx,
                                     .ld_x = ld_x, .gates_h = gh, .bias = bias, .c_prev = c0,
                                     .c_out = c_want, .h_out = h_want, .ld_h = ld_h};
    nmt_cpu_lstm_cell(&want);

    float *d_x = (float *)dev_upload(x, nx * sizeof(float));
    float *d_w = (float *)dev_upload(w, nw * sizeof(float));
    float *d_gx = (float *)dev_upload(gx, ngx * sizeof(float));
    float *d_b = (float *)dev_upload(bias, (size_t)g4 * sizeof(float));
    float *d_c = (float *)dev_output(nc * sizeof(float), POISON_F32); /* updated in place */
    dev_fill(d_c, c0, nc * sizeof(float));
    float *d_h = (float *)dev_output(nh * sizeof(float), POISON_F32);
    float *d_h2 = (float *)dev_output(nh * sizeof(float), POISON_F32);
    float *d_c2 = (float *)dev_output(nc * sizeof(float), POISON_F32);
    dev_fill(d_c2, c0, nc * sizeof(float));
    float *d_h3 = (float *)dev_output(nh * sizeof(float), POISON_F32);
    float *d_gh = (float *)dev_output((size_t)n_rows * g4 * sizeof(float), 0);
    nmt_error err = {};
    char what[128];
    snprintf(what, sizeof what, "lstm_skinny rows %d dot %d hidden %d k %d pad %d", n_rows, n_dot,
             hidden, k, pad);
    CHECK(nmt_cuda_lstm_skinny(ctx, n_rows, n_dot, hidden, k, n_dot ? d_x : NULL, ldx, d_w, k,
                               d_gx, ld_x, d_b, d_c, d_c, d_h, ld_h, d_h2, ld_h,
                               &err) == NMT_STATUS_OK,
          "%s: %s", what, err.message);
    /* The two-launch form: the skinny product without a k split (rows past
     * n_dot stay 0), then the cell. */
    const nmt_skinny_policy unsplit = {0, 0, 1};
    if (n_dot)
        CHECK(nmt_cuda_linear_skinny(ctx, n_dot, g4, k, d_x, ldx, NMT_SKINNY_X_F32, d_w,
                                     NMT_WEIGHT_F32, k, NULL, 0, d_gh, g4, &unsplit,
                                     &err) == NMT_STATUS_OK,
              "%s: skinny: %s", what, err.message);
    const nmt_lstm_cell_args cell = {.n_rows = n_rows, .hidden = hidden, .gates_x = d_gx,
                                     .ld_x = ld_x, .gates_h = d_gh, .bias = d_b, .c_prev = d_c2,
                                     .c_out = d_c2, .h_out = d_h3, .ld_h = ld_h};
    CHECK(nmt_cuda_lstm_cell(&cell, nmt_cuda_ctx_stream(ctx), &err) == NMT_STATUS_OK,
          "%s: cell: %s", what, err.message);
    int ok = dev_download(got[0], d_c, nc * sizeof(float), POISON_F32, what) &&
             dev_download(got[1], d_h, nh * sizeof(float), POISON_F32, what) &&
             dev_download(got[2], d_h2, nh * sizeof(float), POISON_F32, what) &&
             dev_download(two[0], d_c2, nc * sizeof(float), POISON_F32, what) &&
             dev_download(two[1], d_h3, nh * sizeof(float), POISON_F32, what);
    int bad = 0;
    for (int r = 0; r < n_rows; r++)
        for (int j = 0; j < ld_h; j++) {
            const size_t ih = (size_t)r * ld_h + j, ic = (size_t)r * hidden + j;
            const float h = got[1][ih];
            if (j >= hidden) {
                bad += !isnan(h) || !isnan(got[2][ih]);
                continue;
            }
            const double tol = 1e-5 * (1.0 + k * 0.2);
            if (!(fabs(h - h_want[ih]) <= tol && fabs(got[0][ic] - c_want[ic]) <= 2 * tol) &&
                bad++ < 3)
                fprintf(stderr, "  %s [%d, %d]: h %.9g want %.9g, c %.9g want %.9g\n", what, r,
                        j, h, h_want[ih], got[0][ic], c_want[ic]);
            if (memcmp(&h, &got[2][ih], 4) || memcmp(&h, &two[1][ih], 4) ||
                memcmp(&got[0][ic], &two[0][ic], 4)) {
                if (bad++ < 3)
                    fprintf(stderr, "  %s [%d, %d]: not the two-launch form's bits\n", what, r,
                            j);
            }
        }
    report_check(ok && bad == 0, what);
    cudaFree(d_x); cudaFree(d_w); cudaFree(d_gx); cudaFree(d_b); cudaFree(d_c); cudaFree(d_h);
    cudaFree(d_h2); cudaFree(d_c2); cudaFree(d_h3); cudaFree(d_gh);
    free(x); free(w); free(gx); free(bias); free(c0); free(gh); free(c_want); free(h_want);
    for (int i = 0; i < 3; i++)
        free(got[i]);
    free(two[0]); free(two[1]);
}

static float *dev_c(const float *c0, size_t n);

/* A decoder layer's step in one launch (gates_x NULL: the product is the
 * whole gate input; the form's weights, rounding and k split) against the
 * CPU (the rounded values multiplied, then the cell) and, bit for bit,
 * against the skinny product with that split into gates followed by
 * nmt_cuda_lstm_cell (the two launches it replaces). */
static void test_lstm_layer(nmt_skinny_x x_round, nmt_weight_type w_type, int split, int n_rows,
                            int hidden, int k, int pad, int misalign)
{
    const int g4 = 4 * hidden, ldx = k + pad, ldw = k + pad, ld_h = hidden + pad;
    const size_t nx = (size_t)n_rows * ldx, nw = (size_t)g4 * ldw, ng = (size_t)n_rows * g4;
    const size_t nc = (size_t)n_rows * hidden, nh = (size_t)n_rows * ld_h;
    float *host = (float *)host_alloc((2 * nx + 2 * nw + ng + g4 + 2 * nc + nh) * sizeof(float));
    float *x = host, *x_r = x + nx, *w = x_r + nx, *w_r = w + nw, *gates = w_r + nw;
    float *bias = gates + ng, *c0 = bias + g4, *c_want = c0 + nc, *h_want = c_want + nc;
    float *got = (float *)host_alloc((2 * nc + 3 * nh) * sizeof(float));
    float *got_c = got, *got_c2 = got + nc, *got_h = got + 2 * nc;
    float *got_h2 = got_h + nh, *got_h3 = got_h2 + nh;
    test_fill_uniform(x, nx, -1.0f, 1.0f);
    test_fill_uniform(w, nw, -0.2f, 0.2f);
    test_fill_uniform(bias, (size_t)g4, -1.0f, 1.0f);
    test_fill_uniform(c0, nc, -1.0f, 1.0f);
    if (x_round == NMT_SKINNY_X_F32 && w_type == NMT_WEIGHT_FP16)
        for (size_t i = 0; i < nw; i++) /* the fp16 copy holds fp16-exact weights only */
            w[i] = nmt_half_round(NMT_HALF_FP16, w[i]);
    for (size_t i = 0; i < nx; i++)
        x_r[i] = x_used(x_round, x[i]);
    void *w_base = NULL;
    const void *d_w = upload_weights(w_type, w, nw, misalign, w_r, &w_base);
    nmt_cpu_linear(n_rows, g4, k, x_r, ldx, w_r, ldw, NULL, 0, gates, g4);
    const nmt_lstm_cell_args want = {.n_rows = n_rows, .hidden = hidden, .gates_x = gates,
                                     .ld_x = g4, .bias = bias, .c_prev = c0, .c_out = c_want,
                                     .h_out = h_want, .ld_h = ld_h};
    nmt_cpu_lstm_cell(&want);

    float *d_x = (float *)dev_upload(x, nx * sizeof(float));
    float *d_b = (float *)dev_upload(bias, (size_t)g4 * sizeof(float));
    float *d_c = dev_c(c0, nc), *d_c2 = dev_c(c0, nc);
    float *d_h = (float *)dev_output(nh * sizeof(float), POISON_F32);
    float *d_h2 = (float *)dev_output(nh * sizeof(float), POISON_F32);
    float *d_h3 = (float *)dev_output(nh * sizeof(float), POISON_F32);
    float *d_g = (float *)dev_output(ng * sizeof(float), POISON_F32);
    const nmt_lstm_skinny_form form = {w_type, x_round, split};
    const nmt_lstm_skinny_step st = {n_rows, n_rows, d_x, ldx,   d_w,  ldw,  NULL, 0,
                                     d_b,    d_c,    d_c, d_h, ld_h, d_h2, ld_h};
    const nmt_skinny_policy policy = {0, 0, split};
    nmt_error err = {};
    char what[160];
    snprintf(what, sizeof what, "lstm layer %s %s split %d rows %d hidden %d k %d pad %d "
             "misalign %d", x_name[x_round], w_name[w_type], split, n_rows, hidden, k, pad,
             misalign);
    CHECK(nmt_cuda_lstm_skinny_steps(ctx, hidden, k, &st, 1, &form, &err) == NMT_STATUS_OK,
          "%s: %s", what, err.message);
    CHECK(nmt_cuda_linear_skinny(ctx, n_rows, g4, k, d_x, ldx, x_round, d_w, w_type, ldw, NULL,
                                 0, d_g, g4, &policy, &err) == NMT_STATUS_OK,
          "%s: skinny: %s", what, err.message);
    const nmt_lstm_cell_args cell = {.n_rows = n_rows, .hidden = hidden, .gates_x = d_g,
                                     .ld_x = g4, .bias = d_b, .c_prev = d_c2, .c_out = d_c2,
                                     .h_out = d_h3, .ld_h = ld_h};
    CHECK(nmt_cuda_lstm_cell(&cell, nmt_cuda_ctx_stream(ctx), &err) == NMT_STATUS_OK,
          "%s: cell: %s", what, err.message);
    int ok = dev_download(got_c, d_c, nc * sizeof(float), POISON_F32, what) &&
             dev_download(got_c2, d_c2, nc * sizeof(float), POISON_F32, what) &&
             dev_download(got_h, d_h, nh * sizeof(float), POISON_F32, what) &&
             dev_download(got_h2, d_h2, nh * sizeof(float), POISON_F32, what) &&
             dev_download(got_h3, d_h3, nh * sizeof(float), POISON_F32, what);
    int bad = 0;
    const double tol = 1e-5 * (1.0 + k * 0.2);
    for (int r = 0; r < n_rows; r++)
        for (int j = 0; j < ld_h; j++) {
            const size_t ih = (size_t)r * ld_h + j, ic = (size_t)r * hidden + j;
            const float h = got_h[ih];
            if (j >= hidden) { /* padding keeps its poison */
                bad += !isnan(h) || !isnan(got_h2[ih]);
                continue;
            }
            if (!(fabs(h - h_want[ih]) <= tol && fabs(got_c[ic] - c_want[ic]) <= 2 * tol) &&
                bad++ < 3)
                fprintf(stderr, "  %s [%d, %d]: h %.9g want %.9g, c %.9g want %.9g\n", what, r,
                        j, h, h_want[ih], got_c[ic], c_want[ic]);
            if ((memcmp(&h, &got_h2[ih], 4) || memcmp(&h, &got_h3[ih], 4) ||
                 memcmp(&got_c[ic], &got_c2[ic], 4)) &&
                bad++ < 3)
                fprintf(stderr, "  %s [%d, %d]: not the two-launch form's bits\n", what, r, j);
        }
    report_check(ok && bad == 0, what);
    cudaFree(d_x); cudaFree(d_b); cudaFree(d_c); cudaFree(d_c2); cudaFree(d_h); cudaFree(d_h2);
    cudaFree(d_h3); cudaFree(d_g); cudaFree(w_base);
    free(host); free(got);
}

/* A device copy of c0 in a guarded buffer (updated in place by the steps). */
static float *dev_c(const float *c0, size_t n)
{
    float *d = (float *)dev_output(n * sizeof(float), POISON_F32);
    dev_fill(d, c0, n * sizeof(float));
    return d;
}

/* Two independent steps in one launch (nmt_cuda_lstm_skinny_steps, as the
 * encoder pairs its directions) give each its own launch's bits: step A with
 * a bias, step B without and with a row fewer, so a launch that mixed them
 * up would show. Then step A with c_prev NULL against A from a zeroed c. */
static void test_lstm_pair(int n_rows, int n_dot, int hidden, int k)
{
    const int g4 = 4 * hidden;
    const size_t nx = (size_t)n_rows * k, nw = (size_t)g4 * k, ngx = (size_t)n_rows * g4;
    const size_t nc = (size_t)n_rows * hidden;
    float *host = (float *)host_alloc((nx + nw + ngx + g4 + nc) * sizeof(float));
    float *x = host, *w = x + nx, *gx = w + nw, *bias = gx + ngx, *c0 = bias + g4;
    test_fill_uniform(x, nx, -1.0f, 1.0f);
    test_fill_uniform(w, nw, -0.2f, 0.2f);
    test_fill_uniform(gx, ngx, -2.0f, 2.0f);
    test_fill_uniform(bias, (size_t)g4, -1.0f, 1.0f);
    test_fill_uniform(c0, nc, -1.0f, 1.0f);
    float *d_x = (float *)dev_upload(x, nx * sizeof(float));
    float *d_w = (float *)dev_upload(w, nw * sizeof(float));
    float *d_gx = (float *)dev_upload(gx, ngx * sizeof(float));
    float *d_b = (float *)dev_upload(bias, (size_t)g4 * sizeof(float));
    const int rows_b = n_rows > 1 ? n_rows - 1 : 1, dot_b = n_dot < rows_b ? n_dot : rows_b;
    float *c[4], *h[4]; /* A alone, B alone, A paired, B paired */
    for (int i = 0; i < 4; i++) {
        c[i] = dev_c(c0, nc);
        h[i] = (float *)dev_output(nc * sizeof(float), POISON_F32);
    }
    nmt_lstm_skinny_step st[4];
    for (int i = 0; i < 4; i++) {
        const int b = i % 2;
        st[i] = (nmt_lstm_skinny_step){b ? rows_b : n_rows, b ? dot_b : n_dot, d_x, k, d_w, k,
                                       d_gx, g4, b ? NULL : d_b, c[i], c[i], h[i], hidden,
                                       NULL, 0};
    }
    nmt_error err = {};
    int ok = nmt_cuda_lstm_skinny_steps(ctx, hidden, k, &st[0], 1, NULL, &err) == NMT_STATUS_OK &&
             nmt_cuda_lstm_skinny_steps(ctx, hidden, k, &st[1], 1, NULL, &err) == NMT_STATUS_OK &&
             nmt_cuda_lstm_skinny_steps(ctx, hidden, k, &st[2], 2, NULL, &err) == NMT_STATUS_OK;
    char what[128];
    snprintf(what, sizeof what, "lstm_skinny paired rows %d dot %d hidden %d k %d: each its own "
             "launch's bits", n_rows, n_dot, hidden, k);
    float *got = (float *)host_alloc(4 * 2 * nc * sizeof(float));
    for (int i = 0; i < 4; i++) {
        ok &= dev_download(got + (2 * i) * nc, c[i], nc * sizeof(float), POISON_F32, what);
        ok &= dev_download(got + (2 * i + 1) * nc, h[i], nc * sizeof(float), POISON_F32, what);
    }
    for (int i = 0; i < 2; i++) /* c and h of A (i 0) and B (i 1): alone, then paired */
        ok &= memcmp(got + 2 * i * nc, got + 2 * (i + 2) * nc, 2 * nc * sizeof(float)) == 0;
    report_check(ok, what);
    /* c_prev NULL (the encoder's first step of a layer where no c was
     * cleared): the bits of a step from a zeroed c. */
    float *zero_c = (float *)dev_output(nc * sizeof(float), 0);
    CUDA_OK(cudaMemset(zero_c, 0, nc * sizeof(float)));
    nmt_lstm_skinny_step from_zero = st[0], from_null = st[0];
    from_zero.c_prev = zero_c, from_zero.c_out = c[0], from_zero.h_out = h[0];
    from_null.c_prev = NULL, from_null.c_out = c[1], from_null.h_out = h[1];
    CUDA_OK(cudaMemset(c[1], 0xff, nc * sizeof(float))); /* NaN: must all be written */
    CUDA_OK(cudaMemset(h[1], 0xff, nc * sizeof(float)));
    ok = nmt_cuda_lstm_skinny_steps(ctx, hidden, k, &from_zero, 1, NULL, &err) == NMT_STATUS_OK &&
         nmt_cuda_lstm_skinny_steps(ctx, hidden, k, &from_null, 1, NULL, &err) == NMT_STATUS_OK;
    snprintf(what, sizeof what, "lstm_skinny rows %d dot %d hidden %d k %d: c_prev NULL as a "
             "zero cell", n_rows, n_dot, hidden, k);
    for (int i = 0; i < 2; i++) {
        ok &= dev_download(got + (2 * i) * nc, c[i], nc * sizeof(float), POISON_F32, what);
        ok &= dev_download(got + (2 * i + 1) * nc, h[i], nc * sizeof(float), POISON_F32, what);
    }
    ok &= memcmp(got, got + 2 * nc, 2 * nc * sizeof(float)) == 0;
    report_check(ok, what);
    cudaFree(zero_c);
    for (int i = 0; i < 4; i++) {
        cudaFree(c[i]);
        cudaFree(h[i]);
    }
    cudaFree(d_x); cudaFree(d_w); cudaFree(d_gx); cudaFree(d_b);
    free(host); free(got);
}

int main(void)
{
    ctx = gpu_test_start("test_gpu_linear_skinny");
    nmt_error err = {};
    const int small = getenv("NMT_TEST_SMALL") != NULL;
    /* x rounding, weight format: the pairings of gemm.c's skinny path. */
    const int pairs[][2] = {{NMT_SKINNY_X_F32, NMT_WEIGHT_F32},
                            {NMT_SKINNY_X_F32, NMT_WEIGHT_FP16},
                            {NMT_SKINNY_X_BF16, NMT_WEIGHT_BF16},
                            {NMT_SKINNY_X_FP16, NMT_WEIGHT_FP16}};
    const shape shapes[] = {
        {1, 1, 1, 0, 0, 0, 0},     {3, 7, 5, 2, 0, 1, 0},     {8, 33, 8, 0, 0, 1, 1},
        {5, 2048, 1280, 0, 0, 0, 0}, /* a batch-1 decoder layer at beam 5 */
        {5, 512, 1024, 0, 0, 0, 1},  /* W_c and its tanh: one output a warp */
        {5, 4778, 512, 0, 0, 1, 0},  /* the shipped model's output layer */
        {1, 1024, 256, 0, 0, 0, 0},  /* an encoder recurrence, one sentence */
        {7, 301, 264, 3, 1, 1, 0},   /* padded, weights off alignment: scalar path */
        {2, 130, 24, 0, 1, 0, 1},
    };
    const int n_shapes = (int)(sizeof shapes / sizeof shapes[0]);
    for (int p = 0; p < 4; p++) {
        const nmt_skinny_x xr = (nmt_skinny_x)pairs[p][0];
        const nmt_weight_type wt = (nmt_weight_type)pairs[p][1];
        for (int i = 0; i < n_shapes; i++)
            if (!small || shapes[i].n * shapes[i].k < 1000000)
                test_shape(xr, wt, shapes[i]);
        test_invariance(xr, wt, 512, 1024, 0, 0, 0); /* the policy's choice */
        test_invariance(xr, wt, 512, 1024, 4, 2, 4);
        test_invariance(xr, wt, small ? 300 : 4778, 512, 1, 1, 1);
        test_invariance(xr, wt, 2048, 1280, 2, 2, 2);
    }
    test_lstm(1, 1, 256, 256, 0);   /* a batch-1 encoder step */
    test_lstm(1, 0, 256, 256, 0);   /* a sentence's first step: no product */
    test_lstm(8, 5, 37, 64, 3);     /* rows without a predecessor, padded, odd hidden */
    test_lstm(3, 3, 9, 13, 1);      /* scalar path */
    test_lstm_pair(1, 1, 256, 256); /* the batch-1 encoder's two directions */
    test_lstm_pair(6, 4, 37, 64);
    for (int p = 0; p < 4; p++) { /* a decoder layer: every pairing, every split */
        const nmt_skinny_x xr = (nmt_skinny_x)pairs[p][0];
        const nmt_weight_type wt = (nmt_weight_type)pairs[p][1];
        for (int split = 1; split <= 4; split *= 2) {
            test_lstm_layer(xr, wt, split, 5, small ? 64 : 512, small ? 160 : 1280, 0, 0);
            test_lstm_layer(xr, wt, split, 8, 37, 64, 3, 0); /* padded, odd hidden */
            test_lstm_layer(xr, wt, split, 3, 9, 13, 1, 1);  /* scalar path */
        }
    }
    /* Arguments refused, not run. */
    float *d = (float *)dev_output(64, POISON_F32);
    CHECK(nmt_cuda_linear_skinny(ctx, 0, 4, 4, d, 4, NMT_SKINNY_X_F32, d, NMT_WEIGHT_F32, 4,
                                 NULL, 0, d, 4, NULL, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "0 rows not refused");
    CHECK(nmt_cuda_linear_skinny(ctx, NMT_SKINNY_MAX_ROWS + 1, 4, 4, d, 4, NMT_SKINNY_X_F32, d,
                                 NMT_WEIGHT_F32, 4, NULL, 0, d, 4, NULL, &err) ==
              NMT_STATUS_ERROR_ARGUMENT,
          "9 rows not refused");
    const nmt_skinny_policy three = {3, 0, 0};
    CHECK(nmt_cuda_linear_skinny(ctx, 2, 4, 4, d, 4, NMT_SKINNY_X_F32, d, NMT_WEIGHT_F32, 4,
                                 NULL, 0, d, 4, &three, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "3 outputs a warp not refused");
    CHECK(nmt_linear_skinny_fits(NMT_SKINNY_MAX_ROWS, 1 << 20) &&
              !nmt_linear_skinny_fits(NMT_SKINNY_MAX_ROWS + 1, 8) && !nmt_linear_skinny_fits(1, 0),
          "the rows the kernel takes");
    cudaFree(d);
    nmt_cuda_ctx_free(ctx);
    return test_finish("test_gpu_linear_skinny");
}
