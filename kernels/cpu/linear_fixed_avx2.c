/* linear_fixed_avx2.c: nmt_cpu_linear_fixed's AVX2 path: 8 lanes a sum in
 * one ymm register, fma, a tile of up to 3 rows x 4 columns (12
 * accumulators, 3 rows of x and a column's weights: the 16 registers; each
 * k step loads 7 vectors for 12 fmas, which a 2-row tile's 6 for 8 left
 * short of the fma units: 60-70 -> 115-125 GFLOP/s, bench_cpu_gemm). The
 * lane tree runs over 2 rows' 8 outputs at once (7 adds, 14 shuffles),
 * each output's lanes paired as kernels/linear_fixed.h says, ending with a
 * row's 4 outputs in each 128-bit half. Built with -mavx2
 * -mfma -mf16c; called only where the CPU has them (linear_fixed.c). */
#include "linear_fixed_impl.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

const int nmt_fixed_avx2_built = 1;

enum { kLanes = 8, kRows = 3, kCols = NMT_FIXED_TILE_COLS };

#define INLINE static inline __attribute__((always_inline))
/* Every loop over a tile's rows, columns or accumulators is unrolled, so
 * the accumulators live in registers. */
#define UNROLL _Pragma("GCC unroll 32")

/* 8 weights from p: fp32, or fp16 widened (exactly). */
INLINE __m256 load_w(const void *w, int32_t p, const int half)
{
    if (half)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + p)));
    return _mm256_loadu_ps((const float *)w + p);
}

/* The last weights from p (mask: the k - p left), zeros after them. */
INLINE __m256 load_w_tail(const void *w, int32_t p, int32_t left, __m256i mask, const int half)
{
    if (!half)
        return _mm256_maskload_ps((const float *)w + p, mask);
    uint16_t tail[kLanes] = {0};
    for (int l = 0; l < left; l++)
        tail[l] = ((const uint16_t *)w)[p + l];
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)tail));
}

/* acc[r * 4 + c]: the lanes of row r, column c; w: fp32 rows, or fp16 with half. */
INLINE void lane_sums(const int rows, const int half, const float *x, int64_t ldx,
                      const void *const w[kCols], int32_t k, __m256 *acc)
{
    UNROLL
    for (int i = 0; i < rows * kCols; i++)
        acc[i] = _mm256_setzero_ps();
    int32_t p = 0;
    for (; p + kLanes <= k; p += kLanes) {
        /* The rows' x, then a column's weights at a time: 3 + 1 + 12 of the
         * 16 registers. */
        __m256 xv[kRows];
        UNROLL
        for (int r = 0; r < rows; r++)
            xv[r] = _mm256_loadu_ps(x + r * ldx + p);
        UNROLL
        for (int c = 0; c < kCols; c++) {
            const __m256 wc = load_w(w[c], p, half);
            UNROLL
            for (int r = 0; r < rows; r++)
                acc[r * kCols + c] = _mm256_fmadd_ps(xv[r], wc, acc[r * kCols + c]);
        }
    }
    if (p < k) { /* the padding's lanes: fma(0, 0, acc) */
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(k - p), lane);
        const __m256 w0 = load_w_tail(w[0], p, k - p, mask, half);
        const __m256 w1 = load_w_tail(w[1], p, k - p, mask, half);
        const __m256 w2 = load_w_tail(w[2], p, k - p, mask, half);
        const __m256 w3 = load_w_tail(w[3], p, k - p, mask, half);
        UNROLL
        for (int r = 0; r < rows; r++) {
            const __m256 xv = _mm256_maskload_ps(x + r * ldx + p, mask);
            acc[r * kCols + 0] = _mm256_fmadd_ps(xv, w0, acc[r * kCols + 0]);
            acc[r * kCols + 1] = _mm256_fmadd_ps(xv, w1, acc[r * kCols + 1]);
            acc[r * kCols + 2] = _mm256_fmadd_ps(xv, w2, acc[r * kCols + 2]);
            acc[r * kCols + 3] = _mm256_fmadd_ps(xv, w3, acc[r * kCols + 3]);
        }
    }
}

