/* softmax_topk.cu: fused online softmax + top-K over rows of logits.
 *
 * Shapes: logits [n_rows, ld] (V = vocab words used per row), top_values and
 * top_ids [n_rows, k], lse [n_rows]. log p_w = z_w - lse with
 * lse = m + log d, (m, d) the running max and normalizer of Milakov &
 * Gimelshein, "Online normalizer calculation for softmax" (Alg. 3), merged
 * across threads, warps and blocks by their associative eq. 4:
 *     (m1, d1) + (m2, d2) = (M, d1 e^(m1-M) + d2 e^(m2-M)),  M = max(m1, m2).
 * Every candidate is a packed 64-bit key (Argueta & Chiang, "Accelerating
 * Sparse Matrix Operations in Neural Networks on GPUs", Alg. 4): the logit's
 * order-preserving bits above, ~id below, so one unsigned compare orders by
 * value and then by the lower id; 0 is the empty slot (-inf, id -1).
 *
 * Variants (the launcher picks by rows, V, K; see pick at the bottom):
 *  row    (K + excluded ids <= 64, few rows: about one block of 1024
 *         threads an SM or fewer; any rows over candidate lists, while the
 *         bound fits 1024 threads): one block per row; each thread keeps only
 *         its best word, the K-th best of those bounds the top K, and the few
 *         words above it are ranked in shared memory (row_topk_kernel).
 *  fused  (K <= 64): one block (1..8 warps) per row reads the row once
 *         (16-byte loads), each warp keeps a sorted top-K spread over its lanes'
 *         registers (Milakov Alg. 4, lines 8-15, as a warp-wide insertion that
 *         only runs for the rare element above the warp's K-th key), then the
 *         warps' lists merge by rank (binary search in the other lists).
 *  split  (K <= 64, rows < SMs): the same kernel over a slice of a row per
 *         block writes partial (m, d) and top-K to the workspace; the last
 *         block of a row to finish (threadfence + a per-row atomic counter,
 *         reset by that block) merges them: one launch, no memset per call.
 *  atomic (64 < K <= 512): Argueta Alg. 4: threads push keys through a shared
 *         top-K with 64-bit atomicMax, pruned by the current K-th key.
 *  sort   (K > 512): fallback: (m, d) pass writing keys, CUB segmented radix
 *         sort, copy the first K.
 * Nothing allocates: the caller's workspace (nmt_cuda_softmax_topk_workspace_size)
 * holds the split counters (first kCounterBytes, at zero between calls), the
 * split partials and the sort fallback's keys.
 * Excluded ids count in lse but are never selected.
 * Candidate lists (LSH, nmt_cuda_softmax_topk_candidates): the row, fused,
 * split and atomic kernels take a CandMap (template CAND; CAND = false compiles to
 * the full-vocabulary kernels): row r reads only count[g] logits of its group
 * g, read on the device, split slices cut from that count in the kernel; keys
 * hold the candidate index, mapped to its word only on the rare insertion
 * test (excluded words) and when the outputs are written. */
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "softmax_topk.h"

#define FULL_MASK 0xffffffffu

static constexpr int kWarpSize = 32;
static constexpr int kMaxWarps = 8;      /* fused block: up to 256 threads */
static constexpr int kRegisterK = 64;    /* fused variants: K <= this */
static constexpr int kAtomicK = 512;     /* atomic variant: K <= this */
static constexpr int kMaxSplits = 16;    /* split variant: blocks per row at most */
/* Small rows are latency-bound (ncu on an H100, 5 rows x 4778 words, K 10:
 * 21 us, 4.7% achieved occupancy, no eligible warp 87% of the time), but
 * shorter warps and slices (256 words a slice, 128 a warp) did not help:
 * K 1 unchanged at ~15 us, K 10 -10%..+7%, K 50 1.5x slower (bench, same
 * H100 session). The fixed ~14 us at K 1 for 1 to 320 rows is not yet
 * explained; docs/performance.md. */
static constexpr int kSplitMinWords = 1024; /* ... and words per block at least */
static constexpr int kWordsPerWarp = 512;   /* fused: warps per block ~ words / this */
/* K > 32 (two slots a lane): insertions, not loads, bound the time, and each
 * warp's list costs ~K (1 + ln(words / K)) of them: fewer, longer warps. */
static constexpr int kWordsPerWarpTwoSlots = 1024;
static constexpr int kCounterSlots = 1024;  /* split rows at most (rows < SMs) */
static constexpr size_t kCounterBytes = kCounterSlots * sizeof(uint32_t);
static constexpr int kAtomicThreads = 256;
static constexpr int kRowMaxThreads = 1024;   /* row kernel: threads a block at most */
static constexpr int kRowWordsPerThread = 16; /* ... planned as ~V / this */
static constexpr int kRowCandKeys = 4096;     /* ... candidates a block holds (32 KB) */
static constexpr int kRowListMinThreads = 128; /* ... over candidate lists, at least */
static constexpr int kSortChunkWords = 1 << 25; /* sort fallback: rows per pass * V */
static_assert(kRegisterK % kWarpSize == 0 && kRegisterK <= 2 * kWarpSize, "two slots a lane");
static_assert(kMaxWarps * kWarpSize <= 1024, "block size");
static_assert(kSplitMinWords % 4 == 0, "split slices start 16-byte aligned when ld % 4 == 0");
static_assert(kCounterBytes % 256 == 0, "partials stay aligned after the counters");

/* ---- packed keys --------------------------------------------------------- */

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

/* Row r's logit j is word cand[g * cand_ld + j], j < count[g], g = r /
 * rows_per_group. Lists ascend, so ties to the lower candidate index are ties
 * to the lower word, as in the full softmax. */
struct CandMap {
    const int32_t *count, *cand;
    int64_t cand_ld;
    int32_t rows_per_group;
};

/* The row's number of logits (clamped to vocab = the plan's max_count) and
 * its candidate words (NULL without candidates). */
