/* linear.h: y[m, n] = x[m, k] . w[n, k]^T (+ bias[n]) (+ y if accumulate).
 * Row-major with leading dimensions, so a slice of a wider matrix works.
 * CPU: plain triple loop, double accumulation. CUDA: cuBLAS sgemm, or on
 * tensor cores: split TF32 (~fp32 accuracy) or 16-bit inputs (bf16, fp16);
 * for a few rows, a kernel that reads the weights at full bandwidth. */
#ifndef NMT_KERNELS_LINEAR_H
#define NMT_KERNELS_LINEAR_H

#include "half.h" /* nmt_half_kind, nmt_half_out */
#include "nmt_status.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_cuda_ctx nmt_cuda_ctx; /* kernels/cuda_ctx.h */

void nmt_cpu_linear(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                    const float *w, int32_t ldw, const float *bias, int accumulate,
                    float *y, int32_t ldy);

nmt_status nmt_cuda_linear(nmt_cuda_ctx *ctx, int32_t m, int32_t n, int32_t k,
                           const float *x, int32_t ldx, const float *w, int32_t ldw,
                           const float *bias, int accumulate, float *y, int32_t ldy,
                           nmt_error *err);

/* The same product on TF32 tensor cores at close to fp32 accuracy, for
 * weights that TF32 holds exactly (every fp16 value; nmt_tf32_exact):
 * x = x_hi + x_lo, each part rounded to TF32, so that
 *     y = [w w] . [x_hi; x_lo]^T    (one GEMM over 2k)
 * with exact products and fp32 sums: x is kept to ~22 bits instead of fp32's
 * 24 (pure TF32 keeps 11). w2: [n, 2k] rows [w_j w_j], ldw2 >= 2k; split:
 * scratch [m, 2k] that receives [x_hi x_lo] (nmt_cpu_tf32_split's values).
 * No accumulate. */
nmt_status nmt_cuda_linear_tf32x2(nmt_cuda_ctx *ctx, int32_t m, int32_t n, int32_t k,
                                  const float *x, int32_t ldx, const float *w2, int32_t ldw2,
                                  const float *bias, float *y, int32_t ldy, float *split,
                                  nmt_error *err);

/* The same product on 16-bit tensor cores with fp32 sums: x rounded to
 * `kind` into x16 (scratch [m, k], rows k apart), w16 [n, k] already in
 * `kind` (rows ldw16 apart), y = x16 . w16^T (+ bias) in fp32. No
 * accumulate. The CPU twin: nmt_cpu_half_round_rows on x and w, then
 * nmt_cpu_linear. */
nmt_status nmt_cuda_linear_half(nmt_cuda_ctx *ctx, nmt_half_kind kind, int32_t m, int32_t n,
                                int32_t k, const float *x, int32_t ldx, const void *w16,
                                int32_t ldw16, const float *bias, float *y, int32_t ldy,
                                void *x16, nmt_error *err);
/* The same product with x16 already holding x rounded to `kind` ([m, k]
 * dense, as the kernels that produced x wrote it through nmt_half_out): no
 * rounding pass, the same bits. x is still read where the batch-invariant
 * chain runs instead of cuBLASLt (it rounds x itself: the same values). */
nmt_status nmt_cuda_linear_half_rounded(nmt_cuda_ctx *ctx, nmt_half_kind kind, int32_t m,
                                        int32_t n, int32_t k, const float *x, int32_t ldx,
                                        const void *x16, const void *w16, int32_t ldw16,
                                        const float *bias, float *y, int32_t ldy,
                                        nmt_error *err);

/* dst[i, p] = src[i * ld + p] rounded to `kind` (nearest, ties to even),
 * dst [m, k] dense; on ctx's stream. */
nmt_status nmt_cuda_to_half(nmt_cuda_ctx *ctx, nmt_half_kind kind, int32_t m, int32_t k,
                            const float *src, int32_t ld, void *dst, nmt_error *err);

/* Few-row products (linear_skinny.cu): y[m, n] = x[m, k] . w[n, k]^T
 * (+ bias[n]), tanh applied after with tanh_out, for 1 <= m <=
 * NMT_SKINNY_MAX_ROWS: a batch-1 decoder step's GEMMs and the encoder's
 * one-row recurrences, which read the weights and little else. w is fp32 or
 * 16-bit (rows ldw apart), widened exactly; x is used as is (F32) or
 * rounded to bf16 / fp16 first (the 16-bit precisions' arithmetic, as
 * nmt_cuda_linear_half). fp32 sums. A row's result does not depend on the
 * other rows of the call (the same sums for every m: the policy is chosen
 * from n). The CPU twin:
 * nmt_cpu_half_round_rows on x where rounded, nmt_cpu_linear, tanh.
 * nmt_linear_skinny_fits: 1 when the call takes (m, k); the others get
 * NMT_STATUS_ERROR_ARGUMENT. */
