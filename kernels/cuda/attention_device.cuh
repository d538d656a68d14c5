/* attention_device.cuh: what the attention kernels (attention.cu: a block a
 * row and slice; attention_warp.cu: a warp a row) share: the tuning
 * constants, float4 or float lanes, the batched loads of memory rows and
 * the rule that splits a block's context sum into position groups, so both
 * add the same products in the same order. Internal (C++), private to
 * kernels/cuda. */
#ifndef NMT_ATTENTION_DEVICE_CUH
#define NMT_ATTENTION_DEVICE_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "device.cuh"
#include "half_device.cuh"
#include "nmt_status.h"

static constexpr int kThreads = 256;
static constexpr int kWarps = kThreads / kWarpSize;
static constexpr int kScorePositions = 2; /* positions a warp scores at once */
static constexpr int kScoreFloats = 16;   /* floats of H a lane loads per position */
static constexpr int kContextBatch = 8;   /* memory rows a thread has in flight */
static constexpr int kMaxSlices = 8;
static constexpr int kMinSliceFloats = 128; /* a slice is at least a warp of float4 */
static constexpr int kMinGroupWidth = 8;    /* at most kThreads / 8 position groups */
static_assert(kThreads % kWarpSize == 0 && kThreads <= 1024, "whole warps");
static_assert(kScoreFloats % 4 == 0, "whole float4 slots");

/* float4 or float lanes: the same code for the aligned and the scalar path. */
template <int V> struct Lane;
template <> struct Lane<4> {
    using type = float4;
    static __device__ __forceinline__ float4 zero() { return make_float4(0.f, 0.f, 0.f, 0.f); }
    static __device__ __forceinline__ float dot(float4 a, float4 b, float acc)
    {
        return fmaf(a.w, b.w, fmaf(a.z, b.z, fmaf(a.y, b.y, fmaf(a.x, b.x, acc))));
    }
    static __device__ __forceinline__ float4 axpy(float a, float4 x, float4 y)
    {
        return make_float4(fmaf(a, x.x, y.x), fmaf(a, x.y, y.y), fmaf(a, x.z, y.z),
                           fmaf(a, x.w, y.w));
    }
    static __device__ __forceinline__ float4 add(float4 a, float4 b)
    {
        return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
    static __device__ __forceinline__ float4 scale(float4 a, float s)
    {
        return make_float4(a.x * s, a.y * s, a.z * s, a.w * s);
    }
};
template <> struct Lane<1> {
    using type = float;
    static __device__ __forceinline__ float zero() { return 0.0f; }
    static __device__ __forceinline__ float dot(float a, float b, float acc) { return fmaf(a, b, acc); }
    static __device__ __forceinline__ float axpy(float a, float x, float y) { return fmaf(a, x, y); }
    static __device__ __forceinline__ float add(float a, float b) { return a + b; }
    static __device__ __forceinline__ float scale(float a, float s) { return a * s; }
};

/* The context's 16-bit copy (nmt_half_out) of row's lane c, as the kernel
 * stores the fp32 lane: the same values, column 4c (float4) or c. */
static __device__ __forceinline__ void put_context16(const nmt_half_out &o, int32_t row,
                                                     int32_t c, float4 v)
{
    half_out_put4(o, row, 4 * (int64_t)c, v);
}
static __device__ __forceinline__ void put_context16(const nmt_half_out &o, int32_t row,
                                                     int32_t c, float v)
{
    half_out_put(o, row, c, v);
}

/* What a row reads of its sentence: the source length clamped to [0,
 * max_src], the row's query and the sentence's keys and memory, in lanes of
 * V floats. Both kernels start a row with it. */
template <int V> struct RowInputs {
    int32_t len;
    const typename Lane<V>::type *query, *keys, *memory;
};

template <int V>
static __device__ __forceinline__ RowInputs<V>
row_inputs(int32_t row, const int32_t *row_sentence, const int32_t *src_len, int32_t max_src,
           int32_t hidden, const float *query, int32_t ld_query, const float *keys,
           const float *memory)
{
    using Vec = typename Lane<V>::type;
    const int32_t sent = row_sentence[row];
    const int32_t len = src_len[sent];
    RowInputs<V> in;
    in.len = len > max_src ? max_src : (len < 0 ? 0 : len);
    in.query = (const Vec *)(query + (int64_t)row * ld_query);
    in.keys = (const Vec *)(keys + (int64_t)sent * max_src * hidden);
    in.memory = (const Vec *)(memory + (int64_t)sent * max_src * hidden);
    return in;
}

/* Memory rows j0, j0 + step, ... of one column (zero past len), all loads
 * issued before any is used. Offsets are 32-bit: the launcher checks that a
 * sentence's max_src x hidden floats fit. */
template <int V>
static __device__ __forceinline__ void load_memory_batch(typename Lane<V>::type (&rows)[kContextBatch],
                                                         const typename Lane<V>::type *column,
                                                         int32_t stride, int32_t j0, int32_t step,
                                                         int32_t len)
{
#pragma unroll
    for (int u = 0; u < kContextBatch; u++) {
        int32_t j = j0 + u * step;
        rows[u] = j < len ? __ldg(column + (uint32_t)(j * stride)) : Lane<V>::zero();
    }
}

/* The scores of positions j0 .. j0 + P (those < len) in every lane of the
 * warp: lanes over H in kScoreFloats floats a lane, four partial sums a
 * position, then a butterfly. Every load of a round is issued before the
 * first FMA. Both kernels score a position with this, so alike. */
template <int V, int P>
static __device__ __forceinline__ void score_positions(const typename Lane<V>::type *q_row,
                                                       const typename Lane<V>::type *sent_keys,
                                                       int32_t n_vec, int32_t j0, int32_t len,
                                                       int lane, float (&dot)[P])
{
    using Vec = typename Lane<V>::type;
    constexpr int kSlots = kScoreFloats / V;
    float part[P][4] = {};
    for (int32_t base = lane; base < n_vec; base += kWarpSize * kSlots) {
        Vec q[kSlots], k[P][kSlots];
#pragma unroll
        for (int v = 0; v < kSlots; v++) {
            int32_t i = base + v * kWarpSize;
            q[v] = i < n_vec ? __ldg(&q_row[i]) : Lane<V>::zero();
#pragma unroll
            for (int p = 0; p < P; p++)
                k[p][v] = j0 + p < len && i < n_vec
                              ? __ldg(&sent_keys[(uint32_t)((j0 + p) * n_vec + i)])
                              : Lane<V>::zero();
        }
#pragma unroll
        for (int v = 0; v < kSlots; v++)
#pragma unroll
            for (int p = 0; p < P; p++)
                part[p][v % 4] = Lane<V>::dot(q[v], k[p][v], part[p][v % 4]);
    }
#pragma unroll
    for (int p = 0; p < P; p++)
        dot[p] = (part[p][0] + part[p][1]) + (part[p][2] + part[p][3]);
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2)
#pragma unroll
        for (int p = 0; p < P; p++)
            dot[p] += __shfl_xor_sync(kFullMask, dot[p], off);
}

