/* spmm.cu: y[m, n] = x[m, k] . W^T (+ bias) (+ y) with W [n, k] sparse
 * (CSR), the front: the device copy of W (nmt_cuda_spmm_prepare), the
 * dispatch policy, the workspace and the exported launchers
 * (kernels/spmm.h). The CPU twin and oracle is nmt_cpu_spmm.
 *
 * Gale, Zaharia, Young and Elsen, "Sparse GPU Kernels for Deep Learning"
 * (SC 2020): SpMM for the sparsity of pruned networks (70-99%, rows of
 * similar length, tens to hundreds of nonzeros a row), whose techniques
 * both variants use:
 *  - 1-D tiling of the output: a (sub)warp owns one row of W against a strip
 *    of x's rows, so the row's nonzeros are read once for the strip;
 *  - subwarp tiling: a warp holds 32 / lanes such strips, so short rows and
 *    few outputs do not leave lanes idle;
 *  - vector memory instructions on the CSR arrays, 16 bytes a load, made
 *    possible at any row start by reverse-offset memory alignment (ROMA):
 *    the first load starts at the vector-aligned entry at or below the row's
 *    start and the previous row's entries are masked, instead of padding
 *    every row (the CSR stays the file's);
 *  - row swizzle load balancing: a row order sorted by length once at
 *    preparation (nmt_spmm_row_order) gives a warp rows of similar length and
 *    starts the longest first;
 *  - fp16 values with 16-bit column indices (the paper's mixed precision:
 *    half the bytes of W a nonzero), converted to fp32 for the FMAs.
 * Variants (nmt_spmm_variant; AUTO picks by the rows of x, kPolicy):
 *  row  (spmm_row.cu) a subwarp's lanes split W's row and gather x where it
 *       is; for the decoder's few rows, where W's bytes are the time;
 *  tile (spmm_tile.cu) the paper's kernel on x^T (transposed into the
 *       workspace) with float4 loads along x's rows, y^T transposed back.
 * The preparation also validates what the kernels index with (offsets,
 * columns), so a bad CSR is refused once rather than read out of bounds. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "cuda_ctx.h"
#include "spmm.h"
#include "spmm_variants.cuh"

/* The dispatch's tuning choices, one place, each with the bench_spmm sweep
 * that sets it (docs/sparse.md). The row/tile choice is measured; the
 * others are first guesses from the reasoning beside them. */
struct nmt_spmm_policy {
    /* AUTO: the row variant up to row_min_rows rows of x; above, up to
     * row_max_rows, while the tile variant would launch fewer blocks than
     * tile_min_blocks an SM (a short W splits into few 1-D tiles: at 16
     * rows, 32 blocks for 1024 rows of W, 1,000 for 32000); else the tile
     * variant. The row variant reads W once a strip of 8 rows and gathers x
     * scalar by scalar; the tile variant reads W once a strip of up to 64
     * rows with float4 loads of x^T, but pays two transposes and three
     * launches, and leaves SMs idle when its grid is short; 1 block an SM is
     * where the tall W (4096 rows) still favours tile (docs/sparse.md, "Row
     * or tile").
     * bench_spmm --variant row,tile --rows 8,12,16,24,32,48,64 --sparsity 0.7,0.9 */
    int row_min_rows = 8, row_max_rows = 64;
    int tile_min_blocks = 1;
    /* Row: lanes a row of W, the fewest of 4, 8, 16, 32 whose loads take
     * the mean row in at most this many passes (a pass: lanes x 4 fp32 or 8
     * fp16 entries): fewer lanes for short rows keep lanes busy, more give
     * long rows more loads in flight.
     * bench_spmm --variant row/4,row/8,row/16,row/32 --rows 5 --sparsity 0.5,0.9,0.98 */
    int row_passes = 2;
    /* Row: rows of x a subwarp: 1 for one row, 4 up to 4, else 8 (the most
     * kept in registers). bench_spmm --variant row/32x4,row/32x8 --rows 5,8 */
    int row_rows_max = 8;
    /* Tile: outputs a subwarp along x's rows: m rounded up to a power of
     * two, 8..64 (the paper's heuristic, with 4 outputs a thread).
     * bench_spmm --variant tile/16,tile/32,tile/64 --rows 40,320,5120 */
    int tile_min = 8, tile_max = 64;
};
static constexpr nmt_spmm_policy kPolicy{};
static_assert(kPolicy.tile_min >= 8 && kPolicy.tile_max <= 64, "the tile kernel's instances");
static_assert(kPolicy.row_rows_max == 8, "the row kernel's largest instance");

