/* lsh.cu: LSH vocabulary shrinking on the GPU, steps 1-3 and the recall
 * statistics of kernels/lsh.h (Shi, Xu & Knight, "Fast Locality Sensitive
 * Hashing for Beam Search on GPU", sections 4.2.1-4.2.3). The logits of step 4
 * are in lsh_logits.cu.
 *
 *  codes:      WTA band codes (eqs. 4-8), a thread per (row, band): u
 *              argmaxes over K permuted entries (strict '>' from -inf, as the
 *              CPU oracle, so ties go to the first and the codes are identical),
 *              then code = sum_i I_i K^i in integers.
 *  hits:       Alg. 1, a thread per (row, band): the two-probe cuckoo lookup
 *              (one 16-byte load a probe), then the bucket's words are counted
 *              into hits[row, word] with atomics. WARP (Fig. 4b): the warp walks
 *              lane 0's bucket with all 32 lanes, then lane 1's, ... (start,
 *              length, row and band broadcast by shuffles), so a warp takes
 *              sum(len) / 32 steps instead of max(len). NAIVE (Fig. 4a): each
 *              thread walks its own bucket (for the benchmark).
 *  candidates: eq. 10 plus the n_always most frequent words, as a two-pass
 *              order-preserving stream compaction (section 4.2.3, Fig. 5) with
 *              no host round trip. Pass 1, grid (chunks of kChunkWords words,
 *              groups): the block's warps read the group's rows (coalesced, each
 *              row's chunk at once), OR the marks, reset the nonzero hits, and
 *              write the chunk's mark bits and count to the workspace. Pass 2,
 *              same grid: each block sums the counts of the chunks before it,
 *              block-scans its marks and writes the words in ascending order;
 *              the last chunk writes count[g].
 *  recall:     a thread per row: binary search of the full top-b words in the
 *              group's list; warp-reduced 64-bit atomics into stats. */
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "device.cuh"
#include "lsh.h"
#include "lsh_device.cuh"

static constexpr int kCodesThreads = 128;
static constexpr int kHitsThreads = 256;
static constexpr int kRecallThreads = 256;
/* Candidates: a chunk is kMaskWords 32-bit mark words; pass 1 reads a row's
 * chunk as kMaskWords coalesced loads a lane, pass 2 gives a thread 4 words. */
static constexpr int kChunkWords = 512;
static constexpr int kMaskWords = kChunkWords / kWarpSize;
static constexpr int kMarkWarps = 8;
static constexpr int kMarkThreads = kMarkWarps * kWarpSize;
static constexpr int kWordsPerWriter = 4;
static constexpr int kWriteThreads = kChunkWords / kWordsPerWriter;
static_assert(kChunkWords % kWarpSize == 0 && kMaskWords <= kWarpSize,
              "a lane holds the chunk's marks as one bit a mark word");
static_assert(kWordsPerWriter == 4 && kWarpSize % kWordsPerWriter == 0,
              "a writer's 4 marks are one nibble of one mark word");
static_assert(kHitsThreads % kWarpSize == 0 && kRecallThreads % kWarpSize == 0,
              "whole warps: every lane takes part in the shuffles");

/* ---- 1. WTA band codes --------------------------------------------------- */

static __global__ void __launch_bounds__(kCodesThreads)
    codes_kernel(int32_t n_rows, const float *__restrict__ x, int32_t ldx, nmt_lsh_tables t,
                 int32_t *__restrict__ codes)
{
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (int64_t)n_rows * t.w)
        return;
    const int32_t row = (int32_t)(idx / t.w), band = (int32_t)(idx - (int64_t)row * t.w);
    const float *xr = x + (int64_t)row * ldx;
    int32_t code = 0, place = 1;
    for (int32_t i = 0; i < t.u; i++) {
        const int32_t *perm_p = t.perm + ((int64_t)band * t.u + i) * t.k;
        int32_t best = 0;
        float best_value = -INFINITY;
        for (int32_t j = 0; j < t.k; j++) {
            const float v = __ldg(&xr[__ldg(&perm_p[j])]);
            if (v > best_value) {
                best = j;
                best_value = v;
            }
        }
        code += best * place;
        place *= t.k; /* K^u < 2^31 (checked by the launcher) */
    }
    codes[idx] = code;
}

