/* linear_int8_vnni.c: the int8 product's tile (kernels/linear_int8.h) on
 * AVX-512 VNNI: up to 6 rows x 4 panels of 16 columns, 24 registers of 16
 * int32 sums. Each 4 k a row's 4 bytes are broadcast and multiplied into a
 * panel's 64 bytes (vpdpbusd: 16 columns x 4 products), so the sums need
 * no horizontal add; k is padded to 64 with zero weights, n to 16. Then
 * (float)(sum - colsum) * t_i * s_j (+ bias) (+ y), 16 columns at once.
 * Built with -mavx512f -mavx512bw -mavx512vnni; called only where the CPU
 * has them. */
#include "linear_fixed_impl.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#include <string.h>

const int nmt_fixed_int8_built = 1;

enum { kRows = NMT_FIXED_INT8_TILE_ROWS, kPanels = NMT_FIXED_INT8_TILE_COLS / NMT_INT8_PANEL };

#define INLINE static inline __attribute__((always_inline))
/* Every loop over a tile's rows or panels is unrolled: the sums stay in registers. */
#define UNROLL _Pragma("GCC unroll 32")

/* acc[r * 4 + c]: row r's sums of panel c's 16 columns. */
INLINE void panel_sums(const int rows, const uint8_t *x, int64_t ldq,
                       const int8_t *const panel[kPanels], int32_t ld, __m512i *acc)
{
    UNROLL
    for (int i = 0; i < rows * kPanels; i++)
        acc[i] = _mm512_setzero_si512();
    for (int32_t p = 0; p < ld; p += 4) {
        const int64_t at = (int64_t)p * NMT_INT8_PANEL;
        const __m512i w0 = _mm512_loadu_si512(panel[0] + at);
        const __m512i w1 = _mm512_loadu_si512(panel[1] + at);
        const __m512i w2 = _mm512_loadu_si512(panel[2] + at);
        const __m512i w3 = _mm512_loadu_si512(panel[3] + at);
        UNROLL
        for (int r = 0; r < rows; r++) {
            int32_t four;
            memcpy(&four, x + r * ldq + p, sizeof four);
            const __m512i xv = _mm512_set1_epi32(four);
            acc[r * kPanels + 0] = _mm512_dpbusd_epi32(acc[r * kPanels + 0], xv, w0);
            acc[r * kPanels + 1] = _mm512_dpbusd_epi32(acc[r * kPanels + 1], xv, w1);
            acc[r * kPanels + 2] = _mm512_dpbusd_epi32(acc[r * kPanels + 2], xv, w2);
            acc[r * kPanels + 3] = _mm512_dpbusd_epi32(acc[r * kPanels + 3], xv, w3);
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
    __m512i acc[kRows * kPanels];
    panel_sums(rows, job->xq + (int64_t)row * job->ldq, job->ldq, panel, w8->ld, acc);
    UNROLL
    for (int c = 0; c < kPanels; c++) {
        const int left = cols - c * NMT_INT8_PANEL;
        if (left <= 0)
            break;
        const int32_t j = col + c * NMT_INT8_PANEL;
        const __mmask16 mask = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
        const __m512i colsum = _mm512_loadu_si512(w8->colsum + j);
        const __m512 scale = _mm512_loadu_ps(w8->scale + j);
        const __m512 bias = job->bias ? _mm512_maskz_loadu_ps(mask, job->bias + j)
                                      : _mm512_setzero_ps();
        UNROLL
        for (int r = 0; r < rows; r++) {
            float *y = job->y + (int64_t)(row + r) * job->ldy + j;
            __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r * kPanels + c], colsum));
            v = _mm512_mul_ps(v, _mm512_set1_ps(job->x_scale[row + r]));
            v = _mm512_mul_ps(v, scale);
            if (job->bias)
                v = _mm512_add_ps(v, bias);
            if (job->accumulate)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, y));
            _mm512_mask_storeu_ps(y, mask, v);
        }
    }
}

void nmt_fixed_tile_int8(const nmt_fixed_job *job, int32_t row, int rows, int32_t col, int cols)
{
    switch (rows) {
    case 1: tile(job, row, 1, col, cols); break;
    case 2: tile(job, row, 2, col, cols); break;
    case 3: tile(job, row, 3, col, cols); break;
    case 4: tile(job, row, 4, col, cols); break;
    case 5: tile(job, row, 5, col, cols); break;
    default: tile(job, row, 6, col, cols); break;
    }
}

#else

const int nmt_fixed_int8_built = 0;

void nmt_fixed_tile_int8(const nmt_fixed_job *job, int32_t row, int rows, int32_t col, int cols)
{
    (void)job, (void)row, (void)rows, (void)col, (void)cols;
}

#endif
