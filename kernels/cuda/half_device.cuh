/* half_device.cuh: fp32 values stored as bf16 or fp16 (nearest, ties to
 * even: nmt_half_bits's bits), in one place for every kernel that writes a
 * 16-bit value: the rounding pass before a 16-bit GEMM (linear.cu's
 * to_half kernels) and the kernels that write a 16-bit copy of their own
 * output beside the fp32 one (nmt_half_out: gather, LSTM cell, attention,
 * tanh), so that both give the same bits. Internal (C++), private to
 * kernels/cuda. */
#ifndef NMT_HALF_DEVICE_CUH
#define NMT_HALF_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "half.h"

/* By type: the rounding passes, a template per format. */
static __device__ __forceinline__ void store_half(__nv_bfloat16 *p, float v)
{
    *p = __float2bfloat16_rn(v);
}
static __device__ __forceinline__ void store_half(__half *p, float v)
{
    *p = __float2half_rn(v);
}

/* Four values rounded as store_half rounds each, 8 bytes (p 8-byte aligned). */
static __device__ __forceinline__ void store_half4(__nv_bfloat16 *p, float4 v)
{
    const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);
    uint2 u;
    u.x = *reinterpret_cast<const uint32_t *>(&a);
    u.y = *reinterpret_cast<const uint32_t *>(&b);
    *reinterpret_cast<uint2 *>(p) = u;
}
static __device__ __forceinline__ void store_half4(__half *p, float4 v)
{
    const __half2 a = __floats2half2_rn(v.x, v.y), b = __floats2half2_rn(v.z, v.w);
    uint2 u;
    u.x = *reinterpret_cast<const uint32_t *>(&a);
    u.y = *reinterpret_cast<const uint32_t *>(&b);
    *reinterpret_cast<uint2 *>(p) = u;
}

/* By kind, for the kernels whose 16-bit copy is optional (nmt_half_out):
 * a branch uniform over the launch. */
static __device__ __forceinline__ void half_out_put(const nmt_half_out &o, int64_t r, int64_t j,
                                                    float v)
{
    if (!o.dst)
        return;
    uint16_t *p = o.dst + r * o.ld + j;
    if (o.kind == NMT_HALF_BF16)
        store_half(reinterpret_cast<__nv_bfloat16 *>(p), v);
    else
        store_half(reinterpret_cast<__half *>(p), v);
}

/* Columns j .. j + 3 of row r: one 8-byte store where it is aligned. */
static __device__ __forceinline__ void half_out_put4(const nmt_half_out &o, int64_t r, int64_t j,
                                                     float4 v)
{
    if (!o.dst)
        return;
    uint16_t *p = o.dst + r * o.ld + j;
    if ((reinterpret_cast<uintptr_t>(p) & 7u) != 0) {
        half_out_put(o, r, j, v.x);
        half_out_put(o, r, j + 1, v.y);
        half_out_put(o, r, j + 2, v.z);
        half_out_put(o, r, j + 3, v.w);
    } else if (o.kind == NMT_HALF_BF16) {
        store_half4(reinterpret_cast<__nv_bfloat16 *>(p), v);
    } else {
        store_half4(reinterpret_cast<__half *>(p), v);
    }
}

/* The launchers' check of an optional copy: NULL, or a known kind and rows
 * at least `width` values apart. */
static inline bool half_out_ok(const nmt_half_out *o, int32_t width)
{
    return !o || !o->dst ||
           ((o->kind == NMT_HALF_BF16 || o->kind == NMT_HALF_FP16) && o->ld >= width);
}

/* By value for a kernel's parameters: none where the pointer is NULL. */
static inline nmt_half_out half_out_of(const nmt_half_out *o)
{
    nmt_half_out none = {nullptr, 0, NMT_HALF_FP16};
    return o ? *o : none;
}

#endif /* NMT_HALF_DEVICE_CUH */
