/* lsh_direct.cu: LSH candidate lists straight from the band codes, with no
 * [rows, V] hit matrix (kernels/lsh.h, nmt_cuda_lsh_candidates_direct).
 *
 * Why: the two-step path (hits, then candidates) costs more than the GEMM it
 * saves once there are hundreds of rows: every (row, band, bucket word) is a
 * global atomic into a matrix of rows x V ints, and the compaction reads all
 * of it back (compare: bench_lsh --variant two-step,direct --rows 12,768
 * --group 0; docs/lsh.md).
 *
 *  mark:    a block per live row keeps its counts in shared memory, two 16-bit
 *           counters a 32-bit word (W <= 65535 bands, so a count never carries
 *           into its neighbour). Thread i looks band i up, then the block
 *           walks all the row's buckets as one stream of words
 *           (block_walk_row: the loads of all of them in flight together,
 *           the work even across warps). The atomic that
 *           lifts a word's count to the threshold sets the word's bit in its
 *           group's bitmap: counts only grow by one, so that happens exactly
 *           when the final count is >= threshold, as in
 *           nmt_cpu_lsh_candidates (two buckets of the walk may hold the same
 *           word: the atomics still give each increment its own old count). Words below
 *           n_always are in every list, so they are neither counted nor
 *           walked: a bucket's words ascend, and its walk starts at its first
 *           word >= n_always (the slot's stored skip, nmt_cuda_lsh_slots_skip,
 *           or a binary search). With a top-T of thousands of frequent words
 *           that drops most of the walk. Threshold 1 needs no counts: the walk
 *           sets the bits itself, with no shared memory.
 *  compact: the group's last row block to finish (a counter a group: each
 *           block fences its marks, then counts itself in) scans the
 *           group's bitmap (plus ids < n_always) in word order with a
 *           block-wide exclusive scan of popcounts, writes the words
 *           ascending, clears the bitmap and the counter for the next call
 *           and writes count[g]. In the mark kernel, not a second one: a
 *           group's list is compacted as soon as its rows are marked, while
 *           other groups still walk, and the step has one launch less.
 *           Threshold <= 0 (every word) marks nothing: a compaction kernel
 *           alone, a block per group.
 * Same lists as nmt_cuda_lsh_hits (zero hits) + nmt_cuda_lsh_candidates; the
 * CPU oracle is nmt_cpu_lsh_hits + nmt_cpu_lsh_candidates. */
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "device.cuh"
#include "lsh.h"
#include "lsh_device.cuh"

static constexpr int kMarkThreads = 512;    /* a block per row: a band a thread at W = 500
                                               (the walk is latency-bound; the counters
                                               allow 3 blocks an SM at V = 30k) */
static constexpr int kMarkBlocksPerSM = 3;  /* what the counters allow at V = 30k: keep the
                                               registers from allowing fewer */
static constexpr int kCompactThreads = 256; /* a block per group */
static constexpr int kWordsPerThread = 4;   /* bitmap words a compacting thread owns */
static constexpr int32_t kMaxBands = 65535; /* 16-bit counters */
static_assert(kMarkThreads % kWarpSize == 0, "whole warps: every lane takes part in shuffles");

/* ---- compact: a group's bitmap (and ids < n_always) into its list -------- */

/* Bit j of bitmap word q is word 32 q + j: the mark (or, when every word
 * qualifies, set), for words from `from` (those below are listed apart) and
 * below vocab. The marks come from other blocks' atomics: read through L2
 * (__ldcg), never a stale L1 line. */
static __device__ __forceinline__ uint32_t word_bits(const uint32_t *marks, int32_t q,
                                                     int32_t vocab, int32_t from, bool all)
{
    const int32_t w0 = q * 32;
    uint32_t bits = all ? kFullMask : __ldcg(&marks[q]);
    if (from > w0)
        bits &= from - w0 >= 32 ? 0u : ~((1u << (from - w0)) - 1u);
    if (vocab - w0 < 32)
        bits &= (1u << (vocab - w0)) - 1u;
    return bits;
}

/* The whole block (THREADS threads) writes group g's list and count and
 * clears its bitmap. Ids below n_always are in every list at their own index:
 * written by all threads at once (bit by bit, by the few threads owning its
 * bitmap words, a prefix of thousands of words was a long serial tail), and
 * only the bitmap past them is scanned (the walks never mark below n_always). */
