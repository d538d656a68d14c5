/* linear_fixed_avx512.c: nmt_cpu_linear_fixed's AVX-512 path: 16 lanes a
 * sum in one zmm register, fma, a tile of up to 6 rows x 4 columns (24
 * accumulators; each k step loads 6 x and 4 w vectors for 24 fmas). The
 * lane tree runs over 16 outputs at once (a 4 x 4 group: 15 adds and 30
 * shuffles), each output's lanes paired as kernels/linear_fixed.h says,
 * ending with a row's 4 outputs in each 128-bit block. Built with
 * -mavx512f; called only where the CPU has it (linear_fixed.c). */
#include "linear_fixed_impl.h"

#if defined(__AVX512F__)
#include <immintrin.h>

const int nmt_fixed_avx512_built = 1;

enum { kLanes = 16, kRows = 6, kCols = NMT_FIXED_TILE_COLS };

#define INLINE static inline __attribute__((always_inline))
/* Every loop over a tile's rows, columns or accumulators is unrolled, so
 * the accumulators live in registers (a loop left rolled puts them on the
 * stack). */
#define UNROLL _Pragma("GCC unroll 32")

/* 16 weights from p: fp32, or fp16 widened (exactly). */
INLINE __m512 load_w(const void *w, int32_t p, const int half)
{
    if (half)
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)w + p)));
    return _mm512_loadu_ps((const float *)w + p);
}

/* The last weights from p (mask: the k - p left), zeros after them. */
INLINE __m512 load_w_tail(const void *w, int32_t p, __mmask16 mask, const int half)
{
    if (!half)
        return _mm512_maskz_loadu_ps(mask, (const float *)w + p);
    uint16_t tail[kLanes] = {0};
    for (int l = 0; l < kLanes && (mask >> l & 1); l++)
        tail[l] = ((const uint16_t *)w)[p + l];
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)tail));
}

/* acc[r * 4 + c]: the lanes of row r, column c; w: fp32 rows, or fp16 with half. */
INLINE void lane_sums(const int rows, const int half, const float *x, int64_t ldx,
                      const void *const w[kCols], int32_t k, __m512 *acc)
{
    UNROLL
    for (int i = 0; i < rows * kCols; i++)
        acc[i] = _mm512_setzero_ps();
    int32_t p = 0;
    for (; p + kLanes <= k; p += kLanes) {
        const __m512 w0 = load_w(w[0], p, half), w1 = load_w(w[1], p, half);
        const __m512 w2 = load_w(w[2], p, half), w3 = load_w(w[3], p, half);
        UNROLL
        for (int r = 0; r < rows; r++) {
            const __m512 xv = _mm512_loadu_ps(x + r * ldx + p);
            acc[r * kCols + 0] = _mm512_fmadd_ps(xv, w0, acc[r * kCols + 0]);
            acc[r * kCols + 1] = _mm512_fmadd_ps(xv, w1, acc[r * kCols + 1]);
            acc[r * kCols + 2] = _mm512_fmadd_ps(xv, w2, acc[r * kCols + 2]);
            acc[r * kCols + 3] = _mm512_fmadd_ps(xv, w3, acc[r * kCols + 3]);
        }
    }
    if (p < k) { /* the padding's lanes: fma(0, 0, acc) */
        const __mmask16 mask = (__mmask16)((1u << (k - p)) - 1u);
        const __m512 w0 = load_w_tail(w[0], p, mask, half);
        const __m512 w1 = load_w_tail(w[1], p, mask, half);
        const __m512 w2 = load_w_tail(w[2], p, mask, half);
        const __m512 w3 = load_w_tail(w[3], p, mask, half);
        UNROLL
        for (int r = 0; r < rows; r++) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x + r * ldx + p);
            acc[r * kCols + 0] = _mm512_fmadd_ps(xv, w0, acc[r * kCols + 0]);
            acc[r * kCols + 1] = _mm512_fmadd_ps(xv, w1, acc[r * kCols + 1]);
            acc[r * kCols + 2] = _mm512_fmadd_ps(xv, w2, acc[r * kCols + 2]);
            acc[r * kCols + 3] = _mm512_fmadd_ps(xv, w3, acc[r * kCols + 3]);
        }
    }
}

/* The tree's levels, two vectors of partial sums into one. Level 1 (lane
 * l + l + 8): a's 8 sums in blocks 0-1, b's in 2-3. */
INLINE __m512 level1(__m512 a, __m512 b)
{
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
}

/* Level 2 (l + l + 4): a 4-lane sum a block: c's two outputs, then d's. */
INLINE __m512 level2(__m512 c, __m512 d)
{
    return _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x88), _mm512_shuffle_f32x4(c, d, 0xDD));
}

/* Level 3 (l + l + 2), within blocks: block t = [e's 2 lanes, f's 2 lanes]. */
INLINE __m512 level3(__m512 e, __m512 f)
{
    return _mm512_add_ps(_mm512_shuffle_ps(e, f, 0x44), _mm512_shuffle_ps(e, f, 0xEE));
}

