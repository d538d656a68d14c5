/* skinny_device.cuh: the per-phase helpers of the few-row products
 * (linear_skinny.cu, lstm_skinny.cu): a handful of activation rows against
 * every row of a weight matrix, where the time is the weights' bytes and
 * the launch, not arithmetic.
 *
 * The shape of the work: each warp takes OUT weight rows at a time, every
 * lane reading 8 consecutive weights of each (one 16- or 32-byte load, U
 * such loads in flight) and multiplying them with the same 8 columns of all
 * m activation rows (read where they are, rounded to the 16-bit format when
 * the precision asks: the rounding the tensor-core path gives them). The
 * partial sums of the 32 lanes are then combined by one butterfly
 * whose tree is the same for every output, every row and every m, so a
 * row's result does not depend on which other rows share the call (the
 * batch-invariance of these products up to NMT_SKINNY_MAX_ROWS rows). */
#ifndef NMT_KERNELS_CUDA_SKINNY_DEVICE_CUH
#define NMT_KERNELS_CUDA_SKINNY_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "device.cuh"
#include "linear.h"

namespace skinny {

static constexpr int kMaxRows = NMT_SKINNY_MAX_ROWS; /* activation rows a call */
static constexpr int kVec = 8;                       /* weights a lane loads at once */

/* Host: whether a call takes lane_dots' vector path (VEC). 8 values a load,
 * so every row of w (of `type`) and of x must start on a whole load. */
static inline bool vector_path(int k, int ldw, int64_t ldx, const void *w, nmt_weight_type type,
                               const float *x)
{
    const size_t w_bytes = type == NMT_WEIGHT_F32 ? sizeof(float) : sizeof(uint16_t);
    return k % kVec == 0 && ldw % kVec == 0 && ldx % kVec == 0 &&
           (uintptr_t)w % (kVec * w_bytes) == 0 && (uintptr_t)x % 16 == 0;
}

/* An activation as the product multiplies it: as is, or rounded to bf16 or
 * fp16 (nearest, ties to even: nmt_half_round). */
static __device__ __forceinline__ float round_x(float v, int x_round)
{
    if (x_round == NMT_SKINNY_X_BF16)
        return __bfloat162float(__float2bfloat16_rn(v));
    if (x_round == NMT_SKINNY_X_FP16)
        return __half2float(__float2half_rn(v));
    return v;
}

/* 16 bytes of weights that bypass L1 (ld.global.nc.L1::no_allocate): the
 * weights stream through once a call, and cached there they would evict
 * the activations every warp re-reads; L2 keeps them for the next step. */
static __device__ __forceinline__ uint4 load_stream16(const void *p)
{
    uint4 u;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
                 : "l"(p));
    return u;
}

/* 8 consecutive weights from p (aligned to their 8-value width), widened. */
static __device__ __forceinline__ void load8(const float *p, float *o)
{
    const uint4 a = load_stream16(p), b = load_stream16(p + 4);
    o[0] = __uint_as_float(a.x); o[1] = __uint_as_float(a.y);
    o[2] = __uint_as_float(a.z); o[3] = __uint_as_float(a.w);
    o[4] = __uint_as_float(b.x); o[5] = __uint_as_float(b.y);
    o[6] = __uint_as_float(b.z); o[7] = __uint_as_float(b.w);
}
static __device__ __forceinline__ void load8(const __half *p, float *o)
{
    const uint4 u = load_stream16(p);
    const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 f = __half22float2(h[i]);
        o[2 * i] = f.x;
        o[2 * i + 1] = f.y;
    }
}
static __device__ __forceinline__ void load8(const __nv_bfloat16 *p, float *o)
{
    const uint4 u = load_stream16(p);
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 f = __bfloat1622float2(h[i]);
        o[2 * i] = f.x;
        o[2 * i + 1] = f.y;
    }
}
static __device__ __forceinline__ float load1(const float *p) { return __ldg(p); }
static __device__ __forceinline__ float load1(const __half *p) { return __half2float(__ldg(p)); }
static __device__ __forceinline__ float load1(const __nv_bfloat16 *p)
{
    return __bfloat162float(__ldg(p));
}

/* 8 activations from p (16-byte aligned). x is a few KB that every warp of
 * the grid reads: it stays in L1 after the first warp of an SM (the weights
 * bypass L1), so it is read in place rather than staged in shared memory
 * (staging it was a chain of dependent loads at the start of every block). */
static __device__ __forceinline__ void load_x8(const float *p, float *o)
{
    const float4 a = __ldg(reinterpret_cast<const float4 *>(p));
    const float4 b = __ldg(reinterpret_cast<const float4 *>(p) + 1);
    o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
    o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
}

/* acc[o][r] += w row o . x row r (r < m, rows ldx apart) over this lane's
 * share of the k columns: 8 columns at a time from lane * 8, 256 apart, U
 * such groups' weights loaded before any is used (VEC: k, ldx and the
 * weights' leading dimension multiples of 8, the rows 8-value aligned and
 * x 16-byte aligned), or one column at a time from lane, 32 apart. With
 * parts > 1 the k columns are shared by `parts` warps, this one taking
 * every parts-th run of U groups from run `part`. Each partial sum adds its
 * columns in increasing order. */