template <int THREADS>
static __device__ void compact_group(int32_t g, int32_t vocab, int32_t threshold,
                                     int32_t n_always, uint32_t *bitmap, int32_t bitmap_ld,
                                     int32_t *__restrict__ cand, int64_t cand_ld,
                                     int32_t *__restrict__ count)
{
    typedef cub::BlockScan<int32_t, THREADS> Scan;
    __shared__ typename Scan::TempStorage s_scan;
    __shared__ int32_t s_base;
    uint32_t *marks = bitmap + (int64_t)g * bitmap_ld;
    int32_t *list = cand + (int64_t)g * cand_ld;
    const bool all = threshold <= 0;
    const int32_t n_words = (vocab + 31) / 32, prefix = min(max(n_always, 0), vocab);
    for (int32_t j = threadIdx.x; j < prefix; j += THREADS)
        list[j] = j;
    if (threadIdx.x == 0)
        s_base = prefix;
    __syncthreads();
    for (int32_t tile = prefix / 32; tile < n_words; tile += THREADS * kWordsPerThread) {
        const int32_t q0 = tile + threadIdx.x * kWordsPerThread;
        uint32_t bits[kWordsPerThread];
        int32_t n = 0;
#pragma unroll
        for (int i = 0; i < kWordsPerThread; i++) {
            const int32_t q = q0 + i;
            bits[i] = q < n_words ? word_bits(marks, q, vocab, prefix, all) : 0u;
            n += __popc(bits[i]);
        }
        int32_t offset = 0, total = 0;
        Scan(s_scan).ExclusiveSum(n, offset, total);
        int32_t at = s_base + offset;
#pragma unroll
        for (int i = 0; i < kWordsPerThread; i++) {
            const int32_t q = q0 + i;
            uint32_t b = bits[i];
            while (b) {
                list[at++] = q * 32 + (__ffs(b) - 1);
                b &= b - 1;
            }
            if (q < n_words)
                marks[q] = 0; /* ready for the next call */
        }
        __syncthreads(); /* every thread has read s_base and reused s_scan */
        if (threadIdx.x == 0)
            s_base += total;
        __syncthreads();
    }
    if (threadIdx.x == 0)
        count[g] = s_base;
}

/* ---- mark: per-row counts in shared memory, group bitmaps in global ------ */

/* The row's buckets as one stream of words, shared by the whole block: a
 * chunk of up to kMarkThreads bands at a time, thread i looking band i up; a
 * block-wide inclusive scan of the lengths numbers the chunk's words 0 ..
 * total-1, and the warps take segments of kSegmentWords words in turn, lane l
 * words l, l + 32, ... of its warp's segment with kFlatLoads loads in
 * flight. Walked per warp (32 bands each), the walks of a row's 16 warps
 * differed by up to 2x and the block waited for the longest at its barrier; a
 * block-wide stream leaves at most one segment of difference. A word's bucket is found
 * by a binary search for the segment's first word, then by stepping up from
 * the previous word's: the words ascend, so that is a step or two. Offsets
 * are 32-bit (the launcher checks w * vocab). */
static constexpr int kFlatLoads = 8;
static constexpr int kSegmentWords = kWarpSize * kFlatLoads;

struct BlockWalk {
    int32_t incl[kMarkThreads]; /* inclusive scan of the chunk's bucket lengths */
    int32_t base[kMarkThreads]; /* word i of the stream in band o's bucket: bucket_words[base[o] + i] */
    typename cub::BlockScan<int32_t, kMarkThreads>::TempStorage scan;
};