/* Level 1 (lane l + l + 4): a's 4 sums in the low half, b's in the high. */
INLINE __m256 level1(__m256 a, __m256 b)
{
    return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

/* Level 2 (l + l + 2), within halves: half t = [c's 2 lanes, d's 2 lanes]. */
INLINE __m256 level2(__m256 c, __m256 d)
{
    return _mm256_add_ps(_mm256_shuffle_ps(c, d, 0x44), _mm256_shuffle_ps(c, d, 0xEE));
}

/* Level 3 (l + l + 1): half t = [e's 2 outputs, f's 2 outputs]. */
INLINE __m256 level3(__m256 e, __m256 f)
{
    return _mm256_add_ps(_mm256_shuffle_ps(e, f, 0x88), _mm256_shuffle_ps(e, f, 0xDD));
}

/* 2 rows x 4 columns of lane sums (acc[r * 4 + c]) reduced: half t holds
 * row t's outputs, columns 0-3. */
INLINE __m256 reduce_group(const __m256 *acc)
{
    __m256 col[kCols];
    UNROLL
    for (int q = 0; q < kCols; q++)
        col[q] = level1(acc[0 * kCols + q], acc[1 * kCols + q]);
    return level3(level2(col[0], col[1]), level2(col[2], col[3]));
}

/* Rows [row, row + rows) (rows <= 2) of a tile, from their reduced sums s
 * (half t: row t's columns 0-3): (s + bias) + y. */
INLINE void finish_group(const nmt_fixed_job *job, int32_t row, const int rows, int32_t col,
                         int cols, __m256 s)
{
    if (cols < kCols) {
        float sums[2 * kCols];
        _mm256_storeu_ps(sums, s);
        for (int t = 0; t < rows; t++)
            for (int c = 0; c < cols; c++)
                nmt_fixed_finish(job, row + t, col + c, sums[t * kCols + c]);
        return;
    }
    float *y = job->y + (int64_t)row * job->ldy + col;
    if (job->bias)
        s = _mm256_add_ps(s, _mm256_broadcast_ps((const __m128 *)(job->bias + col)));
    __m128 out[2] = {_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)};
    UNROLL
    for (int t = 0; t < rows; t++) {
        if (job->accumulate)
            out[t] = _mm_add_ps(out[t], _mm_loadu_ps(y + t * (int64_t)job->ldy));
        _mm_storeu_ps(y + t * (int64_t)job->ldy, out[t]);
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
    __m256 acc[kRows * kCols];
    lane_sums(rows, half, job->x + (int64_t)row * job->ldx, job->ldx, w, job->k, acc);
    UNROLL
    for (int g = 0; g < rows; g += 2) {
        __m256 group[2 * kCols];
        UNROLL
        for (int i = 0; i < 2 * kCols; i++)
            group[i] = g * kCols + i < rows * kCols ? acc[g * kCols + i] : _mm256_setzero_ps();
        finish_group(job, row + g, rows - g < 2 ? rows - g : 2, col, cols,
                     reduce_group(group));
    }
}

void nmt_fixed_tile_avx2(const nmt_fixed_job *job, int32_t row, int rows, int32_t col, int cols)
{
    const int half = job->w16 != NULL;
    if (rows == 1)
        half ? tile(job, row, 1, 1, col, cols) : tile(job, row, 1, 0, col, cols);
    else if (rows == 2)
        half ? tile(job, row, 2, 1, col, cols) : tile(job, row, 2, 0, col, cols);
    else
        half ? tile(job, row, 3, 1, col, cols) : tile(job, row, 3, 0, col, cols);
}

#else

const int nmt_fixed_avx2_built = 0;

void nmt_fixed_tile_avx2(const nmt_fixed_job *job, int32_t row, int rows, int32_t col, int cols)
{
    (void)job, (void)row, (void)rows, (void)col, (void)cols;
}

#endif
