/* softmax_topk_row.cu: the row variant of nmt_cuda_softmax_topk: one block of
 * T threads per row, K + excluded ids <= kRegisterK, no workspace and no
 * inter-block step. The launcher picks it for few rows (about one block of
 * 1024 threads an SM or fewer) and for candidate lists whose bound fits its
 * buffer: each thread keeps only its best word, the K-th best of those bounds
 * the top K, and the few words above it are ranked by counting in shared
 * memory (algorithm at row_topk_kernel). (m, d) as Milakov & Gimelshein,
 * keys as Argueta & Chiang (softmax_topk_device.cuh). With WARP_MD (batch
 * invariance, few rows) the row's (m, d) is the warp kernel's, bit for bit:
 * the block stages the row in shared memory and warp 0 runs the warp
 * kernel's chains over it (visit_row_words_staged). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "softmax_topk_device.cuh"
#include "softmax_topk_variants.cuh"

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

/* visit_row_words for T = kStagedRowThreads threads, the row staged through
 * `stage` (kStagedFloat4s float4s) a slice at a time: the same words a
 * thread, and after each slice warp 0 adds it to (m, d) as the warp
 * kernel does (lane l: float4s l, l + 32, ... in order; then the head and
 * tail words, lane l < their count word l), so md in warp 0 is the warp
 * kernel's per lane. Block-wide (syncs); `stage` free again on return. */
static constexpr int kStagedFloat4s = kRowCandKeys * (int)sizeof(uint64_t) / (int)sizeof(float4);
static_assert(kStagedFloat4s % kStagedRowThreads == 0, "a slice is whole rounds of the block");
template <typename F>
static __device__ __forceinline__ void visit_row_words_staged(const float *p, const RowSplit &rs,
                                                              float4 *stage, OnlineMD &md, F f)
{
    constexpr int kPerThread = kStagedFloat4s / kStagedRowThreads;
    const int t = threadIdx.x, lane = t & (kWarpSize - 1);
    const float4 *p4 = reinterpret_cast<const float4 *>(p + rs.a0);
    const float4 neg4 = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    for (int s0 = 0; s0 < rs.n4; s0 += kStagedFloat4s) {
        float4 v[kPerThread];
#pragma unroll
        for (int u = 0; u < kPerThread; u++) {
            const int i = s0 + t + u * kStagedRowThreads;
            v[u] = i < rs.n4 ? __ldg(p4 + i) : neg4;
        }
#pragma unroll
        for (int u = 0; u < kPerThread; u++) {
            const int i = s0 + t + u * kStagedRowThreads;
            stage[t + u * kStagedRowThreads] = v[u];
            if (i < rs.n4)
                f(v[u], rs.a0 + 4 * i, 4);
        }
        __syncthreads();
        if (t < kWarpSize) {
            const int n = min(kStagedFloat4s, rs.n4 - s0);
            for (int i = lane; i < n; i += kWarpSize)
                md_add4(md, stage[i]);
        }
        __syncthreads();
    }
    const int n_extra = rs.a0 + (rs.n - rs.a1);
    if (t < n_extra) {
        const int32_t j = t < rs.a0 ? t : rs.a1 + (t - rs.a0);
        float4 v = neg4;
        v.x = p[j];
        f(v, j, 1);
        md_add4(md, v); /* t < n_extra <= 6: warp 0's lanes */
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
        const uint64_t o = __shfl_xor_sync(kFullMask, v, off);
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
            rank += __shfl_xor_sync(kFullMask, rank, off);
        if (i < n && part == 0)
            f(i, key, rank);
    }
}

/* One block of T threads per row, K + n_excluded <= kRegisterK, no workspace
 * and no inter-block step. For few rows the fused kernel leaves SMs idle or
 * pays the split path's publish / fence / last-block merge chain (compare:
 * bench_softmax_topk --variant row,fused,split --rows 1,5 --ks 10). Each
 * thread keeps only its best word; with k' = K + n_excluded:
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
template <bool CAND, bool WARP_MD>
static __global__ void __launch_bounds__(kRowMaxThreads)
    row_topk_kernel(int32_t vocab, const float *__restrict__ logits, int64_t ld, int k,
                    int k_out, const int32_t *__restrict__ excluded, int n_excluded,
                    float *__restrict__ top_values, int32_t *__restrict__ top_ids,
                    float *__restrict__ lse_out, nmt_cand_lists lists)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    /* 1 (WARP_MD): the staged row; 2: the bests >= t0; 3-4: candidates */
    __shared__ __align__(16) uint64_t s_keys[kRowCandKeys];
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
    const RowSplit rs = row_split(p, row_length<CAND>(lists, row, vocab, &words));
    if (threadIdx.x == 0) {
        s_n_best = s_n_cand = 0;
        s_tau = ~0ull; /* above every key: no word, nothing selected */
    }

    /* 1. (m, d) and the thread's best word. */
    OnlineMD md{-INFINITY, 0.0f};
    float best_x = -INFINITY;
    int32_t best_j = INT32_MAX;
    const auto best_of = [&](float4 v, int32_t j0, int n_valid) {
        const float mx = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
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
    };
    if (WARP_MD) {
        visit_row_words_staged(p, rs, reinterpret_cast<float4 *>(s_keys), md, best_of);
    } else {
        visit_row_words(p, rs, [&](float4 v, int32_t j0, int n_valid) {
            md_add4(md, v);
            best_of(v, j0, n_valid);
        });
    }
    const uint64_t best = best_j != INT32_MAX ? make_key(best_x, best_j) : 0;

    /* 2. t0 from each warp's q-th best, then tau by rank among the bests >= t0. */
    md = warp_md(md); /* WARP_MD: the row's in warp 0 */
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
        OnlineMD t = md;
        if (!WARP_MD)
            t = warp_md(lane < n_warps ? s_md[lane] : OnlineMD{-INFINITY, 0.0f});
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

/* ---- launch --------------------------------------------------------------- */

nmt_status nmt_softmax_topk_row(const SoftmaxTopkCall &c, bool cand, int k_run, int threads,
                                bool warp_md, cudaStream_t stream, nmt_error *err)
{
    void (*kernel)(int32_t, const float *, int64_t, int, int, const int32_t *, int, float *,
                   int32_t *, float *, nmt_cand_lists) =
        cand ? row_topk_kernel<true, false>
             : (warp_md ? row_topk_kernel<false, true> : row_topk_kernel<false, false>);
    if (warp_md && (cand || threads != kStagedRowThreads))
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                             "row_topk_kernel: the warp kernel's (m, d) takes %d threads and "
                             "no candidate lists (got %d threads%s)",
                             kStagedRowThreads, threads, cand ? ", lists" : "");
    nmt_launch_pdl(kernel, c.n_rows, threads, 0, stream, c.vocab, c.logits, c.ld, k_run, c.k,
                   c.excluded, c.n_excluded, c.top_values, c.top_ids, c.lse, c.lists);
    NMT_LAUNCH_RETURN("row_topk_kernel");
    return NMT_STATUS_OK;
}
