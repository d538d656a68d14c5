/* lsh_device.cuh: device helpers shared by the LSH kernels (lsh.cu,
 * lsh_direct.cu): the two-probe cuckoo lookup of kernels/lsh.h's tables and
 * the warp's bucket walk. */
#ifndef NMT_LSH_DEVICE_CUH
#define NMT_LSH_DEVICE_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "device.cuh"
#include "lsh.h"

/* First index in [lo, hi) of an ascending array whose entry is >= value (hi
 * when none). */
static __device__ __forceinline__ int32_t lower_bound_i32(const int32_t *a, int32_t lo,
                                                          int32_t hi, int32_t value)
{
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (__ldg(&a[mid]) < value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The two-probe cuckoo lookup of a band's code in `table` (t.slots, or
 * t.packed_slots: the same places): its slot (key, start, length, skip), or
 * all zeros when absent. */
static __device__ __forceinline__ int4 find_slot_in(const nmt_lsh_slot *table,
                                                    const nmt_lsh_tables &t, int32_t band,
                                                    int32_t code)
{
    const int4 none = make_int4(0, 0, 0, 0);
    /* The band's hash in one 16-byte load, issued before the code is tested:
     * it does not wait for the code's load (a round trip less). */
    const uint4 h = __ldg(reinterpret_cast<const uint4 *>(t.hash) + band);
    const uint32_t band_hash[4] = {h.x, h.y, h.z, h.w};
    if (code < 0) /* codes are >= 0; a negative one must not match the empty key -1 */
        return none;
    const int4 *slots = reinterpret_cast<const int4 *>(table) + ((int64_t)band << t.table_bits);
    /* Both probes in flight at once: the second is not one more round trip. */
    const int4 first = __ldg(&slots[nmt_lsh_hash(band_hash, 0, code, t.table_bits)]);
    const int4 second = __ldg(&slots[nmt_lsh_hash(band_hash, 1, code, t.table_bits)]);
    return first.x == code ? first : second.x == code ? second : none;
}

static __device__ __forceinline__ int4 find_slot(const nmt_lsh_tables &t, int32_t band,
                                                 int32_t code)
{
    return find_slot_in(t.slots, t, band, code);
}

/* find_slot as (start, length): length 0 when absent. */
static __device__ __forceinline__ void find_bucket(const nmt_lsh_tables &t, int32_t band,
                                                   int32_t code, int32_t *start, int32_t *length)
{
    const int4 slot = find_slot(t, band, code);
    *start = slot.y;
    *length = slot.z;
}

/* The part of a band's bucket at or above word n_always (a bucket's words
 * ascend): the skip stored in the slot when the tables hold it for this
 * n_always (nmt_cuda_lsh_slots_skip), else a binary search. */
static __device__ __forceinline__ void find_bucket_from(const nmt_lsh_tables &t, int32_t band,
                                                        int32_t code, int32_t n_always,
                                                        int32_t *start, int32_t *length)
{
    const int4 slot = find_slot(t, band, code);
    int32_t skip = 0;
    if (slot.z > 0 && n_always > 0)
        skip = n_always == t.skip_below
                   ? slot.w
                   : lower_bound_i32(t.bucket_words + (int64_t)band * t.vocab, slot.y,
                                     slot.y + slot.z, n_always) - slot.y;
    *start = slot.y + skip;
    *length = slot.z - skip;
}

/* Fig. 4b of the paper: all lanes walk one lane's bucket at a time, so a warp
 * costs the sum of its buckets' lengths / 32 steps, not its longest bucket.
 * f(tag, word) for every word of every lane's bucket (band, start, length,
 * from find_bucket), tag being the bucket owner's. A bucket holds each word
 * once, so one step's 32 calls see 32 different words. Warp-uniform: every
 * lane calls it (length 0 where it has no bucket).
 * Each lane issues kWalkLoads predicated loads (words i, i + 32, ...) before
 * any f: the walk is bound by the latency of those L2 loads, and one load at a
 * time makes a bucket of 100 words three dependent round trips (time the
 * walk: bench_lsh --variant lookup-warp,lookup-naive --rows 12,768). */
static constexpr int kWalkLoads = 4;

template <typename F>
static __device__ __forceinline__ void warp_walk_buckets(const nmt_lsh_tables &t, int32_t band,
                                                         int32_t start, int32_t length,
                                                         int32_t tag, F f)
{
    const int lane = threadIdx.x & (kWarpSize - 1);
    uint32_t pending = __ballot_sync(kFullMask, length > 0);
    while (pending) {
        const int src = __ffs(pending) - 1;
        pending &= pending - 1;
        const int32_t n = __shfl_sync(kFullMask, length, src);
        const int32_t s_start = __shfl_sync(kFullMask, start, src);
        const int32_t s_band = __shfl_sync(kFullMask, band, src);
        const int32_t s_tag = __shfl_sync(kFullMask, tag, src);
        const int32_t *words = t.bucket_words + (int64_t)s_band * t.vocab + s_start;
        for (int32_t i0 = 0; i0 < n; i0 += kWarpSize * kWalkLoads) {
            int32_t w[kWalkLoads];
#pragma unroll
            for (int l = 0; l < kWalkLoads; l++) {
                const int32_t i = i0 + kWarpSize * l + lane;
                w[l] = i < n ? __ldg(&words[i]) : -1; /* words are >= 0 */
            }
#pragma unroll
            for (int l = 0; l < kWalkLoads; l++)
                if (w[l] >= 0)
                    f(s_tag, w[l]);
        }
    }
}

#endif /* NMT_LSH_DEVICE_CUH */
