/* linear_skinny.cu: y[m, n] = x[m, k] . w[n, k]^T (+ bias[n]) (tanh) for
 * m <= NMT_SKINNY_MAX_ROWS rows (kernels/linear.h): the GEMMs of a batch-1
 * step at beam 5, where cuBLAS's kernels read the weights at about a third
 * of the bandwidth (docs/performance.md, "Where a step's time goes").
 *
 * Each warp computes OUT outputs for all m rows (skinny_device.cuh), U
 * groups of 8 weights a lane in flight, and SPLIT warps of a block share
 * one group of outputs' k columns (more loads in flight where n is small:
 * W_c's 512 outputs); the first adds the others' totals in order. OUT, U
 * and SPLIT are a policy's (nmt_skinny_policy), chosen from n alone, so a
 * row's sums do not depend on m. Weights in fp32, or in a
 * 16-bit format widened on load: a 16-bit copy of fp16-exact weights is the
 * same product in half the bytes, and the bf16/fp16 precisions multiply
 * their rounded weights with rounded activations as the tensor cores do. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "cuda_ctx.h"
#include "linear.h"
#include "skinny_device.cuh"

static constexpr int kWarps = 4;
static constexpr int kThreads = kWarps * kWarpSize;

/* The policy's choice (nmt_skinny_policy's zeros), from bench_skinny's
 * sweep on the H100 (docs/perf/kernels.md, "Few-row GEMMs"): four outputs
 * and one group of 8 columns a warp (x read once for four weight rows), and
 * the least k split that still gives the grid kMinWarps warps, about 8 an
 * SM, so that enough loads are in flight (W_c's 512 outputs: split 4). */
static constexpr int kMinWarps = 1024;
static constexpr int kOutputs = 4;
static constexpr int kUnroll = 1;

template <int OUT, int U, int SPLIT, bool VEC, typename W>
static __global__ void __launch_bounds__(kThreads)
    linear_skinny_kernel(int m, int n, int k, const float *__restrict__ x, int ldx, int x_round,
                         const W *__restrict__ w, int ldw, const float *__restrict__ bias,
                         int tanh_out, float *__restrict__ y, int ldy)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    __shared__ float partial[SPLIT > 1 ? kWarps : 1][kWarpSize];
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const int part = warp % SPLIT;
    const int j0 = (blockIdx.x * (kWarps / SPLIT) + warp / SPLIT) * OUT;
    const bool live = j0 < n;
    float acc[OUT][skinny::kMaxRows] = {};
    if (live) {
        const W *rows[OUT];
#pragma unroll
        for (int o = 0; o < OUT; o++)
            rows[o] = w + (int64_t)min(j0 + o, n - 1) * ldw; /* past n: read, never written */
        skinny::lane_dots<OUT, U, VEC>(m, k, x, ldx, x_round, rows, acc, part, SPLIT);
    }
    float total = skinny::warp_totals<OUT>(acc);
    if (!skinny::add_split_totals<SPLIT>(total, partial))
        return;
    const int value = lane % (OUT * skinny::kMaxRows);
    const int o = value / skinny::kMaxRows, r = value % skinny::kMaxRows, j = j0 + o;
    if (live && lane < OUT * skinny::kMaxRows && r < m && j < n) {
        float v = total + (bias ? __ldg(&bias[j]) : 0.0f);
        y[(int64_t)r * ldy + j] = tanh_out ? tanhf(v) : v;
    }
}

extern "C" int nmt_linear_skinny_fits(int32_t m, int32_t k)
{
    return m >= 1 && m <= NMT_SKINNY_MAX_ROWS && k >= 1;
}

extern "C" nmt_skinny_policy nmt_cuda_linear_skinny_plan(int32_t n, const nmt_skinny_policy *wanted)
{
    nmt_skinny_policy p = {0, 0, 0};
    if (wanted)
        p = *wanted;
    if (p.outputs == 0)
        p.outputs = kOutputs;
    if (p.unroll == 0)
        p.unroll = kUnroll;
    if (p.split == 0) {
        const int64_t groups = ((int64_t)n + p.outputs - 1) / p.outputs;
        p.split = 1;
        while (p.split < kWarps && groups * p.split < kMinWarps)
            p.split *= 2;
    }
    return p;
}

/* The kernel of the plan: each template parameter chosen at run time. */
template <typename W> struct skinny_args {
    int m, n, k;
    const float *x;
    int ldx, x_round;
    const W *w;
    int ldw;
    const float *bias;
    int tanh_out;
    float *y;
    int ldy;
};

