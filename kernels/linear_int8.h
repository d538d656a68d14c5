/* linear_int8.h: the CPU's int8 product (--precision int8), y[m, n] =
 * x[m, k] . w[n, k]^T (+ bias) (+ y) with both sides in int8 and exact
 * int32 sums, on AVX-512 VNNI (vpdpbusd: 64 multiply-adds an instruction,
 * 4x fp32's) or on AVX2 (vpmaddubsw and vpmaddwd, never saturating:
 * kernels/cpu/linear_int8_avx2.c), as a register-blocked outer product over
 * packed weights (an integer sum needs no fixed order). Both give the same
 * sums, so the same bits. Per-row scales (Jacob et al., "Quantization and Training of
 * Neural Networks for Efficient Integer-Arithmetic-Only Inference", with
 * symmetric weights):
 *   w: row j as round(w_jp / s_j), s_j = max_p |w_jp| / 127, made once;
 *   x: row i as u_ip = round(x_ip / t_i) + 128, t_i = max_p |x_ip| / 127,
 *      made a call (vpdpbusd multiplies unsigned by signed bytes);
 *   y_ij = (float)(sum_p u_ip q_jp - 128 sum_p q_jp) * t_i * s_j (+ bias) (+ y).
 * The sum is an integer, exact in any order, and t_i depends on row i
 * alone, so a row's bits depend on nothing else: batch invariance by
 * construction. Threads and tiles as kernels/linear_fixed.h's. */
#ifndef NMT_KERNELS_LINEAR_INT8_H
#define NMT_KERNELS_LINEAR_INT8_H

#include "linear_fixed.h"
#include "nmt_status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* k is padded to a multiple of this with zero weights, n to a multiple of
 * NMT_INT8_PANEL. */
enum { NMT_INT8_K_ALIGN = 64, NMT_INT8_PANEL = 16 };

/* A weight matrix in int8, laid out for vpdpbusd: panels of 16 output
 * columns, each holding, for every 4 k, the 16 columns' 4 bytes (so one
 * 64-byte load feeds 16 columns' sums and no sum needs a horizontal add):
 * weight (j, p) at q[(j / 16) * ld * 16 + (p / 4) * 64 + (j % 16) * 4 + p % 4]
 * (ld = k padded; nmt_int8_weight). scale[n_padded], and colsum[j] = 128
 * sum_p q_jp (the unsigned shift of x taken back out). */
typedef struct nmt_int8_matrix {
    int32_t n, k, ld;
    int8_t *q;
    float *scale;
    int32_t *colsum;
} nmt_int8_matrix;

static inline int8_t nmt_int8_weight(const nmt_int8_matrix *w, int32_t j, int32_t p)
{
    const int64_t panel = (int64_t)(j / NMT_INT8_PANEL) * w->ld * NMT_INT8_PANEL;
    return w->q[panel + (p / 4) * 4 * NMT_INT8_PANEL + (j % NMT_INT8_PANEL) * 4 + p % 4];
}

/* 1 when this build and CPU run the int8 product on the fp32 path isa
 * (nmt_cpu_isa; AUTO: the best): avx512 with AVX-512 F, BW and VNNI, else
 * (avx512 or avx2) with AVX2; never generic. */
int nmt_cpu_int8_supported(nmt_cpu_isa isa);

/* w [n, k] rows ldw apart in int8; free with nmt_int8_matrix_free. */
nmt_status nmt_int8_matrix_make(const float *w, int32_t n, int32_t k, int32_t ldw,
                                nmt_int8_matrix *out, nmt_error *err);
void nmt_int8_matrix_free(nmt_int8_matrix *w);

/* Rows of x in the unsigned form above: xq [m, ldq] (ldq >= k rounded up to
 * NMT_INT8_K_ALIGN; the padding set to 128), scale[m]. */
void nmt_cpu_quantize_rows(int32_t m, int32_t k, const float *x, int32_t ldx, uint8_t *xq,
                           int32_t ldq, float *scale);

/* y = x . w^T (+ bias) (+ y) from quantized rows; gemm->pool's threads, on
 * gemm->isa's int8 tile (nmt_cpu_int8_supported(gemm->isa) must hold). */
void nmt_cpu_linear_int8(const nmt_cpu_gemm *gemm, int32_t m, const uint8_t *xq, int32_t ldq,
                         const float *x_scale, const nmt_int8_matrix *w, const float *bias,
                         int accumulate, float *y, int32_t ldy);

#ifdef __cplusplus
}
#endif
#endif
