/* output_topk.h: the output layer fused with log-softmax and top-K, so that
 * the [rows, V] logits are never written (Milakov & Gimelshein's (max, sum)
 * merge and Argueta & Chiang's softmax + top-N, carried into the GEMM).
 *
 * For each row r of x (16-bit) and word w < vocab of W (16-bit, the same
 * format): z[r, w] = x[r] . W[w] + bias[w]; then lse and the top_k best
 * words exactly as nmt_cpu_softmax_topk (softmax_topk.h) over z: larger z
 * first, ties to the lower id, `excluded` words out of the list but in lse,
 * a tail of -INFINITY / -1 when fewer words remain, top_values = z - lse.
 *
 * CUDA: z is one mma.sync m16n8k16 chain over k from 0 plus the bias after
 * (the bits of nmt_cuda_linear_half's batch-invariant GEMM), so the words and
 * their order are those of the unfused layer; lse sums in another fixed
 * order (last bits). Blocks of rows x parts of the vocabulary keep the
 * logits in registers and fold them into a running (max, sum) and top-K per
 * row; a second kernel merges the parts in a fixed order. The parts depend
 * on V alone and the fold's order on nothing else, so a row's result does
 * not depend on the other rows or on the row count: batch
 * invariant. */
#ifndef NMT_KERNELS_OUTPUT_TOPK_H
#define NMT_KERNELS_OUTPUT_TOPK_H

#include "linear.h"
#include "nmt_status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    NMT_OUTPUT_TOPK_MAX_K = 32,        /* top_k at most */
    NMT_OUTPUT_TOPK_MAX_EXCLUDED = 16  /* n_excluded at most */
};

typedef struct nmt_output_topk_args {
    nmt_half_kind kind;
    int32_t n_rows, vocab, k;   /* k: the hidden size, a multiple of 16 on CUDA */
    const uint16_t *x;          /* [n_rows, ldx] 16-bit (the rounded activations) */
    int32_t ldx;
    const uint16_t *w;          /* [vocab, ldw] 16-bit */
    int32_t ldw;
    const float *bias;          /* [vocab] */
    int32_t top_k;              /* 1..NMT_OUTPUT_TOPK_MAX_K */
    const int32_t *excluded;    /* [n_excluded] words */
    int32_t n_excluded;
    float *top_values;          /* [n_rows, top_k] */
    int32_t *top_ids;           /* [n_rows, top_k] */
    float *lse;                 /* [n_rows] */
    /* Optional (NULL: none): z[r, keep_word] is also written to
     * keep[r * ld_keep + keep_word] (the beam step reads EOS's logit). */
    float *keep;
    int32_t ld_keep, keep_word;
    void *workspace;            /* CUDA: nmt_cuda_output_topk_workspace_size bytes */
    size_t workspace_bytes;
} nmt_output_topk_args;

/* The oracle: x and W widened, z summed in double and rounded once, plus the
 * bias in fp32, then nmt_cpu_softmax_topk. z_row: scratch of vocab floats. */
void nmt_cpu_output_topk(const nmt_output_topk_args *a, float *z_row);

/* Bytes of device workspace for calls of at most n_rows rows, vocab words
 * and top_k. */
size_t nmt_cuda_output_topk_workspace_size(int32_t n_rows, int32_t vocab, int32_t top_k);

/* 1 when the CUDA kernel takes such a call: k a multiple of 16, ldx and ldw
 * multiples of 8 and both pointers 16-byte aligned, top_k and n_excluded in
 * range; else 0 (the caller runs the unfused layer). */
int nmt_cuda_output_topk_supports(const nmt_output_topk_args *a);

/* The CUDA kernel's tuning: stages, the k stages of the product's ring in
 * shared memory (3, 4 or 5; 0: the default, 3); row_tile, the rows a block
 * (32, 64 or 128; 0: the largest that still gives every SM two blocks). The
 * results do not depend on either. */
typedef struct nmt_output_topk_policy {
    int stages;
    int row_tile;
} nmt_output_topk_policy;

/* On `stream`; device pointers. Refuses (NMT_STATUS_ERROR_UNSUPPORTED) a call
 * nmt_cuda_output_topk_supports rejects and a workspace that is too small.
 * _policy: with the tuning named (the benchmark; NULL: the default). */
nmt_status nmt_cuda_output_topk(const nmt_output_topk_args *a, void *stream, nmt_error *err);
nmt_status nmt_cuda_output_topk_policy(const nmt_output_topk_args *a,
                                       const nmt_output_topk_policy *policy, void *stream,
                                       nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_KERNELS_OUTPUT_TOPK_H */