static constexpr int64_t kMaxNnz = (int64_t)INT32_MAX - 4096; /* loop indices stay in int32 */

/* ---- preparation ---------------------------------------------------------------- */

static size_t part_bytes(size_t bytes) { return nmt_align_up(bytes ? bytes : 1, 256); }

/* Checks the CSR and writes the device image into `image` (zeroed): offsets,
 * order, indices, values at the offsets the caller carved. */
static nmt_status fill_image(int32_t n, int32_t k, const int32_t *row_offsets,
                             const int32_t *col_indices, const float *values,
                             nmt_spmm_values value_type, int index_bits, int32_t *offsets_out,
                             int32_t *order_out, void *cols_out, void *values_out,
                             nmt_error *err)
{
    memcpy(offsets_out, row_offsets, ((size_t)n + 1) * sizeof(int32_t));
    nmt_spmm_row_order(n, row_offsets, order_out);
    for (int32_t j = 0; j < n; j++)
        for (int32_t p = row_offsets[j]; p < row_offsets[j + 1]; p++) {
            const int32_t col = col_indices[p];
            const float v = values[p];
            if (col < 0 || col >= k)
                return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                     "spmm: row %d: column %d outside [0, %d)", j, col, k);
            if (!isfinite(v))
                return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                     "spmm: row %d, column %d: value %g is not finite", j, col,
                                     (double)v);
            if (index_bits == 16)
                static_cast<uint16_t *>(cols_out)[p] = (uint16_t)col;
            else
                static_cast<int32_t *>(cols_out)[p] = col;
            if (value_type == NMT_SPMM_VALUES_FP16) {
                const __half h = __float2half_rn(v); /* nearest even, as the fp16 writers */
                if (isinf(__half2float(h)))
                    return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                         "spmm: row %d, column %d: value %g is beyond fp16's "
                                         "range", j, col, (double)v);
                static_cast<__half *>(values_out)[p] = h;
            } else {
                static_cast<float *>(values_out)[p] = v;
            }
        }
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_spmm_prepare(int32_t n, int32_t k, const int32_t *row_offsets,
                                            const int32_t *col_indices, const float *values,
                                            nmt_spmm_values value_type, int index_bits,
                                            void *stream, nmt_cuda_spmm_matrix **matrix,
                                            nmt_error *err)
{
    NMT_ARG_CHECK(matrix);
    *matrix = NULL;
    NMT_ARG_CHECK(n >= 1 && k >= 1 && row_offsets);
    NMT_ARG_CHECK(value_type == NMT_SPMM_VALUES_FP32 || value_type == NMT_SPMM_VALUES_FP16);
    NMT_ARG_CHECK(index_bits == 0 || index_bits == 16 || index_bits == 32);
    if (index_bits == 0)
        index_bits = k <= 65536 ? 16 : 32;
    if (index_bits == 16 && k > 65536)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "spmm: 16-bit column indices need k <= 65536 (k %d)", k);
    if (row_offsets[0] != 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "spmm: the row offsets start at %d, not 0", row_offsets[0]);
    for (int32_t j = 0; j < n; j++)
        if (row_offsets[j + 1] < row_offsets[j])
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "spmm: row %d: offset %d after %d (offsets never decrease)",
                                 j + 1, row_offsets[j + 1], row_offsets[j]);
    const int32_t nnz = row_offsets[n];
    if (nnz > kMaxNnz)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "spmm: %d nonzeros (at most %lld)", nnz, (long long)kMaxNnz);
    NMT_ARG_CHECK(nnz == 0 || (col_indices && values));

    const size_t value_size = value_type == NMT_SPMM_VALUES_FP16 ? 2 : 4;
    const size_t padded = nmt_align_up((size_t)nnz, kSpmmPadEntries);
    const size_t off_order = part_bytes(((size_t)n + 1) * sizeof(int32_t));
    const size_t off_cols = off_order + part_bytes((size_t)n * sizeof(int32_t));
    const size_t off_values = off_cols + part_bytes(padded * (size_t)(index_bits / 8));
    const size_t total = off_values + part_bytes(padded * value_size);

    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_spmm_matrix *w = NULL;
    void *block = NULL;
    char *image = (char *)calloc(1, total); /* zeros: the padding */
    if (!image) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                               "spmm: out of host memory (%zu bytes)", total);
        goto cleanup;
    }
    NMT_TRY(fill_image(n, k, row_offsets, col_indices, values, value_type, index_bits,
                       (int32_t *)image, (int32_t *)(image + off_order), image + off_cols,
                       image + off_values, err));
    NMT_CUDA_TRY(cudaMalloc(&block, total));
    NMT_CUDA_TRY(cudaMemcpyAsync(block, image, total, cudaMemcpyHostToDevice,
                                 (cudaStream_t)stream));
    NMT_CUDA_TRY(cudaStreamSynchronize((cudaStream_t)stream)); /* before the image is freed */
    w = (nmt_cuda_spmm_matrix *)calloc(1, sizeof *w);
    if (!w) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "spmm: out of host memory");
        goto cleanup;
    }
    w->rows = n;
    w->cols = k;
    w->nnz = nnz;
    w->value_type = value_type;
    w->index_bits = index_bits;
    w->mean_row_nnz = (double)nnz / n;
    w->sm_count = nmt_cuda_sm_count(-1); /* the current device's: AUTO's variant choice */
    if (w->sm_count < 1) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_CUDA,
                               "spmm: the current device's SM count could not be read");
        goto cleanup;
    }
    w->block = block;
    w->block_bytes = total;
    w->read_bytes = ((size_t)n + 1) * 4 + (size_t)n * 4 + (size_t)nnz * (index_bits / 8) +
                    (size_t)nnz * value_size;
    w->row_offsets = (const int32_t *)block;
    w->row_order = (const int32_t *)((char *)block + off_order);
    w->col_indices = (char *)block + off_cols;
    w->values = (char *)block + off_values;
    *matrix = w;
    block = NULL;