/* ---- 2. hit counts (Alg. 1) ---------------------------------------------- */

/* A thread per (row, band) = codes index. WARP_WALK: no thread returns before
 * the shuffles; threads past the end and dead rows have length 0. */
template <bool WARP_WALK>
static __global__ void __launch_bounds__(kHitsThreads)
    hits_kernel(int32_t n_rows, const int32_t *__restrict__ codes,
                const int32_t *__restrict__ row_live, nmt_lsh_tables t, int32_t *hits)
{
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int32_t row = 0, band = 0, start = 0, length = 0;
    if (idx < (int64_t)n_rows * t.w) {
        row = (int32_t)(idx / t.w);
        band = (int32_t)(idx - (int64_t)row * t.w);
        if (!row_live || __ldg(&row_live[row]))
            find_bucket(t, band, __ldg(&codes[idx]), &start, &length);
    }
    if (!WARP_WALK) { /* Fig. 4a: the warp takes as long as its longest bucket */
        const int32_t *words = t.bucket_words + (int64_t)band * t.vocab + start;
        int32_t *row_hits = hits + (int64_t)row * t.vocab;
        for (int32_t i = 0; i < length; i++)
            atomicAdd(&row_hits[__ldg(&words[i])], 1);
        return;
    }
    /* Fig. 4b: 32 atomics a step to 32 different counters of one row. */
    warp_walk_buckets(t, band, start, length, row, [&](int32_t s_row, int32_t word) {
        atomicAdd(&hits[(int64_t)s_row * t.vocab + word], 1);
    });
}

/* ---- 3. candidate lists (two-pass stream compaction) --------------------- */

/* Pass 1: block (chunk, group) of min(kMarkWarps, rows a group) warps. Lane l
 * of every warp owns words c0 + 32 i + l, i < kMaskWords, as bit i of `bits`;
 * warp w reads rows first + w, first + w + n_warps, ... Mark word i of the
 * chunk (bit l = word c0 + 32 i + l) is the OR over warps of ballot(bit i). */
static __global__ void __launch_bounds__(kMarkThreads)
    mark_kernel(int32_t n_rows, int32_t rows_per_group, int32_t vocab, int32_t *hits,
                int32_t threshold, int32_t n_always, uint32_t *__restrict__ marks,
                int32_t *__restrict__ chunk_counts)
{
    __shared__ uint32_t s_marks[kMarkWarps][kMaskWords];
    const int lane = threadIdx.x & (kWarpSize - 1), warp = threadIdx.x / kWarpSize;
    const int n_warps = blockDim.x / kWarpSize;
    const int32_t chunk = blockIdx.x, n_chunks = gridDim.x, g = blockIdx.y;
    const int32_t c0 = chunk * kChunkWords;
    const int32_t first = g * rows_per_group;
    const int32_t last = first + min(rows_per_group, n_rows - first);

    uint32_t in_range = 0, bits = 0;
#pragma unroll
    for (int i = 0; i < kMaskWords; i++) {
        const int32_t w = c0 + i * kWarpSize + lane;
        in_range |= (uint32_t)(w < vocab) << i;
        bits |= (uint32_t)(w < n_always) << i;
    }
    for (int32_t r = first + warp; r < last; r += n_warps) {
        int32_t *h = hits + (int64_t)r * vocab + c0 + lane;
        int32_t v[kMaskWords];
#pragma unroll
        for (int i = 0; i < kMaskWords; i++) /* all loads in flight before the tests */
            v[i] = (in_range >> i) & 1 ? h[i * kWarpSize] : 0;
#pragma unroll
        for (int i = 0; i < kMaskWords; i++) {
            if (!((in_range >> i) & 1))
                continue;
            bits |= (uint32_t)(v[i] >= threshold) << i;
            if (v[i] != 0) /* hits are sparse: reset only what was counted */
                h[i * kWarpSize] = 0;
        }
    }
    bits &= in_range;

    uint32_t my_word = 0;
#pragma unroll
    for (int i = 0; i < kMaskWords; i++) {
        const uint32_t m = __ballot_sync(kFullMask, (bits >> i) & 1);
        if (lane == i)
            my_word = m;
    }
    if (lane < kMaskWords)
        s_marks[warp][lane] = my_word;
    __syncthreads();
    if (warp != 0)
        return;
    uint32_t m = 0;
    if (lane < kMaskWords) {
        for (int w = 0; w < n_warps; w++)
            m |= s_marks[w][lane];
        marks[((int64_t)g * n_chunks + chunk) * kMaskWords + lane] = m;
    }
    const int n = warp_sum(__popc(m));
    if (lane == 0)
        chunk_counts[(int64_t)g * n_chunks + chunk] = n;
}