/* Level 4 (l + l + 1): block t = [g's 2 outputs, h's 2 outputs]. */
INLINE __m512 level4(__m512 g, __m512 h)
{
    return _mm512_add_ps(_mm512_shuffle_ps(g, h, 0x88), _mm512_shuffle_ps(g, h, 0xDD));
}

/* 4 rows x 4 columns of lane sums (acc[r * 4 + c]) reduced: block t holds
 * row t's outputs, columns 0-3. Column q's level-2 vector has row t in
 * block t; level 3 pairs columns 0-1 and 2-3, level 4 interleaves them. */
INLINE __m512 reduce_group(const __m512 *acc)
{
    __m512 col[kCols];
    UNROLL
    for (int q = 0; q < kCols; q++)
        col[q] = level2(level1(acc[0 * kCols + q], acc[1 * kCols + q]),
                        level1(acc[2 * kCols + q], acc[3 * kCols + q]));
    return level4(level3(col[0], col[1]), level3(col[2], col[3]));
}

/* Rows [row, row + rows) (rows <= 4) of a tile with all 4 columns: (s +
 * bias) + y, one 128-bit block a row. */
INLINE void finish_group(const nmt_fixed_job *job, int32_t row, const int rows, int32_t col,
                         __m512 s)
{
    float *y = job->y + (int64_t)row * job->ldy + col;
    const int64_t ldy = job->ldy;
    if (job->bias)
        s = _mm512_add_ps(s, _mm512_broadcast_f32x4(_mm_loadu_ps(job->bias + col)));
    __m128 out[4] = {_mm512_extractf32x4_ps(s, 0), _mm512_extractf32x4_ps(s, 1),
                     _mm512_extractf32x4_ps(s, 2), _mm512_extractf32x4_ps(s, 3)};
    UNROLL
    for (int t = 0; t < rows; t++) {
        if (job->accumulate)
            out[t] = _mm_add_ps(out[t], _mm_loadu_ps(y + t * ldy));
        _mm_storeu_ps(y + t * ldy, out[t]);
    }
}

INLINE void tile(const nmt_fixed_job *job, int32_t row, const int rows, const int half,
                 int32_t col, int cols)
{
    const void *w[kCols];
    UNROLL
    for (int c = 0; c < kCols; c++) { /* a missing column repeats the first; dropped below */
        const int64_t at = (int64_t)(col + (c < cols ? c : 0)) * job->ldw;
        w[c] = half ? (const void *)(job->w16 + at) : (const void *)(job->w + at);
    }
    __m512 acc[kRows * kCols];
    lane_sums(rows, half, job->x + (int64_t)row * job->ldx, job->ldx, w, job->k, acc);
    UNROLL
    for (int g = 0; g < rows; g += 4) {
        __m512 group[4 * kCols];
        UNROLL
        for (int i = 0; i < 4 * kCols; i++)
            group[i] = g * kCols + i < rows * kCols ? acc[g * kCols + i] : _mm512_setzero_ps();
        const __m512 s = reduce_group(group);
        const int group_rows = rows - g < 4 ? rows - g : 4;
        if (cols == kCols) {
            finish_group(job, row + g, group_rows, col, s);
        } else {
            float sums[16];
            _mm512_storeu_ps(sums, s);
            for (int t = 0; t < group_rows; t++)
                for (int c = 0; c < cols; c++)
                    nmt_fixed_finish(job, row + g + t, col + c, sums[t * 4 + c]);
        }
    }
}

void nmt_fixed_tile_avx512(const nmt_fixed_job *job, int32_t row, int rows, int32_t col, int cols)
{
    const int half = job->w16 != NULL;
    switch (rows * 2 + half) {
    case 2: tile(job, row, 1, 0, col, cols); break;
    case 3: tile(job, row, 1, 1, col, cols); break;
    case 4: tile(job, row, 2, 0, col, cols); break;
    case 5: tile(job, row, 2, 1, col, cols); break;
    case 6: tile(job, row, 3, 0, col, cols); break;
    case 7: tile(job, row, 3, 1, col, cols); break;
    case 8: tile(job, row, 4, 0, col, cols); break;
    case 9: tile(job, row, 4, 1, col, cols); break;
    case 10: tile(job, row, 5, 0, col, cols); break;
    case 11: tile(job, row, 5, 1, col, cols); break;
    case 13: tile(job, row, 6, 1, col, cols); break;
    default: tile(job, row, 6, 0, col, cols); break;
    }
}

#else

const int nmt_fixed_avx512_built = 0;

void nmt_fixed_tile_avx512(const nmt_fixed_job *job, int32_t row, int rows, int32_t col, int cols)
{
    (void)job, (void)row, (void)rows, (void)col, (void)cols;
}

#endif
