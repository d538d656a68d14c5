/* device.cuh: the device helpers every kernel file shares (C++/CUDA only:
 * included by .cu files and the kernels' .cuh headers, never by a .c file).
 * The warp's size and full mask, float / float4 templates for kernels with a
 * vector and a scalar path, and the warp-wide butterfly reductions; the
 * host's alignment helpers come with it (align.h). */
#ifndef NMT_CORE_DEVICE_CUH
#define NMT_CORE_DEVICE_CUH

#ifndef __CUDACC__
#error "device.cuh is CUDA C++: include it from .cu files only"
#endif

#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

#include "align.h"

static constexpr int kWarpSize = 32;
static constexpr unsigned kFullMask = 0xffffffffu; /* every lane of the warp takes part */

/* float4 when VEC is 4, else float: one kernel template for 16-byte loads
 * (dim % 4 == 0, aligned operands) and for the scalar fallback. */
template <int VEC> using float_vec = typename std::conditional<VEC == 4, float4, float>::type;

static __device__ __forceinline__ void set_zero(float &v) { v = 0.0f; }
static __device__ __forceinline__ void set_zero(float4 &v) { v = make_float4(0.f, 0.f, 0.f, 0.f); }

/* The sum over the warp's 32 lanes, in every lane (xor butterfly: every lane
 * adds the same values in the same order, so all lanes agree bit for bit).
 * Every lane must call it. */
template <typename T> static __device__ __forceinline__ T warp_sum(T v)
{
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2)
        v += __shfl_xor_sync(kFullMask, v, off);
    return v;
}

/* The largest of the warp's 32 values (fmaxf: a NaN loses to a number), in
 * every lane. Every lane must call it. */
static __device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2)
        v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
    return v;
}

#endif /* NMT_CORE_DEVICE_CUH */
