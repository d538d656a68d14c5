/* output_topk.cu: the fused output layer of kernels/output_topk.h.
 *
 * tile_kernel: a block owns 32 NR rows (NR 1, 2 or 4 by the row count; the
 * bits do not depend on it) and one part of the vocabulary (parts sized
 * from V alone, so that a row's result never depends on the row count). Its
 * eight warps, 2 (words) x 4 (rows), multiply each chunk of kChunk words on
 * tensor cores: W the A operand, x^T the B one, fragments by ldmatrix, k in
 * stages of kStep through a cp.async ring of STAGES that runs on from one
 * chunk into the next, so a chunk's fold overlaps the next one's loads. The
 * logits never leave the accumulators: output_topk_fold.cuh folds each chunk
 * into the rows' (max, sum) and top-K. merge_kernel: a warp a row merges the
 * parts' (m, d) by a butterfly and their sorted lists by K rounds of the
 * largest head key, in a fixed order. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <atomic>

#include "cuda_check.h"
#include "cuda_ctx.h"
#include "device.cuh"
#include "mma_device.cuh"
#include "output_topk.h"
#include "output_topk_fold.cuh"
#include "softmax_topk_device.cuh"

namespace {

using namespace nmt_output_topk;

/* A block's rows and its ring's stage (W's chunk rows, then x's rows). */
template <int NR> struct Tile {
    static constexpr int rows = 4 * 8 * NR;
    static constexpr int stage_halfs = (kChunk + rows) * kLd;
    static constexpr size_t stage_bytes = sizeof(uint16_t) * stage_halfs;
};

template <int NR> __host__ __device__ inline size_t smem_bytes(int stages, int32_t top_k)
{
    return stages * Tile<NR>::stage_bytes + fold_bytes(Tile<NR>::rows, top_k);
}

template <int NR> __device__ inline Fold fold_at(unsigned char *smem, int stages, int32_t top_k)
{
    constexpr int R = Tile<NR>::rows;
    Fold f;
    f.md = reinterpret_cast<OnlineMD *>(smem + stages * Tile<NR>::stage_bytes);
    f.thr = reinterpret_cast<uint64_t *>(f.md + 2 * NR * kThreads);
    f.list = f.thr + R;
    f.buf = f.list + (size_t)R * top_k;
    f.cnt = reinterpret_cast<int32_t *>(f.buf + R * kCand);
    return f;
}

/* The ring's loads of one thread: W rows r and r + 64 of the chunk, x rows r
 * and r + 64 of the block (those below R), 16 bytes at column c of each
 * stage, r = tid / 4, c = 8 (tid % 4). The sources advance by a stage; rows
 * past V or n_rows read nothing (zero-filled) from row 0, so each pointer
 * stays inside its matrix. A stage's loads cost a few adds. */
