/* output_topk.cu: the fused output layer of kernels/output_topk.h.
 *
 * tile_kernel: a block owns kTileRows rows and one part of the vocabulary
 * (at most kMaxParts parts a row, sized from V alone, so that a row's
 * result never depends on the row count). For each chunk of kChunk words of
 * its part it runs the product on tensor cores (W the A operand, x^T the B
 * one; k in stages of kStep through shared memory by cp.async, a ring of
 * STAGES (the policy's) with STAGES - 1 in flight), puts z in shared memory
 * over the dead stages, and folds the chunk into each row's online (max,
 * sum) and sorted top-K with the softmax + top-K kernels' own pieces
 * (softmax_topk_device.cuh: a lane's (m, d) over its four words of each
 * chunk, WarpTopK's list of packed keys, scan4), a warp a row. merge_kernel:
 * a warp a row merges the parts' (m, d) by a butterfly and their sorted
 * lists by K rounds of the largest head key (lane l: parts l and l + 32), in
 * a fixed order. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <atomic>

#include "cuda_check.h"
#include "device.cuh"
#include "mma_device.cuh"
#include "output_topk.h"
#include "softmax_topk_device.cuh"

namespace {

constexpr int kThreads = 256;                         /* 8 warps */
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kTileRows = 64;                         /* rows a block */
constexpr int kChunk = 128;                           /* words a chunk */
constexpr int kStep = 32;                             /* k a stage: two k16 blocks */
constexpr int kLd = kStep + 8;                        /* halfs a staged row: 80 bytes, no bank
                                                         conflicts in the fragment loads */
constexpr int kLdZ = kChunk + 4;                      /* floats a row of a chunk's z */
constexpr int kRowsPerWarp = kTileRows / kWarps;      /* rows a warp folds */
constexpr int kPartsPerLane = 2;                      /* parts a lane merges */
constexpr int kMaxParts = kWarpSize * kPartsPerLane;
constexpr int kSegs = kStep / 8;                      /* 16-byte segments a staged row */

struct Stage {
    uint16_t w[kChunk * kLd];
    uint16_t x[kTileRows * kLd];
};
constexpr size_t kZBytes = sizeof(float) * kTileRows * kLdZ;
/* Dynamic shared memory of a ring of `stages`: the stages, or z over them. */
constexpr size_t smem_bytes(int stages)
{
    return stages * sizeof(Stage) > kZBytes ? stages * sizeof(Stage) : kZBytes;
}
constexpr int kDefaultStages = 3; /* fits the 48 KB a launch gets without opting in */
static_assert(smem_bytes(kDefaultStages) <= 48 * 1024, "the default ring needs no opt-in");
static_assert(kChunk * kSegs == 2 * kThreads && kTileRows * kSegs == kThreads,
              "a stage is two W segments and one x segment a thread");

/* The chunks and parts of a vocabulary: at most kMaxParts parts of
 * chunks_per_part chunks each. */
struct Split {
    int32_t n_chunks, chunks_per_part, parts;
};

__host__ __device__ inline Split split_of(int32_t vocab)
{
    Split s;
    s.n_chunks = (vocab + kChunk - 1) / kChunk;
    s.chunks_per_part = (s.n_chunks + kMaxParts - 1) / kMaxParts;
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

/* cp.async: 16 bytes from global into shared memory, zero-filled when !valid. */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool valid)
{
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    const int bytes = valid ? 16 : 0; /* 0: the 16 bytes are zero-filled, nothing is read */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
                 "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* Stage k0 .. k0 + kStep of the chunk's W rows and the block's x rows. */
__device__ __forceinline__ void load_stage(Stage &st, const Params &p, int32_t word0,
                                           int32_t row0, int32_t k0)
{
    const int tid = threadIdx.x;
#pragma unroll
    for (int u = 0; u < 2; u++) {
        const int seg = tid + u * kThreads, r = seg / kSegs, c = k0 + (seg % kSegs) * 8;
        const int32_t word = word0 + r;
        const bool ok = word < p.vocab && c < p.k;
        cp_async16(&st.w[r * kLd + (seg % kSegs) * 8],
                   ok ? p.w + (int64_t)word * p.ldw + c : p.w, ok);
    }
    const int r = tid / kSegs, c = k0 + (tid % kSegs) * 8;
    const bool ok = row0 + r < p.n_rows && c < p.k;
    cp_async16(&st.x[r * kLd + (tid % kSegs) * 8], ok ? p.x + (int64_t)(row0 + r) * p.ldx + c : p.x,
               ok);
}

/* The warp's 32 words x 32 rows of the chunk over one stage's k16 blocks. */
template <int BF16>
__device__ __forceinline__ void mma_stage(float (&d)[2][4][4], const Stage &st, int ww, int wr,
                                          int32_t k0, int32_t k)
{
    const int lane = threadIdx.x % kWarpSize, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int kk = 0; kk < kStep; kk += 16) {
        if (k0 + kk >= k) /* past k: no block (zeros would add nothing, but a -0 sum) */
            break;
        uint32_t a[2][4], b[4][2];
#pragma unroll
        for (int mw = 0; mw < 2; mw++) {
            const uint16_t *lo = &st.w[(ww + 16 * mw + g) * kLd + kk + 2 * t];
            const uint16_t *hi = lo + 8 * kLd;
            a[mw][0] = *reinterpret_cast<const uint32_t *>(lo);
            a[mw][1] = *reinterpret_cast<const uint32_t *>(hi);
            a[mw][2] = *reinterpret_cast<const uint32_t *>(lo + 8);
            a[mw][3] = *reinterpret_cast<const uint32_t *>(hi + 8);
        }
#pragma unroll
        for (int nr = 0; nr < 4; nr++) {
            const uint16_t *xr = &st.x[(wr + 8 * nr + g) * kLd + kk + 2 * t];
            b[nr][0] = *reinterpret_cast<const uint32_t *>(xr);
            b[nr][1] = *reinterpret_cast<const uint32_t *>(xr + 8);
        }
#pragma unroll
        for (int mw = 0; mw < 2; mw++)
#pragma unroll
            for (int nr = 0; nr < 4; nr++)
                mma_k16<BF16>(d[mw][nr], a[mw], b[nr]);
    }
}

