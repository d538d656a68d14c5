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

/* Floats as ints that order like the floats (not NaN; -0 below +0), for
 * redux.sync max (__reduce_max_sync); ordered_float undoes it. */
static __device__ __forceinline__ int ordered_int(float f)
{
    const int i = __float_as_int(f);
    return i >= 0 ? i : i ^ 0x7fffffff;
}
static __device__ __forceinline__ float ordered_float(int i)
{
    return __int_as_float(i >= 0 ? i : i ^ 0x7fffffff);
}

/* ---- programmatic dependent launch (sm_90) ---------------------------------
 * A kernel started by nmt_launch_pdl may be scheduled while the kernel before
 * it in the stream is still running: its blocks become resident and wait in
 * pdl_wait() until that kernel has finished and its writes are visible, so
 * the launch latency (a few microseconds between two small kernels, even in a
 * CUDA graph) overlaps the work before it. The rule for such a kernel: it
 * calls pdl_wait() before its first global read or write (the kernels here
 * call it first thing), which makes it as ordered as a plain launch.
 * pdl_release() lets the next kernel's blocks launch before this one ends;
 * they still wait for all of it. Both are no-ops where the kernel was not
 * launched that way, or before sm_90. The chain stays safe transitively: a
 * kernel's wait covers the one before it, which waited for its own. */
static __device__ __forceinline__ void pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

static __device__ __forceinline__ void pdl_release()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* Both, first thing in a kernel of the decode step: the next kernel may
 * launch at once, and this one reads nothing before the last has finished. */
static __device__ __forceinline__ void pdl_enter()
{
    pdl_release();
    pdl_wait();
}

/* kernel<<<grid, block, smem, stream>>>(args...) with programmatic stream
 * serialization allowed (cudaLaunchKernelEx); the kernel must follow the rule
 * above. As after <<<...>>>, a failed launch shows in cudaGetLastError
 * (NMT_LAUNCH_RETURN). */
template <typename... Params, typename... Args>
static inline void nmt_launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block,
                                         size_t smem, cudaStream_t stream, Args... args)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = attr;
    config.numAttrs = 1;
    (void)cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

#endif /* NMT_CORE_DEVICE_CUH */
