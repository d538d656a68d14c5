/* test_cpu_ops.c: the CPU ops (the oracles of the CUDA kernels) against values
 * known independently: hand-checked small cases and identities (softmax sums
 * to one, identity weights, known permutations, an ensemble's weighted sum). */
#include "attention.h"
#include "ensemble.h"
#include "gather.h"
#include "linear.h"
#include "lstm_cell.h"
#include "nhot.h"
#include "pick_log_prob.h"
#include "pointwise.h"
#include "softmax_topk.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_nhot(void)
{
    /* table 5 x 3: row t = (t, 10t, 100t + 1). */
    float table[15];
    for (int t = 0; t < 5; t++) {
        table[t * 3 + 0] = (float)t;
        table[t * 3 + 1] = 10.0f * t;
        table[t * 3 + 2] = 100.0f * t + 1.0f;
    }
    /* rows: N=0 | N=1 {3} | N=3 {1, 4, 1} (repeated) with weights | N=1 {0} w=-2 */
    int32_t row_ptr[] = {0, 0, 1, 4, 5};
    int32_t cols[] = {3, 1, 4, 1, 0};
    float values[] = {1.0f, 0.5f, 2.0f, 0.25f, -2.0f};
    float want[] = {0, 0, 0,
                    3, 30, 301,
                    0.75f * 1 + 2.0f * 4, 0.75f * 10 + 2.0f * 40, 0.75f * 101 + 2.0f * 401,
                    0, 0, -2};
    float out[12];
    test_poison_f32(out, 12);
    nmt_error err;
    CHECK(nmt_cpu_nhot_lookup(4, 3, 5, row_ptr, cols, values, table, out, &err) == NMT_STATUS_OK,
          "nhot ok");
    CHECK(test_close_f32("nhot", out, want, 12, 1e-6, 1e-6), "nhot values");

    /* A slice of the CSR (rows 2..3) through absolute row_ptr values. */
    test_poison_f32(out, 12);
    CHECK(nmt_cpu_nhot_lookup(2, 3, 5, row_ptr + 2, cols, values, table, out, &err) == 0, "slice");
    CHECK(test_close_f32("nhot slice", out, want + 6, 6, 1e-6, 1e-6), "nhot slice values");

    /* Refusals write nothing. */
    int32_t bad_cols[] = {3, 1, 5, 1, 0};
    test_poison_f32(out, 12);
    CHECK(nmt_cpu_nhot_lookup(4, 3, 5, row_ptr, bad_cols, values, table, out, &err) ==
              NMT_STATUS_ERROR_ARGUMENT, "column 5 of 5 refused");
    CHECK(isnan(out[0]), "refusal wrote output");
    bad_cols[2] = -1;
    CHECK(nmt_cpu_nhot_lookup(4, 3, 5, row_ptr, bad_cols, values, table, out, &err) ==
              NMT_STATUS_ERROR_ARGUMENT, "column -1 refused");
    int32_t bad_ptr[] = {0, 2, 1, 4, 5};
    CHECK(nmt_cpu_nhot_lookup(4, 3, 5, bad_ptr, cols, values, table, out, &err) ==
              NMT_STATUS_ERROR_ARGUMENT, "decreasing row_ptr refused");
    CHECK(nmt_cpu_nhot_lookup(0, 3, 5, row_ptr, cols, values, table, out, &err) == 0, "0 rows");
}

