/* align.h: byte alignment of workspace and arena layouts (plain C, host code
 * of .c and .cu files alike). cudaMalloc returns 256-byte aligned memory;
 * carving one allocation into parts at multiples of 256 bytes keeps every part
 * as aligned as its own allocation would be (float4 and 16-byte vector loads,
 * CUB's temporary storage). */
#ifndef NMT_CORE_ALIGN_H
#define NMT_CORE_ALIGN_H

#include <stddef.h>
#include <stdint.h>

/* bytes rounded up to a multiple of `to` (a power of two). */
static inline size_t nmt_align_up(size_t bytes, size_t to)
{
    return (bytes + to - 1) & ~(to - 1);
}

/* Whether p is a multiple of `to` bytes (a power of two). */
static inline int nmt_is_aligned(const void *p, size_t to)
{
    return ((uintptr_t)p & (to - 1)) == 0;
}

#endif /* NMT_CORE_ALIGN_H */
