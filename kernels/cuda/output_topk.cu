/* output_topk.cu: the fused output layer of kernels/output_topk.h.
 *
 * tile_kernel: a block owns kTileRows rows and one part of the vocabulary
 * (at most kMaxParts parts a row, sized from V alone, so that a row's
 * result never depends on the row count). For each chunk of kChunk words of
 * its part it runs the product on tensor cores (W the A operand, x^T the B
 * one; k in stages of kStep through shared memory by cp.async, a ring of
 * STAGES (the policy's) with STAGES - 1 in flight), puts z in shared memory
 * over the dead stages, and folds the chunk
 * into each row's running (max, sum) and sorted top-K, a warp a row: the
 * list lives in the lanes' registers (lane j holds entry j), and only words
 * that beat its last entry are inserted, best first. merge_kernel: a warp a
 * row merges the parts' (max, sum) by a butterfly and their sorted lists by
 * K rounds of argmax over the lists' heads (lane l: parts l and l + 32), in
 * a fixed order. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <atomic>

#include "cuda_check.h"
#include "device.cuh"
#include "mma_device.cuh"
#include "output_topk_device.cuh"
#include "output_topk.h"

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

/* The workspace: per part and row, (max, sum), then the sorted list. */
struct Partials {
    float2 *ms;     /* [parts, n_rows] */
    float *values;  /* [parts, n_rows, k] */
    int32_t *ids;   /* [parts, n_rows, k] */
};

__host__ __device__ inline size_t partials_bytes(int32_t parts, int32_t n_rows, int32_t k)
{
    const size_t cells = (size_t)parts * (size_t)n_rows;
    return cells * sizeof(float2) + 2 * cells * (size_t)k * sizeof(float);
}

__host__ __device__ inline Partials partials_at(void *workspace, int32_t parts, int32_t n_rows,
                                                int32_t k)
{
    const size_t cells = (size_t)parts * (size_t)n_rows;
    Partials p;
    p.ms = (float2 *)workspace;
    p.values = (float *)(p.ms + cells);
    p.ids = (int32_t *)(p.values + cells * (size_t)k);
    return p;
}

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
                /* the bias after the chain, as cuBLASLt's epilogue adds it */
                zs[rl * kLdZ + wl] = word < p.vocab ? d[mw][nr][h] + __ldg(&p.bias[word]) : 0.0f;
            }
}

/* The warp's kRowsPerWarp rows of a chunk (zr: the first row's z in shared
 * memory, kLdZ apart; the lane's words lane + 32 q) folded into each row's
 * (max, sum) and sorted list (lane j: entry j; count entries). The rows go
 * side by side, so that their shuffles interleave: their chains are
 * independent. cand: the lane's words, -1 where past the vocabulary or
 * excluded; live: past the vocabulary only; rows: how many rows are real. */
__device__ __forceinline__ void fold_rows(const float *zr, const int32_t (&cand)[4],
                                          const bool (&live)[4], int rows, int32_t top_k,
                                          float (&m)[kRowsPerWarp], float (&s)[kRowsPerWarp],
                                          float (&lv)[kRowsPerWarp], int32_t (&li)[kRowsPerWarp],
                                          int32_t (&count)[kRowsPerWarp])
{
    const int lane = threadIdx.x % kWarpSize;
    float cm[kRowsPerWarp], cs[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i++) {
        cm[i] = -INFINITY;
#pragma unroll
        for (int q = 0; q < 4; q++)
            if (live[q])
                cm[i] = fmaxf(cm[i], zr[i * kLdZ + lane + 32 * q]);
    }
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2)
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; i++)
            cm[i] = fmaxf(cm[i], __shfl_xor_sync(kFullMask, cm[i], off));
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i++) {
        cs[i] = 0.0f;
        if (cm[i] != -INFINITY) {
#pragma unroll
            for (int q = 0; q < 4; q++)
                if (live[q])
                    cs[i] += expf(zr[i * kLdZ + lane + 32 * q] - cm[i]);
        }
    }
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2)
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; i++)
            cs[i] += __shfl_xor_sync(kFullMask, cs[i], off);
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i++)
        fold_max_sum(m[i], s[i], cm[i], cs[i]);

    /* Bit 4 i + q: row i may still take the lane's word q. */
    uint32_t open = 0;
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i++)
#pragma unroll
        for (int q = 0; q < 4; q++)
            if (i < rows && cand[q] >= 0)
                open |= 1u << (4 * i + q);
    for (;;) {
        float bv[kRowsPerWarp];
        int32_t bi[kRowsPerWarp];
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; i++) {
            /* The list's last entry when it is full: a word must rank before it. */
            const float tv = __shfl_sync(kFullMask, lv[i], top_k - 1);
            const int32_t tl = __shfl_sync(kFullMask, li[i], top_k - 1);
            const int32_t ti = count[i] == top_k ? tl : -1;
            bv[i] = -INFINITY;
            bi[i] = -1;
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const int32_t id = open >> (4 * i + q) & 1u ? cand[q] : -1;
                const float z = zr[i * kLdZ + lane + 32 * q];
                if (ranks_before(z, id, tv, ti) && ranks_before(z, id, bv[i], bi[i])) {
                    bv[i] = z;
                    bi[i] = id;
                }
            }
        }
