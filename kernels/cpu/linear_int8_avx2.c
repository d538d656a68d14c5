/* linear_int8_avx2.c: the int8 product's tile (kernels/linear_int8.h) on
 * AVX2, for CPUs without AVX-512 VNNI: up to 2 rows x 2 panels of 16
 * columns, 8 registers of 8 int32 sums, on the VNNI tile's packed weights
 * (a panel's 4 k of 16 columns are two 32-byte halves of 8 columns). A
 * row's 4 bytes serve 4 halves: 18 instructions for 64 multiply-adds
 * (4 rows x 1 panel took 10 for 32, and was 9% slower at batch 32; 3 rows
 * x 2 panels spill).
 *
 * vpmaddubsw multiplies unsigned by signed bytes and adds pairs into a
 * saturating int16: with x's unsigned form (q + 128, up to 255) a pair
 * could pass 32767. So a row's bytes go back to signed q (xor 0x80), |q|
 * is the unsigned side and q's sign moves onto the weights (vpsignb): a
 * pair is at most 2 * 127 * 127 = 32258, never saturated; vpmaddwd by 1
 * widens the pairs to int32. The sum is sum_p q_ip q_jp, the VNNI tile's
 * sum - colsum_j exactly, so the two tiles give the same bits:
 * (float)sum * t_i * s_j (+ bias) (+ y). Built with -mavx2; called only
 * where the CPU has it. */
#include "linear_fixed_impl.h"

#if defined(__AVX2__)
#include <immintrin.h>
#include <string.h>

const int nmt_fixed_int8_avx2_built = 1;

enum {
    kRows = NMT_FIXED_INT8_AVX2_TILE_ROWS,
    kPanels = NMT_FIXED_INT8_AVX2_TILE_COLS / NMT_INT8_PANEL,
    kHalves = 2 * kPanels
};

#define INLINE static inline __attribute__((always_inline))
/* Every loop over a tile's rows or halves is unrolled: the sums stay in registers. */
#define UNROLL _Pragma("GCC unroll 32")

/* acc[r * kHalves + h]: row r's sums of columns 8h..8h+7 of the tile. */
INLINE void panel_sums(const int rows, const uint8_t *x, int64_t ldq,
                       const int8_t *const panel[kPanels], int32_t ld, __m256i *acc)
{
    const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);
    UNROLL
    for (int i = 0; i < rows * kHalves; i++)
        acc[i] = _mm256_setzero_si256();
    for (int32_t p = 0; p < ld; p += 4) {
        __m256i w[kHalves];
        UNROLL
        for (int h = 0; h < kHalves; h++)
            w[h] = _mm256_loadu_si256(
                (const __m256i *)(panel[h / 2] + (int64_t)p * NMT_INT8_PANEL + (h % 2) * 32));
        UNROLL
        for (int r = 0; r < rows; r++) {
            int32_t four;
            memcpy(&four, x + r * ldq + p, sizeof four);
            const __m256i q = _mm256_xor_si256(_mm256_set1_epi32(four), flip);
            const __m256i q_abs = _mm256_abs_epi8(q);
            UNROLL
            for (int h = 0; h < kHalves; h++) {
                const __m256i pairs = _mm256_maddubs_epi16(q_abs, _mm256_sign_epi8(w[h], q));
                acc[r * kHalves + h] =
                    _mm256_add_epi32(acc[r * kHalves + h], _mm256_madd_epi16(pairs, ones));
            }
        }
    }
}

INLINE void tile(const nmt_fixed_job *job, int32_t row, const int rows, int32_t col, int cols)
{
    const nmt_int8_matrix *w8 = job->w8;
    const int8_t *panel[kPanels];
    UNROLL
    for (int c = 0; c < kPanels; c++)
        panel[c] = nmt_int8_tile_panel(w8, col, cols, c);
    __m256i acc[kRows * kHalves];
    panel_sums(rows, job->xq + (int64_t)row * job->ldq, job->ldq, panel, w8->ld, acc);
    UNROLL
    for (int h = 0; h < kHalves; h++) {
        const int left = cols - h * 8;
        if (left <= 0)
            break;
        const int32_t j = col + h * 8;
        /* lane l kept where l < left (the sign bit set) */
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(left),
                                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const __m256 scale = _mm256_loadu_ps(w8->scale + j); /* n padded to 16 */
        const __m256 bias = job->bias ? _mm256_maskload_ps(job->bias + j, mask)
                                      : _mm256_setzero_ps();
        UNROLL
        for (int r = 0; r < rows; r++) {
            float *y = job->y + (int64_t)(row + r) * job->ldy + j;
            __m256 v = _mm256_cvtepi32_ps(acc[r * kHalves + h]);
            v = _mm256_mul_ps(v, _mm256_set1_ps(job->x_scale[row + r]));
            v = _mm256_mul_ps(v, scale);
            if (job->bias)
                v = _mm256_add_ps(v, bias);
            if (job->accumulate)
                v = _mm256_add_ps(v, _mm256_maskload_ps(y, mask));
            _mm256_maskstore_ps(y, mask, v);
        }
    }
}

void nmt_fixed_tile_int8_avx2(const nmt_fixed_job *job, int32_t row, int rows, int32_t col,
                              int cols)
{
    switch (rows) {
    case 1: tile(job, row, 1, col, cols); break;
    default: tile(job, row, 2, col, cols); break;
    }
}

#else

const int nmt_fixed_int8_avx2_built = 0;

void nmt_fixed_tile_int8_avx2(const nmt_fixed_job *job, int32_t row, int rows, int32_t col,
                              int cols)
{
    (void)job, (void)row, (void)rows, (void)col, (void)cols;
}

#endif