template <bool CAND>
static __device__ __forceinline__ int32_t row_length(const CandMap &map, int row, int32_t vocab,
                                                     const int32_t **words)
{
    *words = NULL;
    if (!CAND)
        return vocab;
    const int32_t g = row / map.rows_per_group;
    *words = map.cand + (int64_t)g * map.cand_ld;
    return max(0, min(__ldg(&map.count[g]), vocab));
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

static __device__ __forceinline__ OnlineMD md_merge(OnlineMD a, OnlineMD b)
{
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY)
        return OnlineMD{m, 0.0f};
    /* e^(-inf) is 0, so an empty side contributes nothing. */
    const float ml = m * kLog2e;
    return OnlineMD{m, a.d * exp_from(a.m, ml) + b.d * exp_from(b.m, ml)};
}

static __device__ __forceinline__ OnlineMD warp_md(OnlineMD v)
{
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2) {
        OnlineMD o{__shfl_xor_sync(FULL_MASK, v.m, off), __shfl_xor_sync(FULL_MASK, v.d, off)};
        v = md_merge(v, o);
    }
    return v;
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
     * a floor the first k (and every word until the k-th key rises) go
     * through insert one at a time, which made small rows cost ~15 us (ncu:
     * one warp in 87% of cycles with no eligible instruction). */
    __device__ __forceinline__ void seed(float lane_max, int k, int lane)
    {
        if (k > kWarpSize)
            return;
        float v = lane_max, kth = -INFINITY;
        for (int r = 0; r < k; r++) {
            float m = v;
#pragma unroll
            for (int off = kWarpSize / 2; off > 0; off /= 2)
                m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, off));
            if (!(m > -INFINITY)) { /* fewer than k lanes have words (or NaN): no floor */
                kth = -INFINITY;
                break;
            }
            kth = m;
            const uint32_t owners = __ballot_sync(FULL_MASK, v == m);
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
            pos += __popc(__ballot_sync(FULL_MASK, key[s] > cand));
        uint64_t carry = 0; /* what lane 0 of slot s receives: slot s-1 of lane 31 */
#pragma unroll
        for (int s = 0; s < SLOTS; s++) {
            uint64_t up = __shfl_up_sync(FULL_MASK, key[s], 1);
            uint64_t last = __shfl_sync(FULL_MASK, key[s], kWarpSize - 1);
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
        thr = __shfl_sync(FULL_MASK, t, (k - 1) & (kWarpSize - 1));
        thr_value = thr ? key_value(thr) : floor_value;
    }
};

/* Number of entries > key in a descending list of n (binary search). */
static __device__ __forceinline__ int count_greater(const uint64_t *list, int n, uint64_t key)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (list[mid] > key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Merges L descending lists of k unique keys (stride apart, shared memory)
 * into out[0..k) by rank: a key's rank is its position in its own list plus
 * the number of greater keys in the others. Keys below t0 cannot rank < k:
 * each list has q = ceil(k/L) keys >= its q-th key >= t0, so >= k keys overall.
 * Block-wide; ends synchronized. */
static __device__ void merge_sorted_lists(const uint64_t *lists, int n_lists, int stride, int k,
                                          uint64_t *out)
{
    int q = (k + n_lists - 1) / n_lists;
    uint64_t t0 = ~0ull;
    for (int l = 0; l < n_lists; l++)
        t0 = min(t0, lists[l * stride + q - 1]);
    for (int i = threadIdx.x; i < k; i += blockDim.x)
        out[i] = 0;
    __syncthreads();
    for (int idx = threadIdx.x; idx < n_lists * k; idx += blockDim.x) {
        int l = idx / k, i = idx - l * k;
        uint64_t key = lists[l * stride + i];
        if (key == 0 || key < t0)
            continue;
        int rank = i;
        for (int l2 = 0; l2 < n_lists && rank < k; l2++)
            if (l2 != l)
                rank += count_greater(lists + l2 * stride, k, key);
        if (rank < k)
            out[rank] = key;
    }
    __syncthreads();
}

/* ---- fused and split kernels ---------------------------------------------- */

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

/* Adds four words to (m, d) (-inf for the missing ones); returns their max. */
static __device__ __forceinline__ float md_add4(OnlineMD &md, float4 v)
{
    const float mx = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    if (mx > md.m) {
        md.d *= exp_from(md.m, mx * kLog2e);
        md.m = mx;
    }
    if (md.m != -INFINITY) {
        const float ml = md.m * kLog2e;
        md.d += (exp_from(v.x, ml) + exp_from(v.y, ml)) + (exp_from(v.z, ml) + exp_from(v.w, ml));
    }
    return mx;
}

/* Four words starting at id0 (the first n_valid real, the rest -inf). */
template <int SLOTS, bool CAND>
static __device__ __forceinline__ void scan4(float4 v, int32_t id0, int n_valid, OnlineMD &md,
                                             WarpTopK<SLOTS> &top, int k, int lane,
                                             const int32_t *excluded, int n_excluded,
                                             const int32_t *words)
{
    const float mx = md_add4(md, v);
    /* Rarely taken after the first few loads: nothing beats the warp's K-th. */
    if (!__any_sync(FULL_MASK, n_valid > 0 && mx >= top.thr_value))
        return;
    float xs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; e++) {
        bool cand = e < n_valid && xs[e] >= top.thr_value &&
                    !is_excluded_at<CAND>(id0 + e, words, excluded, n_excluded);
        uint32_t mask = __ballot_sync(FULL_MASK, cand);
        uint64_t my_key = cand ? make_key(xs[e], id0 + e) : 0;
        while (mask) {
            int src = __ffs(mask) - 1;
            mask &= mask - 1;
            uint64_t c = __shfl_sync(FULL_MASK, my_key, src);
            if (c > top.thr)
                top.insert(c, k, lane);
        }
    }
}

/* Block b handles row b / splits, words [slice*chunk, +chunk). With one split
 * it writes the outputs; otherwise it publishes its partial (m, d) and keys,
 * and the row's last block to finish merges them and writes the outputs.
 * row_done[row] is zero on entry and left zero on exit. CAND: the row has
 * its group's count of logits and the slices are cut from that count. */
