/* softmax_topk_fused.cu: the fused, split and warp variants of
 * nmt_cuda_softmax_topk (K <= kRegisterK): fused_topk_kernel and, for many
 * rows, warp_topk_kernel (a row a warp, below).
 *
 *  fused: one block (1..8 warps) per row reads the row once (16-byte loads),
 *         keeps (m, d) (Milakov & Gimelshein, Alg. 3 and eq. 4) and, per warp,
 *         a sorted top-K spread over its lanes' registers (Milakov Alg. 4,
 *         lines 8-15, as a warp-wide insertion that only runs for the rare
 *         element above the warp's K-th key, seeded with a floor), then the
 *         warps' lists merge by rank (binary search in the other lists).
 *  split: the same kernel over a slice of a row per block writes partial
 *         (m, d) and top-K to the workspace; the last block of a row to
 *         finish (threadfence + a per-row atomic counter, reset by that
 *         block) merges them: one launch, no memset per call.
 * Keys are Argueta & Chiang's packed 64-bit keys (softmax_topk_device.cuh). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "softmax_topk_device.cuh"
#include "softmax_topk_variants.cuh"

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

/* ---- the kernel --------------------------------------------------------- */

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
                      uint32_t *__restrict__ row_done, nmt_cand_lists lists)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
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
    const int32_t n_words = row_length<CAND>(lists, row, vocab, &words);
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

/* ---- warp: a row a warp ---------------------------------------------------- */

/* The fused kernel's per-warp work alone: warp w of block b owns row
 * b * (warps a block) + w, from its first word to its last, so its list in
 * registers is the row's answer and its (m, d) the row's (no shared memory,
 * no barrier, no merge). For many rows: a row's fixed costs (the seed, the
 * insertions of ~K (1 + ln(words / K)) keys, the merge) are paid once
 * instead of once a warp of the row, and the rows give the SMs their
 * parallelism. */
template <int SLOTS, bool CAND>
static __global__ void __launch_bounds__(kWarpRowsPerBlock *kWarpSize)
    warp_topk_kernel(int32_t n_rows, int32_t vocab, const float *__restrict__ logits, int64_t ld,
                     int k, int k_out, const int32_t *__restrict__ excluded, int n_excluded,
                     float *__restrict__ top_values, int32_t *__restrict__ top_ids,
                     float *__restrict__ lse_out, nmt_cand_lists lists)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    const int lane = threadIdx.x & (kWarpSize - 1);
    const int row = blockIdx.x * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
    if (row >= n_rows) /* warp-uniform: the last block's spare warps */
        return;
    const float *p = logits + (int64_t)row * ld;
    const int32_t *words;
    const int32_t n_words = row_length<CAND>(lists, row, vocab, &words);
    const RowSplit rs = row_split(p, n_words);
    const float4 *p4 = reinterpret_cast<const float4 *>(p + rs.a0);

    OnlineMD md{-INFINITY, 0.0f};
    WarpTopK<SLOTS> top;
    top.init();
    const float4 neg4 = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    constexpr int U = 4; /* float4 loads in flight a lane */
    for (int base = 0; base < rs.n4; base += U * kWarpSize) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = base + u * kWarpSize + lane;
            v[u] = i < rs.n4 ? __ldcs(p4 + i) : neg4;
        }
        if (base == 0) { /* the first loads seed the floor (WarpTopK::seed) */
            float lane_max = -INFINITY;
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = u * kWarpSize + lane;
                const float xs[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (i < rs.n4 &&
                        !is_excluded_at<CAND>(rs.a0 + 4 * i + e, words, excluded, n_excluded))
                        lane_max = fmaxf(lane_max, xs[e]);
            }
            top.seed(lane_max, k, lane);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = base + u * kWarpSize + lane;
            scan4<SLOTS, CAND>(v[u], rs.a0 + 4 * i, i < rs.n4 ? 4 : 0, md, top, k, lane,
                               excluded, n_excluded, words);
        }
    }
    { /* at most 3 head and 3 tail words */
        const int n_head = rs.a0, n_extra = n_head + (n_words - rs.a1);
        const int id = lane < n_head ? lane : rs.a1 + (lane - n_head);
        const bool ok = lane < n_extra;
        float4 v = neg4;
        if (ok)
            v.x = p[id];
        scan4<SLOTS, CAND>(v, id, ok ? 1 : 0, md, top, k, lane, excluded, n_excluded, words);
    }
    md = warp_md(md);
    const float lse = md.m + logf(md.d);
    float *values = top_values + (int64_t)row * k_out;
    int32_t *ids = top_ids + (int64_t)row * k_out;