enum { NMT_SKINNY_MAX_ROWS = 8 };
typedef enum nmt_skinny_x {
    NMT_SKINNY_X_F32 = 0,
    NMT_SKINNY_X_BF16 = 1,
    NMT_SKINNY_X_FP16 = 2
} nmt_skinny_x;
typedef enum nmt_weight_type {
    NMT_WEIGHT_F32 = 0,
    NMT_WEIGHT_BF16 = 1,
    NMT_WEIGHT_FP16 = 2
} nmt_weight_type;
/* Its tuning (0 in a field: the policy's choice): outputs, the weight rows
 * a warp computes at once (1, 2 or 4: x read once for more rows, against
 * fewer warps in flight); unroll, the groups of 8 columns whose weights a
 * lane loads before using any (1 or 2); split, the warps that share the
 * k columns of one group of outputs (1, 2 or 4: more loads in flight for
 * few outputs). A row's result depends on the policy but not on m. _plan:
 * the policy that runs for n outputs with `wanted` (NULL: all the
 * policy's). */
typedef struct nmt_skinny_policy {
    int outputs;
    int unroll;
    int split;
} nmt_skinny_policy;
nmt_skinny_policy nmt_cuda_linear_skinny_plan(int32_t n, const nmt_skinny_policy *wanted);
int nmt_linear_skinny_fits(int32_t m, int32_t k);
nmt_status nmt_cuda_linear_skinny(nmt_cuda_ctx *ctx, int32_t m, int32_t n, int32_t k,
                                  const float *x, int32_t ldx, nmt_skinny_x x_round,
                                  const void *w, nmt_weight_type w_type, int32_t ldw,
                                  const float *bias, int tanh_out, float *y, int32_t ldy,
                                  const nmt_skinny_policy *policy, nmt_error *err);

/* The batch-invariant GEMM's arithmetic (linear_chain.cu): each output one
 * chain over k from k = 0, the bits of cuBLASLt's tiled unsplit algorithms
 * at any m. x_round F32: fmaf chain over x and w widened (w any type);
 * BF16 / FP16: x rounded to w's format (w_type the same), mma k16 blocks in
 * order with fp32 sums. Then + bias[n] (NULL: none), then tanh if tanh_out.
 * The CPU twin: nmt_cpu_linear_chain, the same chain for fp32 (the same
 * bits) and over the rounded values for 16-bit (the tensor cores' sums of a
 * block are their own: a tolerance). */
nmt_status nmt_cuda_linear_chain(nmt_cuda_ctx *ctx, int32_t m, int32_t n, int32_t k,
                                 const float *x, int32_t ldx, nmt_skinny_x x_round,
                                 const void *w, nmt_weight_type w_type, int32_t ldw,
                                 const float *bias, int tanh_out, float *y, int32_t ldy,
                                 nmt_error *err);
/* nmt_cuda_linear_chain's 16-bit product, the same bits, on activations
 * already rounded (x16, [m, k] rows ldx16 apart, as nmt_half_out writes
 * them) with the weights streamed through shared memory stages ahead
 * (linear_chain_stream.cu): for a few rows, where the chain kernel waits
 * on each load. _fits: x16 and w16 16-byte aligned with rows a multiple of
 * 8 values apart, and x's staging within the device's shared memory;
 * otherwise the product says NMT_STATUS_ERROR_UNSUPPORTED. */
int nmt_cuda_linear_chain_stream_fits(int32_t k, const void *x16, int32_t ldx16,
                                      const void *w16, int32_t ldw16);
nmt_status nmt_cuda_linear_chain_stream(nmt_cuda_ctx *ctx, nmt_half_kind kind, int32_t m,
                                        int32_t n, int32_t k, const void *x16, int32_t ldx16,
                                        const void *w16, int32_t ldw16, const float *bias,
                                        int tanh_out, float *y, int32_t ldy, nmt_error *err);
void nmt_cpu_linear_chain(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                          nmt_skinny_x x_round, const float *w, int32_t ldw, const float *bias,
                          int tanh_out, float *y, int32_t ldy);

/* x rounded to `kind` and widened back: what the GPU's GEMM multiplies. */
float nmt_half_round(nmt_half_kind kind, float x);
/* dst[i, p] = nmt_half_round(src[i * ld + p]), dst [m, k] dense. */
void nmt_cpu_half_round_rows(nmt_half_kind kind, int32_t m, int32_t k, const float *src,
                             int32_t ld, float *dst);

/* x rounded to TF32 (10 mantissa bits, nearest, ties away from zero): the
 * GPU's split rounds the same way. */
float nmt_tf32_round(float x);
/* split[i, :] = [hi(x[i, :]) lo(x[i, :])] with hi = tf32(x), lo = tf32(x - hi). */
void nmt_cpu_tf32_split(int32_t m, int32_t k, const float *x, int32_t ldx, float *split);
/* 1 when each of the n floats is exactly a TF32 value (low 13 mantissa bits 0). */
int nmt_tf32_exact(const float *values, size_t n);
/* 1 when each of the n floats is exactly an fp16 value: the same bits after
 * nmt_half_round to fp16. */
int nmt_fp16_exact(const float *values, size_t n);

#ifdef __cplusplus
}
#endif
#endif
