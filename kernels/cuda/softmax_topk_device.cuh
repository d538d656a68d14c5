/* softmax_topk_device.cuh: what the softmax + top-K variants share on the
 * device (kernels/cuda/softmax_topk*.cu): the capacities they are compiled
 * for, the packed 64-bit keys (Argueta & Chiang, "Accelerating Sparse Matrix
 * Operations in Neural Networks on GPUs", Alg. 4), the candidate lists
 * (LSH), the online normalizer (m, d) of Milakov & Gimelshein ("Online
 * normalizer calculation for softmax", Alg. 3 and eq. 4), a warp's sorted
 * top-K in registers and its scan of four words (also the fused output
 * layer's, kernels/cuda/output_topk.cu) and a row's split at its 16-byte
 * boundaries. */
#ifndef NMT_SOFTMAX_TOPK_DEVICE_CUH
#define NMT_SOFTMAX_TOPK_DEVICE_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "device.cuh"
#include "lsh.h"

/* Capacities (array sizes and launch bounds of the kernels). */
static constexpr int kMaxWarps = 8;      /* fused block: up to 256 threads */
static constexpr int kWarpRowsPerBlock = 4; /* warp variant: rows (warps) a block */
static constexpr int kRegisterK = 64;    /* row, fused and split variants: K <= this */
static constexpr int kMaxSplits = 16;    /* split variant: blocks per row at most */
static constexpr int kCounterSlots = 1024;  /* split rows at most (one counter a row) */
static constexpr size_t kCounterBytes = kCounterSlots * sizeof(uint32_t);
static constexpr int kAtomicThreads = 256;
static constexpr int kRowMaxThreads = 1024;   /* row kernel: threads a block at most */
static constexpr int kRowCandKeys = 4096;     /* ... candidates a block holds (32 KB) */
static_assert(kRegisterK % kWarpSize == 0 && kRegisterK <= 2 * kWarpSize, "two slots a lane");
static_assert(kMaxWarps * kWarpSize <= 1024, "block size");
static_assert(kCounterBytes % 256 == 0, "partials stay aligned after the counters");

/* ---- packed keys --------------------------------------------------------- */

/* The logit's order-preserving bits above, ~id below: one unsigned compare
 * orders by value and then by the lower id; 0 is the empty slot (-inf, id -1). */
static __device__ __forceinline__ uint64_t make_key(float x, int32_t id)
{
    x = x + 0.0f; /* -0 -> +0: equal floats must tie and go to the lower id */
    uint32_t b = __float_as_uint(x);
    uint32_t ordered = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return ((uint64_t)ordered << 32) | (uint32_t)~(uint32_t)id;
}

static __device__ __forceinline__ float key_value(uint64_t key)
{
    uint32_t o = (uint32_t)(key >> 32);
    uint32_t b = (o & 0x80000000u) ? (o & 0x7fffffffu) : ~o;
    return __uint_as_float(b);
}

static __device__ __forceinline__ int32_t key_id(uint64_t key)
{
    return (int32_t)~(uint32_t)key;
}

/* The warp's largest key, in every lane. */
static __device__ __forceinline__ uint64_t warp_max_key(uint64_t key)
{
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2) {
        const uint64_t other = __shfl_xor_sync(kFullMask, key, off);
        key = other > key ? other : key;
    }
    return key;
}

static __device__ __forceinline__ bool is_excluded(int32_t id, const int32_t *excluded,
                                                   int n_excluded)
{
    for (int i = 0; i < n_excluded; i++)
        if (__ldg(&excluded[i]) == id)
            return true;
    return false;
}

/* Writes output slot i of a row from a key (0: the -inf / -1 tail). */
static __device__ __forceinline__ void write_slot(uint64_t key, float lse, float *value,
                                                  int32_t *id)
{
    *value = key ? key_value(key) - lse : -INFINITY;
    *id = key ? key_id(key) : -1;
}

/* ---- candidate lists (LSH) ------------------------------------------------ */

/* Row r's logit j is word words[g * ld + j] of its group's list (nmt_cand_lists,
 * kernels/lsh.h), j < count[g]. Lists ascend, so ties to the lower candidate
 * index are ties to the lower word, as in the full softmax. The kernels take
 * it as template CAND; CAND = false compiles to the full-vocabulary kernels.
 * row_length: the row's number of logits (clamped to vocab = the plan's
 * max_count) and its candidate words (NULL without candidates). */
template <bool CAND>
static __device__ __forceinline__ int32_t row_length(const nmt_cand_lists &lists, int row,
                                                     int32_t vocab, const int32_t **words)
{
    *words = NULL;
    if (!CAND)
        return vocab;
    const int32_t g = row / lists.rows_per_group;
    *words = lists.words + (int64_t)g * lists.ld;
    return max(0, min(__ldg(&lists.count[g]), vocab));
}