/* The chunk's z of the block's rows into zs (the stages are dead). */
__device__ __forceinline__ void store_z(float *zs, const float (&d)[2][4][4], const Params &p,
                                        int ww, int wr, int32_t word0)
{
    const int lane = threadIdx.x % kWarpSize, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mw = 0; mw < 2; mw++)
#pragma unroll
        for (int nr = 0; nr < 4; nr++)
#pragma unroll
            for (int h = 0; h < 4; h++) {
                const int wl = ww + 16 * mw + g + (h >> 1) * 8, rl = wr + 8 * nr + 2 * t + (h & 1);
                const int32_t word = word0 + wl;
                /* the bias after the chain, as cuBLASLt's epilogue adds it; -inf
                 * past the vocabulary, which (m, d) then leaves out */
                zs[rl * kLdZ + wl] =
                    word < p.vocab ? d[mw][nr][h] + __ldg(&p.bias[word]) : -INFINITY;
            }
}

template <int BF16, int STAGES>
__global__ void __launch_bounds__(kThreads) tile_kernel(Params p)
{
    pdl_enter();
    extern __shared__ __align__(16) unsigned char smem[];
    Stage *stage = reinterpret_cast<Stage *>(smem);
    float *zs = reinterpret_cast<float *>(smem);
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const int ww = (warp % 4) * 32, wr = (warp / 4) * 32; /* the warp's words and rows */
    const int32_t row0 = blockIdx.y * kTileRows, part = blockIdx.x;
    const int32_t chunk_begin = part * p.split.chunks_per_part;
    const int32_t chunk_end = min(chunk_begin + p.split.chunks_per_part, p.split.n_chunks);
    OnlineMD md[kRowsPerWarp]; /* the lane's own, over its words of every chunk */
    WarpTopK<1> top[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i++) {
        md[i] = OnlineMD{-INFINITY, 0.0f};
        top[i].init();
    }
    const int n_stages = (p.k + kStep - 1) / kStep;
    for (int32_t chunk = chunk_begin; chunk < chunk_end; chunk++) {
        const int32_t word0 = chunk * kChunk;
        float d[2][4][4];
#pragma unroll
        for (int mw = 0; mw < 2; mw++)
#pragma unroll
            for (int nr = 0; nr < 4; nr++)
#pragma unroll
                for (int h = 0; h < 4; h++)
                    d[mw][nr][h] = 0.0f;
        /* The ring: stage st + STAGES - 1 loads while stage st multiplies; a
         * group is committed every turn (empty past k) so that waiting for
         * all but STAGES - 2 groups means stage st has landed. */
#pragma unroll
        for (int st = 0; st < STAGES - 1; st++) {
            if (st < n_stages)
                load_stage(stage[st], p, word0, row0, st * kStep);
            cp_async_commit();
        }
        for (int st = 0; st < n_stages; st++) {
            cp_async_wait<STAGES - 2>();
            __syncthreads(); /* stage st is in; every warp is done with st - 1's slot */
            const int next = st + STAGES - 1;
            if (next < n_stages)
                load_stage(stage[next % STAGES], p, word0, row0, next * kStep);
            cp_async_commit();
            mma_stage<BF16>(d, stage[st % STAGES], ww, wr, st * kStep, p.k);
        }
        cp_async_wait<0>();
        __syncthreads(); /* z goes over the stages */
        store_z(zs, d, p, ww, wr, word0);
        __syncthreads();
        /* The lane's words of the chunk: 4 lane .. 4 lane + 3. */
        const int32_t id0 = word0 + 4 * lane;
        const int n_valid = (int)max(0, min(4, p.vocab - id0));
        const int rl0 = warp * kRowsPerWarp;
        const int rows = (int)min((int32_t)kRowsPerWarp, p.n_rows - (row0 + rl0));
        if (p.keep && p.keep_word >= word0 && p.keep_word < word0 + kChunk && lane == 0)
            for (int i = 0; i < rows; i++)
                p.keep[(int64_t)(row0 + rl0 + i) * p.ld_keep + p.keep_word] =
                    zs[(rl0 + i) * kLdZ + (p.keep_word - word0)];
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; i++)
            if (i < rows) /* warp-uniform */
                scan4<1, false>(*reinterpret_cast<const float4 *>(&zs[(rl0 + i) * kLdZ + 4 * lane]),
                                id0, n_valid, md[i], top[i], p.top_k, lane, p.excluded,
                                p.n_excluded, NULL);
        __syncthreads(); /* zs is the next chunk's stages */
    }
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i++) {
        const int32_t r = row0 + warp * kRowsPerWarp + i;
        if (r >= p.n_rows)
            continue;
        const size_t cell = (size_t)part * p.n_rows + r;
        const OnlineMD row_md = warp_md(md[i]);
        if (lane == 0)
            p.out.md[cell] = row_md;
        if (lane < p.top_k)
            p.out.keys[cell * p.top_k + lane] = top[i].key[0];
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
            write_slot(best, lse, p.top_values + (int64_t)r * k + t, p.top_ids + (int64_t)r * k + t);
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
           (int64_t)a->n_rows <= 65535LL * kTileRows &&
           (a->kind == NMT_HALF_BF16 || a->kind == NMT_HALF_FP16);
}

