/* output_topk_fold.cuh: the fused output layer's shapes, parameters and
 * per-chunk fold (kernels/cuda/output_topk.cu). A block's eight warps hold a
 * chunk's logits in their mma accumulators: each thread 8 words of each of
 * its 2 NR rows. The fold adds the bias, updates each thread's own online
 * (max, sum) (Milakov & Gimelshein), and sends every word whose packed key
 * beats its row's threshold through a shared candidate buffer into the row's
 * sorted list (one thread a row), in rounds until every word went through;
 * the first chunk of a part seeds the threshold with the K-th largest of the
 * row's 16 holders' best logits (K distinct words are at least that large). */
#ifndef NMT_KERNELS_CUDA_OUTPUT_TOPK_FOLD_CUH
#define NMT_KERNELS_CUDA_OUTPUT_TOPK_FOLD_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "device.cuh"
#include "output_topk.h"
#include "softmax_topk_device.cuh"

namespace nmt_output_topk {

constexpr int kThreads = 256;                  /* 8 warps: 2 (words) x 4 (rows) */
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kChunk = 128;                    /* words a chunk: 64 a word warp */
constexpr int kStep = 32;                      /* k a stage: two k16 blocks */
constexpr int kLd = kStep + 8;                 /* halfs a staged row: 80 bytes, so the 8
                                                  rows of an ldmatrix hit distinct banks */
constexpr int kSegs = kStep / 8;               /* 16-byte segments a staged row */
constexpr int kHolders = 16;                   /* threads holding a row's words of a chunk */
constexpr int kCand = 16;                      /* candidate slots a row, a round */
constexpr int kPartsPerLane = 2;               /* parts a lane merges */
constexpr int kMaxParts = kWarpSize * kPartsPerLane;
constexpr int kTargetParts = 32;               /* parts a vocabulary is cut into at most */
constexpr int kDefaultStages = 3;              /* two blocks an SM at the largest row tile */
static_assert(kChunk * kSegs == 2 * kThreads, "a stage's W is two segments a thread");
static_assert(kCand >= kHolders && kCand >= 2, "the buffer also holds the seeds and (m, d)");
static_assert(kTargetParts <= kMaxParts, "merge_kernel takes every part");

/* The chunks and parts of a vocabulary: at most kTargetParts parts of
 * chunks_per_part chunks each. */
struct Split {
    int32_t n_chunks, chunks_per_part, parts;
};

__host__ __device__ inline Split split_of(int32_t vocab)
{
    Split s;
    s.n_chunks = (vocab + kChunk - 1) / kChunk;
    s.chunks_per_part = (s.n_chunks + kTargetParts - 1) / kTargetParts;
    s.parts = (s.n_chunks + s.chunks_per_part - 1) / s.chunks_per_part;
    return s;
}

/* The workspace: per part and row, (m, d), then the sorted list of keys. */
struct Partials {
    OnlineMD *md;   /* [parts, n_rows] */
    uint64_t *keys; /* [parts, n_rows, k] */
};

__host__ __device__ inline size_t partials_bytes(int32_t parts, int32_t n_rows, int32_t k)
{
    const size_t cells = (size_t)parts * (size_t)n_rows;
    return cells * sizeof(OnlineMD) + cells * (size_t)k * sizeof(uint64_t);
}

__host__ __device__ inline Partials partials_at(void *workspace, int32_t parts, int32_t n_rows,
                                                int32_t k)
{
    const size_t cells = (size_t)parts * (size_t)n_rows;
    Partials p;
    p.md = (OnlineMD *)workspace;
    p.keys = (uint64_t *)(p.md + cells);
    return p;
}
static_assert(sizeof(OnlineMD) % sizeof(uint64_t) == 0, "the keys stay 8-byte aligned");

struct Params {
    int32_t n_rows, vocab, k, ldx, ldw, top_k, n_excluded, ld_keep, keep_word;
    const uint16_t *x, *w;
    const float *bias;
    const int32_t *excluded;
    float *keep;
    Split split;
    Partials out;
    float *top_values, *lse;
    int32_t *top_ids;
};

/* The block's shared arrays after the ring: each thread's (m, d) of its
 * 2 NR rows (md[r * kThreads + thread]: out of the registers, which the
 * product needs), and a row each: the threshold a word's key must beat, the
 * sorted list (top_k keys, 0 = empty), the candidate buffer (also the seeds'
 * keys and the final (m, d)) and its count. */
struct Fold {
    OnlineMD *md;
    uint64_t *thr, *list, *buf;
    int32_t *cnt;
};

__host__ __device__ inline size_t fold_bytes(int rows, int32_t top_k)
{
    const size_t md = sizeof(OnlineMD) * (size_t)(rows / 16) * kThreads;
    return md + (size_t)rows * (sizeof(uint64_t) * (1 + (size_t)top_k + kCand) + sizeof(int32_t));
}

/* A thread's items of a chunk: row (nr, j) = local row wn 8 NR + 8 nr + 2 t + j
 * (row_of); word i = 2 mw + h = word0 + 64 wm + g + 8 i; its logit
 * acc[mw][nr][2 h + j] (item); bit item_bit of the pending mask. */
__device__ __forceinline__ int item_bit(int nr, int j, int i) { return (2 * nr + j) * 8 + i; }

template <int NR> __device__ __forceinline__ int row_of(int wn, int t, int nr, int j)
{
    return wn * 8 * NR + 8 * nr + 2 * t + j;
}

template <int NR>
__device__ __forceinline__ float &item(float (&acc)[4][NR][4], int nr, int j, int i)
{
    return acc[i >> 1][nr][2 * (i & 1) + j];
}

/* The sorted insert of one row's candidates (one thread a row). */
__device__ __forceinline__ void insert_candidates(uint64_t *list, int32_t top_k,
                                                  const uint64_t *cand, int n, uint64_t *thr)
{
    for (int c = 0; c < n; c++) {
        const uint64_t key = cand[c];
        if (key <= list[top_k - 1])
            continue;
        int pos = top_k - 1;
        while (pos > 0 && list[pos - 1] < key) {
            list[pos] = list[pos - 1];
            pos--;
        }
        list[pos] = key;
    }
    if (list[top_k - 1] > *thr)
        *thr = list[top_k - 1];
}

/* The K-th largest of a row's kHolders seeds (NaN: none; -inf counts), or
 * NaN when fewer than K are there. */
__device__ __forceinline__ float kth_seed(const float *seeds, int32_t top_k)
{
    float s[kHolders];
#pragma unroll
    for (int a = 0; a < kHolders; a++)
        s[a] = seeds[a];
    float kth = NAN;
#pragma unroll
    for (int a = 0; a < kHolders; a++) {
        int above = 0, at_least = 0;
#pragma unroll
        for (int b = 0; b < kHolders; b++) {
            above += s[b] > s[a];
            at_least += s[b] >= s[a];
        }
        if (above < top_k && at_least >= top_k) /* false for NaN */
            kth = s[a];
    }
    return kth;
}

/* Offers the thread's items of row (nr, j) that beat the row's threshold
 * (a float compare first, the key only at or above its value) to the
 * candidate buffer; an item that finds it full stays in pend. only: the
 * items to look at (a round after the first: pend's). */
template <int NR>
__device__ __forceinline__ void offer_row(float (&acc)[4][NR][4], int nr, int j, const Fold &f,
                                          int rl, int32_t wbase, uint32_t only, uint64_t &pend)
{
    const uint64_t thr = f.thr[rl];
    const float thr_value = thr ? key_value(thr) : -INFINITY;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const float z = item(acc, nr, j, i);
        if (!((only >> i) & 1) || !(z >= thr_value)) /* NaN: not a word of the list */
            continue;
        const uint64_t key = make_key(z, wbase + 8 * i);
        if (key <= thr)
            continue;
        const int slot = atomicAdd(&f.cnt[rl], 1);
        if (slot < kCand)
            f.buf[rl * kCand + slot] = key;
        else
            pend |= 1ull << item_bit(nr, j, i);
    }
}