/* is_excluded for logit j: with candidates, of its word. */
template <bool CAND>
static __device__ __forceinline__ bool is_excluded_at(int32_t j, const int32_t *words,
                                                      const int32_t *excluded, int n_excluded)
{
    if (CAND) {
        if (n_excluded == 0)
            return false;
        j = __ldg(&words[j]);
    }
    return is_excluded(j, excluded, n_excluded);
}

/* write_slot with the key's index mapped to its word. */
template <bool CAND>
static __device__ __forceinline__ void write_slot_at(uint64_t key, float lse, float *value,
                                                     int32_t *id, const int32_t *words)
{
    *value = key ? key_value(key) - lse : -INFINITY;
    *id = key ? (CAND ? __ldg(&words[key_id(key)]) : key_id(key)) : -1;
}

/* ---- online normalizer (m, d) -------------------------------------------- */

/* The running max m and normalizer d = sum e^(z - m); two merge by eq. 4:
 *     (m1, d1) + (m2, d2) = (M, d1 e^(m1-M) + d2 e^(m2-M)),  M = max(m1, m2). */
struct OnlineMD {
    float m, d;
};

/* 2^x, subnormal results flushed to 0: one MUFU.EX2 where exp2f and __expf
 * add range fix-ups. A term under 2^-126 next to d >= 1 changes nothing. */
static __device__ __forceinline__ float exp2_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

static constexpr float kLog2e = 1.4426950408889634f;

/* e^(x - m) as one FMA and one EX2; m_log2e = m * log2(e). -inf - m gives 0. */
static __device__ __forceinline__ float exp_from(float x, float m_log2e)
{
    return exp2_ftz(fmaf(x, kLog2e, -m_log2e));
}

/* Rounded products and sum (no FMA contraction): the merge is symmetric, so
 * every lane of a butterfly ends with the same bits, and an (m, d) chain
 * gives the same bits in every kernel that inlines it (batch invariance:
 * the row and warp kernels). */
static __device__ __forceinline__ OnlineMD md_merge(OnlineMD a, OnlineMD b)
{
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY)
        return OnlineMD{m, 0.0f};
    /* e^(-inf) is 0, so an empty side contributes nothing. */
    const float ml = m * kLog2e;
    return OnlineMD{m, __fadd_rn(__fmul_rn(a.d, exp_from(a.m, ml)),
                                 __fmul_rn(b.d, exp_from(b.m, ml)))};
}

static __device__ __forceinline__ OnlineMD warp_md(OnlineMD v)
{
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2) {
        OnlineMD o{__shfl_xor_sync(kFullMask, v.m, off), __shfl_xor_sync(kFullMask, v.d, off)};
        v = md_merge(v, o);
    }
    return v;
}

/* Adds four words to (m, d) (-inf for the missing ones); returns their max.
 * Rounded product and sum, as md_merge. */
static __device__ __forceinline__ float md_add4(OnlineMD &md, float4 v)
{
    const float mx = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    if (mx > md.m) {
        md.d = __fmul_rn(md.d, exp_from(md.m, mx * kLog2e));
        md.m = mx;
    }
    if (md.m != -INFINITY) {
        const float ml = md.m * kLog2e;
        md.d = __fadd_rn(md.d, (exp_from(v.x, ml) + exp_from(v.y, ml)) +
                                   (exp_from(v.z, ml) + exp_from(v.w, ml)));
    }
    return mx;
}

/* Adds one word to (m, d) (Alg. 3, one step). */
static __device__ __forceinline__ void md_add(OnlineMD &md, float x)
{
    if (x > md.m) {
        md.d = md.d * __expf(md.m - x) + 1.0f;
        md.m = x;
    } else if (md.m != -INFINITY) {
        md.d += __expf(x - md.m);
    }
}

/* The block's (m, d): warps by shuffles, then thread by thread over s_md
 * (a slot a warp). Every thread gets it; syncs. */
static __device__ OnlineMD block_md(OnlineMD md, OnlineMD *s_md)
{
    const int lane = threadIdx.x & (kWarpSize - 1), warp = threadIdx.x / kWarpSize;
    md = warp_md(md);
    if (lane == 0)
        s_md[warp] = md;
    __syncthreads();
    OnlineMD t = s_md[0];
    for (int w = 1; w < (int)(blockDim.x / kWarpSize); w++)
        t = md_merge(t, s_md[w]);
    return t;
}

/* ---- warp-wide sorted top-K in registers (SLOTS keys a lane) -------------- */

