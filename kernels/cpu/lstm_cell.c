/* lstm_cell.c: CPU LSTM pointwise step (kernels/lstm_cell.h), gate order
 * i, f, g, o as in PyTorch; computed in double, rounded once per output. */
#include "lstm_cell.h"

#include <stddef.h>
#include <string.h>

#include <math.h>

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

void nmt_cpu_lstm_cell(const nmt_lstm_cell_args *a)
{
    const int32_t hidden = a->hidden;
    for (int32_t r = 0; r < a->n_rows; r++) {
        const float *gx = a->gates_x + (int64_t)r * a->ld_x;
        const float *gh = a->gates_h ? a->gates_h + (int64_t)r * 4 * hidden : NULL;
        const float *cp = a->c_prev + (int64_t)(a->c_rows ? a->c_rows[r] : r) * hidden;
        for (int32_t j = 0; j < hidden; j++) {
            double gate[4];
            for (int q = 0; q < 4; q++) {
                int32_t idx = q * hidden + j;
                gate[q] = (double)gx[idx];
                if (gh)
                    gate[q] += (double)gh[idx];
                if (a->bias)
                    gate[q] += (double)a->bias[idx];
            }
            /* Read c_prev before writing c_out: they may alias. */
            double c_old = (double)cp[j];
            double c_new = sigmoid(gate[1]) * c_old + sigmoid(gate[0]) * tanh(gate[2]);
            float c_rounded = (float)c_new;
            a->c_out[(int64_t)r * hidden + j] = c_rounded;
            const float h = (float)(sigmoid(gate[3]) * tanh((double)c_rounded));
            a->h_out[(int64_t)r * a->ld_h + j] = h;
            if (a->h_out2)
                a->h_out2[(int64_t)r * a->ld_h2 + j] = h;
            nmt_half_out_put(a->h16, r, j, h);
        }
    }
}

void nmt_cpu_lstm_cell_gathered(const nmt_lstm_gathered *g)
{
    const int32_t H = g->hidden;
    for (int32_t r = 0; r < g->n_rows; r++) {
        const int64_t tok = g->token[r], par = g->parent[r];
        float *h = g->h_out[0] + (int64_t)r * g->ld_h[0]; /* the others copy it */
        const nmt_lstm_cell_args cell = {
            .n_rows = 1, .hidden = H, .gates_x = g->table + tok * 4 * H, .ld_x = 4 * H,
            .gates_h = g->proj + par * 4 * H, .bias = g->bias, .c_prev = g->c_prev + par * H,
            .c_out = g->c_out + (int64_t)r * H, .h_out = h, .ld_h = H};
        nmt_cpu_lstm_cell(&cell);
        for (int i = 1; i < NMT_LSTM_GATHERED_OUTS; i++)
            if (g->h_out[i])
                memcpy(g->h_out[i] + (int64_t)r * g->ld_h[i], h, sizeof(float) * (size_t)H);
        for (int32_t i = 0; i < g->n_copies; i++)
            memcpy(g->copies[i].dst + (int64_t)r * g->copies[i].ld_dst,
                   g->copies[i].src + par * g->copies[i].ld_src, sizeof(float) * (size_t)H);
    }
}

void nmt_cpu_lstm_recurrence(const nmt_lstm_recurrence *a)
{
    const int32_t n = a->n, half = a->half, H = 2 * half;
    for (int d = 0; d < 2; d++) {
        float *c = a->c_final[d];
        memset(c, 0, sizeof(float) * (size_t)n * (size_t)half);
        for (int32_t s = 0; s < a->stride; s++) {
            const int32_t t = d ? a->stride - 1 - s : s, t_prev = d ? t + 1 : t - 1;
            const int32_t active = nmt_lstm_recurrence_active(a->src_len, n, a->stride, t);
            const int32_t prev = nmt_lstm_recurrence_active(a->src_len, n, a->stride, t_prev);
            const int32_t n_rec = active < prev ? active : prev;
            for (int32_t r = 0; r < active; r++)
                for (int32_t j = 0; j < half; j++) {
                    /* unit j alone: the cell's hidden 1 over its four gates */
                    float gx[4], gh[4] = {0.0f, 0.0f, 0.0f, 0.0f}, bias[4];
                    for (int q = 0; q < 4; q++) {
                        const int64_t row = (int64_t)q * half + j;
                        gx[q] = a->gates_x[d][((int64_t)t * n + r) * 4 * half + row];
                        bias[q] = a->b_hh[d][row];
                        if (r < n_rec) /* the batch-invariant GEMM's chain (linear.h) */
                            nmt_cpu_linear_chain(
                                1, 1, half, a->out + ((int64_t)t_prev * n + r) * H + d * half,
                                half, NMT_SKINNY_X_F32, a->w_hh[d] + row * half, half, NULL, 0,
                                &gh[q], 1);
                    }
                    float *cj = c + (int64_t)r * half + j;
                    const nmt_lstm_cell_args cell = {
                        .n_rows = 1, .hidden = 1, .gates_x = gx, .ld_x = 4, .gates_h = gh,
                        .bias = bias, .c_prev = cj, .c_out = cj,
                        .h_out = a->out + ((int64_t)t * n + r) * H + d * half + j, .ld_h = 1};
                    nmt_cpu_lstm_cell(&cell);
                }
        }
    }
}
