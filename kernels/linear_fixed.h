/* linear_fixed.h: the CPU's own fp32 product, y[m, n] = x[m, k] . w[n, k]^T
 * (+ bias[n]) (+ y if accumulate), as nmt_cpu_linear (kernels/linear.h),
 * vectorized and threaded, with every output computed by one fixed
 * sequence of float operations, whatever m, the row's position, the
 * threads or which tail of the tiling the output falls in. So a row's bits
 * never depend on its batch (batch invariance), on any BLAS.
 *
 * One output's arithmetic, given the ISA path's lanes L and fma flag
 * (nmt_cpu_isa_lanes, nmt_cpu_isa_fma): term p of the k goes to lane p mod L
 * (k padded with zero terms to a multiple of L); each lane sums its terms
 * in order from 0, acc = fma(x_p, w_p, acc) (without fma: acc + x_p * w_p,
 * each rounded); the lanes are added as a tree, lane l + lane l + L/2, then
 * l + L/4, ..., down to one float s; the output is (s + bias) + y, the
 * bias and y only when given. The paths differ in L and fma, so their bits
 * differ from each other; one process uses one path.
 *
 * The weights are read as they lie, [n, k] rows (no packed copy): an
 * output is a dot product of two contiguous rows. Tiles of up to 6 rows x
 * 4 columns keep their partial sums in registers; the columns are split
 * over the pool's threads in cache-sized chunks (kernels/cpu/linear_fixed.c). */
#ifndef NMT_KERNELS_LINEAR_FIXED_H
#define NMT_KERNELS_LINEAR_FIXED_H

#include "nmt_enums.h"
#include "nmt_status.h"
#include "thread_pool.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The code paths: nmt_cpu_isa (core/nmt_enums.h); AUTO means the best. */
enum { NMT_CPU_ISA_COUNT = NMT_CPU_ISA_AVX512 + 1 };

/* The fastest path this build and CPU run (never AUTO). */
nmt_cpu_isa nmt_cpu_isa_best(void);
/* 1 when this build has the path and the CPU (and OS) run it. */
int nmt_cpu_isa_supported(nmt_cpu_isa isa);
/* "auto", "generic", "avx2", "avx512"; NULL for an unknown value. */
const char *nmt_cpu_isa_name(nmt_cpu_isa isa);
/* OK for a supported path; else refuses it (an unknown value, or
 * instructions this CPU lacks), naming the paths it runs. */
nmt_status nmt_cpu_isa_check(nmt_cpu_isa isa, nmt_error *err);
int nmt_cpu_isa_lanes(nmt_cpu_isa isa);
int nmt_cpu_isa_fma(nmt_cpu_isa isa);

/* Where a product runs: the path (supported; AUTO: the best) and the
 * threads (NULL: the caller's alone). */
typedef struct nmt_cpu_gemm {
    nmt_cpu_isa isa;
    nmt_thread_pool *pool;
} nmt_cpu_gemm;

/* x and y must not overlap; ldx >= k, ldw >= k, ldy >= n. */
void nmt_cpu_linear_fixed(const nmt_cpu_gemm *gemm, int32_t m, int32_t n, int32_t k,
                          const float *x, int32_t ldx, const float *w, int32_t ldw,
                          const float *bias, int accumulate, float *y, int32_t ldy);

/* The same with the weights in fp16 (IEEE binary16, w16 [n, k] rows ldw
 * apart), each widened to fp32 exactly as it is read: the same bits as
 * nmt_cpu_linear_fixed on their fp32 values, from half the bytes (a step of
 * few rows is bound by reading the weights). */
void nmt_cpu_linear_fixed_half(const nmt_cpu_gemm *gemm, int32_t m, int32_t n, int32_t k,
                               const float *x, int32_t ldx, const uint16_t *w16, int32_t ldw,
                               const float *bias, int accumulate, float *y, int32_t ldy);

#ifdef __cplusplus
}
#endif
#endif
