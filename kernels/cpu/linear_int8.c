/* linear_int8.c: kernels/linear_int8.h: the weights' and rows' int8 forms,
 * and the product through linear_fixed.c's loops and threads with the
 * VNNI tile (linear_int8_vnni.c) or the AVX2 one (linear_int8_avx2.c). The roundings are basic operations (round
 * half to even), so a row's int8 form depends on the row alone. */
#include "linear_int8.h"

#include "clones_impl.h"
#include "error.h"
#include "linear_fixed_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int vnni(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    return nmt_fixed_int8_built && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
#else
    return 0;
#endif
}

static int avx2(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    return nmt_fixed_int8_avx2_built && __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

/* The tile for the fp32 path isa: NULL where none runs. */
static nmt_fixed_tile_fn int8_tile(nmt_cpu_isa isa, int *rows, int *cols)
{
    isa = isa == NMT_CPU_ISA_AUTO ? nmt_cpu_isa_best() : isa;
    if (!nmt_cpu_isa_supported(isa) || isa == NMT_CPU_ISA_GENERIC)
        return NULL;
    if (isa == NMT_CPU_ISA_AVX512 && vnni()) {
        *rows = NMT_FIXED_INT8_TILE_ROWS, *cols = NMT_FIXED_INT8_TILE_COLS;
        return nmt_fixed_tile_int8;
    }
    if (!avx2())
        return NULL;
    *rows = NMT_FIXED_INT8_AVX2_TILE_ROWS, *cols = NMT_FIXED_INT8_AVX2_TILE_COLS;
    return nmt_fixed_tile_int8_avx2;
}

int nmt_cpu_int8_supported(nmt_cpu_isa isa)
{
    int rows, cols;
    return int8_tile(isa, &rows, &cols) != NULL;
}

static int32_t padded(int32_t k)
{
    return (k + NMT_INT8_K_ALIGN - 1) / NMT_INT8_K_ALIGN * NMT_INT8_K_ALIGN;
}

/* scale = max |v| / 127 and v's bytes round(v / scale), 0 for a zero row. */
static inline __attribute__((always_inline)) float quantize(int32_t k, const float *v, int8_t *q)
{
    float max = 0.0f;
    for (int32_t p = 0; p < k; p++)
        max = fabsf(v[p]) > max ? fabsf(v[p]) : max;
    const float inv = max > 0.0f ? 127.0f / max : 0.0f;
    /* Rounding to nearest even by adding and taking away 1.5 * 2^23 (|v inv|
     * <= 127): basic operations, no libm call (the file is built with
     * -ffp-contract=off, so the product is rounded first). */
    const float magic = 0x1.8p23f;
    for (int32_t p = 0; p < k; p++) {
        const float r = (v[p] * inv + magic) - magic;
        q[p] = (int8_t)(r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r);
    }
    return max / 127.0f;
}

nmt_status nmt_int8_matrix_make(const float *w, int32_t n, int32_t k, int32_t ldw,
                                nmt_int8_matrix *out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    memset(out, 0, sizeof *out);
    if (n < 1 || k < 1 || ldw < k)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "int8 matrix: n %d, k %d, ldw %d", n, k, ldw);
    out->n = n, out->k = k, out->ld = padded(k);
    const int32_t n_padded = (n + NMT_INT8_PANEL - 1) / NMT_INT8_PANEL * NMT_INT8_PANEL;
    int8_t *row = NULL;
    NMT_ALLOC(out->q, (size_t)n_padded * out->ld); /* zeroed: the padding */
    NMT_ALLOC(out->scale, n_padded);
    NMT_ALLOC(out->colsum, n_padded);
    NMT_ALLOC(row, out->ld);
    for (int32_t j = 0; j < n; j++) {
        out->scale[j] = quantize(k, w + (int64_t)j * ldw, row);
        int32_t sum = 0;
        for (int32_t p = 0; p < k; p++) {
            sum += row[p];
            const int64_t panel = (int64_t)(j / NMT_INT8_PANEL) * out->ld * NMT_INT8_PANEL;
            out->q[panel + (p / 4) * 4 * NMT_INT8_PANEL + (j % NMT_INT8_PANEL) * 4 + p % 4] =
                row[p];
        }
        out->colsum[j] = 128 * sum;
    }
    free(row);
    return NMT_STATUS_OK;
cleanup:
    free(row);
    nmt_int8_matrix_free(out);
    return status;
}

void nmt_int8_matrix_free(nmt_int8_matrix *w)
{
    if (!w)
        return;
    free(w->q);
    free(w->scale);
    free(w->colsum);
    memset(w, 0, sizeof *w);
}

NMT_CLONES void nmt_cpu_quantize_rows(int32_t m, int32_t k, const float *x, int32_t ldx,
                                      uint8_t *xq, int32_t ldq, float *scale)
{
    for (int32_t i = 0; i < m; i++) {
        uint8_t *u = xq + (int64_t)i * ldq;
        int8_t *q = (int8_t *)u;
        scale[i] = quantize(k, x + (int64_t)i * ldx, q);
        for (int32_t p = 0; p < k; p++)
            u[p] = (uint8_t)(q[p] + 128);
        memset(u + k, 128, (size_t)(padded(k) - k));
    }
}

void nmt_cpu_linear_int8(const nmt_cpu_gemm *gemm, int32_t m, const uint8_t *xq, int32_t ldq,
                         const float *x_scale, const nmt_int8_matrix *w, const float *bias,
                         int accumulate, float *y, int32_t ldy)
{
    const nmt_fixed_job job = {.m = m, .n = w->n, .k = w->ld, .bias = bias,
                               .accumulate = accumulate, .y = y, .ldy = ldy, .xq = xq,
                               .ldq = ldq, .x_scale = x_scale, .w8 = w};
    int rows = 0, cols = 0;
    const nmt_fixed_tile_fn tile = int8_tile(gemm->isa, &rows, &cols);
    if (tile)
        nmt_fixed_run(gemm, &job, tile, rows, cols, 1);
}