/* First index in [0, n) whose incl is > i (incl ascending, incl[n - 1] > i). */
static __device__ __forceinline__ int32_t stream_owner(const int32_t *incl, int32_t n, int32_t i)
{
    int32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        const int32_t mid = (lo + hi) / 2;
        if (incl[mid] <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Publishes a chunk's buckets as one stream: thread i's bucket of `length`
 * entries starting at `origin` (in the walk's array) becomes stream entries
 * [incl - length, incl); returns the chunk's total. Ends with a barrier. */
static __device__ __forceinline__ int32_t publish_chunk(BlockWalk *s, int32_t origin,
                                                        int32_t length)
{
    typedef cub::BlockScan<int32_t, kMarkThreads> Scan;
    int32_t incl, total;
    Scan(s->scan).InclusiveSum(length, incl, total);
    s->incl[threadIdx.x] = incl;
    s->base[threadIdx.x] = origin - (incl - length);
    __syncthreads();
    return total;
}

/* f(word) for every word of the row's buckets (words >= n_always); the whole
 * block calls it. The words of one bucket are distinct, those of different
 * bands need not be. */
template <typename F>
static __device__ __forceinline__ void block_walk_row(const int32_t *__restrict__ row_codes,
                                                      const nmt_lsh_tables &t, int32_t n_always,
                                                      BlockWalk *s, F f)
{
    const int lane = threadIdx.x & (kWarpSize - 1), warp = threadIdx.x / kWarpSize;
    for (int32_t b0 = 0; b0 < t.w; b0 += kMarkThreads) {
        const int32_t band = b0 + threadIdx.x, n_bands = min(kMarkThreads, t.w - b0);
        int32_t start = 0, length = 0;
        if (band < t.w) /* a bucket's words ascend: those below n_always are skipped */
            find_bucket_from(t, band, __ldg(&row_codes[band]), n_always, &start, &length);
        const int32_t total = publish_chunk(s, band < t.w ? band * t.vocab + start : 0, length);
        for (int32_t i0 = warp * kSegmentWords; i0 < total;
             i0 += (kMarkThreads / kWarpSize) * kSegmentWords) {
            int32_t owner = stream_owner(s->incl, n_bands, i0);
            int32_t w[kFlatLoads];
#pragma unroll
            for (int l = 0; l < kFlatLoads; l++) {
                const int32_t i = i0 + kWarpSize * l + lane;
                w[l] = -1; /* words are >= 0 */
                if (i < total) {
                    while (s->incl[owner] <= i)
                        owner++;
                    w[l] = __ldg(&t.bucket_words[s->base[owner] + i]);
                }
            }
#pragma unroll
            for (int l = 0; l < kFlatLoads; l++)
                if (w[l] >= 0)
                    f(w[l]);
        }
        __syncthreads(); /* incl, base and the scan's storage are reused */
    }
}

/* The packed walk (t.packed_*, kernels/lsh.h: n_always >= t.packed_below):
 * the row's buckets as one stream of 8-word vectors, thread i taking the
 * contiguous vectors [i total / kMarkThreads, (i + 1) total / kMarkThreads)
 * with kVectorLoads 16-byte loads in flight: a search for its first vector's
 * band, then a step where a bucket ends. Against block_walk_row: an eighth of
 * the loads, owner steps and address arithmetic a word, half the bytes, and
 * no words below packed_below. A warp's loads are spread over its lanes'
 * ranges, but each 32-byte sector is used whole (the lane's next load takes
 * its other half). Padding words (NMT_LSH_PACK_PAD) and, when n_always is
 * above packed_below, the words below n_always are not visited. */
static constexpr int kVectorLoads = 4;

/* visit(q) for every vector q of the row's packed buckets; the whole block
 * calls it. */
template <typename F>
static __device__ __forceinline__ void block_walk_packed(const int32_t *__restrict__ row_codes,
                                                         const nmt_lsh_tables &t, BlockWalk *s,
                                                         F visit)
{
    const uint4 *vectors = reinterpret_cast<const uint4 *>(t.packed_words);
    for (int32_t b0 = 0; b0 < t.w; b0 += kMarkThreads) {
        const int32_t band = b0 + threadIdx.x, n_bands = min(kMarkThreads, t.w - b0);
        int4 slot = make_int4(0, 0, 0, 0); /* (key, first vector, vectors, 0) */
        if (band < t.w)
            slot = find_slot_in(t.packed_slots, t, band, __ldg(&row_codes[band]));
        const int32_t total = publish_chunk(s, slot.y, slot.z);
        const int32_t lo = (int32_t)((int64_t)threadIdx.x * total / kMarkThreads);
        const int32_t hi = (int32_t)((int64_t)(threadIdx.x + 1) * total / kMarkThreads);
        int32_t owner = lo < hi ? stream_owner(s->incl, n_bands, lo) : 0;
        for (int32_t v0 = lo; v0 < hi; v0 += kVectorLoads) {
            uint4 q[kVectorLoads];
#pragma unroll
            for (int l = 0; l < kVectorLoads; l++) {
                const int32_t i = v0 + l;
                q[l] = make_uint4(0u, 0u, 0u, 0u);
                if (i < hi) {
                    while (s->incl[owner] <= i)
                        owner++;
                    q[l] = __ldg(&vectors[s->base[owner] + i]);
                }
            }
#pragma unroll
            for (int l = 0; l < kVectorLoads; l++)
                if (v0 + l < hi)
                    visit(q[l]);
        }
        __syncthreads(); /* incl, base and the scan's storage are reused */
    }
}

/* One more match of `word` in the row's 16-bit counters; its count before. */
static __device__ __forceinline__ uint32_t count_match(uint32_t *s_counts, int32_t word)
{
    const int shift = (word & 1) * 16;
    return (atomicAdd(&s_counts[word >> 1], 1u << shift) >> shift) & 0xffffu;
}

static __device__ __forceinline__ void set_mark(uint32_t *marks, int32_t word)
{
    atomicOr(&marks[word >> 5], 1u << (word & 31));
}

/* Row `row`'s matches into its group's bitmap `marks`. COUNT false:
 * threshold 1, every walked word is marked (no shared memory). PACKED: the
 * packed walk, else the int32 buckets'. */
template <bool COUNT, bool PACKED>
static __device__ __forceinline__ void mark_row(int32_t row, const int32_t *__restrict__ codes,
                                                const nmt_lsh_tables &t, int32_t threshold,
                                                int32_t n_always, uint32_t *marks)
{
    extern __shared__ uint4 s_counts4[]; /* [(vocab + 7) / 8] when COUNT: two counters a word */
    uint32_t *s_counts = reinterpret_cast<uint32_t *>(s_counts4);
    if (COUNT) {
        const int32_t n_vectors = (t.vocab + 7) / 8;
        for (int32_t i = threadIdx.x; i < n_vectors; i += blockDim.x)
            s_counts4[i] = make_uint4(0u, 0u, 0u, 0u);
        __syncthreads();
    }
    __shared__ BlockWalk s_walk;
    auto mark = [&](int32_t word) {
        if (!COUNT || (int32_t)count_match(s_counts, word) + 1 == threshold)
            set_mark(marks, word);
    };
    /* A packed vector's 8 words: the 8 atomics in flight together, then
     * their results (one at a time, each waited for, they were most of the
     * kernel's stalls). */
    auto mark8 = [&](const uint4 &q) {
        const uint32_t pairs[4] = {q.x, q.y, q.z, q.w};
        int32_t word[8];
        bool live[8];
#pragma unroll
        for (int p = 0; p < 8; p++) {
            word[p] = (int32_t)((pairs[p / 2] >> (16 * (p % 2))) & 0xffffu);
            live[p] = word[p] != (int32_t)NMT_LSH_PACK_PAD && word[p] >= n_always;
        }
        uint32_t before[8];
#pragma unroll
        for (int p = 0; p < 8; p++)
            before[p] = live[p] && COUNT ? count_match(s_counts, word[p]) : 0u;
#pragma unroll
        for (int p = 0; p < 8; p++)
            if (live[p] && (!COUNT || (int32_t)before[p] + 1 == threshold))
                set_mark(marks, word[p]);
    };
    const int32_t *row_codes = codes + (int64_t)row * t.w;
    if (PACKED)
        block_walk_packed(row_codes, t, &s_walk, mark8);
    else
        block_walk_row(row_codes, t, n_always, &s_walk, mark);
}

/* A block per row: its marks, then (the group's last block) the group's list.
 * group_done: a zeroed counter a group, left zeroed. */
template <bool COUNT, bool PACKED>
static __global__ void __launch_bounds__(kMarkThreads, kMarkBlocksPerSM)
    direct_mark_kernel(int32_t n_rows, const int32_t *__restrict__ codes,
                       const int32_t *__restrict__ row_live, nmt_lsh_tables t,
                       int32_t rows_per_group, int32_t threshold, int32_t n_always,
                       uint32_t *bitmap, int32_t bitmap_ld, uint32_t *group_done,
                       int32_t *__restrict__ cand, int64_t cand_ld, int32_t *__restrict__ count)
{
    __shared__ bool s_last;
    const int32_t row = blockIdx.x, g = row / rows_per_group;
    if (!row_live || __ldg(&row_live[row])) /* block-uniform: no barrier is split */
        mark_row<COUNT, PACKED>(row, codes, t, threshold, n_always,
                                bitmap + (int64_t)g * bitmap_ld);

    /* Every thread's marks are visible device-wide before the block counts
     * itself in (the barrier orders them before thread 0's fence, which
     * orders them before its count), so the last of the group's rows sees
     * them all. One fence a block, not one a thread. */
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        const int32_t rows = min(rows_per_group, n_rows - g * rows_per_group);
        s_last = atomicAdd(&group_done[g], 1u) + 1u == (uint32_t)rows;
        if (s_last)
            group_done[g] = 0; /* every row has counted itself in: ready for the next call */
    }
    __syncthreads();
    if (!s_last)
        return;
    __threadfence();
    compact_group<kMarkThreads>(g, t.vocab, threshold, n_always, bitmap, bitmap_ld, cand,
                                cand_ld, count);
}

/* Threshold <= 0: every word, nothing marked; a block per group. */
static __global__ void __launch_bounds__(kCompactThreads)
    direct_compact_kernel(int32_t vocab, int32_t threshold, int32_t n_always,
                          uint32_t *bitmap, int32_t bitmap_ld, int32_t *__restrict__ cand,
                          int64_t cand_ld, int32_t *__restrict__ count)
{
    compact_group<kCompactThreads>(blockIdx.x, vocab, threshold, n_always, bitmap, bitmap_ld,
                                   cand, cand_ld, count);
}

/* ---- set-up: each slot's skip below a word ------------------------------- */

static __global__ void slots_skip_kernel(nmt_lsh_tables t, nmt_lsh_slot *slots, int32_t below)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ((int64_t)t.w << t.table_bits))
        return;
    nmt_lsh_slot slot = slots[i];
    const int32_t band = (int32_t)(i >> t.table_bits);
    slot.skip = slot.key < 0 || slot.length <= 0
                    ? 0
                    : lower_bound_i32(t.bucket_words + (int64_t)band * t.vocab, slot.start,
                                      slot.start + slot.length, below) - slot.start;
    slots[i] = slot;
}