template <int SLOTS, bool CAND>
static __global__ void __launch_bounds__(kMaxWarps *kWarpSize)
    fused_topk_kernel(int32_t vocab, const float *__restrict__ logits, int64_t ld, int k,
                      int k_out, const int32_t *__restrict__ excluded, int n_excluded,
                      int splits, int chunk, float *__restrict__ top_values,
                      int32_t *__restrict__ top_ids, float *__restrict__ lse_out,
                      float2 *__restrict__ part_md, uint64_t *__restrict__ part_keys,
                      uint32_t *__restrict__ row_done, CandMap map)
{
    /* The warps' lists, then (split, last block of a row) the row's slices' lists. */
    __shared__ uint64_t s_lists[(kMaxWarps > kMaxSplits ? kMaxWarps : kMaxSplits) * kRegisterK];
    __shared__ int s_last;
    __shared__ uint64_t s_top[kRegisterK];
    __shared__ OnlineMD s_md[kMaxWarps];
    __shared__ float s_lse;

    const int lane = threadIdx.x & (kWarpSize - 1), warp = threadIdx.x / kWarpSize;
    const int n_warps = blockDim.x / kWarpSize;
    const int row = blockIdx.x / splits, slice = blockIdx.x - row * splits;
    const float *p = logits + (int64_t)row * ld;
    const int32_t *words;
    const int32_t n_words = row_length<CAND>(map, row, vocab, &words);
    if (CAND) /* as fused_plan: multiples of 4 words; trailing slices may be empty */
        chunk = ((n_words + splits - 1) / splits + 3) & ~3;
    const int c0 = CAND ? min(slice * chunk, n_words) : slice * chunk;
    const int c1 = min(n_words, c0 + chunk);

    /* Words before the first 16-byte boundary and after the last go scalar. */
    const RowSplit rs = row_split(p + c0, c1 - c0);
    const int a0 = c0 + rs.a0, n4 = rs.n4, a1 = c0 + rs.a1;
    const float4 *p4 = reinterpret_cast<const float4 *>(p + a0);

    OnlineMD md{-INFINITY, 0.0f};
    WarpTopK<SLOTS> top;
    top.init();
    const float4 neg4 = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);

    constexpr int U = 4; /* float4 loads in flight per thread */
    const int stride = blockDim.x;
    for (int base = warp * kWarpSize; base < n4; base += U * stride) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int i = base + u * stride + lane;
            v[u] = i < n4 ? __ldcs(p4 + i) : neg4;
        }
        if (base == warp * kWarpSize) { /* the warp's first loads seed its floor */
            float lane_max = -INFINITY;
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = base + u * stride + lane;
                const float xs[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (i < n4 && !is_excluded_at<CAND>(a0 + 4 * i + e, words, excluded, n_excluded))
                        lane_max = fmaxf(lane_max, xs[e]);
            }
            top.seed(lane_max, k, lane);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            int i = base + u * stride + lane;
            scan4<SLOTS, CAND>(v[u], a0 + 4 * i, i < n4 ? 4 : 0, md, top, k, lane, excluded,
                               n_excluded, words);
        }
    }
    if (warp == 0) { /* at most 3 head and 3 tail words */
        int n_head = a0 - c0, n_extra = n_head + (c1 - a1);
        int id = lane < n_head ? c0 + lane : a1 + (lane - n_head);
        bool ok = lane < n_extra;
        float4 v = neg4;
        if (ok)
            v.x = p[id];
        scan4<SLOTS, CAND>(v, id, ok ? 1 : 0, md, top, k, lane, excluded, n_excluded, words);
    }

    md = warp_md(md);
    if (lane == 0)
        s_md[warp] = md;
#pragma unroll
    for (int s = 0; s < SLOTS; s++) {
        int pos = s * kWarpSize + lane;
        if (pos < k)
            s_lists[warp * kRegisterK + pos] = top.key[s];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        OnlineMD t = s_md[0];
        for (int w = 1; w < n_warps; w++)
            t = md_merge(t, s_md[w]);
        s_md[0] = t;
        s_lse = t.m + logf(t.d);
    }
    merge_sorted_lists(s_lists, n_warps, kRegisterK, k, s_top); /* syncs */

    if (splits == 1) {
        float lse = s_lse;
        for (int i = threadIdx.x; i < k_out; i += blockDim.x)
            write_slot_at<CAND>(i < k ? s_top[i] : 0, lse, &top_values[(int64_t)row * k_out + i],
                                &top_ids[(int64_t)row * k_out + i], words);
        if (lse_out && threadIdx.x == 0)
            lse_out[row] = lse;
        return;
    }

    /* Split: publish this slice's (m, d) and top-K, then count the row's
     * finished slices; the last one merges (threadFenceReduction pattern). */
    for (int i = threadIdx.x; i < k; i += blockDim.x)
        part_keys[(int64_t)blockIdx.x * k + i] = s_top[i];
    if (threadIdx.x == 0)
        part_md[blockIdx.x] = make_float2(s_md[0].m, s_md[0].d);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t done = atomicAdd(&row_done[row], 1u);
        s_last = done == (uint32_t)splits - 1;
        if (s_last)
            row_done[row] = 0; /* every slice has counted: ready for the next call */
    }
    __syncthreads();
    if (!s_last)
        return;
    __threadfence();
    const int64_t first = (int64_t)row * splits;
    for (int i = threadIdx.x; i < splits * k; i += blockDim.x)
        s_lists[i] = __ldcg(&part_keys[first * k + i]);
    if (threadIdx.x == 0) {
        OnlineMD t{-INFINITY, 0.0f};
        for (int sl = 0; sl < splits; sl++) {
            float2 v = __ldcg(&part_md[first + sl]);
            t = md_merge(t, OnlineMD{v.x, v.y});
        }
        s_lse = t.m + logf(t.d);
    }
    __syncthreads();
    merge_sorted_lists(s_lists, splits, k, k, s_top); /* syncs */
    const float lse = s_lse;
    for (int i = threadIdx.x; i < k_out; i += blockDim.x)
        write_slot_at<CAND>(i < k ? s_top[i] : 0, lse, &top_values[(int64_t)row * k_out + i],
                            &top_ids[(int64_t)row * k_out + i], words);
    if (lse_out && threadIdx.x == 0)
        lse_out[row] = lse;
}

/* ---- row kernel: one block per row, for few rows ---------------------------- */

/* f(v, first word, valid words) over the thread's words, in that order;
 * missing words are -inf. U float4 loads in flight a thread. */