/* The warp scores positions j_first, j_first + j_step, ... (< len) P at a
 * time into s_score (lane 0 stores). */
template <int V, int P>
static __device__ __forceinline__ void score_into(const typename Lane<V>::type *q_row,
                                                  const typename Lane<V>::type *sent_keys,
                                                  int32_t n_vec, int32_t len, int lane,
                                                  int32_t j_first, int32_t j_step, float *s_score)
{
    for (int32_t j0 = j_first; j0 < len; j0 += j_step) {
        float dot[P];
        score_positions<V, P>(q_row, sent_keys, n_vec, j0, len, lane, dot);
        if (lane == 0)
#pragma unroll
            for (int p = 0; p < P; p++)
                if (j0 + p < len)
                    s_score[j0 + p] = dot[p];
    }
}

/* The warp's softmax of score[0 .. len): m by one redux, d summed by lanes
 * then a butterfly; exp(score - m) into s_exp unless NULL. Returns 1 / d
 * (0 for len 0). */
static __device__ __forceinline__ float softmax_scale(const float *score, float *s_exp,
                                                      int32_t len, int lane)
{
    int m_key = ordered_int(-INFINITY);
    for (int32_t j = lane; j < len; j += kWarpSize)
        m_key = max(m_key, ordered_int(score[j]));
    const float m = ordered_float(__reduce_max_sync(kFullMask, m_key));
    float d = 0.0f;
    for (int32_t j = lane; j < len; j += kWarpSize) {
        float e = expf(score[j] - m);
        d += e;
        if (s_exp)
            s_exp[j] = e;
    }
    d = warp_sum(d);
    return len > 0 ? 1.0f / d : 0.0f;
}

/* A warp writes row's weights (when asked) and argmax: a >= 0, so its bits
 * order as ints, one redux for the largest and one for its lowest index. */
static __device__ __forceinline__ void write_weights(const float *s_exp, float inv_d,
                                                     int32_t len, int32_t max_src, int32_t row,
                                                     int lane, float *weights, int32_t *argmax)
{
    if (!weights && !argmax)
        return;
    int best_key = -1, best_i = INT32_MAX;
    for (int32_t j = lane; j < max_src; j += kWarpSize) {
        float a = j < len ? s_exp[j] * inv_d : 0.0f;
        if (weights)
            weights[(int64_t)row * max_src + j] = a;
        if (j < len && __float_as_int(a) > best_key) {
            best_key = __float_as_int(a);
            best_i = j;
        }
    }
    if (argmax) {
        int key = __reduce_max_sync(kFullMask, best_key);
        int best = __reduce_min_sync(kFullMask, best_key == key ? best_i : INT32_MAX);
        if (lane == 0)
            argmax[row] = len > 0 ? best : -1;
    }
}

/* log2 of the position groups' width W for a slice of slice_vec lanes when
 * it fits in half the block (G = kThreads / W groups, W >= slice_vec), else
 * -1: one group (G = 1) striding over the columns. */
static inline int32_t attention_group_shift(int32_t slice_vec)
{
    if (slice_vec > kThreads / 2)
        return -1;
    int32_t shift = 0;
    while ((1 << shift) < slice_vec || (1 << shift) < kMinGroupWidth)
        shift++;
    return shift;
}

/* The warp variant's launcher (attention_warp.cu). Its caller, the front
 * in attention.cu, has checked float4 lanes and kWarpMinVec <= hidden / 4 <=
 * kWarpMaxVec; it refuses (UNSUPPORTED) positions past its shared memory. */
static constexpr int kWarpMinVec = 17, kWarpMaxVec = 256;
/* AUTO runs the warp variant from this many rows an SM (with one slice):
 * below, the block variant's 256 threads a row finish a row sooner and the
 * rows are too few to fill the SMs' warps. Set by bench_attention --rows
 * 320,640,960,1056,1280 --variant block,warp (docs/perf/kernels.md). */
static constexpr int kWarpMinRowsPerSm = 8;
nmt_status nmt_attention_warp(int32_t n_rows, int32_t hidden, int32_t max_src,
                              const int32_t *row_sentence, const int32_t *src_len,
                              const float *keys, const float *memory, const float *query,
                              int32_t ld_query, float *context, int32_t ld_context,
                              nmt_half_out context16, float *weights, int32_t *argmax,
                              int smem_optin, cudaStream_t stream, nmt_error *err);

#endif /* NMT_ATTENTION_DEVICE_CUH */
