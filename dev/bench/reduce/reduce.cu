/* reduce.cu: multi-mode reduce_sum and broadcast_add over dense row-major
 * tensors of up to NMT_REDUCE_MAX_DIMS axes, each in one launch (Dikbayir et
 * al., "Fast multidimensional reduction and broadcast operations on GPU":
 * virtual coordinates, warp-shuffle block reduction, broadcast without
 * replicating the smaller operand).
 *
 * The host first canonicalizes the shape: size-1 axes go, neighbouring axes
 * of the same kind (reduced/kept, in y/not in y) merge, so at most three
 * kept and three reduced axes alternate. Then a linear index decomposes into
 * virtual coordinates (Dikbayir Alg. 1) with 32-bit divisions, and the
 * coordinates dot the strides give the element.
 *  reduce, innermost axis kept (length L):  a 2-D block, x over output
 *      columns (float4 when L % 4 == 0), y over reduced positions; partial
 *      sums meet in shared memory.
 *  reduce, innermost axis reduced: a group of 1, 4 or 32 lanes per output
 *      walks its reduced elements (float4 runs) and meets by shuffles.
 *  Either splits the reduced range over more blocks when the outputs alone
 *  cannot fill the GPU; the splits then atomicAdd into a zeroed output (so
 *  the last bits of the sum depend on timing).
 *  broadcast: each thread adds y to four float4s of x, recomputing y's row
 *      offset only when the row changes (the "sliding" reuse).
 * Sizes: fewer than 2^32 outputs, reduced elements and float4s.
 * Lab code (reduce.h says why): built into bench_reduce and its tests only. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "cuda_ctx.h"
#include "device.cuh"
#include "reduce.h"

static constexpr int kThreads = 256;
static constexpr int kItems = 4;         /* broadcast: float4s per thread */
static constexpr int kMaxAxes = 3;       /* after canonicalization, per kind */
static constexpr int kThreadsPerSm = 2048;
/* Reductions size their grid to one full wave of resident blocks (no tail
 * wave): the launch bounds make sure that many fit. */
static constexpr int kBlocksPerSm = kThreadsPerSm / kThreads;
static constexpr uint32_t kKeptTx = 32; /* kept-inner block: 32 columns x 8 reduced rows */
static_assert((kThreads & (kThreads - 1)) == 0, "power of two for the tree");
static_assert(2 * kMaxAxes >= NMT_REDUCE_MAX_DIMS, "alternating kinds");

/* Axes outer to inner: sizes and element strides. */
struct Axes {
    int n;
    uint32_t size[kMaxAxes];
    int64_t stride[kMaxAxes];
};

struct BcastAxes {
    int n; /* outer axes (the innermost is handled as the row) */
    uint32_t size[NMT_REDUCE_MAX_DIMS];
    int64_t y_stride[NMT_REDUCE_MAX_DIMS];
};

template <int VEC> using vec_t = float_vec<VEC>;

