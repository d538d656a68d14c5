/* linear_int8_vnni.c: the int8 product's tile (kernels/linear_int8.h) on
 * AVX-512 VNNI: up to 4 rows x 4 columns of int32 sums, 16 lanes each (6
 * rows spill: vpdpbusd overwrites its sum),
 * vpdpbusd adding 4 byte products a lane (64 a step; k is padded to 64, so
 * there is no tail), reduced as linear_fixed_avx512.c's tree (any order is
 * exact for integers), then (float)(sum - colsum) * t_i * s_j (+ bias)
 * (+ y). Built with -mavx512f -mavx512bw -mavx512vnni; called only where
 * the CPU has them. */
#include "linear_fixed_impl.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>

const int nmt_fixed_int8_built = 1;

enum { kRows = NMT_FIXED_INT8_TILE_ROWS, kCols = NMT_FIXED_TILE_COLS, kStep = 64 };

#define INLINE static inline __attribute__((always_inline))
/* Every loop over a tile's rows or columns is unrolled: the sums stay in registers. */
#define UNROLL _Pragma("GCC unroll 32")

INLINE void lane_sums(const int rows, const uint8_t *x, int64_t ldq, const int8_t *const w[kCols],
                      int32_t k, __m512i *acc)
{
    UNROLL
    for (int i = 0; i < rows * kCols; i++)
        acc[i] = _mm512_setzero_si512();
    for (int32_t p = 0; p < k; p += kStep) {
        const __m512i w0 = _mm512_loadu_si512(w[0] + p), w1 = _mm512_loadu_si512(w[1] + p);
        const __m512i w2 = _mm512_loadu_si512(w[2] + p), w3 = _mm512_loadu_si512(w[3] + p);
        UNROLL
        for (int r = 0; r < rows; r++) {
            const __m512i xv = _mm512_loadu_si512(x + r * ldq + p);
            acc[r * kCols + 0] = _mm512_dpbusd_epi32(acc[r * kCols + 0], xv, w0);
            acc[r * kCols + 1] = _mm512_dpbusd_epi32(acc[r * kCols + 1], xv, w1);
            acc[r * kCols + 2] = _mm512_dpbusd_epi32(acc[r * kCols + 2], xv, w2);
            acc[r * kCols + 3] = _mm512_dpbusd_epi32(acc[r * kCols + 3], xv, w3);
        }
    }
}

/* The tree of linear_fixed_avx512.c on integers: 4 rows x 4 columns of
 * lanes into one vector, block t = row t's 4 columns. */
INLINE __m512i reduce_group(const __m512i *acc)
{
    __m512i col[kCols];
    UNROLL
    for (int q = 0; q < kCols; q++) {
        const __m512i a = acc[0 * kCols + q], b = acc[1 * kCols + q];
        const __m512i c = acc[2 * kCols + q], d = acc[3 * kCols + q];
        const __m512i ab = _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, 0x44),
                                            _mm512_shuffle_i32x4(a, b, 0xEE));
        const __m512i cd = _mm512_add_epi32(_mm512_shuffle_i32x4(c, d, 0x44),
                                            _mm512_shuffle_i32x4(c, d, 0xEE));
        col[q] = _mm512_add_epi32(_mm512_shuffle_i32x4(ab, cd, 0x88),
                                  _mm512_shuffle_i32x4(ab, cd, 0xDD));
    }
    __m512 half[2];
    UNROLL
    for (int h = 0; h < 2; h++) {
        const __m512 e = _mm512_castsi512_ps(col[2 * h]), f = _mm512_castsi512_ps(col[2 * h + 1]);
        half[h] = _mm512_castsi512_ps(
            _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(e, f, 0x44)),
                             _mm512_castps_si512(_mm512_shuffle_ps(e, f, 0xEE))));
    }
    return _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(half[0], half[1], 0x88)),
                            _mm512_castps_si512(_mm512_shuffle_ps(half[0], half[1], 0xDD)));
}

INLINE void tile(const nmt_fixed_job *job, int32_t row, const int rows, int32_t col, int cols)
{
    const nmt_int8_matrix *w8 = job->w8;
    const int8_t *w[kCols];
    UNROLL
    for (int c = 0; c < kCols; c++) /* a missing column repeats the first; dropped below */
        w[c] = w8->q + (int64_t)(col + (c < cols ? c : 0)) * w8->ld;
    __m512i acc[kRows * kCols];
    lane_sums(rows, job->xq + (int64_t)row * job->ldq, job->ldq, w, w8->ld, acc);
    UNROLL
    for (int i = rows * kCols; i < kRows * kCols; i++)
        acc[i] = _mm512_setzero_si512();
    const __m512i sums = reduce_group(acc);
    if (cols < kCols) {
        int32_t s[kRows * kCols];
        _mm512_storeu_si512(s, sums);
        for (int t = 0; t < rows; t++)
            for (int c = 0; c < cols; c++) {
                float v = (float)(s[t * kCols + c] - w8->colsum[col + c]);
                v = v * job->x_scale[row + t];
                v = v * w8->scale[col + c];
                nmt_fixed_finish(job, row + t, col + c, v);
            }
        return;
    }
    /* The same operations on the 16 outputs at once: block t is row t. */
    const __m512i colsum = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(w8->colsum + col)));
    __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(sums, colsum));
    float t_rows[kRows] = {0};
    for (int t = 0; t < rows; t++)
        t_rows[t] = job->x_scale[row + t];
    const __m512 t_i = _mm512_permutexvar_ps(
        _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
        _mm512_castps128_ps512(_mm_loadu_ps(t_rows)));
    v = _mm512_mul_ps(v, t_i);
    v = _mm512_mul_ps(v, _mm512_broadcast_f32x4(_mm_loadu_ps(w8->scale + col)));
    if (job->bias)
        v = _mm512_add_ps(v, _mm512_broadcast_f32x4(_mm_loadu_ps(job->bias + col)));
    float out[kRows * kCols];
    _mm512_storeu_ps(out, v);
    for (int t = 0; t < rows; t++) {
        float *y = job->y + (int64_t)(row + t) * job->ldy + col;
        __m128 o = _mm_loadu_ps(out + t * kCols);
        if (job->accumulate)
            o = _mm_add_ps(o, _mm_loadu_ps(y));
        _mm_storeu_ps(y, o);
    }
}

void nmt_fixed_tile_int8(const nmt_fixed_job *job, int32_t row, int rows, int32_t col, int cols)
{
    switch (rows) {
    case 1: tile(job, row, 1, col, cols); break;
    case 2: tile(job, row, 2, col, cols); break;
    case 3: tile(job, row, 3, col, cols); break;
    default: tile(job, row, 4, col, cols); break;
    }
}

#else

const int nmt_fixed_int8_built = 0;

void nmt_fixed_tile_int8(const nmt_fixed_job *job, int32_t row, int rows, int32_t col, int cols)
{
    (void)job, (void)row, (void)rows, (void)col, (void)cols;
}

#endif