static void test_linear(void)
{
    /* Hand case: x [2 x 3], w [2 x 3], bias. */
    float x[] = {1, 2, 3, 4, 5, 6};
    float w[] = {1, 0, -1, 0.5f, 0.5f, 0.5f};
    float bias[] = {10, 20};
    float y[4];
    test_poison_f32(y, 4);
    nmt_cpu_linear(2, 2, 3, x, 3, w, 3, bias, 0, y, 2);
    float want[] = {1 - 3 + 10, 3 + 20, 4 - 6 + 10, 7.5f + 20};
    CHECK(test_close_f32("linear hand", y, want, 4, 0, 0), "linear hand case");
    nmt_cpu_linear(2, 2, 3, x, 3, w, 3, NULL, 1, y, 2); /* accumulate, no bias */
    float want2[] = {want[0] - 2, want[1] + 3, want[2] - 2, want[3] + 7.5f};
    CHECK(test_close_f32("linear accumulate", y, want2, 4, 0, 0), "linear accumulate");

    /* Strides and a column slice: x is columns [2, 2+k) of a wider matrix,
     * w the identity placed at columns [3, 3+k) of a wider matrix, y every
     * row in a wider buffer whose other columns must stay untouched. */
    static const int32_t sizes[] = {1, 7, 33, 333};
    for (int si = 0; si < 4; si++) {
        int32_t m = sizes[(si + 1) % 4], k = sizes[si];
        int32_t ldx = k + 5, ldw = k + 4, ldy = k + 3;
        float *xs = malloc(sizeof(float) * m * ldx);
        float *ws = calloc((size_t)(k + 2) * ldw, sizeof(float)); /* >= 2 rows */
        float *ys = malloc(sizeof(float) * m * ldy);
        float *b = malloc(sizeof(float) * k);
        test_fill_uniform(xs, (size_t)m * ldx, -1, 1);
        test_fill_uniform(b, k, -1, 1);
        test_poison_f32(ys, (size_t)m * ldy);
        for (int32_t j = 0; j < k; j++)
            ws[(int64_t)j * ldw + 3 + j] = 1.0f;
        nmt_cpu_linear(m, k, k, xs + 2, ldx, ws + 3, ldw, b, 0, ys, ldy);
        int bad = 0;
        for (int32_t i = 0; i < m; i++) {
            for (int32_t j = 0; j < k; j++)
                bad += ys[i * ldy + j] != xs[i * ldx + 2 + j] + b[j];
            for (int32_t j = k; j < ldy; j++)
                bad += !isnan(ys[i * ldy + j]);
        }
        CHECK(bad == 0, "identity linear m %d k %d: %d bad", m, k, bad);
        /* All-ones w: each output is the row sum (a plain double sum here). */
        for (int64_t i = 0; i < (int64_t)(k + 2) * ldw; i++)
            ws[i] = 1.0f;
        nmt_cpu_linear(m, 2, k, xs, ldx, ws, ldw, NULL, 0, ys, ldy);
        for (int32_t i = 0; i < m; i++) {
            double sum = 0;
            for (int32_t p = 0; p < k; p++)
                sum += xs[i * ldx + p];
            CHECK(ys[i * ldy] == (float)sum && ys[i * ldy + 1] == (float)sum, "row sum %d", i);
        }
        free(xs);
        free(ws);
        free(ys);
        free(b);
    }
}