/* Folds a chunk's logits (the accumulators, bias not yet added) into the
 * thread's (m, d) and the block's lists. Block-wide: every thread calls it. */
template <int NR>
__device__ void fold_chunk(float (&acc)[4][NR][4], const Params &p, const Fold &f, int32_t word0,
                           int32_t row0, bool first, int wm, int wn)
{
    constexpr int R = 32 * NR;
    const int tid = threadIdx.x, lane = tid % kWarpSize, g = lane >> 2, t = lane & 3;
    const int32_t wbase = word0 + wm * 64 + g; /* item i's word: wbase + 8 i */
    /* A clean chunk (the common one): every word in the vocabulary and none
     * excluded, every row real; block-uniform, and no per-word selects. */
    bool excluded_here = false;
    uint32_t listed = 0xffu; /* bit i: word i is in the vocabulary and not excluded */
    for (int e = 0; e < p.n_excluded; e++) {
        const int32_t word = __ldg(&p.excluded[e]), d = word - wbase;
        excluded_here |= word >= word0 && word < word0 + kChunk;
        if (d >= 0 && d < 64 && (d & 7) == 0)
            listed &= ~(1u << (d >> 3));
    }
    const bool clean = !excluded_here && word0 + kChunk <= p.vocab && row0 + R <= p.n_rows;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int32_t word = wbase + 8 * i;
        /* the bias after the chain, as cuBLASLt's epilogue adds it */
        if (clean) {
            const float b = __ldg(&p.bias[word]);
#pragma unroll
            for (int nr = 0; nr < NR; nr++)
#pragma unroll
                for (int j = 0; j < 2; j++)
                    item(acc, nr, j, i) += b;
            continue;
        }
        listed &= ~((uint32_t)(word >= p.vocab) << i);
        const float b = word < p.vocab ? __ldg(&p.bias[word]) : 0.0f;
#pragma unroll
        for (int nr = 0; nr < NR; nr++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                float &z = item(acc, nr, j, i);
                z = word < p.vocab ? z + b : -INFINITY;
            }
    }
    const bool keep_here = p.keep && p.keep_word >= wbase && p.keep_word < wbase + 64 &&
                           ((p.keep_word - wbase) & 7) == 0;