template <typename F>
static __device__ __forceinline__ void visit_row_words(const float *p, const RowSplit &rs, F f)
{
    constexpr int U = 4;
    const int t = threadIdx.x, T = blockDim.x;
    const float4 *p4 = reinterpret_cast<const float4 *>(p + rs.a0);
    const float4 neg4 = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    for (int base = t; base < rs.n4; base += U * T) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = base + u * T;
            v[u] = i < rs.n4 ? __ldg(p4 + i) : neg4;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = base + u * T;
            if (i < rs.n4)
                f(v[u], rs.a0 + 4 * i, 4);
        }
    }
    if (t < rs.a0 + (rs.n - rs.a1)) {
        const int32_t j = t < rs.a0 ? t : rs.a1 + (t - rs.a0);
        float4 v = neg4;
        v.x = p[j];
        f(v, j, 1);
    }
}

/* Does word (x, j) come before (bx, bj): larger logit, then lower id? NaN never does. */
static __device__ __forceinline__ bool word_before(float x, int32_t j, float bx, int32_t bj)
{
    return x > bx || (x == bx && j < bj);
}

/* The warp's largest (MAX) or smallest key, in every lane. */
template <bool MAX>
static __device__ __forceinline__ uint64_t warp_extreme_u64(uint64_t v)
{
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2) {
        const uint64_t o = __shfl_xor_sync(FULL_MASK, v, off);
        v = (MAX ? o > v : o < v) ? o : v;
    }
    return v;
}

/* Block-wide: f(i, key, rank) for each of the n unique keys in s_keys, rank =
 * the number of greater keys. Each key gets g lanes (a power of two <= 32,
 * g * n <= T where it fits) that count over slices of the list and add up
 * by shuffles, so n^2 compares spread over the block, not n threads. */
template <typename F>
static __device__ __forceinline__ void rank_keys(const uint64_t *s_keys, int n, F f)
{
    int log_g = 0;
    while (log_g < 5 && (2 * n << log_g) <= (int)blockDim.x)
        log_g++;
    const int g = 1 << log_g, part = threadIdx.x & (g - 1);
    for (int p0 = 0; p0 < n << log_g; p0 += blockDim.x) { /* block-uniform trip count */
        const int i = (p0 + (int)threadIdx.x) >> log_g;
        const uint64_t key = i < n ? s_keys[i] : 0;
        int rank = 0;
        if (i < n)
            for (int j = part; j < n; j += g)
                rank += s_keys[j] > key;
        for (int off = g / 2; off > 0; off /= 2)
            rank += __shfl_xor_sync(FULL_MASK, rank, off);
        if (i < n && part == 0)
            f(i, key, rank);
    }
}

/* One block of T threads per row, K + n_excluded <= kRegisterK, no workspace
 * and no inter-block step. For few rows the fused kernel leaves SMs idle or
 * pays the split path's publish / fence / last-block merge chain (~12 us at
 * one row). Each thread keeps only its best word; with k' = K + n_excluded:
 *  1. stream the row once: (m, d), each thread's best word (exclusion is not
 *     looked at here: the top k' of all words hold the top K of the allowed);
 *  2. tau = the k'-th best of the T bests. k' distinct words are >= tau, so
 *     no word below it is in the top k', and only the k' threads whose best
 *     is >= tau hold words that are. Found without a sort: with W warps and
 *     q = ceil(k' / W), every warp has q bests >= t0 = the least of the
 *     warps' q-th bests, so the bests >= t0 (typically a few k') hold the
 *     k' best; rank those by counting;
 *  3. those k' threads re-read their words (cached) and keep the allowed
 *     words >= tau: at most k' x (words a thread), kRowCandKeys by the
 *     launcher (fewer than k' bests, T < k': every word, fewer still);
 *  4. rank the candidates by counting; rank r < K goes to slot r.
 * k' = 1 stops after 2: tau is the answer. */
