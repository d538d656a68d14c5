/* lstm_cell.h: the LSTM pointwise step, gate order i, f, g, o (PyTorch).
 * gates = gates_x[r] + gates_h[r] + bias   (each [4*hidden]; gates_h, bias may be NULL)
 * c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g);  h = sigmoid(o) * tanh(c)
 * gates_x rows are ld_x floats apart (the encoder's all-steps GEMM output);
 * c_prev may alias c_out. h_out rows are ld_h floats apart, so h can be
 * written straight into a wider buffer (e.g. one direction of [fwd; bwd]).
 * h_out2 (may be NULL; rows ld_h2 apart) gets a second copy of h: the CUDA
 * decoder keeps h both as the layer's recurrent input and as the next
 * layer's (or the attention's) input, each beside what it is multiplied
 * with, so every layer is one GEMM. */
#ifndef NMT_KERNELS_LSTM_CELL_H
#define NMT_KERNELS_LSTM_CELL_H

#include "nmt_status.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void nmt_cpu_lstm_cell(int32_t n_rows, int32_t hidden, const float *gates_x, int32_t ld_x,
                       const float *gates_h, const float *bias, const float *c_prev,
                       float *c_out, float *h_out, int32_t ld_h, float *h_out2,
                       int32_t ld_h2);

nmt_status nmt_cuda_lstm_cell(int32_t n_rows, int32_t hidden, const float *gates_x, int32_t ld_x,
                              const float *gates_h, const float *bias, const float *c_prev,
                              float *c_out, float *h_out, int32_t ld_h, float *h_out2,
                              int32_t ld_h2, void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
