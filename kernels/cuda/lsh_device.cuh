/* lsh_device.cuh: device helpers shared by the LSH kernels (lsh.cu,
 * lsh_direct.cu): the two-probe cuckoo lookup of kernels/lsh.h's tables. */
#ifndef NMT_LSH_DEVICE_CUH
#define NMT_LSH_DEVICE_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "lsh.h"

/* The two-probe cuckoo lookup of a band's code: length 0 when absent. */
static __device__ __forceinline__ void find_bucket(const nmt_lsh_tables &t, int32_t band,
                                                   int32_t code, int32_t *start, int32_t *length)
{
    *start = 0;
    *length = 0;
    if (code < 0) /* codes are >= 0; a negative one must not match the empty key -1 */
        return;
    const uint32_t *hp = t.hash + (int64_t)band * 4;
    const uint32_t band_hash[4] = {__ldg(hp), __ldg(hp + 1), __ldg(hp + 2), __ldg(hp + 3)};
    const int4 *slots = reinterpret_cast<const int4 *>(t.slots) + ((int64_t)band << t.table_bits);
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int4 slot = __ldg(&slots[nmt_lsh_hash(band_hash, i, code, t.table_bits)]);
        if (slot.x == code) { /* (key, start, length, unused) */
            *start = slot.y;
            *length = slot.z;
            return;
        }
    }
}

#endif /* NMT_LSH_DEVICE_CUH */