/* TF32 rounding and the two-part split behind nmt_cuda_linear_tf32x2. */
static void test_tf32_split(void)
{
    const float one = 1.0f, ulp10 = ldexpf(1.0f, -10);
    CHECK(nmt_tf32_round(one) == one, "tf32(1) != 1");
    CHECK(nmt_tf32_round(one + ldexpf(1.0f, -11)) == one + ulp10, "a tie rounds away from zero");
    CHECK(nmt_tf32_round(one + ldexpf(1.0f, -12)) == one, "below half rounds down");
    CHECK(nmt_tf32_round(-(one + ldexpf(1.0f, -11))) == -(one + ulp10), "negative tie");
    CHECK(nmt_tf32_exact(&ulp10, 1) && !nmt_tf32_exact((float[]){one + ldexpf(1.0f, -12)}, 1),
          "nmt_tf32_exact");
    /* fp16: 10 mantissa bits, a 2^-24 least subnormal, 65504 the largest. */
    CHECK(nmt_fp16_exact((float[]){one + ulp10, -0.0f, 65504.0f, ldexpf(1.0f, -24)}, 4) &&
              !nmt_fp16_exact((float[]){one + ldexpf(1.0f, -11)}, 1) &&
              !nmt_fp16_exact((float[]){ldexpf(1.0f, -26)}, 1) &&
              !nmt_fp16_exact((float[]){65520.0f}, 1),
          "nmt_fp16_exact");
    enum { M = 3, K = 257, LD = 260 };
    static float x[M * LD], split[M * 2 * K];
    test_fill_uniform(x, M * LD, -100.0f, 100.0f);
    nmt_cpu_tf32_split(M, K, x, LD, split);
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int p = 0; p < K; p++) {
            const float v = x[i * LD + p], hi = split[i * 2 * K + p], lo = split[i * 2 * K + K + p];
            /* Both parts are TF32 values and keep x to 2^-21 of its size. */
            bad += !nmt_tf32_exact(&hi, 1) || !nmt_tf32_exact(&lo, 1) ||
                   fabs((double)hi + (double)lo - (double)v) > ldexp(fabs(v), -21);
        }
    CHECK(bad == 0, "tf32 split: %d of %d values off", bad, M * K);
}

static void test_lstm_cell(void)
{
    /* hidden 2, 2 rows, ld_x 10 (> 8), ld_h 3 (> 2); c aliased in place.
     * Gates chosen so sigmoid/tanh are known: sigmoid(0) = 0.5, sigmoid(+-40)
     * = 1/0 in float, tanh(atanh(0.5)) = 0.5, tanh(40) = 1. */
    const float big = 40.0f, half = (float)atanh(0.5);
    /* row 0 unit 0: i 0, f big, g atanh .5, o 0, c_prev 2 -> c 2.25, h .5 tanh 2.25
     * row 0 unit 1: i big, f -big, g big, o big, c_prev 7 -> c 1, h tanh 1
     * row 1 unit 0: all 0, c_prev 1 -> c .5, h .5 tanh .5
     * row 1 unit 1: i -big, f big, g 0, o -big, c_prev -3 -> c -3, h 0 */
    float gx[20] = {0, big, big, -big, half, big, 0, big, 99, 99,
                    0, -big, 0, big, 0, 0, 0, -big, 99, 99};
    /* Split the row-1 gates between gates_x, gates_h and bias: same sums. */
    float gh[16] = {0}, bias[8] = {0};
    gx[10 + 1] = -big / 2; gh[8 + 1] = -big / 4; bias[1] = -big / 4;
    float c[4] = {2, 7, 1, -3};
    float h[6], h2[10];
    test_poison_f32(h, 6);
    test_poison_f32(h2, 10);
    nmt_cpu_lstm_cell(&(nmt_lstm_cell_args){.n_rows = 2, .hidden = 2, .gates_x = gx, .ld_x = 10,
                                            .gates_h = gh, .bias = bias, .c_prev = c, .c_out = c,
                                            .h_out = h, .ld_h = 3, .h_out2 = h2 + 1,
                                            .ld_h2 = 5});
    float want_c[] = {2.25f, 1.0f, 0.5f, -3.0f};
    float want_h[] = {0.5f * tanhf(2.25f), tanhf(1.0f), 0.5f * tanhf(0.5f), 0.0f};
    CHECK(test_close_f32("lstm c", c, want_c, 4, 1e-6, 1e-6), "lstm c");
    float got_h[] = {h[0], h[1], h[3], h[4]};
    CHECK(test_close_f32("lstm h", got_h, want_h, 4, 1e-6, 1e-6), "lstm h");
    CHECK(isnan(h[2]) && isnan(h[5]), "lstm wrote beyond hidden in an ld_h row");
    /* The second copy of h: same values, its own offset and row stride. */
    float got_h2[] = {h2[1], h2[2], h2[6], h2[7]};
    CHECK(memcmp(got_h2, got_h, sizeof got_h) == 0, "lstm h_out2 equals h_out");
    for (int i = 0; i < 10; i++)
        if (i != 1 && i != 2 && i != 6 && i != 7)
            CHECK(isnan(h2[i]), "lstm h_out2 wrote element %d outside its rows", i);

    /* c_prev by row (c_rows, the beam's parents): the bits of the cell over
     * those rows gathered first. */
    enum { kRows = 4, kH = 5, kTable = 6 };
    float g[kRows * 4 * kH], table[kTable * kH], gathered[kRows * kH];
    float c_a[kRows * kH], c_b[kRows * kH], h_a[kRows * kH], h_b[kRows * kH];
    int32_t rows[kRows] = {5, 0, 5, 2};
    test_fill_uniform(g, sizeof g / sizeof g[0], -3.0f, 3.0f);
    test_fill_uniform(table, sizeof table / sizeof table[0], -2.0f, 2.0f);
    nmt_cpu_gather_rows(kRows, kH, table, rows, gathered);
    nmt_lstm_cell_args by_row = {.n_rows = kRows, .hidden = kH, .gates_x = g, .ld_x = 4 * kH,
                                 .c_prev = table, .c_rows = rows, .c_out = c_a, .h_out = h_a,
                                 .ld_h = kH};
    nmt_cpu_lstm_cell(&by_row);
    nmt_lstm_cell_args copied = by_row;
    copied.c_prev = gathered, copied.c_rows = NULL, copied.c_out = c_b, copied.h_out = h_b;
    nmt_cpu_lstm_cell(&copied);
    CHECK(memcmp(c_a, c_b, sizeof c_a) == 0 && memcmp(h_a, h_b, sizeof h_a) == 0,
          "lstm c_rows: not the bits of the cell over the gathered rows");
}