template <int NR, int STAGES> struct StageLoader {
    static constexpr int kXSegs = (Tile<NR>::rows * kSegs + kThreads - 1) / kThreads;
    const uint16_t *w[2], *x[kXSegs]; /* the next stage's sources */
    uint32_t dst;                     /* the thread's first segment in the next stage's slot */
    int32_t k0, word0;                /* the next stage's k and chunk */
    uint32_t ok;                      /* bit u: W row r + 64 u exists; bit 2 + v: x row */
    int slot;                         /* of the ring's STAGES */

    __device__ __forceinline__ int row() const { return threadIdx.x / kSegs; }
    __device__ __forceinline__ int col() const { return (threadIdx.x % kSegs) * 8; }

    __device__ __forceinline__ void point_w(const Params &p)
    {
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const int32_t word = word0 + row() + 64 * u;
            const bool in = word < p.vocab;
            ok = (ok & ~(1u << u)) | (uint32_t)in << u;
            w[u] = in ? p.w + (int64_t)word * p.ldw + col() : p.w;
        }
    }

    __device__ __forceinline__ void init(const Params &p, unsigned char *smem, int32_t row0,
                                         int32_t chunk_word0)
    {
        ok = 0;
#pragma unroll
        for (int v = 0; v < kXSegs; v++) {
            const int32_t r = row0 + row() + 64 * v;
            const bool in = row() + 64 * v < Tile<NR>::rows && r < p.n_rows;
            ok |= (uint32_t)in << (2 + v);
            x[v] = in ? p.x + (int64_t)r * p.ldx + col() : p.x;
        }
        k0 = 0, word0 = chunk_word0, slot = 0;
        dst = (unsigned)__cvta_generic_to_shared(smem) + sizeof(uint16_t) * (row() * kLd + col());
        point_w(p);
    }

    /* The next stage into its slot (cp.async, zero-filled past V, n_rows, k);
     * then the one after it. n_kb: stages a chunk. */
    __device__ __forceinline__ void load_next(const Params &p, int n_kb)
    {
        const int kbytes = k0 + col() < p.k ? 16 : 0;
        const uint32_t d = dst + slot * (uint32_t)Tile<NR>::stage_bytes;
        constexpr uint32_t kRow64 = sizeof(uint16_t) * 64 * kLd;
        constexpr uint32_t kXOff = sizeof(uint16_t) * kChunk * kLd;
#pragma unroll
        for (int u = 0; u < 2; u++)
            cp_async16_to(d + u * kRow64, w[u], (ok >> u) & 1 ? kbytes : 0);
#pragma unroll
        for (int v = 0; v < kXSegs; v++)
            if (row() + 64 * v < Tile<NR>::rows)
                cp_async16_to(d + kXOff + v * kRow64, x[v], (ok >> (2 + v)) & 1 ? kbytes : 0);
        slot = slot + 1 == STAGES ? 0 : slot + 1;
        k0 += kStep;
#pragma unroll
        for (int u = 0; u < 2; u++)
            w[u] += kStep;
#pragma unroll
        for (int v = 0; v < kXSegs; v++)
            x[v] += kStep;
        if (k0 >= p.k) { /* the next chunk */
            k0 = 0;
            word0 += kChunk;
#pragma unroll
            for (int v = 0; v < kXSegs; v++)
                x[v] -= n_kb * kStep;
            point_w(p);
        }
    }
};
static_assert(kThreads / kSegs == 64 && kChunk == 128, "a thread loads W rows r and r + 64");

/* The warp's 64 words x 8 NR rows over one stage's k16 blocks, in order. */
template <int BF16, int NR>
__device__ __forceinline__ void mma_stage(float (&acc)[4][NR][4], const uint16_t *st, int wm,
                                          int wn, int32_t k0, int32_t k)
{
    const int lane = threadIdx.x % kWarpSize;
    const uint16_t *ws = st + (wm * 64 + (lane & 15)) * kLd + (lane >> 4) * 8;
    const uint16_t *xs = st + kChunk * kLd + (wn * 8 * NR + (lane & 7) + ((lane >> 4) << 3)) * kLd +
                         ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int kk = 0; kk < kStep; kk += 16) {
        if (k0 + kk >= k) /* past k: no block (zeros would add nothing, but a -0 sum) */
            break;
        uint32_t a[4][4], b[NR][2];
#pragma unroll
        for (int mw = 0; mw < 4; mw++)
            ldmatrix_x4(a[mw][0], a[mw][1], a[mw][2], a[mw][3], ws + 16 * mw * kLd + kk);
        if (NR == 1)
            ldmatrix_x2(b[0][0], b[0][1], xs + kk);
#pragma unroll
        for (int np = 0; np < NR / 2; np++)
            ldmatrix_x4(b[2 * np][0], b[2 * np][1], b[2 * np + 1][0], b[2 * np + 1][1],
                        xs + 16 * np * kLd + kk);
#pragma unroll
        for (int mw = 0; mw < 4; mw++)
#pragma unroll
            for (int nr = 0; nr < NR; nr++)
                mma_k16<BF16>(acc[mw][nr], a[mw], b[nr]);
    }
}

/* The accumulators of a chunk's product, cleared for the next chunk. */
template <int NR> __device__ __forceinline__ void zero_chunk(float (&acc)[4][NR][4])
{
#pragma unroll
    for (int mw = 0; mw < 4; mw++)
#pragma unroll
        for (int nr = 0; nr < NR; nr++)
#pragma unroll
            for (int h = 0; h < 4; h++)
                acc[mw][nr][h] = 0.0f;
}