#pragma unroll
    for (int nr = 0; nr < NR; nr++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int rl = row_of<NR>(wn, t, nr, j);
            const bool valid = row0 + rl < p.n_rows;
            float mx = -INFINITY;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const float z = item(acc, nr, j, i);
                mx = fmaxf(mx, z);
                if (keep_here && valid && wbase + 8 * i == p.keep_word)
                    p.keep[(int64_t)(row0 + rl) * p.ld_keep + p.keep_word] = z;
            }
            OnlineMD m = f.md[(2 * nr + j) * kThreads + tid];
            if (mx > m.m) {
                m.d *= exp_from(m.m, mx * kLog2e);
                m.m = mx;
            }
            if (m.m != -INFINITY) {
                const float ml = m.m * kLog2e;
                float s = 0.0f;
#pragma unroll
                for (int i = 0; i < 8; i++)
                    s += exp_from(item(acc, nr, j, i), ml);
                m.d += s;
            }
            f.md[(2 * nr + j) * kThreads + tid] = m;
            /* From here on z only ranks: NaN for what no list may hold. */
            if (!clean)
#pragma unroll
                for (int i = 0; i < 8; i++)
                    if (!valid || !((listed >> i) & 1))
                        item(acc, nr, j, i) = NAN;
        }
    float *seeds = reinterpret_cast<float *>(f.buf); /* kHolders a row */
    if (first && p.top_k <= kHolders) {
#pragma unroll
        for (int nr = 0; nr < NR; nr++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                float best = NAN; /* fmaxf keeps the number of a NaN pair */
#pragma unroll
                for (int i = 0; i < 8; i++)
                    best = fmaxf(best, item(acc, nr, j, i));
                seeds[row_of<NR>(wn, t, nr, j) * kHolders + wm * 8 + g] = best;
            }
        __syncthreads();
        if (tid < R) {
            const float kth = kth_seed(seeds + tid * kHolders, p.top_k);
            /* K distinct words are >= kth: no word below it makes the list;
             * every id of kth's value still passes the key compare. */
            const uint64_t floor_key = make_key(kth, 0x7fffffff) - 1;
            if (kth == kth && floor_key > f.thr[tid])
                f.thr[tid] = floor_key;
        }
        __syncthreads();
    }
    uint64_t pend = 0;
#pragma unroll
    for (int nr = 0; nr < NR; nr++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            offer_row<NR>(acc, nr, j, f, row_of<NR>(wn, t, nr, j), wbase, 0xffu, pend);
    for (;;) {
        __syncthreads();
        if (tid < R) {
            const int n = min(f.cnt[tid], kCand);
            if (n)
                insert_candidates(f.list + (size_t)tid * p.top_k, p.top_k, f.buf + tid * kCand, n,
                                  &f.thr[tid]);
            f.cnt[tid] = 0;
        }
        if (!__syncthreads_or(pend != 0)) /* also: the lists are in for every thread */
            break;
        const uint64_t again = pend; /* rare: a row had more than kCand candidates */
        pend = 0;
#pragma unroll
        for (int nr = 0; nr < NR; nr++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const uint32_t only = (uint32_t)(again >> item_bit(nr, j, 0)) & 0xffu;
                if (only)
                    offer_row<NR>(acc, nr, j, f, row_of<NR>(wn, t, nr, j), wbase, only, pend);
            }
    }
}

} // namespace nmt_output_topk

#endif /* NMT_KERNELS_CUDA_OUTPUT_TOPK_FOLD_CUH */