static __device__ __forceinline__ float vsum(float v) { return v; }
static __device__ __forceinline__ float vsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }
static __device__ __forceinline__ void vadd(float &a, float b) { a += b; }
static __device__ __forceinline__ void vadd(float4 &a, float4 b)
{
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    a.w += b.w;
}
static __device__ __forceinline__ float4 vplus(float4 a, float4 b)
{
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
static __device__ __forceinline__ float4 vplus(float4 a, float b)
{
    return make_float4(a.x + b, a.y + b, a.z + b, a.w + b);
}
static __device__ __forceinline__ float vplus(float a, float b) { return a + b; }

/* Virtual coordinates of idx over the axes (innermost fastest), dotted with
 * the strides. idx < the product of the sizes, so the outermost coordinate is
 * what is left without a division: one axis costs a multiply (a division is
 * ~20 instructions, more than a memory-bound loop can spend per 16 bytes). */
template <int MAX>
static __device__ __forceinline__ int64_t axes_offset(int n, const uint32_t *size,
                                                      const int64_t *stride, uint32_t idx)
{
    int64_t off = 0;
#pragma unroll
    for (int i = MAX - 1; i >= 1; i--) {
        if (i < n) {
            uint32_t q = idx / size[i];
            off += (int64_t)(idx - q * size[i]) * stride[i];
            idx = q;
        }
    }
    return n > 0 ? off + (int64_t)idx * stride[0] : off;
}

/* Innermost axis kept: out[col * VEC ..] for col < n_cols = groups * l_vec. */
template <int VEC>
static __global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    reduce_kept_inner_kernel(Axes kept_outer, Axes red, uint32_t n_red, uint32_t n_cols,
                             uint32_t l_vec, uint32_t split_len, int atomic,
                             const float *__restrict__ x, float *__restrict__ out)
{
    __shared__ vec_t<VEC> s_acc[kThreads];
    const uint32_t col = blockIdx.x * blockDim.x + threadIdx.x;
    const bool active = col < n_cols;
    const uint32_t r0 = blockIdx.y * split_len;
    const uint32_t r1 = min(n_red, r0 + split_len);
    vec_t<VEC> acc;
    memset(&acc, 0, sizeof acc);
    if (active) {
        uint32_t g = col / l_vec, cv = col - g * l_vec;
        const float *base =
            x + axes_offset<kMaxAxes>(kept_outer.n, kept_outer.size, kept_outer.stride, g) +
            (int64_t)cv * VEC;
        const uint32_t step = blockDim.y;
        uint32_t r = r0 + threadIdx.y;
        for (; r + 3 * step < r1; r += 4 * step) {
            vec_t<VEC> v[4];
#pragma unroll
            for (int u = 0; u < 4; u++)
                v[u] = __ldcs(reinterpret_cast<const vec_t<VEC> *>(
                    base + axes_offset<kMaxAxes>(red.n, red.size, red.stride, r + u * step)));
#pragma unroll
            for (int u = 0; u < 4; u++)
                vadd(acc, v[u]);
        }
        for (; r < r1; r += step)
            vadd(acc, __ldcs(reinterpret_cast<const vec_t<VEC> *>(
                          base + axes_offset<kMaxAxes>(red.n, red.size, red.stride, r))));
    }
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    s_acc[t] = acc;
    __syncthreads();
    for (uint32_t h = blockDim.y / 2; h > 0; h /= 2) {
        if (threadIdx.y < h)
            vadd(s_acc[t], s_acc[t + h * blockDim.x]);
        __syncthreads();
    }
    if (threadIdx.y == 0 && active) {
        acc = s_acc[t];
        if (!atomic) {
            reinterpret_cast<vec_t<VEC> *>(out)[col] = acc;
        } else {
            const float *a = reinterpret_cast<const float *>(&acc);
#pragma unroll
            for (int v = 0; v < VEC; v++)
                atomicAdd(&out[(int64_t)col * VEC + v], a[v]);
        }
    }
}

/* Innermost axis reduced: GS lanes per (output, split) over n_red_vec vectors. */
template <int VEC, int GS>
static __global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    reduce_red_inner_kernel(Axes kept, Axes red, uint32_t n_out, uint32_t n_red_vec,
                            uint32_t splits, uint32_t split_len, const float *__restrict__ x,
                            float *__restrict__ out)
{
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t gid = t / GS;
    const uint32_t lane_g = (uint32_t)(t % GS);
    const bool active = gid < (uint64_t)n_out * splits;
    float acc = 0.0f;
    uint32_t o = 0;
    if (active) {
        o = (uint32_t)(gid / splits);
        uint32_t sp = (uint32_t)(gid - (uint64_t)o * splits);
        const float *base = x + axes_offset<kMaxAxes>(kept.n, kept.size, kept.stride, o);
        uint32_t r0 = sp * split_len, r1 = min(n_red_vec, r0 + split_len);
        uint32_t rv = r0 + lane_g;
        vec_t<VEC> sum;
        memset(&sum, 0, sizeof sum);
        for (; rv + 3 * GS < r1; rv += 4 * GS) {
            vec_t<VEC> v[4];
#pragma unroll
            for (int u = 0; u < 4; u++)
                v[u] = __ldcs(reinterpret_cast<const vec_t<VEC> *>(
                    base + axes_offset<kMaxAxes>(red.n, red.size, red.stride, (rv + u * GS) * VEC)));
#pragma unroll
            for (int u = 0; u < 4; u++)
                vadd(sum, v[u]);
        }
        for (; rv < r1; rv += GS)
            vadd(sum, __ldcs(reinterpret_cast<const vec_t<VEC> *>(
                          base + axes_offset<kMaxAxes>(red.n, red.size, red.stride, rv * VEC))));
        acc = vsum(sum);
    }
#pragma unroll
    for (int off = GS / 2; off > 0; off /= 2)
        acc += __shfl_xor_sync(kFullMask, acc, off, GS);
    if (active && lane_g == 0) {
        if (splits == 1)
            out[o] = acc;
        else
            atomicAdd(&out[o], acc);
    }
}

/* out[i] = x[i] + y[...]; rows of l_vec vectors, y along the row when Y_INNER. */
template <int VEC, bool Y_INNER>
static __global__ void __launch_bounds__(kThreads)
    broadcast_add_kernel(BcastAxes outer, uint32_t l_vec, uint32_t n_vec, const float *x,
                         const float *__restrict__ y, float *out)
{
    const vec_t<VEC> *xv = reinterpret_cast<const vec_t<VEC> *>(x);
    vec_t<VEC> *ov = reinterpret_cast<vec_t<VEC> *>(out);
    const uint32_t first = blockIdx.x * (kThreads * kItems) + threadIdx.x;
    uint32_t cached_row = 0xffffffffu;
    int64_t y_row = 0;
    vec_t<VEC> xs[kItems];
    vec_t<VEC> ys[kItems];
    float yscalar[kItems];
#pragma unroll
    for (int u = 0; u < kItems; u++) {
        uint32_t iv = first + u * kThreads;
        if (iv < n_vec) {
            uint32_t row = iv / l_vec, col = iv - row * l_vec;
            if (row != cached_row) {
                y_row = axes_offset<NMT_REDUCE_MAX_DIMS>(outer.n, outer.size, outer.y_stride, row);
                cached_row = row;
            }
            xs[u] = xv[iv];
            if (Y_INNER)
                ys[u] = __ldg(reinterpret_cast<const vec_t<VEC> *>(y + y_row) + col);
            else
                yscalar[u] = __ldg(y + y_row);
        }
    }
#pragma unroll
    for (int u = 0; u < kItems; u++) {
        uint32_t iv = first + u * kThreads;
        if (iv < n_vec)
            ov[iv] = Y_INNER ? vplus(xs[u], ys[u]) : vplus(xs[u], yscalar[u]);
    }
}

/* ---- host side ------------------------------------------------------------- */

/* Drops size-1 axes and merges neighbours with the same bit; returns the count. */
static int canonicalize(int32_t ndim, const int64_t *dims, uint32_t mask, int64_t *size,
                        int *bit)
{
    int n = 0;
    for (int32_t a = 0; a < ndim; a++) {
        if (dims[a] == 1)
            continue;
        int b = (int)(mask >> a & 1u);
        if (n > 0 && bit[n - 1] == b) {
            size[n - 1] *= dims[a];
        } else {
            size[n] = dims[a];
            bit[n] = b;
            n++;
        }
    }
    return n;
}

/* The device's SMs (an A100's 108 when the runtime cannot tell). */
static int sm_count(void)
{
    const int sms = nmt_cuda_sm_count(-1);
    return sms > 0 ? sms : 108;
}

static uint32_t pow2_ceil(uint64_t v)
{
    uint32_t p = 1;
    while (p < v && p < (1u << 31))
        p *= 2;
    return p;
}

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

template <int VEC>
static nmt_status launch_kept_inner(const Axes &kept_outer, const Axes &red, uint64_t n_red,
                                    uint64_t n_cols, uint32_t l_vec, const float *x, float *out,
                                    cudaStream_t stream, nmt_error *err)
{
    /* Rows of 32 x 16 bytes stay coalesced; the 8 rows a block reduces in
     * shared memory cut the splits (and their atomics) eightfold. */
    uint32_t tx = pow2_ceil(n_cols);
    tx = tx > kKeptTx ? kKeptTx : tx;
    uint32_t ty = kThreads / tx;
    uint64_t blocks_x = (n_cols + tx - 1) / tx;
    uint64_t wave = (uint64_t)sm_count() * kBlocksPerSm;
    /* Rounded down: at most one wave, so no block waits for a second one. */
    uint64_t splits = clamp_u64(wave / blocks_x, 1, clamp_u64(n_red / (8ull * ty), 1, 65535));
    uint32_t split_len = (uint32_t)((n_red + splits - 1) / splits);
    splits = (n_red + split_len - 1) / split_len;
    if (splits > 1)
        NMT_CUDA_RETURN(cudaMemsetAsync(out, 0, n_cols * VEC * sizeof(float), stream));
    if (blocks_x > 0x7fffffffull)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "reduce_sum: too many outputs");
    dim3 grid((unsigned)blocks_x, (unsigned)splits), block(tx, ty);
    reduce_kept_inner_kernel<VEC><<<grid, block, 0, stream>>>(
        kept_outer, red, (uint32_t)n_red, (uint32_t)n_cols, l_vec, split_len, splits > 1, x, out);
    NMT_LAUNCH_RETURN("reduce_kept_inner_kernel");
    return NMT_STATUS_OK;
}