template <int BF16, int STAGES, int NR>
__global__ void __launch_bounds__(kThreads, 2) tile_kernel(Params p)
{
    pdl_enter();
    constexpr int R = Tile<NR>::rows;
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *ring = reinterpret_cast<uint16_t *>(smem);
    const int tid = threadIdx.x, lane = tid % kWarpSize, warp = tid / kWarpSize;
    const int wm = warp & 1, wn = warp >> 1; /* the warp's 64 words and 8 NR rows */
    const int32_t row0 = blockIdx.y * R, part = blockIdx.x;
    const int32_t chunk_begin = part * p.split.chunks_per_part;
    const int32_t chunk_end = min(chunk_begin + p.split.chunks_per_part, p.split.n_chunks);
    /* The fold's pointers are remade where used (fold_at is arithmetic on
     * smem): kept live across the product they would cost registers it needs. */
    {
        const Fold f = fold_at<NR>(smem, STAGES, p.top_k);
        for (int i = tid; i < R; i += kThreads)
            f.thr[i] = 0, f.cnt[i] = 0;
        for (int i = tid; i < R * p.top_k; i += kThreads)
            f.list[i] = 0;
#pragma unroll
        for (int r = 0; r < 2 * NR; r++) /* the thread's own, over its words of every chunk */
            f.md[r * kThreads + tid] = OnlineMD{-INFINITY, 0.0f};
    }
    float acc[4][NR][4];
    zero_chunk(acc);
    /* The ring over (chunk, k stage) in order: stage s + STAGES - 1 loads while
     * s multiplies; a group is committed every turn (empty past the end) so
     * that waiting for all but STAGES - 2 groups means stage s has landed. */
    const int n_kb = (p.k + kStep - 1) / kStep;
    const int total = (chunk_end - chunk_begin) * n_kb;
    StageLoader<NR, STAGES> loader;
    loader.init(p, smem, row0, chunk_begin * kChunk);
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < total)
            loader.load_next(p, n_kb);
        cp_async_commit();
    }
    int kb = 0, slot = 0;
    int32_t chunk = chunk_begin;
    for (int s = 0; s < total; s++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads(); /* stage s is in; every warp is done with s - 1's slot */
        if (s + STAGES - 1 < total)
            loader.load_next(p, n_kb);
        cp_async_commit();
        mma_stage<BF16, NR>(acc, ring + slot * Tile<NR>::stage_halfs, wm, wn, kb * kStep, p.k);
        slot = slot + 1 == STAGES ? 0 : slot + 1;
        if (++kb == n_kb) {
            fold_chunk<NR>(acc, p, fold_at<NR>(smem, STAGES, p.top_k), chunk * kChunk, row0,
                           chunk == chunk_begin, wm, wn);
            zero_chunk(acc);
            kb = 0;
            chunk++;
        }
    }
    cp_async_wait<0>();
    /* The part's (m, d) a row: the 8 lanes of a word warp (g), then the two
     * word warps in order, through the (now free) candidate buffer. */
    const Fold f = fold_at<NR>(smem, STAGES, p.top_k);
    OnlineMD *md_s = reinterpret_cast<OnlineMD *>(f.buf);
#pragma unroll
    for (int r = 0; r < 2 * NR; r++) {
        OnlineMD v = f.md[r * kThreads + tid];
#pragma unroll
        for (int off = kWarpSize / 2; off >= 4; off /= 2) {
            const OnlineMD o{__shfl_xor_sync(kFullMask, v.m, off),
                             __shfl_xor_sync(kFullMask, v.d, off)};
            v = md_merge(v, o);
        }
        if (lane < 4)
            md_s[2 * row_of<NR>(wn, lane, r >> 1, r & 1) + wm] = v;
    }
    __syncthreads();
    if (tid < R && row0 + tid < p.n_rows) {
        const size_t cell = (size_t)part * p.n_rows + row0 + tid;
        p.out.md[cell] = md_merge(md_s[2 * tid], md_s[2 * tid + 1]);
        for (int i = 0; i < p.top_k; i++)
            p.out.keys[cell * p.top_k + i] = f.list[(size_t)tid * p.top_k + i];
    }
}
/* A warp a row: the parts' (m, d) by a butterfly, lse, then top_k rounds
 * of the largest head key among the parts' sorted lists (lane l: parts l
 * and l + 32, folded in that order). */