template <bool CAND>
static __global__ void __launch_bounds__(kRowMaxThreads)
    row_topk_kernel(int32_t vocab, const float *__restrict__ logits, int64_t ld, int k,
                    int k_out, const int32_t *__restrict__ excluded, int n_excluded,
                    float *__restrict__ top_values, int32_t *__restrict__ top_ids,
                    float *__restrict__ lse_out, CandMap map)
{
    __shared__ uint64_t s_keys[kRowCandKeys]; /* 2: the bests >= t0; 3-4: candidates */
    __shared__ uint64_t s_warp_qth[kRowMaxThreads / kWarpSize];
    __shared__ OnlineMD s_md[kRowMaxThreads / kWarpSize];
    __shared__ int s_n_best, s_n_cand;
    __shared__ uint64_t s_tau;
    __shared__ float s_lse;

    const int lane = threadIdx.x & (kWarpSize - 1), warp = threadIdx.x / kWarpSize;
    const int n_warps = blockDim.x / kWarpSize;
    const int row = blockIdx.x, k_thr = k + n_excluded;
    const float *p = logits + (int64_t)row * ld;
    const int32_t *words;
    const RowSplit rs = row_split(p, row_length<CAND>(map, row, vocab, &words));
    if (threadIdx.x == 0) {
        s_n_best = s_n_cand = 0;
        s_tau = ~0ull; /* above every key: no word, nothing selected */
    }

    /* 1. (m, d) and the thread's best word. */
    OnlineMD md{-INFINITY, 0.0f};
    float best_x = -INFINITY;
    int32_t best_j = INT32_MAX;
    visit_row_words(p, rs, [&](float4 v, int32_t j0, int n_valid) {
        const float mx = md_add4(md, v);
        const float sum = v.x + v.y + v.z + v.w;
        if (sum == sum) { /* no NaN word: branch-free, ties to the lower id */
            const bool hi = fmaxf(v.z, v.w) > fmaxf(v.x, v.y);
            const int e = hi ? (v.w > v.z ? 3 : 2) : (v.y > v.x ? 1 : 0);
            if (word_before(mx, j0 + e, best_x, best_j)) {
                best_x = mx;
                best_j = j0 + e;
            }
            return;
        }
        const float xs[4] = {v.x, v.y, v.z, v.w}; /* NaN words are never picked */
#pragma unroll
        for (int e = 0; e < 4; e++)
            if (e < n_valid && word_before(xs[e], j0 + e, best_x, best_j)) {
                best_x = xs[e];
                best_j = j0 + e;
            }
    });
    const uint64_t best = best_j != INT32_MAX ? make_key(best_x, best_j) : 0;

    /* 2. t0 from each warp's q-th best, then tau by rank among the bests >= t0. */
    md = warp_md(md);
    if (lane == 0)
        s_md[warp] = md;
    const int q = (k_thr + n_warps - 1) / n_warps;
    uint64_t qth = 0; /* 0 (take every best) when a warp has fewer than q */
    if (q <= kWarpSize) {
        uint64_t v = best;
        for (int r = 0; r < q; r++) {
            qth = warp_extreme_u64<true>(v);
            if (qth == 0)
                break;
            if (v == qth)
                v = 0;
        }
    }
    if (lane == 0)
        s_warp_qth[warp] = qth;
    __syncthreads();
    if (warp == 0) { /* the warps' (m, d) merged by a shuffle tree */
        OnlineMD t = lane < n_warps ? s_md[lane] : OnlineMD{-INFINITY, 0.0f};
        t = warp_md(t);
        if (lane == 0)
            s_lse = t.m + logf(t.d);
    }
    const uint64_t t0 = warp_extreme_u64<false>(lane < n_warps ? s_warp_qth[lane] : ~0ull);
    if (best && best >= t0)
        s_keys[atomicAdd(&s_n_best, 1)] = best;
    __syncthreads();
    const int n_best = s_n_best;
    if (n_best < k_thr) { /* fewer bests than k' (T < k'): every word is a candidate */
        if (threadIdx.x == 0 && n_best > 0)
            s_tau = 0;
    } else {
        rank_keys(s_keys, n_best, [&](int, uint64_t key, int rank) {
            if (rank == k_thr - 1)
                s_tau = key;
        });
    }
    __syncthreads();
    const uint64_t tau = s_tau; /* 0: every word; ~0: no word */
    const float lse = s_lse;
    float *values = top_values + (int64_t)row * k_out;
    int32_t *ids = top_ids + (int64_t)row * k_out;
    int found = 0;

    if (k_thr == 1) {
        found = tau != ~0ull;
        if (threadIdx.x == 0 && found && k_out > 0)
            write_slot_at<CAND>(tau, lse, &values[0], &ids[0], words);
    } else {
        /* 3. The k' threads whose best is >= tau re-read their words. */
        if (best && best >= tau) {
            const bool every = tau == 0;
            const float tau_x = every ? -INFINITY : key_value(tau);
            const int32_t tau_j = every ? INT32_MAX : key_id(tau);
            visit_row_words(p, rs, [&](float4 v, int32_t j0, int n_valid) {
                if (!(fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)) >= tau_x))
                    return; /* none reaches tau (NaN: fmaxf skips it) */
                const float xs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (e < n_valid && xs[e] == xs[e] &&
                        (every || !word_before(tau_x, tau_j, xs[e], j0 + e)) &&
                        !is_excluded_at<CAND>(j0 + e, words, excluded, n_excluded)) {
                        const int slot = atomicAdd(&s_n_cand, 1);
                        if (slot < kRowCandKeys) /* the launcher's bound makes this always so */
                            s_keys[slot] = make_key(xs[e], j0 + e);
                    }
            });
        }
        __syncthreads();
        /* 4. Rank the candidates. */
        const int n_cand = min(s_n_cand, kRowCandKeys);
        rank_keys(s_keys, n_cand, [&](int, uint64_t key, int rank) {
            if (rank < k && rank < k_out)
                write_slot_at<CAND>(key, lse, &values[rank], &ids[rank], words);
        });
        found = min(k, n_cand);
    }
    for (int i = found + threadIdx.x; i < k_out; i += blockDim.x)
        write_slot(0, lse, &values[i], &ids[i]);
    if (lse_out && threadIdx.x == 0)
        lse_out[row] = lse;
}

/* ---- atomic variant (Argueta & Chiang Alg. 4) ----------------------------- */

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

static __device__ __forceinline__ void md_add(OnlineMD &md, float x)
{
    if (x > md.m) {
        md.d = md.d * __expf(md.m - x) + 1.0f;
        md.m = x;
    } else if (md.m != -INFINITY) {
        md.d += __expf(x - md.m);
    }
}

/* One block per row; dynamic shared memory holds the k packed keys. */
template <bool CAND>
static __global__ void __launch_bounds__(kAtomicThreads)
    atomic_topk_kernel(int32_t vocab, const float *__restrict__ logits, int64_t ld, int k,
                       int k_out, const int32_t *__restrict__ excluded, int n_excluded,
                       float *__restrict__ top_values, int32_t *__restrict__ top_ids,
                       float *__restrict__ lse_out, CandMap map)
{
    extern __shared__ unsigned long long s_best[]; /* [k], descending when done */
    __shared__ OnlineMD s_md[kAtomicThreads / kWarpSize];
    const int row = blockIdx.x;
    const float *p = logits + (int64_t)row * ld;
    volatile unsigned long long *v_best = s_best;
    const int32_t *words;
    const int32_t n_words = row_length<CAND>(map, row, vocab, &words);

    for (int i = threadIdx.x; i < k; i += blockDim.x)
        s_best[i] = 0;
    __syncthreads();
    OnlineMD md{-INFINITY, 0.0f};
    for (int w = threadIdx.x; w < n_words; w += blockDim.x) {
        float x = __ldcs(p + w);
        md_add(md, x);
        unsigned long long y = make_key(x, w);
        if (y <= v_best[k - 1] || is_excluded_at<CAND>(w, words, excluded, n_excluded))
            continue;
        /* Carry y down the list: each atomicMax leaves the larger key in
         * place and hands back the smaller one to carry on (Alg. 4, 11-14).
         * Slots only grow, so a slot already >= y can be skipped unread. */
        for (int n = 0; n < k && y; n++) {
            if (v_best[n] >= y)
                continue;
            unsigned long long c = atomicMax(&s_best[n], y);
            if (c < y)
                y = c;
        }
    }
    OnlineMD t = block_md(md, s_md); /* syncs: every atomic is done */
    float lse = t.m + logf(t.d);
    for (int i = threadIdx.x; i < k_out; i += blockDim.x)
        write_slot_at<CAND>(i < k ? (uint64_t)s_best[i] : 0, lse,
                            &top_values[(int64_t)row * k_out + i],
                            &top_ids[(int64_t)row * k_out + i], words);
    if (lse_out && threadIdx.x == 0)
        lse_out[row] = lse;
}