template <int VEC, int GS>
static nmt_status launch_red_inner(const Axes &kept, const Axes &red, uint64_t n_out,
                                   uint64_t n_red_vec, const float *x, float *out,
                                   cudaStream_t stream, nmt_error *err)
{
    uint64_t want = (uint64_t)sm_count() * kThreadsPerSm; /* one wave, rounded down */
    uint64_t splits = clamp_u64(want / (n_out * GS), 1,
                                clamp_u64(n_red_vec / (8ull * GS), 1, 1u << 20));
    uint32_t split_len = (uint32_t)((n_red_vec + splits - 1) / splits);
    splits = (n_red_vec + split_len - 1) / split_len;
    uint64_t threads = n_out * splits * GS;
    uint64_t blocks = (threads + kThreads - 1) / kThreads;
    if (blocks > 0x7fffffffull)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "reduce_sum: too many outputs");
    if (splits > 1)
        NMT_CUDA_RETURN(cudaMemsetAsync(out, 0, n_out * sizeof(float), stream));
    reduce_red_inner_kernel<VEC, GS><<<(unsigned)blocks, kThreads, 0, stream>>>(
        kept, red, (uint32_t)n_out, (uint32_t)n_red_vec, (uint32_t)splits, split_len, x, out);
    NMT_LAUNCH_RETURN("reduce_red_inner_kernel");
    return NMT_STATUS_OK;
}