/* ---- exported ------------------------------------------------------------- */

extern "C" nmt_status nmt_cuda_lsh_slots_skip(const nmt_lsh_tables *t, nmt_lsh_slot *slots,
                                              int32_t below, void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(t && slots && t->bucket_words && t->w >= 1 && t->vocab >= 1 && below >= 0);
    NMT_ARG_CHECK(t->table_bits >= 0 && t->table_bits <= 30);
    const int64_t n = (int64_t)t->w << t->table_bits;
    const int threads = 256;
    NMT_ARG_CHECK((n + threads - 1) / threads <= 2147483647);
    slots_skip_kernel<<<(unsigned)((n + threads - 1) / threads), threads, 0,
                        (cudaStream_t)stream>>>(*t, slots, below);
    NMT_LAUNCH_RETURN("slots_skip_kernel");
    return NMT_STATUS_OK;
}

extern "C" size_t nmt_cuda_lsh_direct_workspace_size(int32_t max_groups, int32_t vocab)
{
    if (max_groups < 1 || vocab < 1)
        return 0;
    return (size_t)max_groups * (size_t)((vocab + 31) / 32 + 1) * sizeof(uint32_t);
}

extern "C" nmt_status nmt_cuda_lsh_candidates_direct(
    int32_t n_rows, const int32_t *codes, const int32_t *row_live, const nmt_lsh_tables *t,
    int32_t threshold, int32_t n_always, nmt_cand_lists lists, void *workspace,
    size_t workspace_bytes, void *stream_ptr, nmt_error *err)
{
    cudaStream_t stream = (cudaStream_t)stream_ptr;
    const int32_t rows_per_group = lists.rows_per_group;
    NMT_ARG_CHECK(t && n_rows >= 0 && rows_per_group >= 1 && t->vocab >= 1 && t->w >= 1);
    NMT_ARG_CHECK(t->w <= kMaxBands && lists.ld >= t->vocab && n_always >= 0);
    NMT_ARG_CHECK(n_rows == 0 || (codes && lists.words && lists.count && workspace));
    NMT_ARG_CHECK((uintptr_t)t->slots % 16 == 0 && (uintptr_t)t->hash % 16 == 0 &&
                  (uintptr_t)workspace % 4 == 0);
    if (n_rows == 0)
        return NMT_STATUS_OK;
    if ((int64_t)t->w * t->vocab > 2147483647) /* the walk's 32-bit offsets */
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "nmt_cuda_lsh_candidates_direct: %d bands x %d words do not fit "
                             "32-bit offsets", t->w, t->vocab);
    const int64_t n_groups = ((int64_t)n_rows + rows_per_group - 1) / rows_per_group;
    const int32_t bitmap_ld = (t->vocab + 31) / 32;
    /* n_groups bitmaps, then n_groups counters (all zero between calls) */
    const size_t need = (size_t)n_groups * (size_t)(bitmap_ld + 1) * sizeof(uint32_t);
    if (workspace_bytes < need)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "nmt_cuda_lsh_candidates_direct: workspace of %zu bytes, the call "
                             "needs %zu (nmt_cuda_lsh_direct_workspace_size)", workspace_bytes,
                             need);
    if (n_groups > 2147483647)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "nmt_cuda_lsh_candidates_direct: %lld groups", (long long)n_groups);
    uint32_t *bitmap = (uint32_t *)workspace;
    uint32_t *group_done = bitmap + n_groups * bitmap_ld;
    if (threshold <= 0) { /* every word: nothing to mark */
        direct_compact_kernel<<<(unsigned)n_groups, kCompactThreads, 0, stream>>>(
            t->vocab, threshold, n_always, bitmap, bitmap_ld, lists.words, lists.ld, lists.count);
        NMT_LAUNCH_RETURN("direct_compact_kernel");
        return NMT_STATUS_OK;
    }
    /* The packed buckets when they hold every word the call walks. */
    const bool packed = t->packed_slots && t->packed_words && n_always >= t->packed_below &&
                        t->vocab <= 65535;
    NMT_ARG_CHECK(!packed || (uintptr_t)t->packed_slots % 16 == 0);
    NMT_ARG_CHECK(!packed || (uintptr_t)t->packed_words % 16 == 0);
    typedef void (*mark_fn)(int32_t, const int32_t *, const int32_t *, nmt_lsh_tables, int32_t,
                            int32_t, int32_t, uint32_t *, int32_t, uint32_t *, int32_t *,
                            int64_t, int32_t *);
    mark_fn kernel;
    size_t smem = 0;
    if (threshold == 1) { /* any match: no counts */
        kernel = packed ? direct_mark_kernel<false, true> : direct_mark_kernel<false, false>;
    } else {
        kernel = packed ? direct_mark_kernel<true, true> : direct_mark_kernel<true, false>;
        smem = (size_t)((t->vocab + 7) / 8) * sizeof(uint4); /* 16-byte zeroing */
        int device = 0, smem_max = 0;
        cudaFuncAttributes attr;
        NMT_CUDA_RETURN(cudaGetDevice(&device));
        NMT_CUDA_RETURN(
            cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
        NMT_CUDA_RETURN(cudaFuncGetAttributes(&attr, kernel));
        if (smem + attr.sharedSizeBytes > (size_t)smem_max) /* counters + the walk's scratch */
            return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                                 "nmt_cuda_lsh_candidates_direct: vocab %d needs %zu bytes of "
                                 "shared memory a block, the device allows %d", t->vocab,
                                 smem + attr.sharedSizeBytes, smem_max);
        NMT_CUDA_RETURN(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)smem));
    }
    kernel<<<n_rows, kMarkThreads, smem, stream>>>(n_rows, codes, row_live, *t, rows_per_group,
                                                   threshold, n_always, bitmap, bitmap_ld,
                                                   group_done, lists.words, lists.ld,
                                                   lists.count);
    NMT_LAUNCH_RETURN("direct_mark_kernel");
    return NMT_STATUS_OK;
}