#pragma unroll
    for (int s = 0; s < SLOTS; s++) { /* position s * 32 + lane holds key[s] */
        const int pos = s * kWarpSize + lane;
        if (pos < k && pos < k_out)
            write_slot_at<CAND>(top.key[s], lse, values + pos, ids + pos, words);
    }
    for (int pos = k + lane; pos < k_out; pos += kWarpSize) /* K past the words: empty */
        write_slot_at<CAND>(0, lse, values + pos, ids + pos, words);
    if (lse_out && lane == 0)
        lse_out[row] = lse;
}

/* ---- launch --------------------------------------------------------------- */

template <int SLOTS, bool CAND>
static void launch_fused(int blocks, int threads, int32_t vocab, const float *logits, int64_t ld,
                         int k, int k_out, const int32_t *excluded, int n_excluded, int splits,
                         int chunk, float *top_values, int32_t *top_ids, float *lse,
                         float2 *part_md, uint64_t *part_keys, uint32_t *row_done,
                         nmt_cand_lists lists, cudaStream_t stream)
{
    nmt_launch_pdl(fused_topk_kernel<SLOTS, CAND>, blocks, threads, 0, stream, vocab, logits, ld,
                   k, k_out, excluded, n_excluded, splits, chunk, top_values, top_ids, lse,
                   part_md, part_keys, row_done, lists);
}

nmt_status nmt_softmax_topk_fused(const SoftmaxTopkCall &c, bool cand, int k_run,
                                  const FusedPlan &plan, float2 *part_md, uint64_t *part_keys,
                                  uint32_t *row_done, cudaStream_t stream, nmt_error *err)
{
    const int blocks = c.n_rows * plan.splits, threads = plan.warps * kWarpSize;
    /* One slot a lane up to 32 keys, two up to kRegisterK. */
    if (k_run <= kWarpSize && cand)
        launch_fused<1, true>(blocks, threads, c.vocab, c.logits, c.ld, k_run, c.k, c.excluded,
                              c.n_excluded, plan.splits, plan.chunk, c.top_values, c.top_ids,
                              c.lse, part_md, part_keys, row_done, c.lists, stream);
    else if (k_run <= kWarpSize)
        launch_fused<1, false>(blocks, threads, c.vocab, c.logits, c.ld, k_run, c.k, c.excluded,
                               c.n_excluded, plan.splits, plan.chunk, c.top_values, c.top_ids,
                               c.lse, part_md, part_keys, row_done, c.lists, stream);
    else if (cand)
        launch_fused<2, true>(blocks, threads, c.vocab, c.logits, c.ld, k_run, c.k, c.excluded,
                              c.n_excluded, plan.splits, plan.chunk, c.top_values, c.top_ids,
                              c.lse, part_md, part_keys, row_done, c.lists, stream);
    else
        launch_fused<2, false>(blocks, threads, c.vocab, c.logits, c.ld, k_run, c.k, c.excluded,
                               c.n_excluded, plan.splits, plan.chunk, c.top_values, c.top_ids,
                               c.lse, part_md, part_keys, row_done, c.lists, stream);
    NMT_LAUNCH_RETURN("fused_topk_kernel");
    return NMT_STATUS_OK;
}

template <int SLOTS, bool CAND>
static void launch_warp(const SoftmaxTopkCall &c, int k_run, cudaStream_t stream)
{
    const int blocks = (c.n_rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock;
    nmt_launch_pdl(warp_topk_kernel<SLOTS, CAND>, blocks, kWarpRowsPerBlock * kWarpSize, 0,
                   stream, c.n_rows, c.vocab, c.logits, c.ld, k_run, c.k, c.excluded,
                   c.n_excluded, c.top_values, c.top_ids, c.lse, c.lists);
}

nmt_status nmt_softmax_topk_warp(const SoftmaxTopkCall &c, bool cand, int k_run,
                                 cudaStream_t stream, nmt_error *err)
{
    if (k_run <= kWarpSize)
        cand ? launch_warp<1, true>(c, k_run, stream) : launch_warp<1, false>(c, k_run, stream);
    else
        cand ? launch_warp<2, true>(c, k_run, stream) : launch_warp<2, false>(c, k_run, stream);
    NMT_LAUNCH_RETURN("warp_topk_kernel");
    return NMT_STATUS_OK;
}

