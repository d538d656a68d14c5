/* spmm.h: y[m, n] = x[m, k] . W^T (+ bias[n]) (+ y if accumulate) with W a
 * sparse matrix [n, k] in CSR form: row j of W (output j) holds the values
 * values[row_offsets[j] .. row_offsets[j + 1]) at the columns
 * col_indices[...], strictly increasing, each in [0, k). The signature is
 * nmt_cpu_linear's (kernels/linear.h) with (w, ldw) replaced by the CSR.
 *
 * CPU: the plain loop, each output one double-accumulated dot product over
 * the row's nonzeros in column order, rounded once. With the zeros of a dense
 * matrix dropped it gives exactly nmt_cpu_linear's result on that matrix
 * (the skipped products are exact zeros), which the CPU engine relies on.
 *
 * CUDA (kernels/cuda/spmm*.cu): Gale et al.'s SpMM ("Sparse GPU Kernels for
 * Deep Learning", SC 2020) on a copy of the CSR prepared once on the device
 * (nmt_cuda_spmm_prepare: the row swizzle, fp32 or fp16 values, 16-bit
 * column indices when k allows, padded for vector loads). The same sum in
 * fp32 in another order: within (nnz of the row + 2) 2^-23 sum |terms| of
 * the CPU's, the bound tests/kernels/test_gpu_spmm.cu holds it to. */
#ifndef NMT_KERNELS_SPMM_H
#define NMT_KERNELS_SPMM_H

#include "nmt_status.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void nmt_cpu_spmm(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                  const int32_t *row_offsets, const int32_t *col_indices, const float *values,
                  const float *bias, int accumulate, float *y, int32_t ldy);

/* Gale et al.'s row swizzle: order[0 .. n) = the rows of W by decreasing
 * nonzero count, equal counts by increasing row, so rows of similar length
 * share a warp and the longest start first. In place (a heap sort), no
 * allocation. The CUDA preparation uploads it; plain C so the CPU tests
 * check it. */
void nmt_spmm_row_order(int32_t n, const int32_t *row_offsets, int32_t *order);

/* ---- CUDA ------------------------------------------------------------------ */

typedef enum nmt_spmm_values {
    NMT_SPMM_VALUES_FP32 = 0,
    NMT_SPMM_VALUES_FP16 = 1 /* rounded to nearest even; products and sums in fp32 */
} nmt_spmm_values;

/* A CSR matrix as the kernels read it, on the device (opaque). */
typedef struct nmt_cuda_spmm_matrix nmt_cuda_spmm_matrix;

/* Builds W's device copy from a host CSR [n, k] once (at load, never in a
 * decode loop): row offsets, the row order (nmt_spmm_row_order), column
 * indices of index_bits (0: 16 when k <= 65536, else 32; or 16, 32) and the
 * values as `values`, the index and value arrays padded with zeros to a
 * multiple of 8 entries (the vector loads' reach past the last row).
 * Checks what the kernels rely on: offsets from 0, never decreasing, nnz <
 * 2^31 - 4096; every column in [0, k); values finite, and in fp16's range
 * for NMT_SPMM_VALUES_FP16 (refusals name the row and column). Copies on
 * `stream` (a cudaStream_t; NULL: the legacy stream) and waits for it. */
nmt_status nmt_cuda_spmm_prepare(int32_t n, int32_t k, const int32_t *row_offsets,
                                 const int32_t *col_indices, const float *values,
                                 nmt_spmm_values value_type, int index_bits, void *stream,
                                 nmt_cuda_spmm_matrix **matrix, nmt_error *err);
void nmt_cuda_spmm_free(nmt_cuda_spmm_matrix *matrix); /* NULL: nothing */

typedef struct nmt_cuda_spmm_info {
    int32_t rows, cols, nnz;      /* n, k and the stored entries */
    nmt_spmm_values value_type;
    int index_bits;               /* 16 or 32 */
    size_t device_bytes;          /* the one allocation */
    size_t read_bytes;            /* what one pass over W reads: offsets, order, indices, values */
} nmt_cuda_spmm_info;
void nmt_cuda_spmm_describe(const nmt_cuda_spmm_matrix *matrix, nmt_cuda_spmm_info *info);

/* The kernels (kernels/cuda/spmm.cu says how each works):
 *   ROW  a subwarp of `lanes` threads a row of W, each lane 4 (fp32) or 8
 *        (fp16) nonzeros a vector load, `rows` rows of x a subwarp read where
 *        x is; no workspace. For few rows of x (the decoder's steps).
 *   TILE Gale et al.'s kernel proper: x transposed into the workspace, a
 *        subwarp a 1-D tile of `tile` outputs along x's rows, float4 loads
 *        of x^T, then transposed back into y with the bias. For many rows. */
typedef enum nmt_spmm_variant {
    NMT_SPMM_AUTO = 0,
    NMT_SPMM_ROW = 1,
    NMT_SPMM_TILE = 2
} nmt_spmm_variant;

/* A call's kernel and its tuning; 0 in a field: the policy's choice. */
typedef struct nmt_spmm_config {
    nmt_spmm_variant variant;
    int lanes; /* ROW: 4, 8, 16 or 32 */
    int rows;  /* ROW: 1, 4 or 8 */
    int tile;  /* TILE: 8, 16, 32 or 64 */
} nmt_spmm_config;

/* "auto", "row", "tile". */
const char *nmt_cuda_spmm_variant_name(nmt_spmm_variant variant);
/* The configuration a call of m rows runs with `wanted` (NULL: all AUTO):
 * its zeros filled by the policy, the fields asked kept as they are (the
 * launchers refuse a value not listed above). */
nmt_spmm_config nmt_cuda_spmm_plan(const nmt_cuda_spmm_matrix *matrix, int32_t m,
                                   const nmt_spmm_config *wanted);

/* Device workspace bytes for any call with at most m rows (config NULL: the
 * AUTO launcher's; otherwise that configuration's). 0 for ROW. Allocate it
 * once; one workspace must not serve two calls at the same time. */
size_t nmt_cuda_spmm_workspace_size(const nmt_cuda_spmm_matrix *matrix, int32_t m,
                                    const nmt_spmm_config *config);

/* n and k must be the matrix's; ldx >= k, ldy >= n; x and y do not overlap;
 * `stream` a cudaStream_t. Never allocates or synchronizes (graph-capturable);
 * refuses (NMT_STATUS_ERROR_ARGUMENT) a workspace smaller than the call needs. */
nmt_status nmt_cuda_spmm(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                         const nmt_cuda_spmm_matrix *w, const float *bias, int accumulate,
                         float *y, int32_t ldy, void *workspace, size_t workspace_bytes,
                         void *stream, nmt_error *err);
/* The same with the configuration named (the tests and the bench);
 * NMT_STATUS_ERROR_UNSUPPORTED for a field that is not one of the listed. */
nmt_status nmt_cuda_spmm_with(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                              const nmt_cuda_spmm_matrix *w, const float *bias, int accumulate,
                              float *y, int32_t ldy, void *workspace, size_t workspace_bytes,
                              const nmt_spmm_config *config, void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