#pragma unroll
        for (int off = kWarpSize / 2; off > 0; off /= 2)
#pragma unroll
            for (int i = 0; i < kRowsPerWarp; i++) {
                const float ov = __shfl_xor_sync(kFullMask, bv[i], off);
                const int32_t oid = __shfl_xor_sync(kFullMask, bi[i], off);
                if (ranks_before(ov, oid, bv[i], bi[i])) {
                    bv[i] = ov;
                    bi[i] = oid;
                }
            }
        bool any = false;
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; i++) {
            if (bi[i] < 0) /* warp-uniform: every lane has the butterfly's result */
                continue;
            any = true;
#pragma unroll
            for (int q = 0; q < 4; q++)
                if (cand[q] == bi[i])
                    open &= ~(1u << (4 * i + q));
            /* Its place: the entries that rank before it; those after move down. */
            const int pos = __popc(__ballot_sync(kFullMask, lane < count[i] &&
                                                                ranks_before(lv[i], li[i], bv[i],
                                                                             bi[i])));
            const float up_v = __shfl_up_sync(kFullMask, lv[i], 1);
            const int32_t up_i = __shfl_up_sync(kFullMask, li[i], 1);
            if (lane > pos && lane < top_k) {
                lv[i] = up_v;
                li[i] = up_i;
            } else if (lane == pos) {
                lv[i] = bv[i];
                li[i] = bi[i];
            }
            count[i] = count[i] < top_k ? count[i] + 1 : top_k;
        }
        if (!any)
            return;
    }
}

template <int BF16, int STAGES>
__global__ void __launch_bounds__(kThreads) tile_kernel(Params p)
{
    pdl_enter();
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ int32_t excluded[NMT_OUTPUT_TOPK_MAX_EXCLUDED];
    Stage *stage = reinterpret_cast<Stage *>(smem);
    float *zs = reinterpret_cast<float *>(smem);
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const int ww = (warp % 4) * 32, wr = (warp / 4) * 32; /* the warp's words and rows */
    const int32_t row0 = blockIdx.y * kTileRows, part = blockIdx.x;
    const int32_t chunk_begin = part * p.split.chunks_per_part;
    const int32_t chunk_end = min(chunk_begin + p.split.chunks_per_part, p.split.n_chunks);
    if (threadIdx.x < p.n_excluded)
        excluded[threadIdx.x] = p.excluded[threadIdx.x];
    float m[kRowsPerWarp], s[kRowsPerWarp], lv[kRowsPerWarp];
    int32_t li[kRowsPerWarp], count[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i++) {
        m[i] = -INFINITY;
        s[i] = 0.0f;
        lv[i] = -INFINITY;
        li[i] = -1;
        count[i] = 0;
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
        /* The lane's words of the chunk: lane + 32 q. */
        int32_t cand[4];
        bool live[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int32_t word = word0 + lane + 32 * q;
            live[q] = word < p.vocab;
            bool out = !live[q];
            for (int e = 0; e < p.n_excluded; e++)
                out = out || excluded[e] == word;
            cand[q] = out ? -1 : word;
        }
        const int rl0 = warp * kRowsPerWarp;
        const int rows = (int)min((int32_t)kRowsPerWarp, p.n_rows - (row0 + rl0));
        if (rows > 0) { /* warp-uniform */
            if (p.keep && p.keep_word >= word0 && p.keep_word < word0 + kChunk &&
                lane == (p.keep_word - word0) % kWarpSize)
                for (int i = 0; i < rows; i++)
                    p.keep[(int64_t)(row0 + rl0 + i) * p.ld_keep + p.keep_word] =
                        zs[(rl0 + i) * kLdZ + (p.keep_word - word0)];
            fold_rows(zs + rl0 * kLdZ, cand, live, rows, p.top_k, m, s, lv, li, count);
        }
        __syncthreads(); /* zs is the next chunk's stages */
    }
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i++) {
        const int32_t r = row0 + warp * kRowsPerWarp + i;
        if (r >= p.n_rows)
            continue;
        const size_t cell = (size_t)part * p.n_rows + r;
        if (lane == 0)
            p.out.ms[cell] = make_float2(m[i], s[i]);
        if (lane < p.top_k) {
            p.out.values[cell * p.top_k + lane] = lv[i];
            p.out.ids[cell * p.top_k + lane] = li[i];
        }
    }
}

