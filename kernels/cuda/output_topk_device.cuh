/* output_topk_device.cuh: the fused output layer's per-phase device helpers
 * (output_topk.cu): the (value, id) order of its top-K lists and a warp's
 * best under it, the (max, sum) fold of the online softmax (Milakov &
 * Gimelshein's eq. 4), and cp.async's staging of operands into shared
 * memory. */
#ifndef NMT_KERNELS_CUDA_OUTPUT_TOPK_DEVICE_CUH
#define NMT_KERNELS_CUDA_OUTPUT_TOPK_DEVICE_CUH

#include <math.h>
#include <stdint.h>

#include "device.cuh"

/* (a, ia) ranks before (b, ib): larger first, ties to the lower id; an id
 * below 0 is no entry and ranks last. */
static __device__ __forceinline__ bool ranks_before(float a, int32_t ia, float b, int32_t ib)
{
    return ia >= 0 && (ib < 0 || a > b || (a == b && ia < ib));
}

/* The warp's best (value, id) in every lane (a butterfly: all lanes agree). */
static __device__ __forceinline__ void warp_best(float &v, int32_t &id)
{
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2) {
        const float ov = __shfl_xor_sync(kFullMask, v, off);
        const int32_t oid = __shfl_xor_sync(kFullMask, id, off);
        if (ranks_before(ov, oid, v, id)) {
            v = ov;
            id = oid;
        }
    }
}

/* (m, s) with (m2, s2) folded in: the larger max, the sums rescaled to it.
 * Symmetric in its two pairs, so a butterfly's lanes agree. */
static __device__ __forceinline__ void fold_max_sum(float &m, float &s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    if (mm == -INFINITY) {
        m = mm;
        s = 0.0f;
        return;
    }
    s = s * expf(m - mm) + s2 * expf(m2 - mm);
    m = mm;
}

static __device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool valid)
{
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    const int bytes = valid ? 16 : 0; /* 0: the 16 bytes are zero-filled, nothing is read */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
                 "r"(bytes));
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

#endif /* NMT_KERNELS_CUDA_OUTPUT_TOPK_DEVICE_CUH */