template <int OUT, int U, bool VEC, typename W>
static __device__ __forceinline__ void lane_dots(int m, int k, const float *__restrict__ x,
                                                 int64_t ldx, int x_round,
                                                 const W *const (&w)[OUT],
                                                 float (&acc)[OUT][kMaxRows], int part = 0,
                                                 int parts = 1)
{
    const int lane = threadIdx.x % kWarpSize;
    if (VEC) {
        constexpr int kStep = kWarpSize * kVec;
        for (int p0 = part * U * kStep + lane * kVec; p0 < k; p0 += parts * U * kStep) {
            float wv[U][OUT][kVec];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (p0 + u * kStep < k)
#pragma unroll
                    for (int o = 0; o < OUT; o++)
                        load8(w[o] + p0 + u * kStep, wv[u][o]);
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int p = p0 + u * kStep;
                if (p >= k)
                    break;
                /* Every row's 8 columns in flight at once, then rounded, then
                 * used: a load issued after the previous row's products
                 * would wait a round trip a row. */
                float xv[kMaxRows][kVec];
#pragma unroll
                for (int r = 0; r < kMaxRows; r++)
                    if (r < m)
                        load_x8(x + r * ldx + p, xv[r]);
                if (x_round != NMT_SKINNY_X_F32)
#pragma unroll
                    for (int r = 0; r < kMaxRows; r++)
                        if (r < m)
#pragma unroll
                            for (int q = 0; q < kVec; q++)
                                xv[r][q] = round_x(xv[r][q], x_round);
#pragma unroll
                for (int r = 0; r < kMaxRows; r++)
                    if (r < m)
#pragma unroll
                        for (int o = 0; o < OUT; o++)
#pragma unroll
                            for (int q = 0; q < kVec; q++)
                                acc[o][r] = fmaf(xv[r][q], wv[u][o][q], acc[o][r]);
            }
        }
    } else {
        for (int p = part * kWarpSize + lane; p < k; p += parts * kWarpSize) {
            float wv[OUT];
#pragma unroll
            for (int o = 0; o < OUT; o++)
                wv[o] = load1(w[o] + p);
#pragma unroll
            for (int r = 0; r < kMaxRows; r++) {
                if (r >= m)
                    break;
                const float xv = round_x(__ldg(x + r * ldx + p), x_round);
#pragma unroll
                for (int o = 0; o < OUT; o++)
                    acc[o][r] = fmaf(xv, wv[o], acc[o][r]);
            }
        }
    }
}

/* One butterfly step of warp_totals, and the steps after it: S, the xor
 * distance, is a template constant so that every loop over the values
 * unrolls and the values stay in registers. */
template <int N, int S> struct butterfly {
    static __device__ __forceinline__ void run(float (&v)[N], int lane)
    {
        if (S >= N) {
#pragma unroll
            for (int i = 0; i < N; i++)
                v[i] += __shfl_xor_sync(kFullMask, v[i], S);
        } else {
            const bool upper = (lane & S) != 0;
#pragma unroll
            for (int i = 0; i < (S < N ? S : 1); i++) {
                const float send = upper ? v[i] : v[i + S];
                const float keep = upper ? v[i + S] : v[i];
                v[i] = keep + __shfl_xor_sync(kFullMask, send, S);
            }
        }
        butterfly<N, S / 2>::run(v, lane);
    }
};
template <int N> struct butterfly<N, 0> {
    static __device__ __forceinline__ void run(float (&)[N], int) {}
};

/* The warp's sums of the OUT * kMaxRows partials (OUT * kMaxRows <= 32, a
 * power of 2): lane l returns the total of value l % (OUT * kMaxRows), value
 * o * kMaxRows + r being acc[o][r]. Butterfly steps wider than the value
 * count add every value (xor partners); the rest halve the values each lane
 * keeps (reduce-scatter). Either way step s pairs lane l with l ^ s, so each
 * total is the same tree over the 32 lanes whatever OUT is. */
template <int OUT> static __device__ __forceinline__ float warp_totals(float (&acc)[OUT][kMaxRows])
{
    constexpr int N = OUT * kMaxRows;
    static_assert(N <= kWarpSize && (N & (N - 1)) == 0, "values a warp reduces");
    float v[N];
#pragma unroll
    for (int i = 0; i < N; i++)
        v[i] = acc[i / kMaxRows][i % kMaxRows];
    butterfly<N, kWarpSize / 2>::run(v, threadIdx.x % kWarpSize);
    return v[0];
}

/* A k split of SPLIT warps (warp w's group: the SPLIT warps from
 * w - w % SPLIT, each with its warp_totals of the same outputs): the
 * group's first warp adds the others' totals to its own, in order, through
 * partial ([warps a block][32], shared). Block-wide: every thread of the
 * block calls it (a barrier when SPLIT > 1). False for the other warps,
 * whose part is done. */
template <int SPLIT>
static __device__ __forceinline__ bool add_split_totals(float &total, float (*partial)[kWarpSize])
{
    if (SPLIT == 1)
        return true;
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    partial[warp][lane] = total;
    __syncthreads();
    if (warp % SPLIT != 0)
        return false;
#pragma unroll
    for (int q = 1; q < SPLIT; q++)
        total += partial[warp + q][lane];
    return true;
}

} /* namespace skinny */

#endif /* NMT_KERNELS_CUDA_SKINNY_DEVICE_CUH */