template <int VEC>
static nmt_status pick_red_inner(const Axes &kept, const Axes &red, uint64_t n_out,
                                 uint64_t n_red, const float *x, float *out,
                                 cudaStream_t stream, nmt_error *err)
{
    uint64_t n_red_vec = n_red / VEC;
    if (n_red_vec <= 16)
        return launch_red_inner<VEC, 1>(kept, red, n_out, n_red_vec, x, out, stream, err);
    if (n_red_vec <= 256)
        return launch_red_inner<VEC, 4>(kept, red, n_out, n_red_vec, x, out, stream, err);
    return launch_red_inner<VEC, 32>(kept, red, n_out, n_red_vec, x, out, stream, err);
}

extern "C" nmt_status nmt_cuda_reduce_sum(int32_t ndim, const int64_t *dims, uint32_t reduce_mask,
                                          const float *x, float *out, void *stream_ptr,
                                          nmt_error *err)
{
    nmt_status status = nmt_reduce_check_shape("reduce_sum", ndim, dims, reduce_mask, err);
    if (status != NMT_STATUS_OK)
        return status;
    NMT_ARG_CHECK(x && out);
    cudaStream_t stream = (cudaStream_t)stream_ptr;
    int64_t size[NMT_REDUCE_MAX_DIMS];
    int bit[NMT_REDUCE_MAX_DIMS];
    int n = canonicalize(ndim, dims, reduce_mask, size, bit);

    uint64_t n_out = 1, n_red = 1;
    for (int a = 0; a < n; a++)
        (bit[a] ? n_red : n_out) *= (uint64_t)size[a];
    if (n_out >= (1ull << 32) || n_red >= (1ull << 32))
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "reduce_sum: %llu outputs x %llu reduced elements: each must stay "
                             "below 2^32", (unsigned long long)n_out, (unsigned long long)n_red);
    if (n_red == 1) { /* nothing to reduce: the output is x reshaped */
        NMT_CUDA_RETURN(cudaMemcpyAsync(out, x, n_out * sizeof(float), cudaMemcpyDeviceToDevice,
                                        stream));
        return NMT_STATUS_OK;
    }
    Axes kept = {}, red = {};
    int64_t stride = 1;
    int64_t strides[NMT_REDUCE_MAX_DIMS];
    for (int a = n - 1; a >= 0; a--) {
        strides[a] = stride;
        stride *= size[a];
    }
    for (int a = 0; a < n; a++) {
        Axes &dst = bit[a] ? red : kept;
        dst.size[dst.n] = (uint32_t)size[a];
        dst.stride[dst.n] = strides[a];
        dst.n++;
    }
    bool aligned = (uintptr_t)x % 16 == 0 && (uintptr_t)out % 16 == 0;
    if (!bit[n - 1]) { /* innermost kept, length L */
        uint32_t L = kept.size[kept.n - 1];
        Axes kept_outer = kept;
        kept_outer.n--;
        if (L % 4 == 0 && aligned)
            return launch_kept_inner<4>(kept_outer, red, n_red, n_out / 4, L / 4, x, out, stream,
                                        err);
        return launch_kept_inner<1>(kept_outer, red, n_red, n_out, L, x, out, stream, err);
    }
    uint32_t L = red.size[red.n - 1];
    if (L % 4 == 0 && (uintptr_t)x % 16 == 0)
        return pick_red_inner<4>(kept, red, n_out, n_red, x, out, stream, err);
    return pick_red_inner<1>(kept, red, n_out, n_red, x, out, stream, err);
}