template <int OUT, int U, int SPLIT, bool VEC, typename W>
static void go(dim3 grid, cudaStream_t stream, const skinny_args<W> &a)
{
    nmt_launch_pdl(linear_skinny_kernel<OUT, U, SPLIT, VEC, W>, grid, kThreads, 0, stream, a.m,
                   a.n, a.k, a.x, a.ldx, a.x_round, a.w, a.ldw, a.bias, a.tanh_out, a.y, a.ldy);
}

template <int OUT, int U, typename W>
static void by_split(int split, bool vec, dim3 grid, cudaStream_t stream, const skinny_args<W> &a)
{
    if (!vec) /* the scalar path: one column at a time, no unroll */
        split == 4   ? go<OUT, 1, 4, false>(grid, stream, a)
        : split == 2 ? go<OUT, 1, 2, false>(grid, stream, a)
                     : go<OUT, 1, 1, false>(grid, stream, a);
    else
        split == 4   ? go<OUT, U, 4, true>(grid, stream, a)
        : split == 2 ? go<OUT, U, 2, true>(grid, stream, a)
                     : go<OUT, U, 1, true>(grid, stream, a);
}

template <int OUT, typename W>
static void by_unroll(nmt_skinny_policy p, bool vec, dim3 grid, cudaStream_t stream,
                      const skinny_args<W> &a)
{
    if (p.unroll == 2)
        by_split<OUT, 2>(p.split, vec, grid, stream, a);
    else
        by_split<OUT, 1>(p.split, vec, grid, stream, a);
}

template <typename W>
static void launch(nmt_skinny_policy p, bool vec, cudaStream_t stream, const skinny_args<W> &a)
{
    const int groups_per_block = kWarps / p.split;
    const int64_t groups = ((int64_t)a.n + p.outputs - 1) / p.outputs;
    const dim3 grid((unsigned)((groups + groups_per_block - 1) / groups_per_block));
    if (p.outputs == 4)
        by_unroll<4>(p, vec, grid, stream, a);
    else if (p.outputs == 2)
        by_unroll<2>(p, vec, grid, stream, a);
    else
        by_unroll<1>(p, vec, grid, stream, a);
}

static int listed(int v, int most)
{
    return v == 1 || v == 2 || (v == 4 && most == 4);
}

extern "C" nmt_status nmt_cuda_linear_skinny(nmt_cuda_ctx *ctx, int32_t m, int32_t n, int32_t k,
                                             const float *x, int32_t ldx,
                                             nmt_skinny_x x_round, const void *w,
                                             nmt_weight_type w_type, int32_t ldw,
                                             const float *bias, int tanh_out, float *y,
                                             int32_t ldy, const nmt_skinny_policy *policy,
                                             nmt_error *err)
{
    NMT_ARG_CHECK(ctx && nmt_linear_skinny_fits(m, k) && n >= 0 && ldx >= k && ldw >= k &&
                  ldy >= (n > 1 ? n : 1));
    NMT_ARG_CHECK(x_round >= NMT_SKINNY_X_F32 && x_round <= NMT_SKINNY_X_FP16 &&
                  w_type >= NMT_WEIGHT_F32 && w_type <= NMT_WEIGHT_FP16);
    NMT_ARG_CHECK(n == 0 || (x && w && y));
    const nmt_skinny_policy p = nmt_cuda_linear_skinny_plan(n, policy);
    NMT_ARG_CHECK(listed(p.outputs, 4) && listed(p.unroll, 2) && listed(p.split, 4));
    if (n == 0)
        return NMT_STATUS_OK;
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    const bool vec = skinny::vector_path(k, ldw, ldx, w, w_type, x);
    switch (w_type) {
    case NMT_WEIGHT_F32:
        launch(p, vec, stream, skinny_args<float>{m, n, k, x, ldx, (int)x_round, (const float *)w,
                                                  ldw, bias, tanh_out, y, ldy});
        break;
    case NMT_WEIGHT_BF16:
        launch(p, vec, stream,
               skinny_args<__nv_bfloat16>{m, n, k, x, ldx, (int)x_round,
                                          (const __nv_bfloat16 *)w, ldw, bias, tanh_out, y, ldy});
        break;
    case NMT_WEIGHT_FP16:
        launch(p, vec, stream, skinny_args<__half>{m, n, k, x, ldx, (int)x_round,
                                                   (const __half *)w, ldw, bias, tanh_out, y, ldy});
        break;
    }
    NMT_LAUNCH_RETURN("linear_skinny_kernel");
    return NMT_STATUS_OK;
}