static void test_attention(void)
{
    /* 2 sentences, max_src 4, hidden 2. Sentence 0: 1 position; sentence 1:
     * 3 positions. Padding keys are huge so an unmasked position would win. */
    enum { MS = 4, HD = 2 };
    float keys[2 * MS * HD], memory[2 * MS * HD];
    for (int i = 0; i < 2 * MS * HD; i++) {
        keys[i] = 1000.0f;
        memory[i] = 500.0f;
    }
    /* sentence 0, position 0 */
    keys[0] = 0.3f; keys[1] = -0.7f; memory[0] = 1.5f; memory[1] = -2.5f;
    /* sentence 1: scores with query (1, 0) are 0, log 3, 0 -> a = .2, .6, .2 */
    float *k1 = keys + MS * HD, *m1 = memory + MS * HD;
    k1[0] = 0; k1[1] = 5; k1[2] = (float)log(3.0); k1[3] = -5; k1[4] = 0; k1[5] = 1;
    m1[0] = 1; m1[1] = 0; m1[2] = 0; m1[3] = 1; m1[4] = 10; m1[5] = 10;
    int32_t src_len[] = {1, 3};
    /* rows: sentence 1 with query (1,0); sentence 0; sentence 1 with query 0 (uniform) */
    int32_t row_sentence[] = {1, 0, 1};
    float query[] = {1, 0, 3, 4, 0, 0};
    float context[6], weights[3 * MS];
    int32_t argmax[5];
    test_poison_f32(context, 6);
    test_poison_f32(weights, 3 * MS);
    test_poison_i32(argmax, 3);
    nmt_cpu_attention(3, HD, MS, row_sentence, src_len, keys, memory, query, HD, context, HD,
                      NULL, weights, argmax);
    float want_context[] = {0.2f + 2.0f, 0.6f + 2.0f, 1.5f, -2.5f, 11.0f / 3, 11.0f / 3};
    float want_weights[] = {0.2f, 0.6f, 0.2f, 0, 1, 0, 0, 0, 1.0f / 3, 1.0f / 3, 1.0f / 3, 0};
    CHECK(test_close_f32("attention context", context, want_context, 6, 1e-6, 1e-6), "context");
    CHECK(test_close_f32("attention weights", weights, want_weights, 3 * MS, 1e-6, 1e-6),
          "weights (padding 0)");
    CHECK(argmax[0] == 1 && argmax[1] == 0 && argmax[2] == 0, "argmax %d %d %d (ties to first)",
          argmax[0], argmax[1], argmax[2]);
    /* weights may be NULL */
    float context2[6];
    nmt_cpu_attention(3, HD, MS, row_sentence, src_len, keys, memory, query, HD, context2, HD, NULL,
                      NULL, argmax);
    CHECK(memcmp(context, context2, sizeof context) == 0, "NULL weights changes the context");

    /* Random rows: weights sum to one, context = sum a_j m_j (recomputed here). */
    enum { RS = 7, RH = 33, RROWS = 5 };
    float *rk = malloc(sizeof(float) * 2 * RS * RH), *rm = malloc(sizeof(float) * 2 * RS * RH);
    float rq[RROWS * RH], rc[RROWS * RH], rw[RROWS * RS];
    test_fill_uniform(rk, 2 * RS * RH, -0.5f, 0.5f);
    test_fill_uniform(rm, 2 * RS * RH, -1, 1);
    test_fill_uniform(rq, RROWS * RH, -1, 1);
    int32_t rlen[] = {RS, 4}, rsent[] = {0, 1, 1, 0, 1};
    nmt_cpu_attention(RROWS, RH, RS, rsent, rlen, rk, rm, rq, RH, rc, RH, NULL, rw, argmax);
    for (int r = 0; r < RROWS; r++) {
        double sum = 0;
        for (int j = 0; j < RS; j++)
            sum += rw[r * RS + j];
        CHECK(fabs(sum - 1) < 1e-6, "row %d weights sum %g", r, sum);
        for (int j = rlen[rsent[r]]; j < RS; j++)
            CHECK(rw[r * RS + j] == 0, "row %d masked position %d weight %g", r, j, rw[r * RS + j]);
        float want[RH];
        for (int d = 0; d < RH; d++) {
            double acc = 0;
            for (int j = 0; j < RS; j++)
                acc += rw[r * RS + j] * rm[(rsent[r] * RS + j) * RH + d];
            want[d] = (float)acc;
        }
        CHECK(test_close_f32("attention random context", rc + r * RH, want, RH, 1e-5, 1e-5), "r %d", r);
    }
    free(rk);
    free(rm);
}