__global__ void __launch_bounds__(kThreads) merge_kernel(Params p)
{
    pdl_enter();
    const int lane = threadIdx.x % kWarpSize;
    const int32_t r = blockIdx.x * kWarps + threadIdx.x / kWarpSize;
    if (r >= p.n_rows)
        return;
    const int32_t k = p.top_k;
    const uint64_t *list[kPartsPerLane]; /* NULL: the lane has no such part */
    int32_t head[kPartsPerLane];
    OnlineMD md{-INFINITY, 0.0f};
#pragma unroll
    for (int q = 0; q < kPartsPerLane; q++) {
        const int32_t part = lane + kWarpSize * q;
        const size_t cell = (size_t)part * p.n_rows + r;
        list[q] = part < p.split.parts ? p.out.keys + cell * k : NULL;
        head[q] = 0;
        if (list[q])
            md = md_merge(md, p.out.md[cell]);
    }
    md = warp_md(md);
    const float lse = md.m + logf(md.d);
    if (lane == 0)
        p.lse[r] = lse;
    for (int32_t t = 0; t < k; t++) {
        uint64_t mine = 0; /* 0: no key (write_slot's -inf / -1) */
#pragma unroll
        for (int q = 0; q < kPartsPerLane; q++)
            if (list[q] && head[q] < k && list[q][head[q]] > mine)
                mine = list[q][head[q]];
        const uint64_t best = warp_max_key(mine);
        if (lane == 0)
            write_slot(best, lse, p.top_values + (int64_t)r * k + t,
                       p.top_ids + (int64_t)r * k + t);
#pragma unroll
        for (int q = 0; q < kPartsPerLane; q++) /* keys are unique: one list holds it */
            if (best && list[q] && head[q] < k && list[q][head[q]] == best)
                head[q]++;
    }
}

bool aligned16(const void *ptr) { return ((uintptr_t)ptr & 15u) == 0; }

} // namespace

extern "C" size_t nmt_cuda_output_topk_workspace_size(int32_t n_rows, int32_t vocab,
                                                      int32_t top_k)
{
    if (n_rows < 1 || vocab < 1 || top_k < 1)
        return 0;
    return partials_bytes(split_of(vocab).parts, n_rows, top_k);
}

extern "C" int nmt_cuda_output_topk_supports(const nmt_output_topk_args *a)
{
    return a && a->k >= 16 && a->k % 16 == 0 && a->ldx % 8 == 0 && a->ldw % 8 == 0 &&
           a->ldx >= a->k && a->ldw >= a->k && aligned16(a->x) && aligned16(a->w) &&
           a->top_k >= 1 && a->top_k <= NMT_OUTPUT_TOPK_MAX_K && a->n_excluded >= 0 &&
           a->n_excluded <= NMT_OUTPUT_TOPK_MAX_EXCLUDED && a->vocab >= 1 && a->n_rows >= 0 &&
           (int64_t)a->n_rows <= 65535LL * Tile<1>::rows &&
           (a->kind == NMT_HALF_BF16 || a->kind == NMT_HALF_FP16);
}

namespace {

typedef void (*tile_fn)(Params);

/* The tile kernel of a format, a ring and a row tile (NR = rows / 32), and
 * its shared memory at the largest top_k (what the opt-in allows); NULL for
 * a ring not built. */
template <int BF16, int NR> tile_fn tile_for_rows(int stages, size_t *smem_max)
{
    *smem_max = smem_bytes<NR>(stages, NMT_OUTPUT_TOPK_MAX_K);
    switch (stages) {
    case 3: return tile_kernel<BF16, 3, NR>;
    case 4: return tile_kernel<BF16, 4, NR>;
    case 5: return tile_kernel<BF16, 5, NR>;
    default: return NULL;
    }
}

template <int BF16> tile_fn tile_for(int stages, int nr, size_t *smem_max)
{
    switch (nr) {
    case 1: return tile_for_rows<BF16, 1>(stages, smem_max);
    case 2: return tile_for_rows<BF16, 2>(stages, smem_max);
    default: return tile_for_rows<BF16, 4>(stages, smem_max);
    }
}

/* Every tile kernel past 48 KB of shared memory is opted in to its largest
 * once per device, on the first call there (an eager one: the graph cache
 * captures a step only once it has run eagerly). slot: the kernel's index. */
constexpr int kTileKernels = 2 * 3 * 3; /* format x ring x row tile */
cudaError_t opt_in(tile_fn fn, size_t smem_max, int slot)
{
    static std::atomic<unsigned long long> done[kTileKernels]; /* a bit a device */
    int device = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess)
        return e;
    const unsigned long long bit = device < 64 ? 1ull << device : 0ull; /* 0: every time */
    if (bit && (done[slot].load() & bit))
        return cudaSuccess;
    e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_max);
    if (e == cudaSuccess && bit)
        done[slot].fetch_or(bit);
    return e;
}

/* The row tile a call runs with: the largest whose grid still gives each of
 * the device's sms SMs two blocks (few rows: more, smaller blocks). The bits
 * do not depend on it, so it may follow the row count. */
