/* linear_fixed_impl.h: what the code paths of nmt_cpu_linear_fixed
 * (kernels/linear_fixed.h) share: the call, the tile function each path
 * implements (linear_fixed_{generic,avx2,avx512}.c) and the scalar finish
 * of an output. Private to kernels/cpu/. */
#ifndef NMT_LINEAR_FIXED_IMPL_H
#define NMT_LINEAR_FIXED_IMPL_H

#include "half.h"
#include "linear_int8.h"

#include <stdint.h>

/* One product, as nmt_cpu_linear_fixed's arguments. */
typedef struct nmt_fixed_job {
    int32_t m, n, k;
    const float *x;
    int32_t ldx;
    const float *w;
    const uint16_t *w16; /* or the weights in fp16 (exact in fp32): read instead of w */
    int32_t ldw;
    const float *bias;
    int accumulate;
    float *y;
    int32_t ldy;
    /* The int8 product (kernels/linear_int8.h): x quantized, and w. */
    const uint8_t *xq;
    int32_t ldq;
    const float *x_scale;
    const nmt_int8_matrix *w8;
} nmt_fixed_job;

/* Columns of a tile: every path's reduction ends in a row's 4 outputs. */
enum { NMT_FIXED_TILE_COLS = 4 };

/* Outputs [row, row + rows) x [col, col + cols) of the job, rows at most
 * the path's tile rows, cols at most its tile columns (NMT_FIXED_TILE_COLS
 * for the fp32 paths). */
typedef void (*nmt_fixed_tile_fn)(const nmt_fixed_job *job, int32_t row, int rows, int32_t col,
                                  int cols);

void nmt_fixed_tile_generic(const nmt_fixed_job *job, int32_t row, int rows, int32_t col,
                            int cols);
void nmt_fixed_tile_avx2(const nmt_fixed_job *job, int32_t row, int rows, int32_t col, int cols);
void nmt_fixed_tile_avx512(const nmt_fixed_job *job, int32_t row, int rows, int32_t col,
                           int cols);
void nmt_fixed_tile_int8(const nmt_fixed_job *job, int32_t row, int rows, int32_t col, int cols);
void nmt_fixed_tile_int8_avx2(const nmt_fixed_job *job, int32_t row, int rows, int32_t col,
                              int cols);
/* The int8 tiles: VNNI's rows x 4 panels of 16 columns, AVX2's rows x 2 panels. */
enum { NMT_FIXED_INT8_TILE_ROWS = 6, NMT_FIXED_INT8_TILE_COLS = 64 };
enum { NMT_FIXED_INT8_AVX2_TILE_ROWS = 2, NMT_FIXED_INT8_AVX2_TILE_COLS = 32 };
/* 1 when the file was compiled with its instructions (x86-64 GCC or Clang). */
extern const int nmt_fixed_avx2_built, nmt_fixed_avx512_built, nmt_fixed_int8_built,
    nmt_fixed_int8_avx2_built;

/* Panel c of an int8 tile from column col, cols of its columns used: its
 * packed weights; a panel past cols repeats the first (its sums are dropped). */
static inline const int8_t *nmt_int8_tile_panel(const nmt_int8_matrix *w8, int32_t col,
                                                int cols, int c)
{
    const int32_t panel = col / NMT_INT8_PANEL + (c * NMT_INT8_PANEL < cols ? c : 0);
    return w8->q + (int64_t)panel * w8->ld * NMT_INT8_PANEL;
}

/* The paths' loops around a tile (linear_fixed.c). */
void nmt_fixed_run(const nmt_cpu_gemm *gemm, const nmt_fixed_job *job, nmt_fixed_tile_fn tile,
                   int tile_rows, int tile_cols, int weight_bytes);

/* Weight p of row j, from w or w16 (the generic path's reads). */
static inline float nmt_fixed_weight(const nmt_fixed_job *job, int32_t j, int32_t p)
{
    return job->w16 ? nmt_f16_to_f32(job->w16[(int64_t)j * job->ldw + p])
                    : job->w[(int64_t)j * job->ldw + p];
}

/* Output (row, col) from its lane sum s: (s + bias) + y. */
static inline void nmt_fixed_finish(const nmt_fixed_job *job, int32_t row, int32_t col, float s)
{
    float *out = job->y + (int64_t)row * job->ldy + col;
    if (job->bias)
        s += job->bias[col];
    *out = job->accumulate ? s + *out : s;
}

#endif
