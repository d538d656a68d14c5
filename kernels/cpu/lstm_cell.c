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

void nmt_cpu_lstm_cell(int32_t n_rows, int32_t hidden, const float *gates_x, int32_t ld_x,
                       const float *gates_h, const float *bias, const float *c_prev,
                       float *c_out, float *h_out, int32_t ld_h, float *h_out2,
                       int32_t ld_h2, const nmt_half_out *h16)
{
    for (int32_t r = 0; r < n_rows; r++) {
        const float *gx = gates_x + (int64_t)r * ld_x;
        const float *gh = gates_h ? gates_h + (int64_t)r * 4 * hidden : NULL;
        for (int32_t j = 0; j < hidden; j++) {
            double gate[4];
            for (int q = 0; q < 4; q++) {
                int32_t idx = q * hidden + j;
                gate[q] = (double)gx[idx];
                if (gh)
                    gate[q] += (double)gh[idx];
                if (bias)
                    gate[q] += (double)bias[idx];
            }
            /* Read c_prev before writing c_out: they may alias. */
            double c_old = (double)c_prev[(int64_t)r * hidden + j];
            double c_new = sigmoid(gate[1]) * c_old + sigmoid(gate[0]) * tanh(gate[2]);
            float c_rounded = (float)c_new;
            c_out[(int64_t)r * hidden + j] = c_rounded;
            const float h = (float)(sigmoid(gate[3]) * tanh((double)c_rounded));
            h_out[(int64_t)r * ld_h + j] = h;
            if (h_out2)
                h_out2[(int64_t)r * ld_h2 + j] = h;
            nmt_half_out_put(h16, r, j, h);
        }
    }
}

void nmt_cpu_lstm_cell_gathered(const nmt_lstm_gathered *g)
{
    const int32_t H = g->hidden;
    for (int32_t r = 0; r < g->n_rows; r++) {
        const int64_t tok = g->token[r], par = g->parent[r];
        float *h = g->h_out[0] + (int64_t)r * g->ld_h[0]; /* the others copy it */
        nmt_cpu_lstm_cell(1, H, g->table + tok * 4 * H, 4 * H, g->proj + par * 4 * H, g->bias,
                          g->c_prev + par * H, g->c_out + (int64_t)r * H, h, H, NULL, 0, NULL);
        for (int i = 1; i < NMT_LSTM_GATHERED_OUTS; i++)
            if (g->h_out[i])
                memcpy(g->h_out[i] + (int64_t)r * g->ld_h[i], h, sizeof(float) * (size_t)H);
        for (int32_t i = 0; i < g->n_copies; i++)
            memcpy(g->copies[i].dst + (int64_t)r * g->copies[i].ld_dst,
                   g->copies[i].src + par * g->copies[i].ld_src, sizeof(float) * (size_t)H);
    }
}