/* ---- sort fallback (any K) ------------------------------------------------ */

/* One block per row of the chunk: lse, and every word's key (excluded: 0). */
static __global__ void __launch_bounds__(256)
    keys_lse_kernel(int32_t vocab, const float *__restrict__ logits, int64_t ld,
                    const int32_t *__restrict__ excluded, int n_excluded,
                    uint64_t *__restrict__ keys, float *__restrict__ lse)
{
    __shared__ OnlineMD s_md[256 / kWarpSize];
    const int row = blockIdx.x;
    const float *p = logits + (int64_t)row * ld;
    OnlineMD md{-INFINITY, 0.0f};
    for (int w = threadIdx.x; w < vocab; w += blockDim.x) {
        float x = p[w];
        md_add(md, x);
        keys[(int64_t)row * vocab + w] = is_excluded(w, excluded, n_excluded) ? 0 : make_key(x, w);
    }
    OnlineMD t = block_md(md, s_md);
    if (threadIdx.x == 0)
        lse[row] = t.m + logf(t.d);
}

static __global__ void segment_offsets_kernel(int n, int32_t vocab, int *offsets)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n)
        offsets[i] = i * vocab;
}

static __global__ void write_sorted_kernel(int n_rows, int32_t vocab, int k_out,
                                           const uint64_t *__restrict__ sorted,
                                           const float *__restrict__ lse, float *top_values,
                                           int32_t *top_ids, float *lse_out)
{
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (int64_t)n_rows * k_out)
        return;
    int row = (int)(idx / k_out), i = (int)(idx - (int64_t)row * k_out);
    write_slot(i < vocab ? sorted[(int64_t)row * vocab + i] : 0, lse[row], &top_values[idx],
               &top_ids[idx]);
    if (lse_out && i == 0)
        lse_out[row] = lse[row];
}

/* ---- launch helpers -------------------------------------------------------- */

static size_t align256(size_t bytes)
{
    return (bytes + 255) & ~(size_t)255;
}

static int multiprocessor_count(void)
{
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
        return 108;
    return sms;
}

/* Sort fallback, workspace after the counters: keys in, keys out, lse,
 * segment offsets, CUB's temporary storage. */
struct SortPlan {
    int chunk_rows;
    size_t n_keys, temp_bytes, off_keys_in, off_keys_out, off_lse, off_offsets, off_temp, total;
    cudaError_t error; /* from CUB's size query */
};

static SortPlan sort_plan(int32_t n_rows, int32_t vocab)
{
    SortPlan p = {};
    int chunk_rows = (int)((int64_t)kSortChunkWords / vocab);
    p.chunk_rows = chunk_rows < 1 ? 1 : (chunk_rows > n_rows ? n_rows : chunk_rows);
    p.n_keys = (size_t)p.chunk_rows * vocab;
    /* int offsets: a chunk holds at most max(2^25, vocab) words. */
    p.error = cub::DeviceSegmentedRadixSort::SortKeysDescending(
        NULL, p.temp_bytes, (const uint64_t *)NULL, (uint64_t *)NULL, (int64_t)p.n_keys,
        p.chunk_rows, (const int *)NULL, (const int *)NULL, 0, 64, (cudaStream_t)0);
    p.off_keys_in = kCounterBytes;
    p.off_keys_out = p.off_keys_in + align256(p.n_keys * sizeof(uint64_t));
    p.off_lse = p.off_keys_out + align256(p.n_keys * sizeof(uint64_t));
    p.off_offsets = p.off_lse + align256((size_t)n_rows * sizeof(float));
    p.off_temp = p.off_offsets + align256(((size_t)p.chunk_rows + 1) * sizeof(int));
    p.total = p.off_temp + p.temp_bytes;
    return p;
}

/* Fused and split variants: blocks per row, words per block, warps per block. */
struct FusedPlan {
    int splits, chunk, warps;
};

static FusedPlan fused_plan(int32_t n_rows, int32_t vocab, int k_run, int sms)
{
    FusedPlan p = {1, vocab, 1};
    if (n_rows < sms && n_rows <= kCounterSlots) {
        int splits = (2 * sms + n_rows - 1) / n_rows;
        int by_size = vocab / kSplitMinWords;
        splits = splits > by_size ? by_size : splits;
        p.splits = splits > kMaxSplits ? kMaxSplits : (splits < 1 ? 1 : splits);
    }
    /* Slices are multiples of 4 words so each starts aligned when ld % 4 == 0. */
    if (p.splits > 1) {
        p.chunk = ((vocab + p.splits - 1) / p.splits + 3) & ~3;
        p.splits = (vocab + p.chunk - 1) / p.chunk;
    }
    const int per_warp = k_run > kWarpSize ? kWordsPerWarpTwoSlots : kWordsPerWarp;
    int warps = (p.chunk + per_warp - 1) / per_warp;
    p.warps = warps < 1 ? 1 : (warps > kMaxWarps ? kMaxWarps : warps);
    return p;
}

/* Row kernel: threads a block, or 0 where it does not apply: k' = K +
 * n_excluded above the register variants, a candidate bound (k' threads x their words) over
 * kRowCandKeys, or more rows than about one block of kRowMaxThreads an SM
 * (there the fused kernel keeps every SM busy). ~V / kRowWordsPerThread
 * threads, so blocks of several rows share an SM; up to a row an SM, twice
 * that: its SM has nothing else to run. */
static int row_plan_threads(int32_t n_rows, int32_t vocab, int k_run, int n_excluded, int sms)
{
    const int64_t k_thr = (int64_t)k_run + n_excluded; /* the kernel's k' */
    if (k_thr > kRegisterK)
        return 0;
    const int per_thread = n_rows <= sms ? kRowWordsPerThread / 2 : kRowWordsPerThread;
    int64_t t = ((int64_t)vocab + per_thread - 1) / per_thread;
    t = (t + kWarpSize - 1) / kWarpSize * kWarpSize; /* vocab >= 1: at least a warp */
    t = t > kRowMaxThreads ? kRowMaxThreads : t;
    const int64_t words_a_thread = 4 * ((vocab / 4 + t - 1) / t) + 1; /* + a head/tail word */
    if (k_thr * words_a_thread > kRowCandKeys)
        return 0;
    if ((int64_t)n_rows * t > (int64_t)sms * kRowMaxThreads)
        return 0;
    return (int)t;
}

