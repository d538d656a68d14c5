/* fp32_ops.h: the CPU fast kernels' non-GEMM ops in fp32 (kernels/cpu/fp32_ops.c):
 * the LSTM cell, tanh, attention and log-softmax, with the signatures and
 * meaning of the reference's (lstm_cell.h, pointwise.h, attention.h,
 * softmax_topk.h), which compute in double and stay the oracle.
 *
 * exp is a polynomial of basic IEEE operations (no libm call, no FMA
 * contraction) and every sum runs in a fixed lane order, so the loops
 * vectorize at any width with the same bits: an element's result depends on
 * its row alone (batch invariance) and on no build's SIMD width. Accuracy:
 * exp within 1 ulp on [-87, 88] (clamped outside), tanh within 2e-7
 * absolute; sums in float. */
#ifndef NMT_KERNELS_FP32_OPS_H
#define NMT_KERNELS_FP32_OPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* nmt_cpu_lstm_cell's (lstm_cell.h) in fp32. */
void nmt_cpu_fast_lstm_cell(int32_t n_rows, int32_t hidden, const float *gates_x, int32_t ld_x,
                            const float *gates_h, const float *bias, const float *c_prev,
                            float *c_out, float *h_out, int32_t ld_h, float *h_out2,
                            int32_t ld_h2);

/* x[i] = tanh(x[i]) for i < n. */
void nmt_cpu_fast_tanh(int64_t n, float *x);

/* y[i] = y[i] + x[i] for i < n (x and y do not overlap). */
void nmt_cpu_fast_add(int64_t n, const float *x, float *y);

/* nmt_cpu_attention's (attention.h) in fp32. */
void nmt_cpu_fast_attention(int32_t n_rows, int32_t hidden, int32_t max_src,
                            const int32_t *row_sentence, const int32_t *src_len, const float *keys,
                            const float *memory, const float *query, int32_t ld_query,
                            float *context, int32_t ld_context, float *weights, int32_t *argmax);

/* nmt_cpu_log_softmax's (softmax_topk.h) in fp32. */
void nmt_cpu_fast_log_softmax(int32_t n_rows, int32_t vocab, const float *logits, int32_t ld,
                              float *log_probs);

#ifdef __cplusplus
}
#endif
#endif
