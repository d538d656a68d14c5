/* linear_blas.h: the fast CPU product, y[m, n] = x[m, k] . w[n, k]^T
 * (+ bias[n]) (+ y if accumulate), as nmt_cpu_linear (kernels/linear.h) but
 * through the BLAS's SGEMM in float, for the production CPU path
 * (model/cpu/, "blas" kernels). The reference nmt_cpu_linear stays the
 * oracle.
 *
 * Batch invariance: row i's result must not depend on m. OpenBLAS runs a
 * few-output call (m * n small) on its "small matrix" kernels and newer
 * releases send m = 1 to GEMV, each summing in another order than its
 * blocked GEMM; threads split m and n only, never k. So a call of fewer than
 * nmt_cpu_blas_min_rows(n) rows computes that many (x copied into the
 * scratch, its extra rows zero) and keeps its own: every row then goes
 * through the blocked kernel, whose sums are fixed by k alone
 * (tests/kernels/test_cpu_blas.c checks m = 1..300 bitwise). That holds for
 * OpenBLAS's SkylakeX/Cooperlake and Sandybridge kernels but not for its
 * Haswell/Zen ones, whose row results move with m even padded, so
 * nmt_cpu_blas_row_invariant probes the BLAS the process loaded. */
#ifndef NMT_KERNELS_LINEAR_BLAS_H
#define NMT_KERNELS_LINEAR_BLAS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the library was built with a BLAS (NMT_WITH_BLAS); 0: every
 * function below falls back to the reference. */
int nmt_cpu_blas_available(void);
/* The BLAS's name and its build ("OpenBLAS 0.3.21 ... Cooperlake"), or "none". */
const char *nmt_cpu_blas_name(void);

/* 1 when nmt_cpu_linear_blas gives each row the same bits at every m and
 * position, at the current thread count: a probe of a few small products on
 * the first call (a few ms), cached per thread count; 1 without a BLAS. */
int nmt_cpu_blas_row_invariant(void);

/* The threads one BLAS call may use. OpenBLAS keeps one count for the whole
 * process: the last call wins, and every translator of a process sets the same. */
void nmt_cpu_blas_set_threads(int threads);
int nmt_cpu_blas_threads(void);

/* Rows a call computes at least, for n outputs a row. */
int32_t nmt_cpu_blas_min_rows(int32_t n);
/* Floats of scratch nmt_cpu_linear_blas needs for (n, k), any m. */
size_t nmt_cpu_linear_blas_scratch(int32_t n, int32_t k);

/* scratch: nmt_cpu_linear_blas_scratch(n, k) floats, used when m is below
 * nmt_cpu_blas_min_rows(n). x and y must not overlap. */
void nmt_cpu_linear_blas(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                         const float *w, int32_t ldw, const float *bias, int accumulate,
                         float *y, int32_t ldy, float *scratch);

#ifdef __cplusplus
}
#endif
#endif