/* Position p of the list lives in lane p % 32, slot p / 32; descending. */
template <int SLOTS> struct WarpTopK {
    uint64_t key[SLOTS];
    uint64_t thr;      /* the key at position k-1, 0 while the list is short */
    float thr_value;   /* its logit; floor_value while the list is short */
    float floor_value; /* no word below it can be in the top K (seed); -inf unseeded */

    __device__ __forceinline__ void init()
    {
#pragma unroll
        for (int s = 0; s < SLOTS; s++)
            key[s] = 0;
        thr = 0;
        thr_value = floor_value = -INFINITY;
    }

    /* Warp-uniform, before any insert: floor = the k-th largest of the lanes'
     * lane_max (the max of words each lane will offer). Those k words are
     * distinct and >= floor, so a word below it never makes the top k; without
     * a floor the first k (and every word until the k-th key rises) would go
     * through insert one at a time: a serial chain that small rows, with few
     * words a warp, cannot hide. */
    __device__ __forceinline__ void seed(float lane_max, int k, int lane)
    {
        if (k > kWarpSize)
            return;
        float v = lane_max, kth = -INFINITY;
        for (int r = 0; r < k; r++) {
            const float m = warp_max(v);
            if (!(m > -INFINITY)) { /* fewer than k lanes have words (or NaN): no floor */
                kth = -INFINITY;
                break;
            }
            kth = m;
            const uint32_t owners = __ballot_sync(kFullMask, v == m);
            if (lane == __ffs(owners) - 1)
                v = -INFINITY;
        }
        floor_value = thr_value = kth;
    }

    /* Warp-uniform: cand > thr. Shift everything below cand's rank down one. */
    __device__ __forceinline__ void insert(uint64_t cand, int k, int lane)
    {
        int pos = 0;
#pragma unroll
        for (int s = 0; s < SLOTS; s++)
            pos += __popc(__ballot_sync(kFullMask, key[s] > cand));
        uint64_t carry = 0; /* what lane 0 of slot s receives: slot s-1 of lane 31 */
#pragma unroll
        for (int s = 0; s < SLOTS; s++) {
            uint64_t up = __shfl_up_sync(kFullMask, key[s], 1);
            uint64_t last = __shfl_sync(kFullMask, key[s], kWarpSize - 1);
            int p = s * kWarpSize + lane;
            uint64_t from = lane ? up : carry;
            carry = last;
            if (p > pos)
                key[s] = from;
            else if (p == pos)
                key[s] = cand;
        }
        uint64_t t = key[0];
        if (SLOTS > 1 && k - 1 >= kWarpSize)
            t = key[SLOTS - 1];
        thr = __shfl_sync(kFullMask, t, (k - 1) & (kWarpSize - 1));
        thr_value = thr ? key_value(thr) : floor_value;
    }
};

/* Four words starting at id0 (the first n_valid real, the rest -inf). */
template <int SLOTS, bool CAND>
static __device__ __forceinline__ void scan4(float4 v, int32_t id0, int n_valid, OnlineMD &md,
                                             WarpTopK<SLOTS> &top, int k, int lane,
                                             const int32_t *excluded, int n_excluded,
                                             const int32_t *words)
{
    const float mx = md_add4(md, v);
    /* Rarely taken after the first few loads: nothing beats the warp's K-th. */
    if (!__any_sync(kFullMask, n_valid > 0 && mx >= top.thr_value))
        return;
    float xs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; e++) {
        bool cand = e < n_valid && xs[e] >= top.thr_value &&
                    !is_excluded_at<CAND>(id0 + e, words, excluded, n_excluded);
        uint32_t mask = __ballot_sync(kFullMask, cand);
        uint64_t my_key = cand ? make_key(xs[e], id0 + e) : 0;
        while (mask) {
            int src = __ffs(mask) - 1;
            mask &= mask - 1;
            uint64_t c = __shfl_sync(kFullMask, my_key, src);
            if (c > top.thr)
                top.insert(c, k, lane);
        }
    }
}

/* ---- a row's 16-byte alignment --------------------------------------------- */

/* The 16-byte alignment of n words at p: [0, a0) before the first boundary,
 * n4 aligned float4s in [a0, a1), [a1, n) after the last (the fused kernel's
 * slices; the row kernel's rows, where words [0, a0) and [a1, n) go one a
 * thread (threads 0, 1, ...) and thread t owns the float4s t, t + T, ...). */
struct RowSplit {
    int32_t n, a0, n4, a1;
};

static __device__ __forceinline__ RowSplit row_split(const float *p, int32_t n)
{
    const int mis = (int)(((uintptr_t)p >> 2) & 3);
    const int32_t a0 = min(n, (4 - mis) & 3), n4 = (n - a0) / 4;
    return RowSplit{n, a0, n4, a0 + 4 * n4};
}

#endif /* NMT_SOFTMAX_TOPK_DEVICE_CUH */