/* Row kernel over candidate lists (CAND): threads a block, or 0. A list is
 * usually far shorter than its bound max_count (LSH: a few thousand words of
 * V = 35k), so a plan from the bound sends many rows to the fused kernel's 8
 * warps a row (49 us against TOP's 14 at 768 rows of 2,300 words on the H100,
 * docs/lsh.md). The row kernel only needs its candidate bound to hold for a
 * list as long as max_count: the fewest threads that meet it, at least
 * kRowListMinThreads; no occupancy limit (most blocks read a short list). */
static int row_plan_threads_lists(int32_t max_count, int k_run, int n_excluded)
{
    const int64_t k_thr = (int64_t)k_run + n_excluded;
    if (k_thr > kRegisterK)
        return 0;
    for (int t = kRowListMinThreads; t <= kRowMaxThreads; t += kWarpSize) {
        const int64_t words_a_thread = 4 * ((max_count / 4 + t - 1) / t) + 1;
        if (k_thr * words_a_thread <= kRowCandKeys)
            return t;
    }
    return 0;
}

/* Split workspace: counters, then (m, d) and k_run keys of every slice. */
static size_t split_bytes(size_t parts, int k_run)
{
    return kCounterBytes + align256(parts * sizeof(float2)) + parts * k_run * sizeof(uint64_t);
}

static nmt_status workspace_too_small(size_t have, size_t need, nmt_error *err)
{
    return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                         "nmt_cuda_softmax_topk: workspace of %zu bytes, the call needs %zu "
                         "(nmt_cuda_softmax_topk_workspace_size)", have, need);
}

static nmt_status launch_sort(int32_t n_rows, int32_t vocab, const float *logits, int32_t ld,
                              int32_t k, const int32_t *excluded, int32_t n_excluded,
                              float *top_values, int32_t *top_ids, float *lse, char *ws,
                              size_t ws_bytes, cudaStream_t stream, nmt_error *err)
{
    const SortPlan plan = sort_plan(n_rows, vocab);
    NMT_CUDA_RETURN(plan.error);
    if (!ws || ws_bytes < plan.total)
        return workspace_too_small(ws_bytes, plan.total, err);
    uint64_t *keys_in = (uint64_t *)(ws + plan.off_keys_in);
    uint64_t *keys_out = (uint64_t *)(ws + plan.off_keys_out);
    float *lse_ws = (float *)(ws + plan.off_lse);
    int *offsets = (int *)(ws + plan.off_offsets);

    for (int32_t r0 = 0; r0 < n_rows; r0 += plan.chunk_rows) {
        int rows = n_rows - r0 < plan.chunk_rows ? n_rows - r0 : plan.chunk_rows;
        const float *chunk_logits = logits + (int64_t)r0 * ld;
        keys_lse_kernel<<<rows, 256, 0, stream>>>(vocab, chunk_logits, ld, excluded, n_excluded,
                                                  keys_in, lse_ws + r0);
        NMT_LAUNCH_RETURN("keys_lse_kernel");
        segment_offsets_kernel<<<(rows + 1 + 255) / 256, 256, 0, stream>>>(rows, vocab, offsets);
        NMT_LAUNCH_RETURN("segment_offsets_kernel");
        size_t temp = plan.temp_bytes;
        NMT_CUDA_RETURN(cub::DeviceSegmentedRadixSort::SortKeysDescending(
            ws + plan.off_temp, temp, keys_in, keys_out, (int64_t)rows * vocab, rows, offsets,
            offsets + 1, 0, 64, stream));
        int64_t n_out = (int64_t)rows * k;
        if (n_out > 0) {
            write_sorted_kernel<<<(unsigned)((n_out + 255) / 256), 256, 0, stream>>>(
                rows, vocab, k, keys_out, lse_ws + r0, top_values + (int64_t)r0 * k,
                top_ids + (int64_t)r0 * k, lse ? lse + r0 : NULL);
            NMT_LAUNCH_RETURN("write_sorted_kernel");
        }
    }
    return NMT_STATUS_OK;
}

template <int SLOTS, bool CAND>
static void launch_fused(int blocks, int threads, int32_t vocab, const float *logits, int64_t ld,
                         int k, int k_out, const int32_t *excluded, int n_excluded, int splits,
                         int chunk, float *top_values, int32_t *top_ids, float *lse,
                         float2 *part_md, uint64_t *part_keys, uint32_t *row_done, CandMap map,
                         cudaStream_t stream)
{
    fused_topk_kernel<SLOTS, CAND><<<blocks, threads, 0, stream>>>(
        vocab, logits, ld, k, k_out, excluded, n_excluded, splits, chunk, top_values, top_ids,
        lse, part_md, part_keys, row_done, map);
}

/* The atomic, fused and split variants (K <= kAtomicK); vocab is the row
 * length or, with candidates, max_count, which plans the launch. */
