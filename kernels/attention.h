/* attention.h: global "general" attention for a batch of hypothesis rows
 * (Dikbayir et al.: the score reduction over H, the softmax and the context
 * reduction over source positions in one launch).
 *
 * Row r belongs to sentence s = row_sentence[r] with S = src_len[s] positions.
 * keys and memory are [n_sentences, max_src, hidden]; keys = memory . W_a^T.
 *   score_j = query[r] . keys[s, j]   (j < S; positions >= S are masked)
 *   a = softmax(score);  context[r] = sum_j a_j memory[s, j]
 * weights[r, j] (may be NULL) gets a for j < S and 0 beyond; argmax[r] the
 * smallest j with the largest a_j. query and context rows are ld_query and
 * ld_context floats apart (>= hidden): the CUDA decoder reads h_top and
 * writes the context inside its [context; h_top] row buffer. context16
 * (NULL: none; half.h) gets the context rounded to 16 bits, for the 16-bit
 * GEMM of W_c that reads it next.
 *
 * CUDA variants (nmt_cuda_attention picks; _with runs one by name):
 *   BLOCK a block of 256 threads a row, the context split over H into
 *         slices (more blocks) while the rows are fewer than the SMs;
 *   WARP  a warp a row, 8 rows a block, no barrier: for many rows, where a
 *         block a row leaves an SM two rows in flight. The same bits as
 *         BLOCK with one slice (AUTO takes it then, from 8 rows an SM); hidden a multiple
 *         of 4 in [68, 1024], 16-byte aligned rows, 64 x max_src bytes of
 *         shared memory, else NMT_STATUS_ERROR_UNSUPPORTED. */
#ifndef NMT_KERNELS_ATTENTION_H
#define NMT_KERNELS_ATTENTION_H

#include "half.h"
#include "nmt_status.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void nmt_cpu_attention(int32_t n_rows, int32_t hidden, int32_t max_src, const int32_t *row_sentence,
                       const int32_t *src_len, const float *keys, const float *memory,
                       const float *query, int32_t ld_query, float *context, int32_t ld_context,
                       const nmt_half_out *context16, float *weights, int32_t *argmax);

typedef enum nmt_attention_variant {
    NMT_ATTENTION_AUTO = 0,
    NMT_ATTENTION_BLOCK = 1,
    NMT_ATTENTION_WARP = 2
} nmt_attention_variant;

nmt_status nmt_cuda_attention(int32_t n_rows, int32_t hidden, int32_t max_src,
                              const int32_t *row_sentence, const int32_t *src_len,
                              const float *keys, const float *memory, const float *query,
                              int32_t ld_query, float *context, int32_t ld_context,
                              const nmt_half_out *context16, float *weights, int32_t *argmax,
                              void *stream, nmt_error *err);
nmt_status nmt_cuda_attention_with(nmt_attention_variant variant, int32_t n_rows, int32_t hidden,
                                   int32_t max_src, const int32_t *row_sentence,
                                   const int32_t *src_len, const float *keys,
                                   const float *memory, const float *query, int32_t ld_query,
                                   float *context, int32_t ld_context,
                                   const nmt_half_out *context16, float *weights,
                                   int32_t *argmax, void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
