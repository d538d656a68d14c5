/* linear_fixed.c: nmt_cpu_linear_fixed (kernels/linear_fixed.h): the code
 * paths, the runtime choice among them, and the loops around a path's
 * tile. A call is cut into parts, ranges of 4-column blocks, that the
 * pool's threads claim (core/thread_pool.h); within a part,
 * chunks of rows and of columns whose x and weights fit the L2 cache
 * together are run row block by row block, so the weights are read from
 * memory once a row chunk and a block's rows stay in L1 across a chunk. */
#include "linear_fixed.h"

#include "error.h"
#include "linear_fixed_impl.h"

#include <stdio.h>
#include <string.h>

typedef struct isa_path {
    const char *name;
    int lanes, fma, tile_rows;
    nmt_fixed_tile_fn tile;
} isa_path;

static const isa_path paths[NMT_CPU_ISA_COUNT] = {
    [NMT_CPU_ISA_AUTO] = {.name = "auto"},
    [NMT_CPU_ISA_GENERIC] = {.name = "generic", .lanes = 8, .fma = 0, .tile_rows = 1,
                             .tile = nmt_fixed_tile_generic},
    [NMT_CPU_ISA_AVX2] = {.name = "avx2", .lanes = 8, .fma = 1, .tile_rows = 3,
                          .tile = nmt_fixed_tile_avx2},
    [NMT_CPU_ISA_AVX512] = {.name = "avx512", .lanes = 16, .fma = 1, .tile_rows = 6,
                            .tile = nmt_fixed_tile_avx512},
};

/* Tuning (dev/bench/bench_cpu_gemm.c): the bytes of weights, and of x, a
 * chunk reads (a quarter of a 1-2 MB L2 each); a call's parts for the
 * threads to claim, each at least kPartWork multiply-adds (~20 us: waking
 * a thread costs a few) and at most kPartsPerThread a thread (claimed one
 * at a time, so a busy core's share goes to the others). */
enum { kChunkBytes = 256 << 10, kPartWork = 1 << 20, kPartsPerThread = 4 };

int nmt_cpu_isa_supported(nmt_cpu_isa isa)
{
    switch (isa) {
    case NMT_CPU_ISA_AUTO:
    case NMT_CPU_ISA_GENERIC:
        return 1;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    case NMT_CPU_ISA_AVX2:
        return nmt_fixed_avx2_built && __builtin_cpu_supports("avx2") &&
               __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    case NMT_CPU_ISA_AVX512:
        return nmt_fixed_avx512_built && __builtin_cpu_supports("avx512f");
#endif
    default:
        return 0;
    }
}

nmt_cpu_isa nmt_cpu_isa_best(void)
{
    for (int isa = NMT_CPU_ISA_COUNT - 1; isa > NMT_CPU_ISA_GENERIC; isa--)
        if (nmt_cpu_isa_supported((nmt_cpu_isa)isa))
            return (nmt_cpu_isa)isa;
    return NMT_CPU_ISA_GENERIC;
}

/* AUTO and unknown values as the best. */
static nmt_cpu_isa resolve(nmt_cpu_isa isa)
{
    return isa > NMT_CPU_ISA_AUTO && (int)isa < NMT_CPU_ISA_COUNT ? isa : nmt_cpu_isa_best();
}

const char *nmt_cpu_isa_name(nmt_cpu_isa isa)
{
    return (unsigned)isa < NMT_CPU_ISA_COUNT ? paths[isa].name : NULL;
}

int nmt_cpu_isa_lanes(nmt_cpu_isa isa)
{
    return paths[resolve(isa)].lanes;
}

int nmt_cpu_isa_fma(nmt_cpu_isa isa)
{
    return paths[resolve(isa)].fma;
}

nmt_status nmt_cpu_isa_check(nmt_cpu_isa isa, nmt_error *err)
{
    if (nmt_cpu_isa_supported(isa))
        return NMT_STATUS_OK;
    char have[64] = "";
    for (int i = 0; i < NMT_CPU_ISA_COUNT; i++)
        if (nmt_cpu_isa_supported((nmt_cpu_isa)i))
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", *have ? ", " : "",
                     paths[i].name);
    const char *name = nmt_cpu_isa_name(isa);
    if (!name)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu isa %d: unknown (this CPU runs: %s)", (int)isa, have);
    return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                         "cpu isa %s: this CPU or build lacks its instructions (it runs: %s)",
                         name, have);
}

typedef struct fixed_call {
    nmt_fixed_job job;
    nmt_fixed_tile_fn tile;
    int tile_rows;
    int tile_cols;
    int32_t blocks;     /* blocks of tile_cols columns */
    int32_t chunk_cols; /* a multiple of 4 */
    int32_t chunk_rows; /* a multiple of the tile's rows */
} fixed_call;