/* Pass 2: block (chunk, group); thread t writes the marked words among
 * c0 + 4t .. c0 + 4t + 3 at base + (marks before it in the chunk). */
static __global__ void __launch_bounds__(kWriteThreads)
    write_candidates_kernel(const uint32_t *__restrict__ marks,
                            const int32_t *__restrict__ chunk_counts, int32_t *__restrict__ cand,
                            int64_t cand_ld, int32_t *__restrict__ count)
{
    typedef cub::BlockReduce<int32_t, kWriteThreads> Reduce;
    typedef cub::BlockScan<int32_t, kWriteThreads> Scan;
    __shared__ typename Reduce::TempStorage s_reduce;
    __shared__ typename Scan::TempStorage s_scan;
    __shared__ int32_t s_base;
    const int32_t chunk = blockIdx.x, n_chunks = gridDim.x, g = blockIdx.y;
    const int tid = threadIdx.x;

    /* Words of the group's earlier chunks: at most a few hundred counts. */
    const int32_t *counts = chunk_counts + (int64_t)g * n_chunks;
    int32_t before = 0;
    for (int32_t c = tid; c < chunk; c += kWriteThreads)
        before += counts[c];
    before = Reduce(s_reduce).Sum(before); /* valid in thread 0 */
    if (tid == 0)
        s_base = before;

    constexpr int kWritersPerWord = kWarpSize / kWordsPerWriter;
    const uint32_t word =
        marks[((int64_t)g * n_chunks + chunk) * kMaskWords + tid / kWritersPerWord];
    const uint32_t nibble = (word >> ((tid % kWritersPerWord) * kWordsPerWriter)) & 0xFu;
    int32_t offset, total;
    Scan(s_scan).ExclusiveSum((int32_t)__popc(nibble), offset, total);
    __syncthreads(); /* s_base */
    const int32_t base = s_base;
    int32_t *out = cand + (int64_t)g * cand_ld + base + offset;
    const int32_t w0 = chunk * kChunkWords + tid * kWordsPerWriter;
#pragma unroll
    for (int e = 0; e < kWordsPerWriter; e++)
        if ((nibble >> e) & 1)
            *out++ = w0 + e;
    if (chunk == n_chunks - 1 && tid == 0)
        count[g] = base + total;
}

/* ---- recall statistics ---------------------------------------------------- */

static __device__ __forceinline__ bool list_contains(const int32_t *list, int32_t n, int32_t word)
{
    const int32_t lo = lower_bound_i32(list, 0, n, word);
    return lo < n && __ldg(&list[lo]) == word;
}

