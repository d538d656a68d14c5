/* lstm_cell.c: CPU LSTM pointwise step (kernels/lstm_cell.h), gate order
 * i, f, g, o as in PyTorch; computed in double, rounded once per output. */
#include "lstm_cell.h"

#include <stddef.h>

#include <math.h>

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

void nmt_cpu_lstm_cell(int32_t n_rows, int32_t hidden, const float *gates_x, int32_t ld_x,
                       const float *gates_h, const float *bias, const float *c_prev,
                       float *c_out, float *h_out, int32_t ld_h, float *h_out2,
                       int32_t ld_h2)
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
        }
    }
}
