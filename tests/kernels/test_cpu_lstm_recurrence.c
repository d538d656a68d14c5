/* test_cpu_lstm_recurrence.c: nmt_cpu_lstm_recurrence (the C twin of the
 * CUDA one-launch recurrence, kernels/lstm_cell.h) against the per-step
 * composition it stands for, built here from the row-wide CPU ops: for each
 * direction and step, nmt_cpu_linear_chain over the rows with a
 * predecessor, zero gates for the rest, then nmt_cpu_lstm_cell over the
 * running rows on a cleared c. Bit for bit, on fresh random inputs: one
 * sentence of one word, sentences of equal and of repeated lengths, a
 * stride past the longest; outputs NaN-poisoned, and rows no direction
 * runs must keep their poison. */
#include "linear.h"
#include "lstm_cell.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The per-step composition of direction d into out and c. */
static void run_steps(const nmt_lstm_recurrence *a, int d, float *out, float *c, float *gates_h)
{
    const int n = a->n, half = a->half, H = 2 * half, g = 4 * half;
    memset(c, 0, sizeof(float) * (size_t)n * half);
    for (int s = 0; s < a->stride; s++) {
        const int t = d ? a->stride - 1 - s : s, t_prev = d ? t + 1 : t - 1;
        const int active = nmt_lstm_recurrence_active(a->src_len, n, a->stride, t);
        const int prev = nmt_lstm_recurrence_active(a->src_len, n, a->stride, t_prev);
        const int n_rec = active < prev ? active : prev;
        if (n_rec > 0)
            nmt_cpu_linear_chain(n_rec, g, half, out + (int64_t)t_prev * n * H + d * half, H,
                                 NMT_SKINNY_X_F32, a->w_hh[d], half, NULL, 0, gates_h, g);
        memset(gates_h + (size_t)n_rec * g, 0, sizeof(float) * (size_t)(n - n_rec) * g);
        const nmt_lstm_cell_args cell = {
            .n_rows = active, .hidden = half, .gates_x = a->gates_x[d] + (int64_t)t * n * g,
            .ld_x = g, .gates_h = gates_h, .bias = a->b_hh[d], .c_prev = c, .c_out = c,
            .h_out = out + (int64_t)t * n * H + d * half, .ld_h = H};
        nmt_cpu_lstm_cell(&cell);
    }
}

static void test_recurrence(int n, int stride, int half, const int32_t *len)
{
    const int g = 4 * half;
    const size_t rows = (size_t)stride * n, n_out = rows * 2 * half, n_c = (size_t)n * half;
    nmt_lstm_recurrence a = {.n = n, .stride = stride, .half = half, .src_len = len};
    float *in[2][3];
    for (int d = 0; d < 2; d++) {
        in[d][0] = (float *)test_alloc(rows * g * sizeof(float));
        in[d][1] = (float *)test_alloc((size_t)g * half * sizeof(float));
        in[d][2] = (float *)test_alloc((size_t)g * sizeof(float));
        test_fill_uniform(in[d][0], rows * g, -2.0f, 2.0f);
        test_fill_uniform(in[d][1], (size_t)g * half, -0.3f, 0.3f);
        test_fill_uniform(in[d][2], (size_t)g, -1.0f, 1.0f);
        a.gates_x[d] = in[d][0], a.w_hh[d] = in[d][1], a.b_hh[d] = in[d][2];
        a.c_final[d] = (float *)test_alloc(n_c * sizeof(float));
        test_poison_f32(a.c_final[d], n_c);
    }
    a.out = (float *)test_alloc(n_out * sizeof(float));
    float *want = (float *)test_alloc(n_out * sizeof(float));
    float *c_want = (float *)test_alloc(n_c * sizeof(float));
    float *gates_h = (float *)test_alloc((size_t)n * g * sizeof(float));
    test_poison_f32(a.out, n_out);
    test_poison_f32(want, n_out);

    nmt_cpu_lstm_recurrence(&a);
    char what[128];
    snprintf(what, sizeof what, "recurrence n %d stride %d half %d", n, stride, half);
    int ok = 1;
    for (int d = 0; d < 2; d++) {
        run_steps(&a, d, want, c_want, gates_h);
        ok &= memcmp(c_want, a.c_final[d], n_c * sizeof(float)) == 0;
    }
    for (size_t i = 0; i < n_out; i++) /* bit for bit, the poison included */
        ok &= memcmp(&want[i], &a.out[i], sizeof(float)) == 0;
    CHECK(ok, "%s: differs from the per-step composition", what);
    fprintf(stderr, "%s %s\n", ok ? "ok  " : "FAIL", what);
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < 3; i++)
            free(in[d][i]);
        free(a.c_final[d]);
    }
    free(a.out);
    free(want);
    free(c_want);
    free(gates_h);
}

int main(void)
{
    test_seed();
    const int32_t one[1] = {1}, equal[4] = {6, 6, 6, 6}, ties[8] = {9, 9, 7, 7, 7, 3, 1, 1};
    const int32_t short_of[3] = {5, 4, 4};
    test_recurrence(1, 1, 8, one);
    test_recurrence(4, 6, 24, equal);
    test_recurrence(8, 9, 16, ties);
    test_recurrence(3, 7, 40, short_of); /* a stride past the longest sentence */
    return test_finish("test_cpu_lstm_recurrence");
}
