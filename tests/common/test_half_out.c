/* test_half_out.c: test_half_out.h. */
#include "test_half_out.h"

#include <stdio.h>

int test_half_copy_ok(const char *what, nmt_half_kind kind, int32_t rows, int32_t width,
                      const float *values, int32_t ld, const uint16_t *copy, int32_t ld16)
{
    int64_t bad = 0;
    for (int32_t r = 0; r < rows; r++)
        for (int32_t j = 0; j < ld16; j++) {
            const uint16_t got = copy[(int64_t)r * ld16 + j];
            const uint16_t want = j < width ? nmt_half_bits(kind, values[(int64_t)r * ld + j])
                                            : (uint16_t)TEST_HALF_POISON;
            if (got != want && bad++ < 3)
                fprintf(stderr, "  %s: 16-bit copy [%d, %d] = 0x%04x, want 0x%04x%s\n", what,
                        r, j, got, want, j < width ? "" : " (poison past the width)");
        }
    if (bad)
        fprintf(stderr, "  %s: %lld wrong values of the 16-bit copy\n", what, (long long)bad);
    return bad == 0;
}