static __global__ void __launch_bounds__(kRecallThreads)
    recall_kernel(int32_t n_rows, int32_t rows_per_group, const int32_t *__restrict__ row_live,
                  const int32_t *__restrict__ full_top_ids, int32_t b,
                  const int32_t *__restrict__ cand, int64_t cand_ld,
                  const int32_t *__restrict__ count, unsigned long long *stats)
{
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long rows = 0, hits = 0, words = 0;
    if (r < n_rows && (!row_live || __ldg(&row_live[r]))) {
        const int32_t g = (int32_t)(r / rows_per_group), n = __ldg(&count[g]);
        const int32_t *list = cand + (int64_t)g * cand_ld;
        bool all_in = true;
        for (int32_t i = 0; i < b && all_in; i++)
            all_in = list_contains(list, n, __ldg(&full_top_ids[(int64_t)r * b + i]));
        rows = 1;
        hits = all_in;
        words = (unsigned long long)n;
    }
    rows = warp_sum(rows);
    hits = warp_sum(hits);
    words = warp_sum(words);
    if ((threadIdx.x & (kWarpSize - 1)) == 0 && rows) {
        atomicAdd(&stats[0], rows);
        atomicAdd(&stats[1], hits);
        atomicAdd(&stats[2], words);
    }
}

/* ---- launch helpers -------------------------------------------------------- */

/* The WTA parameters the kernels rely on: K^u < 2^31 keeps the code math in
 * int32 (as nmt_lsh_index_build guarantees). */
static bool wta_params_ok(const nmt_lsh_tables *t)
{
    if (t->k < 2 || t->u < 1 || t->w < 1 || t->k > t->dim || t->vocab < 1)
        return false;
    int64_t power = 1;
    for (int32_t i = 0; i < t->u && power < ((int64_t)1 << 31); i++)
        power *= t->k;
    return power < ((int64_t)1 << 31);
}

static int32_t candidate_chunks(int32_t vocab)
{
    return (int32_t)(((int64_t)vocab + kChunkWords - 1) / kChunkWords);
}

/* ---- exported ------------------------------------------------------------- */

extern "C" nmt_status nmt_cuda_lsh_codes(int32_t n_rows, const float *x, int32_t ldx,
                                         const nmt_lsh_tables *t, int32_t *codes, void *stream,
                                         nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && t);
    NMT_ARG_CHECK(wta_params_ok(t) && ldx >= t->dim);
    NMT_ARG_CHECK(n_rows == 0 || (x && codes && t->perm));
    NMT_ARG_CHECK((int64_t)n_rows * t->w <= INT32_MAX);
    if (n_rows == 0)
        return NMT_STATUS_OK;
    const int64_t n = (int64_t)n_rows * t->w;
    codes_kernel<<<(unsigned)((n + kCodesThreads - 1) / kCodesThreads), kCodesThreads, 0,
                   (cudaStream_t)stream>>>(n_rows, x, ldx, *t, codes);
    NMT_LAUNCH_RETURN("codes_kernel");
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_lsh_hits(int32_t n_rows, const int32_t *codes,
                                        const int32_t *row_live, const nmt_lsh_tables *t,
                                        nmt_lsh_lookup variant, int32_t *hits, void *stream,
                                        nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && t && t->w >= 1 && t->vocab >= 1);
    NMT_ARG_CHECK(t->table_bits >= 0 && t->table_bits <= 30);
    NMT_ARG_CHECK(variant == NMT_LSH_LOOKUP_WARP || variant == NMT_LSH_LOOKUP_NAIVE);
    NMT_ARG_CHECK(n_rows == 0 || (codes && hits && t->slots && t->hash && t->bucket_words));
    NMT_ARG_CHECK((uintptr_t)t->slots % 16 == 0 && /* one int4 load a probe */
                  (uintptr_t)t->hash % 16 == 0);   /* and a band's hash */
    NMT_ARG_CHECK((int64_t)n_rows * t->w <= INT32_MAX);
    if (n_rows == 0)
        return NMT_STATUS_OK;
    const int64_t n = (int64_t)n_rows * t->w;
    const unsigned blocks = (unsigned)((n + kHitsThreads - 1) / kHitsThreads);
    cudaStream_t s = (cudaStream_t)stream;
    if (variant == NMT_LSH_LOOKUP_WARP)
        hits_kernel<true><<<blocks, kHitsThreads, 0, s>>>(n_rows, codes, row_live, *t, hits);
    else
        hits_kernel<false><<<blocks, kHitsThreads, 0, s>>>(n_rows, codes, row_live, *t, hits);
    NMT_LAUNCH_RETURN("hits_kernel");
    return NMT_STATUS_OK;
}

