/* gather.h: dst[i, :] = src[index[i], :] for i < n_rows (rows of `dim` floats).
 * Reorders LSTM states and input feed by beam back-pointers. dst != src.
 *
 * gather_segments: several such gathers in one launch, each a column block
 * with its own source, index and row strides: the decoder's step inputs
 * (target embeddings by token, states and feed by back-pointer) are one
 * launch instead of one per tensor. Segments must not overlap their sources.
 * A segment's dst16 (dst NULL: none) also gets its rows rounded to 16 bits
 * (half.h, nmt_half_out), at its columns 0 .. width - 1: the decoder's
 * 16-bit GEMM inputs. */
#ifndef NMT_KERNELS_GATHER_H
#define NMT_KERNELS_GATHER_H

#include "half.h"
#include "nmt_status.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { NMT_GATHER_MAX_SEGMENTS = 24 };

/* dst[i * ld_dst + j] = src[index[i] * ld_src + j], j < width; the same
 * value rounded into dst16 (row i, column j) when it has a dst. */
typedef struct nmt_gather_segment {
    const float *src;
    const int32_t *index;
    float *dst;
    int32_t width, ld_src, ld_dst;
    nmt_half_out dst16;
} nmt_gather_segment;

void nmt_cpu_gather_rows(int32_t n_rows, int32_t dim, const float *src, const int32_t *index,
                         float *dst);

nmt_status nmt_cuda_gather_rows(int32_t n_rows, int32_t dim, const float *src,
                                const int32_t *index, float *dst, void *stream, nmt_error *err);

void nmt_cpu_gather_segments(int32_t n_rows, int32_t n_segments,
                             const nmt_gather_segment *segments);
nmt_status nmt_cuda_gather_segments(int32_t n_rows, int32_t n_segments,
                                    const nmt_gather_segment *segments, void *stream,
                                    nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