/* Rows [row, row + rows) x columns [col, col_end): row blocks of nearly
 * equal size, each at most a tile, over every column tile in turn. */
static void run_block(const fixed_call *call, int32_t row, int32_t rows, int32_t col,
                      int32_t col_end)
{
    const int tile_rows = call->tile_rows;
    const int32_t row_blocks = (rows + tile_rows - 1) / tile_rows;
    for (int32_t b = 0; b < row_blocks; b++) {
        const int block_rows = rows / row_blocks + (b < rows % row_blocks);
        for (int32_t j = col; j < col_end; j += call->tile_cols) {
            const int32_t left = col_end - j;
            call->tile(&call->job, row, block_rows, j,
                       left < call->tile_cols ? (int)left : call->tile_cols);
        }
        row += block_rows;
    }
}

static void run_part(void *arg, int part, int parts)
{
    const fixed_call *call = arg;
    const nmt_fixed_job *job = &call->job;
    const int32_t col_begin = (int32_t)((int64_t)call->blocks * part / parts) * call->tile_cols;
    int32_t col_end = (int32_t)((int64_t)call->blocks * (part + 1) / parts) * call->tile_cols;
    col_end = col_end < job->n ? col_end : job->n;
    for (int32_t row = 0; row < job->m; row += call->chunk_rows) {
        const int32_t rows = job->m - row < call->chunk_rows ? job->m - row : call->chunk_rows;
        for (int32_t col = col_begin; col < col_end; col += call->chunk_cols)
            run_block(call, row, rows, col,
                      col + call->chunk_cols < col_end ? col + call->chunk_cols : col_end);
    }
}

void nmt_fixed_run(const nmt_cpu_gemm *gemm, const nmt_fixed_job *job, nmt_fixed_tile_fn tile,
                   int tile_rows, int tile_cols, int weight_bytes)
{
    const int32_t m = job->m, n = job->n, k = job->k;
    if (m <= 0 || n <= 0)
        return;
    fixed_call call = {
        .job = *job,
        .tile = tile,
        .tile_rows = tile_rows,
        .tile_cols = tile_cols,
        .blocks = (n + tile_cols - 1) / tile_cols,
    };
    const int64_t chunk = kChunkBytes / ((int64_t)(k > 0 ? k : 1) * weight_bytes);
    call.chunk_cols = chunk < tile_cols ? tile_cols : (int32_t)(chunk / tile_cols) * tile_cols;
    const int64_t tiles_rows = chunk / tile_rows;
    call.chunk_rows = tiles_rows < 1 ? tile_rows : (int32_t)tiles_rows * tile_rows;
    const int64_t work = (int64_t)m * n * (k > 0 ? k : 1);
    int64_t parts = (int64_t)nmt_thread_pool_threads(gemm->pool) * kPartsPerThread;
    parts = parts < work / kPartWork ? parts : work / kPartWork;
    parts = parts < call.blocks ? parts : call.blocks;
    parts = parts > 1 && nmt_thread_pool_threads(gemm->pool) > 1 ? parts : 1;
    nmt_thread_pool_run(gemm->pool, (int)parts, run_part, &call);
}

void nmt_cpu_linear_fixed(const nmt_cpu_gemm *gemm, int32_t m, int32_t n, int32_t k,
                          const float *x, int32_t ldx, const float *w, int32_t ldw,
                          const float *bias, int accumulate, float *y, int32_t ldy)
{
    const nmt_fixed_job job = {.m = m, .n = n, .k = k, .x = x, .ldx = ldx, .w = w, .ldw = ldw,
                               .bias = bias, .accumulate = accumulate, .y = y, .ldy = ldy};
    const isa_path *path = &paths[resolve(gemm->isa)];
    nmt_fixed_run(gemm, &job, path->tile, path->tile_rows, NMT_FIXED_TILE_COLS, sizeof(float));
}

void nmt_cpu_linear_fixed_half(const nmt_cpu_gemm *gemm, int32_t m, int32_t n, int32_t k,
                               const float *x, int32_t ldx, const uint16_t *w16, int32_t ldw,
                               const float *bias, int accumulate, float *y, int32_t ldy)
{
    const nmt_fixed_job job = {.m = m, .n = n, .k = k, .x = x, .ldx = ldx, .w16 = w16,
                               .ldw = ldw, .bias = bias, .accumulate = accumulate, .y = y,
                               .ldy = ldy};
    const isa_path *path = &paths[resolve(gemm->isa)];
    nmt_fixed_run(gemm, &job, path->tile, path->tile_rows, NMT_FIXED_TILE_COLS,
                  sizeof(uint16_t));
}