cleanup:
    if (block)
        cudaFree(block); /* the failure being reported is the first one */
    if (*matrix != w)
        free(w);
    free(image);
    return status;
}

extern "C" void nmt_cuda_spmm_free(nmt_cuda_spmm_matrix *matrix)
{
    if (!matrix)
        return;
    cudaFree(matrix->block); /* nothing to report to: a free cannot fail usefully */
    free(matrix);
}

extern "C" void nmt_cuda_spmm_describe(const nmt_cuda_spmm_matrix *matrix,
                                       nmt_cuda_spmm_info *info)
{
    memset(info, 0, sizeof *info);
    if (!matrix)
        return;
    info->rows = matrix->rows;
    info->cols = matrix->cols;
    info->nnz = matrix->nnz;
    info->value_type = matrix->value_type;
    info->index_bits = matrix->index_bits;
    info->device_bytes = matrix->block_bytes;
    info->read_bytes = matrix->read_bytes;
}

/* ---- plan ---------------------------------------------------------------------- */

static int row_lanes(const nmt_cuda_spmm_matrix &w)
{
    const int vec = w.value_type == NMT_SPMM_VALUES_FP16 ? SpmmVec<__half>::kEntries
                                                         : SpmmVec<float>::kEntries;
    int lanes = 4;
    while (lanes < kWarpSize && (double)lanes * vec * kPolicy.row_passes < w.mean_row_nnz)
        lanes *= 2;
    return lanes;
}

static int row_rows(int32_t m) { return m <= 1 ? 1 : (m <= 4 ? 4 : kPolicy.row_rows_max); }

static int tile_outputs(int32_t m)
{
    int tile = kPolicy.tile_min;
    while (tile < kPolicy.tile_max && tile < m)
        tile *= 2;
    return tile;
}

/* Row for a few rows, and while the tile kernel's grid would not fill the
 * GPU; tile_blocks grows with m, so the choice switches once, to tile (and
 * the workspace, none for row, never shrinks as m grows). */
static nmt_spmm_variant auto_variant(const nmt_cuda_spmm_matrix &w, int32_t m)
{
    if (m <= kPolicy.row_min_rows)
        return NMT_SPMM_ROW;
    if (m > kPolicy.row_max_rows)
        return NMT_SPMM_TILE;
    const int64_t blocks = nmt_spmm_tile_blocks(m, w.rows, tile_outputs(m));
    return blocks < (int64_t)kPolicy.tile_min_blocks * w.sm_count ? NMT_SPMM_ROW : NMT_SPMM_TILE;
}