static void test_log_softmax(void)
{
    static const int32_t vocabs[] = {1, 7, 333};
    for (int vi = 0; vi < 3; vi++) {
        int32_t v = vocabs[vi], ld = v + 2, rows = 3;
        float *z = malloc(sizeof(float) * rows * ld), *lp = malloc(sizeof(float) * rows * v);
        test_fill_uniform(z, (size_t)rows * ld, -8, 8);
        for (int32_t w = 0; w < v; w++)
            z[2 * ld + w] = 4.25f; /* constant row: log p = -log V */
        test_poison_f32(lp, (size_t)rows * v);
        nmt_cpu_log_softmax(rows, v, z, ld, lp);
        for (int32_t r = 0; r < rows; r++) {
            double sum = 0;
            for (int32_t w = 0; w < v; w++)
                sum += exp((double)lp[r * v + w]);
            CHECK(fabs(sum - 1) < 1e-5, "V %d row %d: sum of p %.9g", v, r, sum);
            for (int32_t w = 1; w < v; w++) { /* differences preserved */
                double dz = (double)z[r * ld + w] - z[r * ld], dl = (double)lp[r * v + w] - lp[r * v];
                CHECK(fabs(dz - dl) < 1e-5, "V %d row %d w %d: shift", v, r, w);
            }
        }
        for (int32_t w = 0; w < v; w++)
            CHECK(fabsf(lp[2 * v + w] + logf((float)v)) < 1e-6f, "constant row V %d: %g", v,
                  lp[2 * v + w]);
        free(z);
        free(lp);
    }
    float z[] = {0, (float)log(2.0), (float)log(3.0)}, lp[3];
    float want[] = {(float)log(1 / 6.0), (float)log(2 / 6.0), (float)log(3 / 6.0)};
    nmt_cpu_log_softmax(1, 3, z, 3, lp);
    CHECK(test_close_f32("log_softmax hand", lp, want, 3, 1e-6, 1e-6), "hand case");
}