template <int VEC, bool Y_INNER>
static nmt_status launch_broadcast(const BcastAxes &outer, uint64_t l_vec, uint64_t n_vec,
                                   const float *x, const float *y, float *out,
                                   cudaStream_t stream, nmt_error *err)
{
    uint64_t blocks = (n_vec + kThreads * kItems - 1) / (kThreads * kItems);
    broadcast_add_kernel<VEC, Y_INNER><<<(unsigned)blocks, kThreads, 0, stream>>>(
        outer, (uint32_t)l_vec, (uint32_t)n_vec, x, y, out);
    NMT_LAUNCH_RETURN("broadcast_add_kernel");
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_broadcast_add(int32_t ndim, const int64_t *dims, const float *x,
                                             uint32_t y_mask, const float *y, float *out,
                                             void *stream_ptr, nmt_error *err)
{
    nmt_status status = nmt_reduce_check_shape("broadcast_add", ndim, dims, y_mask, err);
    if (status != NMT_STATUS_OK)
        return status;
    NMT_ARG_CHECK(x && y && out);
    cudaStream_t stream = (cudaStream_t)stream_ptr;
    int64_t size[NMT_REDUCE_MAX_DIMS];
    int bit[NMT_REDUCE_MAX_DIMS];
    int n = canonicalize(ndim, dims, y_mask, size, bit);
    if (n == 0) { /* one element */
        size[0] = 1;
        bit[0] = 1;
        n = 1;
    }
    uint64_t total = 1;
    for (int a = 0; a < n; a++)
        total *= (uint64_t)size[a];
    const uint64_t L = (uint64_t)size[n - 1];
    const bool y_inner = bit[n - 1] != 0;
    /* y strides: row-major over y's own axes, 0 along the repeated ones. */
    BcastAxes outer = {};
    outer.n = n - 1;
    int64_t y_stride = y_inner ? L : 1;
    for (int a = n - 2; a >= 0; a--) {
        outer.size[a] = (uint32_t)size[a];
        outer.y_stride[a] = bit[a] ? y_stride : 0;
        if (bit[a])
            y_stride *= size[a];
    }
    bool vec = L % 4 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)out % 16 == 0 &&
               (!y_inner || (uintptr_t)y % 16 == 0);
    uint64_t n_vec = vec ? total / 4 : total;
    if (n_vec >= (1ull << 32) || (n_vec + kThreads * kItems - 1) / (kThreads * kItems) > 0x7fffffffull)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "broadcast_add: %llu elements is too many", (unsigned long long)total);
    if (vec)
        return y_inner ? launch_broadcast<4, true>(outer, L / 4, n_vec, x, y, out, stream, err)
                       : launch_broadcast<4, false>(outer, L / 4, n_vec, x, y, out, stream, err);
    return y_inner ? launch_broadcast<1, true>(outer, L, n_vec, x, y, out, stream, err)
                   : launch_broadcast<1, false>(outer, L, n_vec, x, y, out, stream, err);
}