extern "C" nmt_spmm_config nmt_cuda_spmm_plan(const nmt_cuda_spmm_matrix *matrix, int32_t m,
                                              const nmt_spmm_config *wanted)
{
    nmt_spmm_config c = {NMT_SPMM_AUTO, 0, 0, 0};
    if (wanted)
        c = *wanted;
    if (!matrix)
        return c;
    if (c.variant == NMT_SPMM_AUTO)
        c.variant = auto_variant(*matrix, m);
    if (c.variant == NMT_SPMM_ROW) {
        c.lanes = c.lanes ? c.lanes : row_lanes(*matrix);
        c.rows = c.rows ? c.rows : row_rows(m);
    } else if (c.variant == NMT_SPMM_TILE) {
        c.tile = c.tile ? c.tile : tile_outputs(m);
    }
    return c;
}

static bool tile_listed(int tile) { return tile == 8 || tile == 16 || tile == 32 || tile == 64; }

/* Monotone in m for a fixed config and for AUTO (ld_t = m rounded up to the
 * tile, the tile growing with m), so the size at m covers every call up to m. */
extern "C" size_t nmt_cuda_spmm_workspace_size(const nmt_cuda_spmm_matrix *matrix, int32_t m,
                                               const nmt_spmm_config *config)
{
    if (!matrix || m <= 0)
        return 0;
    const nmt_spmm_config plan = nmt_cuda_spmm_plan(matrix, m, config);
    if (plan.variant != NMT_SPMM_TILE || !tile_listed(plan.tile))
        return 0;
    return nmt_spmm_tile_workspace_size(m, matrix->rows, matrix->cols, plan.tile);
}

extern "C" const char *nmt_cuda_spmm_variant_name(nmt_spmm_variant variant)
{
    switch (variant) {
    case NMT_SPMM_AUTO: return "auto";
    case NMT_SPMM_ROW: return "row";
    case NMT_SPMM_TILE: return "tile";
    }
    return "unknown";
}

/* ---- launchers ------------------------------------------------------------------ */

extern "C" nmt_status nmt_cuda_spmm_with(int32_t m, int32_t n, int32_t k, const float *x,
                                         int32_t ldx, const nmt_cuda_spmm_matrix *w,
                                         const float *bias, int accumulate, float *y,
                                         int32_t ldy, void *workspace, size_t workspace_bytes,
                                         const nmt_spmm_config *config, void *stream,
                                         nmt_error *err)
{
    NMT_ARG_CHECK(w && m >= 0 && n == w->rows && k == w->cols && ldx >= k && ldy >= n);
    NMT_ARG_CHECK(m == 0 || (x && y));
    if (m == 0)
        return NMT_STATUS_OK;
    const nmt_spmm_config plan = nmt_cuda_spmm_plan(w, m, config);
    const SpmmCall c = {m,  n, k,         x,     ldx, bias, accumulate, y, ldy, w->row_offsets,
                        w->row_order, w->col_indices, w->values};
    cudaStream_t s = (cudaStream_t)stream;
    if (plan.variant == NMT_SPMM_ROW)
        return nmt_spmm_row(c, *w, plan, s, err);
    if (plan.variant != NMT_SPMM_TILE)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "spmm: variant %d",
                             (int)plan.variant);
    if (!tile_listed(plan.tile))
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "spmm tile variant: tile %d (8, 16, 32 or 64)", plan.tile);
    const size_t need = nmt_spmm_tile_workspace_size(m, n, k, plan.tile);
    if (!workspace || workspace_bytes < need || !nmt_is_aligned(workspace, 16))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "spmm tile variant: a workspace of %zu bytes at %p, the call needs "
                             "%zu, 16-byte aligned (nmt_cuda_spmm_workspace_size)",
                             workspace_bytes, workspace, need);
    return nmt_spmm_tile(c, *w, plan, workspace, s, err);
}

extern "C" nmt_status nmt_cuda_spmm(int32_t m, int32_t n, int32_t k, const float *x, int32_t ldx,
                                    const nmt_cuda_spmm_matrix *w, const float *bias,
                                    int accumulate, float *y, int32_t ldy, void *workspace,
                                    size_t workspace_bytes, void *stream, nmt_error *err)
{
    return nmt_cuda_spmm_with(m, n, k, x, ldx, w, bias, accumulate, y, ldy, workspace,
                              workspace_bytes, NULL, stream, err);
}