/* pick_log_prob: each row's picked entry of the log-softmax, an out-of-range
 * word NaN; a hand case, and random rows against nmt_cpu_log_softmax. */
static void test_pick_log_prob(void)
{
    const float z[] = {0, (float)log(2.0), (float)log(3.0), 9, 9, 9, 9};
    const int32_t words[] = {2, 0, 3};
    float got[3];
    nmt_cpu_pick_log_prob(3, 3, z, 2, words, got);
    /* rows [0 log2 log3]... ld 2: rows {0, log2, log3}, {log3, 9, 9}, {9, 9, 9} */
    const double lse1 = log(3.0 + 2.0 * exp(9.0));
    CHECK(fabs(got[0] - log(3 / 6.0)) < 1e-6 && fabs(got[1] - (log(3.0) - lse1)) < 1e-5 &&
              isnan(got[2]),
          "pick hand case: %g %g %g", got[0], got[1], got[2]);
    enum { ROWS = 5, V = 333, LD = 340 };
    float *x = malloc(sizeof(float) * ROWS * LD), *lp = malloc(sizeof(float) * ROWS * V);
    int32_t picks[ROWS];
    float out[ROWS];
    test_fill_uniform(x, (size_t)ROWS * LD, -8, 8);
    for (int r = 0; r < ROWS; r++)
        picks[r] = test_rand_int(0, V);
    nmt_cpu_log_softmax(ROWS, V, x, LD, lp);
    nmt_cpu_pick_log_prob(ROWS, V, x, LD, picks, out);
    for (int r = 0; r < ROWS; r++)
        CHECK(fabs((double)out[r] - lp[r * V + picks[r]]) < 1e-5, "row %d: %g vs %g", r,
              out[r], lp[r * V + picks[r]]);
    free(x);
    free(lp);
}