/* A warp a row: the parts' (max, sum) by a butterfly, lse, then top_k rounds
 * of the best head among the parts' sorted lists (lane l: parts l and
 * l + 32, folded in that order). */
__global__ void __launch_bounds__(kThreads) merge_kernel(Params p)
{
    pdl_enter();
    const int lane = threadIdx.x % kWarpSize;
    const int32_t r = blockIdx.x * kWarps + threadIdx.x / kWarpSize;
    if (r >= p.n_rows)
        return;
    const int32_t k = p.top_k;
    size_t cell[kPartsPerLane];
    bool own[kPartsPerLane];
    float m = -INFINITY, s = 0.0f;
#pragma unroll
    for (int q = 0; q < kPartsPerLane; q++) {
        const int32_t part = lane + kWarpSize * q;
        own[q] = part < p.split.parts;
        cell[q] = (size_t)(own[q] ? part : 0) * p.n_rows + r;
        if (own[q]) {
            const float2 ms = p.out.ms[cell[q]];
            fold_max_sum(m, s, ms.x, ms.y);
        }
    }
#pragma unroll
    for (int off = kWarpSize / 2; off > 0; off /= 2) {
        const float om = __shfl_xor_sync(kFullMask, m, off);
        const float os = __shfl_xor_sync(kFullMask, s, off);
        fold_max_sum(m, s, om, os);
    }
    const float lse = m == -INFINITY ? m : m + logf(s);
    if (lane == 0)
        p.lse[r] = lse;
    int32_t head[kPartsPerLane], hi[kPartsPerLane];
    float hv[kPartsPerLane];
#pragma unroll
    for (int q = 0; q < kPartsPerLane; q++) {
        head[q] = 0;
        hv[q] = own[q] ? p.out.values[cell[q] * k] : -INFINITY;
        hi[q] = own[q] ? p.out.ids[cell[q] * k] : -1;
    }
    for (int32_t t = 0; t < k; t++) {
        float bv = hv[0];
        int32_t bi = hi[0];
#pragma unroll
        for (int q = 1; q < kPartsPerLane; q++)
            if (ranks_before(hv[q], hi[q], bv, bi)) {
                bv = hv[q];
                bi = hi[q];
            }
        warp_best(bv, bi);
        if (lane == 0) {
            p.top_values[(int64_t)r * k + t] = bi < 0 ? -INFINITY : bv - lse;
            p.top_ids[(int64_t)r * k + t] = bi;
        }
#pragma unroll
        for (int q = 0; q < kPartsPerLane; q++)
            if (bi >= 0 && bi == hi[q]) {
                head[q]++;
                hv[q] = head[q] < k ? p.out.values[cell[q] * k + head[q]] : -INFINITY;
                hi[q] = head[q] < k ? p.out.ids[cell[q] * k + head[q]] : -1;
            }
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