template <bool CAND>
static nmt_status launch_register_or_atomic(int32_t n_rows, int32_t vocab, const float *logits,
                                            int64_t ld, int32_t k, const int32_t *excluded,
                                            int32_t n_excluded, float *top_values,
                                            int32_t *top_ids, float *lse, CandMap map,
                                            void *workspace, size_t workspace_bytes,
                                            cudaStream_t stream, nmt_error *err)
{
    const int k_sel = k < vocab ? k : vocab;
    if (k_sel > kRegisterK) {
        size_t smem = (size_t)k_sel * sizeof(unsigned long long);
        atomic_topk_kernel<CAND><<<n_rows, kAtomicThreads, smem, stream>>>(
            vocab, logits, ld, k_sel, k, excluded, n_excluded, top_values, top_ids, lse, map);
        NMT_LAUNCH_RETURN("atomic_topk_kernel");
        return NMT_STATUS_OK;
    }
    const int k_run = k_sel > 0 ? k_sel : 1; /* k == 0 still yields lse */
    const int sms = multiprocessor_count();
    const int row_threads = CAND ? row_plan_threads_lists(vocab, k_run, n_excluded)
                                 : row_plan_threads(n_rows, vocab, k_run, n_excluded, sms);
    if (row_threads > 0) {
        row_topk_kernel<CAND><<<n_rows, row_threads, 0, stream>>>(
            vocab, logits, ld, k_run, k, excluded, n_excluded, top_values, top_ids, lse, map);
        NMT_LAUNCH_RETURN("row_topk_kernel");
        return NMT_STATUS_OK;
    }
    const FusedPlan plan = fused_plan(n_rows, vocab, k_run, sms);
    float2 *part_md = NULL;
    uint64_t *part_keys = NULL;
    uint32_t *row_done = NULL;
    if (plan.splits > 1) {
        const size_t parts = (size_t)n_rows * plan.splits, need = split_bytes(parts, k_run);
        if (!workspace || workspace_bytes < need)
            return workspace_too_small(workspace_bytes, need, err);
        char *ws = (char *)workspace;
        row_done = (uint32_t *)ws;
        part_md = (float2 *)(ws + kCounterBytes);
        part_keys = (uint64_t *)(ws + kCounterBytes + align256(parts * sizeof(float2)));
    }
    const int blocks = n_rows * plan.splits, threads = plan.warps * kWarpSize;
    if (k_run <= kWarpSize)
        launch_fused<1, CAND>(blocks, threads, vocab, logits, ld, k_run, k, excluded, n_excluded,
                              plan.splits, plan.chunk, top_values, top_ids, lse, part_md,
                              part_keys, row_done, map, stream);
    else
        launch_fused<2, CAND>(blocks, threads, vocab, logits, ld, k_run, k, excluded, n_excluded,
                              plan.splits, plan.chunk, top_values, top_ids, lse, part_md,
                              part_keys, row_done, map, stream);
    NMT_LAUNCH_RETURN("fused_topk_kernel");
    return NMT_STATUS_OK;
}

/* ---- exported ------------------------------------------------------------- */

extern "C" size_t nmt_cuda_softmax_topk_workspace_size(int32_t n_rows, int32_t vocab, int32_t k)
{
    size_t need = kCounterBytes;
    if (n_rows < 1 || vocab < 1 || k < 0)
        return need;
    const int sms = multiprocessor_count();
    const int k_sel = k < vocab ? k : vocab;
    /* Any call with fewer rows (more slices a row), a smaller V or K needs no more. */
    const int k_run = k_sel < 1 ? 1 : (k_sel > kRegisterK ? kRegisterK : k_sel);
    for (int32_t r = 1; r <= n_rows && r < sms && r <= kCounterSlots; r++) {
        FusedPlan p = fused_plan(r, vocab, k_run, sms);
        size_t b = p.splits > 1 ? split_bytes((size_t)r * p.splits, k_run) : 0;
        need = b > need ? b : need;
    }
    if (k_sel > kAtomicK) {
        SortPlan p = sort_plan(n_rows, vocab);
        if (p.error != cudaSuccess)
            return SIZE_MAX;
        need = p.total > need ? p.total : need;
    }
    return need;
}

extern "C" nmt_status nmt_cuda_softmax_topk(int32_t n_rows, int32_t vocab, const float *logits,
                                            int32_t ld, int32_t k, const int32_t *excluded,
                                            int32_t n_excluded, float *top_values,
                                            int32_t *top_ids, float *lse, void *workspace,
                                            size_t workspace_bytes, void *stream_ptr,
                                            nmt_error *err)
{
    cudaStream_t stream = (cudaStream_t)stream_ptr;

    NMT_ARG_CHECK(n_rows >= 0 && vocab >= 1 && ld >= vocab && k >= 0 && n_excluded >= 0);
    NMT_ARG_CHECK(n_rows == 0 || logits);
    NMT_ARG_CHECK(k == 0 || n_rows == 0 || (top_values && top_ids));
    NMT_ARG_CHECK(n_excluded == 0 || excluded);
    NMT_ARG_CHECK((int64_t)n_rows * (k > 1 ? k : 1) <= INT32_MAX);
    NMT_ARG_CHECK((uintptr_t)workspace % 256 == 0);
    if (n_rows == 0)
        return NMT_STATUS_OK;

    /* The pick: K words can be found among at most V; the rest is the tail. */
    const int k_sel = k < vocab ? k : vocab;
    if (k_sel > kAtomicK)
        return launch_sort(n_rows, vocab, logits, ld, k, excluded, n_excluded, top_values,
                           top_ids, lse, (char *)workspace, workspace_bytes, stream, err);
    return launch_register_or_atomic<false>(n_rows, vocab, logits, ld, k, excluded, n_excluded,
                                            top_values, top_ids, lse, CandMap{}, workspace,
                                            workspace_bytes, stream, err);
}

extern "C" nmt_status nmt_cuda_softmax_topk_candidates(
    int32_t n_rows, int32_t rows_per_group, const float *logits, int64_t ld, const int32_t *cand,
    int64_t cand_ld, const int32_t *count, int32_t max_count, int32_t k, const int32_t *excluded,
    int32_t n_excluded, float *top_values, int32_t *top_ids, float *lse, void *workspace,
    size_t workspace_bytes, void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && rows_per_group >= 1 && max_count >= 1 && k >= 0);
    NMT_ARG_CHECK(ld >= max_count && cand_ld >= max_count && n_excluded >= 0);
    NMT_ARG_CHECK(n_rows == 0 || (logits && cand && count));
    NMT_ARG_CHECK(k == 0 || n_rows == 0 || (top_values && top_ids));
    NMT_ARG_CHECK(n_excluded == 0 || excluded);
    NMT_ARG_CHECK((int64_t)n_rows * (k > 1 ? k : 1) <= INT32_MAX);
    NMT_ARG_CHECK((uintptr_t)workspace % 256 == 0);
    if (k > kAtomicK) /* the sort fallback has no candidate mapping */
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "nmt_cuda_softmax_topk_candidates: K = %d, at most %d with "
                             "candidate lists", k, kAtomicK);
    if (n_rows == 0)
        return NMT_STATUS_OK;
    const CandMap map = {count, cand, cand_ld, rows_per_group};
    return launch_register_or_atomic<true>(n_rows, max_count, logits, ld, k, excluded,
                                           n_excluded, top_values, top_ids, lse, map, workspace,
                                           workspace_bytes, (cudaStream_t)stream, err);
}