static void test_softmax_topk(void)
{
    /* A known permutation: z[w] = perm[w] / 4; the i-th best id has value V-1-i. */
    enum { V = 333, K = 9, ROWS = 2 };
    int32_t perm[V], where[V];
    for (int i = 0; i < V; i++)
        perm[i] = i;
    for (int i = V - 1; i > 0; i--) {
        int j = test_rand_int(0, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int w = 0; w < V; w++)
        where[perm[w]] = w;
    float z[ROWS * (V + 1)], lp[V];
    for (int r = 0; r < ROWS; r++)
        for (int w = 0; w < V; w++)
            z[r * (V + 1) + w] = (r ? -1.0f : 0.25f) * perm[w];
    float values[ROWS * K], lse[ROWS];
    int32_t ids[ROWS * K];
    /* Exclude the best word of row 0: it still counts in the normalization. */
    int32_t excluded[] = {where[V - 1]};
    test_poison_f32(values, ROWS * K);
    test_poison_i32(ids, ROWS * K);
    nmt_cpu_softmax_topk(ROWS, V, z, V + 1, K, excluded, 1, values, ids, lse);
    nmt_cpu_log_softmax(1, V, z, V + 1, lp);
    for (int i = 0; i < K; i++) {
        CHECK(ids[i] == where[V - 2 - i], "row 0 rank %d: id %d want %d", i, ids[i], where[V - 2 - i]);
        CHECK(ids[i] >= 0 && values[i] == lp[ids[i]], "row 0 rank %d: value %g want log p %g", i,
              values[i], ids[i] >= 0 ? lp[ids[i]] : 0.0f);
    }
    double sum = 0;
    for (int w = 0; w < V; w++)
        sum += exp((double)z[w] - lse[0]);
    CHECK(fabs(sum - 1) < 1e-5, "lse normalizes row 0 (excluded word counted): %g", sum);
    /* Row 1: excluded word where[V-1] has z = -(V-1)*1, the smallest: irrelevant;
     * the best are perm 0, 1, 2, ... */
    for (int i = 0; i < K; i++)
        CHECK(ids[K + i] == where[i], "row 1 rank %d: id %d want %d", i, ids[K + i], where[i]);

    /* Ties: all equal -> ids 0..K-1; K > V -> tail -inf / -1. */
    float flat[5] = {2, 2, 2, 2, 2}, tv[8];
    int32_t ti[8];
    test_poison_f32(tv, 8);
    test_poison_i32(ti, 8);
    nmt_cpu_softmax_topk(1, 5, flat, 5, 8, NULL, 0, tv, ti, NULL);
    for (int i = 0; i < 8; i++) {
        if (i < 5)
            CHECK(ti[i] == i && fabsf(tv[i] + logf(5)) < 1e-6f, "tie rank %d: id %d value %g", i,
                  ti[i], tv[i]);
        else
            CHECK(ti[i] == -1 && isinf(tv[i]) && tv[i] < 0, "K > V tail %d: id %d value %g", i,
                  ti[i], tv[i]);
    }
    /* Ties among non-adjacent ids with a better word in between. */
    float mixed[6] = {1, 3, 1, 3, 0, 3};
    int32_t ex2[] = {3};
    nmt_cpu_softmax_topk(1, 6, mixed, 6, 4, ex2, 1, tv, ti, NULL);
    CHECK(ti[0] == 1 && ti[1] == 5 && ti[2] == 0 && ti[3] == 2, "ties: %d %d %d %d", ti[0], ti[1],
          ti[2], ti[3]);
    /* Everything but one word excluded (the max-length step): one result, then the tail. */
    int32_t all_but_3[4] = {0, 1, 2, 4};
    nmt_cpu_softmax_topk(1, 5, mixed, 6, 3, all_but_3, 4, tv, ti, lse);
    nmt_cpu_log_softmax(1, 5, mixed, 6, lp);
    CHECK(ti[0] == 3 && tv[0] == lp[3] && ti[1] == -1 && ti[2] == -1 && isinf(tv[1]),
          "all but one excluded: %d %g %d", ti[0], tv[0], ti[1]);
    /* K = 0 touches nothing but lse. */
    test_poison_f32(tv, 8);
    nmt_cpu_softmax_topk(1, 5, mixed, 6, 0, NULL, 0, tv, ti, lse);
    CHECK(fabsf(lse[0] - (mixed[0] - lp[0])) < 1e-6f && isnan(tv[0]), "lse with K = 0");
}

static void test_gather_and_tanh(void)
{
    float src[] = {0, 1, 10, 11, 20, 21}, dst[8];
    int32_t index[] = {2, 0, 2, 1};
    test_poison_f32(dst, 8);
    nmt_cpu_gather_rows(4, 2, src, index, dst);
    float want[] = {20, 21, 0, 1, 20, 21, 10, 11};
    CHECK(memcmp(dst, want, sizeof want) == 0, "gather rows");
    float t[] = {0, 0.5f, -40, 40};
    nmt_cpu_tanh_inplace(4, t);
    CHECK(t[0] == 0 && t[1] == tanhf(0.5f) && t[2] == -1 && t[3] == 1, "tanh in place");
    /* tanh over strided rows: 2 rows of width 2, ld 3; the gaps stay. */
    float tr[] = {0.5f, -0.5f, 7, 40, -40, 9};
    nmt_cpu_tanh_rows(2, 2, tr, 3, NULL);
    CHECK(tr[0] == tanhf(0.5f) && tr[1] == tanhf(-0.5f) && tr[2] == 7 && tr[3] == 1 &&
              tr[4] == -1 && tr[5] == 9, "tanh rows");

    /* Two segments: 3-wide rows by one index into a 4-wide dst at column 0,
     * 1-wide rows by another index into column 3; dst ld 5 leaves column 4. */
    float a[] = {1, 2, 3, 4, 5, 6}, b[] = {100, 200, 300};
    int32_t ia[] = {1, 0}, ib[] = {2, 2};
    float out[10];
    test_poison_f32(out, 10);
    nmt_gather_segment segs[2] = {
        {.src = a, .index = ia, .dst = out, .width = 3, .ld_src = 3, .ld_dst = 5},
        {.src = b, .index = ib, .dst = out + 3, .width = 1, .ld_src = 1, .ld_dst = 5}};
    nmt_cpu_gather_segments(2, 2, segs);
    float want_seg[] = {4, 5, 6, 300, 0, 1, 2, 3, 300, 0};
    for (int i = 0; i < 10; i++)
        if (i % 5 == 4)
            CHECK(isnan(out[i]), "gather segments wrote the gap column (element %d)", i);
        else
            CHECK(out[i] == want_seg[i], "gather segments element %d: %g, want %g", i,
                  out[i], want_seg[i]);
}

static void test_ensemble(void)
{
    /* Two rows of 3 words, two members: logits and lse (rows ld 4) weighted
     * 0.5, log-probabilities (ld 3, lse NULL) weighted 2; a third of weight
     * 0 whose NaN must not count. Values exact in binary. */
    const float z[8] = {1.0f, 2.0f, 3.0f, 99.0f, -1.0f, 0.0f, 1.0f, 99.0f};
    const float lse[2] = {4.0f, 2.0f};
    const float lp[6] = {-0.5f, -0.25f, -2.0f, -1.0f, -1.5f, -0.125f};
    const float nan_rows[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    nmt_ensemble_members m = {.n = 3};
    m.member[0] = (nmt_ensemble_member){.logits = z, .ld = 4, .lse = lse, .weight = 0.5f};
    m.member[1] = (nmt_ensemble_member){.logits = lp, .ld = 3, .lse = NULL, .weight = 2.0f};
    m.member[2] = (nmt_ensemble_member){.logits = nan_rows, .ld = 3, .lse = NULL, .weight = 0.0f};
    float out[10];
    test_poison_f32(out, 10);
    nmt_cpu_ensemble_log_probs(2, 3, &m, out, 5); /* ld 5: columns 3, 4 untouched */
    /* row 0: 0.5 (z - 4) + 2 lp; row 1: 0.5 (z - 2) + 2 lp */
    const float want[10] = {-2.5f, -1.5f, -4.5f, NAN, NAN, -3.5f, -4.0f, -0.75f, NAN, NAN};
    for (int i = 0; i < 10; i++)
        if (i % 5 >= 3)
            CHECK(isnan(out[i]), "ensemble wrote past the vocabulary (element %d)", i);
        else
            CHECK(out[i] == want[i], "ensemble element %d: %g, want %g", i, out[i], want[i]);
    /* The top-K's values read back from the scores; id -1 is the -inf tail. */
    const int32_t ids[4] = {2, 0, 1, -1};
    float values[4];
    nmt_cpu_gather_top_values(2, 2, out, 5, ids, values);
    CHECK(values[0] == -4.5f && values[1] == -2.5f && values[2] == -4.0f &&
              values[3] == -INFINITY,
          "gather top values: %g %g %g %g", values[0], values[1], values[2], values[3]);
}

int main(void)
{
    test_seed();
    test_ensemble();
    test_nhot();
    test_linear();
    test_tf32_split();
    test_lstm_cell();
    test_attention();
    test_log_softmax();
    test_softmax_topk();
    test_pick_log_prob();
    test_gather_and_tanh();
    return test_finish("test_cpu_ops");
}