namespace {

typedef void (*tile_fn)(Params);

/* The tile kernel of a format and a ring, and its shared memory; NULL for a
 * ring not built. A ring past 48 KB is opted in once per device, on the
 * first call there (an eager one: the graph cache captures a step only
 * once it has run eagerly). */
template <int BF16> tile_fn tile_for(int stages, size_t *smem)
{
    switch (stages) {
    case 3: *smem = smem_bytes(3); return tile_kernel<BF16, 3>;
    case 4: *smem = smem_bytes(4); return tile_kernel<BF16, 4>;
    case 5: *smem = smem_bytes(5); return tile_kernel<BF16, 5>;
    default: return NULL;
    }
}

/* slot: the kernel's index among the tile kernels (format x ring). */
cudaError_t opt_in(tile_fn fn, size_t smem, int slot)
{
    if (smem <= 48 * 1024)
        return cudaSuccess;
    static std::atomic<unsigned long long> done[2 * 3]; /* a bit a device */
    int device = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess)
        return e;
    const unsigned long long bit = device < 64 ? 1ull << device : 0ull; /* 0: every time */
    if (bit && (done[slot].load() & bit))
        return cudaSuccess;
    e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e == cudaSuccess && bit)
        done[slot].fetch_or(bit);
    return e;
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
    Params p; /* C++17: no designated initializers */
    p.n_rows = a->n_rows, p.vocab = a->vocab, p.k = a->k, p.ldx = a->ldx, p.ldw = a->ldw;
    p.top_k = a->top_k, p.n_excluded = a->n_excluded;
    p.ld_keep = a->ld_keep, p.keep_word = a->keep_word, p.keep = a->keep;
    p.x = a->x, p.w = a->w, p.bias = a->bias, p.excluded = a->excluded;
    p.split = split;
    p.out = partials_at(a->workspace, split.parts, a->n_rows, a->top_k);
    p.top_values = a->top_values, p.lse = a->lse, p.top_ids = a->top_ids;
    cudaStream_t s = (cudaStream_t)stream;
    const dim3 tiles((unsigned)split.parts, (unsigned)((a->n_rows + kTileRows - 1) / kTileRows));
    const int stages = policy && policy->stages ? policy->stages : kDefaultStages;
    size_t smem = 0;
    const tile_fn tile = a->kind == NMT_HALF_BF16 ? tile_for<1>(stages, &smem)
                                                   : tile_for<0>(stages, &smem);
    if (!tile)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "fused output layer: %d stages (3, 4 or 5)", stages);
    NMT_CUDA_RETURN(opt_in(tile, smem, (a->kind == NMT_HALF_BF16) * 3 + stages - 3));
    nmt_launch_pdl(tile, tiles, dim3(kThreads), smem, s, p);
    NMT_LAUNCH_RETURN("output_topk tile_kernel");
    nmt_launch_pdl(merge_kernel, dim3((unsigned)((a->n_rows + kWarps - 1) / kWarps)),
                   dim3(kThreads), 0, s, p);
    NMT_LAUNCH_RETURN("output_topk merge_kernel");
    return NMT_STATUS_OK;
}
