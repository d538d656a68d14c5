/* test_half_out.h: the check of a kernel's optional 16-bit copy of its
 * output (half.h, nmt_half_out), shared by the CPU twins' test and the GPU
 * kernels' tests: every copied value is the fp32 output's value rounded by
 * nmt_half_bits, bit for bit, and the columns of the copy's rows past the
 * output's width keep their poison. */
#ifndef NMT_TEST_HALF_OUT_H
#define NMT_TEST_HALF_OUT_H

#include "half.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The poison a copy's buffer is filled with before the call (every byte
 * 0xFF: an fp16 and a bf16 NaN, which no finite output rounds to). */
#define TEST_HALF_POISON 0xFFFFu

/* 1 when copy[r * ld16 + j] == nmt_half_bits(kind, values[r * ld + j]) for
 * r < rows, j < width, and copy[r * ld16 + j] == TEST_HALF_POISON for
 * width <= j < ld16; prints the first mismatches under `what`. */
int test_half_copy_ok(const char *what, nmt_half_kind kind, int32_t rows, int32_t width,
                      const float *values, int32_t ld, const uint16_t *copy, int32_t ld16);

#ifdef __cplusplus
}
#endif

#endif /* NMT_TEST_HALF_OUT_H */