int pick_nr(int32_t n_rows, int32_t parts, int sms)
{
    for (int c = 4; c > 1; c /= 2)
        if ((int64_t)((n_rows + 32 * c - 1) / (32 * c)) * parts >= 2LL * sms)
            return c;
    return 1;
}

} // namespace

extern "C" nmt_status nmt_cuda_output_topk(const nmt_output_topk_args *a, void *stream,
                                           nmt_error *err)
{
    return nmt_cuda_output_topk_policy(a, NULL, stream, err);
}

extern "C" nmt_status nmt_cuda_output_topk_policy(const nmt_output_topk_args *a,
                                                  const nmt_output_topk_policy *policy,
                                                  void *stream, nmt_error *err)
{
    if (!nmt_cuda_output_topk_supports(a))
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "fused output layer: unsupported call (k a multiple of 16, 16-byte "
                             "aligned rows, top_k 1..%d, at most %d excluded words)",
                             (int)NMT_OUTPUT_TOPK_MAX_K, (int)NMT_OUTPUT_TOPK_MAX_EXCLUDED);
    if (a->n_rows == 0)
        return NMT_STATUS_OK;
    NMT_ARG_CHECK(a->x && a->w && a->bias && a->top_values && a->top_ids && a->lse &&
                  a->workspace && (a->n_excluded == 0 || a->excluded));
    NMT_ARG_CHECK(!a->keep || (a->keep_word >= 0 && a->keep_word < a->vocab && a->ld_keep >= 1));
    const Split split = split_of(a->vocab);
    const size_t need = partials_bytes(split.parts, a->n_rows, a->top_k);
    if (a->workspace_bytes < need)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "fused output layer: workspace of %zu bytes, %zu needed",
                             a->workspace_bytes, need);
    const int stages = policy && policy->stages ? policy->stages : kDefaultStages;
    const int row_tile = policy ? policy->row_tile : 0;
    if (row_tile != 0 && row_tile != 32 && row_tile != 64 && row_tile != 128)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "fused output layer: a row tile of %d (0, 32, 64 or 128)", row_tile);
    int nr = row_tile / 32;
    if (!nr) {
        const int sms = nmt_cuda_sm_count(-1);
        if (sms < 1)
            return nmt_error_set(err, NMT_STATUS_ERROR_CUDA,
                                 "fused output layer: the device's SM count cannot be read");
        nr = pick_nr(a->n_rows, split.parts, sms);
    }
    Params p; /* C++17: no designated initializers */
    p.n_rows = a->n_rows, p.vocab = a->vocab, p.k = a->k, p.ldx = a->ldx, p.ldw = a->ldw;
    p.top_k = a->top_k, p.n_excluded = a->n_excluded;
    p.ld_keep = a->ld_keep, p.keep_word = a->keep_word, p.keep = a->keep;
    p.x = a->x, p.w = a->w, p.bias = a->bias, p.excluded = a->excluded;
    p.split = split;
    p.out = partials_at(a->workspace, split.parts, a->n_rows, a->top_k);
    p.top_values = a->top_values, p.lse = a->lse, p.top_ids = a->top_ids;
    cudaStream_t s = (cudaStream_t)stream;
    const int rows = 32 * nr;
    const dim3 tiles((unsigned)split.parts, (unsigned)((a->n_rows + rows - 1) / rows));
    size_t smem_max = 0;
    const int bf16 = a->kind == NMT_HALF_BF16;
    const tile_fn tile =
        bf16 ? tile_for<1>(stages, nr, &smem_max) : tile_for<0>(stages, nr, &smem_max);
    if (!tile)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "fused output layer: %d stages (3, 4 or 5)", stages);
    const int nr_slot = nr == 4 ? 2 : nr - 1;
    NMT_CUDA_RETURN(opt_in(tile, smem_max, (bf16 * 3 + stages - 3) * 3 + nr_slot));
    const size_t smem = nr == 1   ? smem_bytes<1>(stages, a->top_k)
                        : nr == 2 ? smem_bytes<2>(stages, a->top_k)
                                  : smem_bytes<4>(stages, a->top_k);
    nmt_launch_pdl(tile, tiles, dim3(kThreads), smem, s, p);
    NMT_LAUNCH_RETURN("output_topk tile_kernel");
    nmt_launch_pdl(merge_kernel, dim3((unsigned)((a->n_rows + kWarps - 1) / kWarps)),
                   dim3(kThreads), 0, s, p);
    NMT_LAUNCH_RETURN("output_topk merge_kernel");
    return NMT_STATUS_OK;
}