/* Pass 1's mark words, then its per-chunk counts, for every group. */
extern "C" size_t nmt_cuda_lsh_candidates_workspace_size(int32_t max_groups, int32_t vocab)
{
    if (max_groups < 1 || vocab < 1)
        return 0;
    const size_t chunks = (size_t)max_groups * (size_t)candidate_chunks(vocab);
    return chunks * (kMaskWords * sizeof(uint32_t) + sizeof(int32_t));
}

extern "C" nmt_status nmt_cuda_lsh_candidates(int32_t n_rows, int32_t vocab, int32_t *hits,
                                              int32_t threshold, int32_t n_always,
                                              nmt_cand_lists lists, void *workspace,
                                              size_t workspace_bytes, void *stream,
                                              nmt_error *err)
{
    const int32_t rows_per_group = lists.rows_per_group;
    NMT_ARG_CHECK(n_rows >= 0 && rows_per_group >= 1 && vocab >= 1 && lists.ld >= vocab);
    NMT_ARG_CHECK(n_rows == 0 || (hits && lists.words && lists.count));
    NMT_ARG_CHECK((uintptr_t)workspace % sizeof(uint32_t) == 0);
    if (n_rows == 0)
        return NMT_STATUS_OK;
    const int32_t groups = (int32_t)(((int64_t)n_rows + rows_per_group - 1) / rows_per_group);
    const int32_t chunks = candidate_chunks(vocab);
    const size_t need = nmt_cuda_lsh_candidates_workspace_size(groups, vocab);
    if (!workspace || workspace_bytes < need)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "nmt_cuda_lsh_candidates: workspace of %zu bytes, %d groups of %d "
                             "words need %zu (nmt_cuda_lsh_candidates_workspace_size)",
                             workspace_bytes, groups, vocab, need);
    if (groups > 65535)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "nmt_cuda_lsh_candidates: %d groups (at most 65535)", groups);
    uint32_t *marks = (uint32_t *)workspace;
    int32_t *chunk_counts = (int32_t *)(marks + (size_t)groups * chunks * kMaskWords);
    const dim3 grid((unsigned)chunks, (unsigned)groups);
    cudaStream_t s = (cudaStream_t)stream;
    /* Groups of fewer rows than kMarkWarps get smaller blocks, more of them a SM. */
    const int32_t rows_in_group = rows_per_group < n_rows ? rows_per_group : n_rows;
    const int mark_warps = rows_in_group < kMarkWarps ? rows_in_group : kMarkWarps;
    mark_kernel<<<grid, mark_warps * kWarpSize, 0, s>>>(n_rows, rows_per_group, vocab, hits,
                                                        threshold, n_always, marks, chunk_counts);
    NMT_LAUNCH_RETURN("mark_kernel");
    write_candidates_kernel<<<grid, kWriteThreads, 0, s>>>(marks, chunk_counts, lists.words,
                                                           lists.ld, lists.count);
    NMT_LAUNCH_RETURN("write_candidates_kernel");
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_lsh_recall(int32_t n_rows, const int32_t *row_live,
                                          const int32_t *full_top_ids, int32_t b,
                                          nmt_cand_lists lists, unsigned long long *stats,
                                          void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && lists.rows_per_group >= 1 && b >= 0 && lists.ld >= 0);
    NMT_ARG_CHECK(n_rows == 0 || (lists.words && lists.count && stats));
    NMT_ARG_CHECK(n_rows == 0 || b == 0 || full_top_ids);
    if (n_rows == 0)
        return NMT_STATUS_OK;
    recall_kernel<<<(n_rows + kRecallThreads - 1) / kRecallThreads, kRecallThreads, 0,
                    (cudaStream_t)stream>>>(n_rows, lists.rows_per_group, row_live,
                                            full_top_ids, b, lists.words, lists.ld, lists.count,
                                            stats);
    NMT_LAUNCH_RETURN("recall_kernel");
    return NMT_STATUS_OK;
}
