/* lsh_logits.cu: step 4 of LSH vocabulary shrinking (kernels/lsh.h; Shi, Xu &
 * Knight, section 4.2): the logits of each row's candidate words only,
 *     logits[r, j] = x_r . out_w[cand_g[j]] + out_b[cand_g[j]],  first <= j < count[g],
 * g = r / rows_per_group, with x [n_rows, dim] (ldx), out_w [vocab, dim]. The
 * counts stay on the device: the candidate tiles of [first, max_count) are
 * dealt to a few thousand blocks in turn (tile t to block t mod blocks),
 * and a block stops at its group's count. Plain fp32 FMA, no TF32. The engine
 * passes first = n_always: those columns, the same words for every group, are
 * one dense cuBLAS GEMM (model/cuda/output_layer.c).
 *
 * Variants (the launcher's AUTO: SDDMM when a group is one row, WARP for
 * groups of up to kWarpAutoRows rows, else GEMM):
 *  GEMM:  a tiled SGEMM of the group's rows against its gathered candidate
 *         rows. Block (group, row tile, candidate tile) computes 64 candidates
 *         x TM rows (TM = 16 for groups of <= 32 rows, with 64 threads; else
 *         64, with 256), each thread owning candidates tx + 16 i (i < 4) of 4
 *         rows ty + (threads / 16) m (m < 4): 8 float4 shared loads feed 64
 *         FMAs. (One row a thread, 16-row tiles with 256 threads, was bound
 *         by shared-memory bandwidth: 51 us for 54 groups of ~300 tail words
 *         at V = 30k on the H100.) A warp's stores are 16 consecutive floats a
 *         row. K tiles in shared memory (64 wide for 16-row tiles, 32 for
 *         64-row ones), both operands stored row-major with a row stride of
 *         K + 4 floats (an odd number of float4: the float4 reads of 8
 *         different rows by a quarter warp fall in distinct banks), the next
 *         tile prefetched into registers during the FMAs. float4 global loads
 *         when dim % 4 == 0 and the operands are 16-byte aligned, scalar
 *         otherwise.
 *  SDDMM: per-row lists (Gale et al., "Sparse GPU Kernels for Deep Learning",
 *         the sampled dense-dense product): block (row, tiles of 64
 *         candidates), a warp per 8 consecutive candidates; x_r is staged in
 *         shared memory (2048 floats at a time; once a block when dim <= 2048)
 *         and the lanes stride over dim with coalesced loads of the 8
 *         candidates' rows (8 loads in flight a lane), then a shuffle
 *         reduction per candidate.
 *  WARP:  SDDMM's shape for small groups (a sentence's beam): block (group,
 *         RB rows of it, tiles of 8 C candidates), a warp per C = 32 / RB
 *         candidates of those RB rows (RB 4 or 8). The rows are staged in
 *         shared memory (1024 floats of each at a time) and every candidate
 *         row loaded by the warp feeds all RB of them, so a group reads its
 *         candidates once where SDDMM reads them once a row; the warp's
 *         32 = C x RB sums are reduced together, lane i ending with sum i
 *         (31 shuffles). Why: with 5 rows a group, the GEMM's 16-row tile
 *         is two thirds padding and its 8 K steps in series leave a
 *         mostly idle grid waiting on loads (29 us at 320 rows, 64 groups
 *         of ~150 tail words at V = 30k, H100). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <type_traits>

#include "cuda_check.h"
#include "lsh.h"

#define FULL_MASK 0xffffffffu

static constexpr int kWarpSize = 32;
static constexpr int kGemmCands = 64;           /* candidates a block */
static constexpr int kGemmRowsPerThread = 4;
static constexpr int kGemmSmallRows = 16;       /* row tile for groups of <= 32 rows */
static constexpr int kGemmSmallK = 64;          /* ... its K tile (float4 loads; else 32) */
static constexpr int kGemmLargeRows = 64;
static constexpr int kGemmLargeK = 32;
static constexpr int kSddmmWarps = 8;
static constexpr int kSddmmCandsPerWarp = 8;
static constexpr int kSddmmCands = kSddmmWarps * kSddmmCandsPerWarp;
static constexpr int kSddmmThreads = kSddmmWarps * kWarpSize;
static constexpr int kSddmmTile = 2048; /* floats of x_r staged at a time: 8 KiB */
static constexpr int kWarpDotWarps = 8;
static constexpr int kWarpDotThreads = kWarpDotWarps * kWarpSize;
static constexpr int kWarpDotTile = 1024; /* floats of each staged row at a time */
static constexpr int kWarpAutoRows = 8;   /* AUTO: WARP for groups of 2 .. this many rows */
static constexpr int kMaxGridYZ = 65535;
static constexpr int64_t kTargetBlocks = 4096;    /* SDDMM: ~30 a SM on an H100 */
static constexpr int64_t kGemmTargetBlocks = 1024; /* GEMM and WARP: about one wave */
static_assert(kGemmCands == 4 * 16, "tx + 16 i, i < 4: 64 candidates");

/* Threads of a TM-row tile: 16 along the candidates, TM / 4 along the rows. */
template <int TM> struct GemmShape {
    static constexpr int threads = 16 * (TM / kGemmRowsPerThread);
    static_assert(TM % kGemmRowsPerThread == 0 && threads % kWarpSize == 0, "whole warps");
};
/* Shared row stride of a K tile: K + 4 floats, an odd number of float4. */
template <int KT> struct GemmTile {
    static constexpr int stride = KT + 4;
    static_assert(KT % 4 == 0 && (stride / 4) % 2 == 1,
                  "float4 rows, an odd number a row: conflict-free reads");
};
static_assert(kSddmmTile % 4 == 0, "staged tiles keep float4 alignment");
static_assert(kSddmmCandsPerWarp <= kWarpSize, "lane c writes candidate c");
static_assert(kWarpDotTile % 4 == 0, "staged rows keep float4 alignment");

static __device__ __forceinline__ void set_zero(float &v) { v = 0.0f; }
static __device__ __forceinline__ void set_zero(float4 &v) { v = make_float4(0.f, 0.f, 0.f, 0.f); }

static __device__ __forceinline__ float dot_acc(float a, float b, float acc)
{
    return fmaf(a, b, acc);
}

static __device__ __forceinline__ float dot_acc(float4 a, float4 b, float acc)
{
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    return fmaf(a.w, b.w, acc);
}

/* ---- GEMM over a group's gathered candidate rows --------------------------- */

template <int TM, int KT, int VEC>
static __global__ void __launch_bounds__(GemmShape<TM>::threads)
    gemm_logits_kernel(int32_t n_rows, int32_t rows_per_group, int32_t dim,
                       const float *__restrict__ x, int32_t ldx, const float *__restrict__ out_w,
                       const float *__restrict__ out_b, const int32_t *__restrict__ cand,
                       int64_t cand_ld, const int32_t *__restrict__ count, int32_t first_cand,
                       int32_t max_count, float *__restrict__ logits, int64_t ld)
{
    typedef typename std::conditional<VEC == 4, float4, float>::type vec_t;
    constexpr int kThreads = GemmShape<TM>::threads;
    constexpr int MR = kGemmRowsPerThread; /* rows a thread: ty + RS m */
    constexpr int RS = TM / MR;
    constexpr int KV = KT / VEC;          /* vectors a tile row */
    constexpr int kStride = GemmTile<KT>::stride;
    constexpr int A_N = TM * KV, B_N = kGemmCands * KV;
    constexpr int A_LOADS = (A_N + kThreads - 1) / kThreads;
    constexpr int B_LOADS = (B_N + kThreads - 1) / kThreads;
    __shared__ __align__(16) float s_x[TM][kStride];
    __shared__ __align__(16) float s_w[kGemmCands][kStride];
    __shared__ int32_t s_word[kGemmCands];

    const int32_t g = blockIdx.x;
    const int32_t n_cand = min(__ldg(&count[g]), max_count);
    const int32_t first = g * rows_per_group; /* < n_rows: g < ceil(n_rows / rows_per_group) */
    const int32_t r0 = blockIdx.y * TM;       /* within the group */
    const int32_t rows_here = min(rows_per_group, n_rows - first) - r0;
    if (rows_here <= 0) /* block-uniform, before any barrier */
        return;
    const int32_t rows = min(TM, rows_here);
    const float *xb = x + (int64_t)(first + r0) * ldx;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;

    /* Candidate tiles j0 = first_cand + blockIdx.z * 64, + gridDim.z * 64, ...
     * below the count (block-uniform): blocks past it return at once. */
    for (int32_t j0 = first_cand + blockIdx.z * kGemmCands; j0 < n_cand;
         j0 += gridDim.z * kGemmCands) {
        __syncthreads(); /* the previous tile's s_word reads are done */
        /* cand entries past the count are never read: they may be anything. */
        if (tid < kGemmCands) {
            const int32_t j = j0 + tid;
            s_word[tid] = j < n_cand ? __ldg(&cand[(int64_t)g * cand_ld + j]) : -1;
        }
        __syncthreads();

        /* Element e of a tile: row (or candidate) e / KV, k offset (e % KV) *
         * VEC; rows past the group, candidates past the count and k past dim
         * load 0. */
        vec_t ra[A_LOADS], rb[B_LOADS];
        auto load_tiles = [&](int32_t k0) {
#pragma unroll
            for (int a = 0; a < A_LOADS; a++) {
                const int e = tid + a * kThreads, row = e / KV;
                const int32_t k = k0 + (e % KV) * VEC;
                set_zero(ra[a]);
                if ((A_N % kThreads == 0 || e < A_N) && row < rows && k < dim)
                    ra[a] = __ldg(reinterpret_cast<const vec_t *>(xb + (int64_t)row * ldx + k));
            }
#pragma unroll
            for (int b = 0; b < B_LOADS; b++) {
                const int e = tid + b * kThreads;
                const int32_t k = k0 + (e % KV) * VEC;
                const int32_t word =
                    (B_N % kThreads == 0 || e < B_N) ? s_word[e / KV] : -1;
                set_zero(rb[b]);
                if (word >= 0 && k < dim)
                    rb[b] = __ldg(
                        reinterpret_cast<const vec_t *>(out_w + (int64_t)word * dim + k));
            }
        };
        auto store_tiles = [&]() {
#pragma unroll
            for (int a = 0; a < A_LOADS; a++) {
                const int e = tid + a * kThreads;
                if (A_N % kThreads == 0 || e < A_N)
                    *reinterpret_cast<vec_t *>(&s_x[e / KV][(e % KV) * VEC]) = ra[a];
            }
#pragma unroll
            for (int b = 0; b < B_LOADS; b++) {
                const int e = tid + b * kThreads;
                if (B_N % kThreads == 0 || e < B_N)
                    *reinterpret_cast<vec_t *>(&s_w[e / KV][(e % KV) * VEC]) = rb[b];
            }
        };

        float acc[MR][4];
#pragma unroll
        for (int m = 0; m < MR; m++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[m][i] = 0.0f;

        load_tiles(0);
        for (int32_t k0 = 0; k0 < dim; k0 += KT) {
            store_tiles();
            __syncthreads();
            if (k0 + KT < dim) /* in flight during the FMAs below */
                load_tiles(k0 + KT);
#pragma unroll 8
            for (int kk = 0; kk < KT; kk += 4) {
                float4 a[MR], b[4];
#pragma unroll
                for (int m = 0; m < MR; m++)
                    a[m] = *reinterpret_cast<const float4 *>(&s_x[ty + RS * m][kk]);
#pragma unroll
                for (int i = 0; i < 4; i++)
                    b[i] = *reinterpret_cast<const float4 *>(&s_w[tx + 16 * i][kk]);
#pragma unroll
                for (int m = 0; m < MR; m++)
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        acc[m][i] = dot_acc(a[m], b[i], acc[m][i]);
            }
            __syncthreads(); /* the next store_tiles overwrites the tiles */
        }

        float bias[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int32_t word = s_word[tx + 16 * i];
            bias[i] = out_b && word >= 0 ? __ldg(&out_b[word]) : 0.0f;
        }
#pragma unroll
        for (int m = 0; m < MR; m++) {
            const int row = ty + RS * m;
            if (row >= rows)
                continue;
            float *out = logits + (int64_t)(first + r0 + row) * ld + j0;
#pragma unroll
            for (int i = 0; i < 4; i++)
                if (j0 + tx + 16 * i < n_cand)
                    out[tx + 16 * i] = acc[m][i] + bias[i];
        }
    }
}

/* Rows of out_w for a warp's C candidates jw .. jw + C - 1 of `list`. Those
 * past the count alias the block's first candidate j0 (< n_cand, so always
 * valid): the dot-product loops need no predicate, and those candidates are
 * not written. */
template <int C, typename vec_t>
static __device__ __forceinline__ void warp_candidate_rows(const int32_t *__restrict__ list,
                                                           int32_t j0, int32_t jw,
                                                           int32_t n_cand,
                                                           const float *__restrict__ out_w,
                                                           int32_t dim, const vec_t *(&rows)[C])
{
    const int32_t fallback = __ldg(&list[j0]);
#pragma unroll
    for (int c = 0; c < C; c++) {
        const int32_t word = jw + c < n_cand ? __ldg(&list[jw + c]) : fallback;
        rows[c] = reinterpret_cast<const vec_t *>(out_w + (int64_t)word * dim);
    }
}

/* ---- SDDMM: a warp per 8 candidates of one row ----------------------------- */

template <int VEC>
static __global__ void __launch_bounds__(kSddmmThreads)
    sddmm_logits_kernel(int32_t rows_per_group, int32_t dim, const float *__restrict__ x,
                        int32_t ldx, const float *__restrict__ out_w,
                        const float *__restrict__ out_b, const int32_t *__restrict__ cand,
                        int64_t cand_ld, const int32_t *__restrict__ count, int32_t first_cand,
                        int32_t max_count, float *__restrict__ logits, int64_t ld)
{
    typedef typename std::conditional<VEC == 4, float4, float>::type vec_t;
    __shared__ __align__(16) float s_x[kSddmmTile];

    const int32_t r = blockIdx.x, g = r / rows_per_group;
    const int32_t n_cand = min(__ldg(&count[g]), max_count);
    const int lane = threadIdx.x & (kWarpSize - 1), warp = threadIdx.x / kWarpSize;
    const int32_t *list = cand + (int64_t)g * cand_ld;
    const float *xr = x + (int64_t)r * ldx;
    const bool one_tile = dim <= kSddmmTile; /* x_r staged once for all candidates */

    /* Candidate blocks j0 = first_cand + blockIdx.y * 64, + gridDim.y * 64,
     * ... below the count (block-uniform): blocks past it return at once. */
    const int32_t j_start = first_cand + blockIdx.y * kSddmmCands;
    for (int32_t j0 = j_start; j0 < n_cand; j0 += gridDim.y * kSddmmCands) {
        const int32_t jw = j0 + warp * kSddmmCandsPerWarp; /* the warp's first candidate */
        const vec_t *w_rows[kSddmmCandsPerWarp];
        warp_candidate_rows(list, j0, jw, n_cand, out_w, dim, w_rows);
        float acc[kSddmmCandsPerWarp];
#pragma unroll
        for (int c = 0; c < kSddmmCandsPerWarp; c++)
            acc[c] = 0.0f;
        /* Lane c < 8 writes candidate jw + c. */
        const bool writer = lane < kSddmmCandsPerWarp && jw + lane < n_cand;
        const float bias = writer && out_b ? __ldg(&out_b[__ldg(&list[jw + lane])]) : 0.0f;

        for (int32_t t0 = 0; t0 < dim; t0 += kSddmmTile) {
            const int32_t len = min(kSddmmTile, dim - t0);
            if (!one_tile || j0 == j_start) {
                __syncthreads(); /* the previous tile is consumed */
                for (int32_t i = threadIdx.x; i < len; i += kSddmmThreads)
                    s_x[i] = __ldg(&xr[t0 + i]);
                __syncthreads();
            }
            const vec_t *xs = reinterpret_cast<const vec_t *>(s_x);
            const int32_t n_vec = len / VEC, v0 = t0 / VEC; /* VEC 4: dim % 4 == 0 */
            for (int32_t v = lane; v < n_vec; v += kWarpSize) {
                const vec_t xv = xs[v];
                vec_t wv[kSddmmCandsPerWarp];
#pragma unroll
                for (int c = 0; c < kSddmmCandsPerWarp; c++)
                    wv[c] = __ldg(&w_rows[c][v0 + v]);
#pragma unroll
                for (int c = 0; c < kSddmmCandsPerWarp; c++)
                    acc[c] = dot_acc(wv[c], xv, acc[c]);
            }
        }

        float mine = 0.0f; /* lane c keeps candidate c's sum */
#pragma unroll
        for (int c = 0; c < kSddmmCandsPerWarp; c++) {
            float sum = acc[c];
#pragma unroll
            for (int off = kWarpSize / 2; off > 0; off /= 2)
                sum += __shfl_xor_sync(FULL_MASK, sum, off);
            if (lane == c)
                mine = sum;
        }
        if (writer)
            logits[(int64_t)r * ld + jw + lane] = mine + bias;
    }
}

/* ---- WARP: a warp per C candidates x RB rows of a group ------------------- */

/* Lane i of the warp ends with the warp-wide sum of v[i] in v[0]. Each
 * halving keeps the half of the values that the lane's bit selects and adds
 * the partner's copy of it: 16 + 8 + 4 + 2 + 1 shuffles for 32 sums, where
 * 32 separate butterflies would take 160. (A template a halving: every
 * index stays a constant, so v stays in registers.) */
template <int HALF>
static __device__ __forceinline__ void warp_transpose_sum(float (&v)[kWarpSize], int lane)
{
    const bool upper = (lane & HALF) != 0;
#pragma unroll
    for (int j = 0; j < HALF; j++) {
        const float send = upper ? v[j] : v[j + HALF];
        const float keep = upper ? v[j + HALF] : v[j];
        v[j] = keep + __shfl_xor_sync(FULL_MASK, send, HALF);
    }
    if constexpr (HALF > 1)
        warp_transpose_sum<HALF / 2>(v, lane);
}

template <int RB, int VEC>
static __global__ void __launch_bounds__(kWarpDotThreads)
    warp_logits_kernel(int32_t n_rows, int32_t rows_per_group, int32_t dim,
                       const float *__restrict__ x, int32_t ldx, const float *__restrict__ out_w,
                       const float *__restrict__ out_b, const int32_t *__restrict__ cand,
                       int64_t cand_ld, const int32_t *__restrict__ count, int32_t first_cand,
                       int32_t max_count, float *__restrict__ logits, int64_t ld)
{
    typedef typename std::conditional<VEC == 4, float4, float>::type vec_t;
    constexpr int C = kWarpSize / RB;          /* candidates a warp */
    constexpr int kCands = kWarpDotWarps * C; /* a block */
    static_assert(C * RB == kWarpSize, "a sum a lane");
    __shared__ __align__(16) float s_x[RB][kWarpDotTile];

    const int32_t g = blockIdx.x;
    const int32_t n_cand = min(__ldg(&count[g]), max_count);
    const int32_t first = g * rows_per_group; /* < n_rows: g < ceil(n_rows / rows_per_group) */
    const int32_t r0 = blockIdx.y * RB;       /* within the group */
    const int32_t rows_here = min(rows_per_group, n_rows - first) - r0;
    if (rows_here <= 0) /* block-uniform, before any barrier */
        return;
    const int32_t rows = min(RB, rows_here);
    const float *xb = x + (int64_t)(first + r0) * ldx;
    const int32_t *list = cand + (int64_t)g * cand_ld;
    const int lane = threadIdx.x & (kWarpSize - 1), warp = threadIdx.x / kWarpSize;
    const bool one_tile = dim <= kWarpDotTile; /* rows staged once for all candidates */

    /* Candidate tiles j0 = first_cand + blockIdx.z * 8C, + gridDim.z * 8C, ...
     * below the count (block-uniform): blocks past it return at once. */
    const int32_t j_start = first_cand + blockIdx.z * kCands;
    for (int32_t j0 = j_start; j0 < n_cand; j0 += gridDim.z * kCands) {
        const int32_t jw = j0 + warp * C; /* the warp's first candidate */
        const vec_t *w_rows[C];
        warp_candidate_rows(list, j0, jw, n_cand, out_w, dim, w_rows);
        float acc[kWarpSize]; /* acc[c * RB + r]: candidate jw + c, row r */
#pragma unroll
        for (int i = 0; i < kWarpSize; i++)
            acc[i] = 0.0f;

        for (int32_t t0 = 0; t0 < dim; t0 += kWarpDotTile) {
            const int32_t len = min(kWarpDotTile, dim - t0);
            if (!one_tile || j0 == j_start) {
                __syncthreads(); /* the previous tile is consumed */
                for (int32_t i = threadIdx.x; i < RB * len; i += kWarpDotThreads) {
                    const int32_t r = i / len, k = i - r * len;
                    s_x[r][k] = r < rows ? __ldg(&xb[(int64_t)r * ldx + t0 + k]) : 0.0f;
                }
                __syncthreads();
            }
            const int32_t n_vec = len / VEC, v0 = t0 / VEC; /* VEC 4: dim % 4 == 0 */
#pragma unroll 2
            for (int32_t v = lane; v < n_vec; v += kWarpSize) {
                vec_t wv[C];
#pragma unroll
                for (int c = 0; c < C; c++)
                    wv[c] = __ldg(&w_rows[c][v0 + v]);
#pragma unroll
                for (int r = 0; r < RB; r++) {
                    const vec_t xv = reinterpret_cast<const vec_t *>(s_x[r])[v];
#pragma unroll
                    for (int c = 0; c < C; c++)
                        acc[c * RB + r] = dot_acc(wv[c], xv, acc[c * RB + r]);
                }
            }
        }

        warp_transpose_sum<kWarpSize / 2>(acc, lane);
        const float sum = acc[0]; /* of acc[lane]: lane = c * RB + r */
        const int32_t j = jw + lane / RB, r = lane % RB;
        if (r < rows && j < n_cand) {
            const float bias = out_b ? __ldg(&out_b[__ldg(&list[j])]) : 0.0f;
            logits[(int64_t)(first + r0 + r) * ld + j] = sum + bias;
        }
    }
}

/* ---- launch helpers -------------------------------------------------------- */

/* One call's arguments, as the GEMM and WARP kernels take them. */
struct LogitsCall {
    int32_t n_rows, rows_per_group, dim;
    const float *x;
    int32_t ldx;
    const float *out_w, *out_b;
    const int32_t *cand;
    int64_t cand_ld;
    const int32_t *count;
    int32_t first, max_count;
    float *logits;
    int64_t ld;
};

template <typename Kernel>
static void launch_logits(Kernel kernel, dim3 grid, int threads, const LogitsCall &a,
                          cudaStream_t stream)
{
    kernel<<<grid, threads, 0, stream>>>(a.n_rows, a.rows_per_group, a.dim, a.x, a.ldx,
                                         a.out_w, a.out_b, a.cand, a.cand_ld, a.count, a.first,
                                         a.max_count, a.logits, a.ld);
}

template <int TM, int VEC>
static void launch_gemm(dim3 grid, const LogitsCall &a, cudaStream_t stream)
{
    constexpr int KT = TM == kGemmSmallRows && VEC == 4 ? kGemmSmallK : kGemmLargeK;
    launch_logits(gemm_logits_kernel<TM, KT, VEC>, grid, GemmShape<TM>::threads, a, stream);
}

static bool aligned16(const void *p)
{
    return (uintptr_t)p % 16 == 0;
}

/* Blocks along the candidate tiles: all max_count / 64 of them would mostly
 * return at once (counts are often far below the bound), so the grid holds
 * about `target` blocks and each loops over every n-th tile. */
static int64_t cand_tile_blocks(int64_t tiles, int64_t other_blocks, int64_t target)
{
    int64_t want = (target + other_blocks - 1) / other_blocks;
    want = want < 1 ? 1 : want;
    want = want < tiles ? want : tiles;
    return want < kMaxGridYZ ? want : kMaxGridYZ;
}

/* ---- exported ------------------------------------------------------------- */

extern "C" nmt_status nmt_cuda_lsh_logits(int32_t n_rows, int32_t rows_per_group, int32_t dim,
                                          const float *x, int32_t ldx, const float *out_w,
                                          const float *out_b, const int32_t *cand,
                                          int64_t cand_ld, const int32_t *count,
                                          int32_t first, int32_t max_count, float *logits,
                                          int64_t ld, nmt_lsh_logits_kernel variant,
                                          void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && rows_per_group >= 1 && dim >= 1 && ldx >= dim);
    NMT_ARG_CHECK(max_count >= 0 && cand_ld >= max_count && ld >= max_count && first >= 0);
    NMT_ARG_CHECK(variant == NMT_LSH_LOGITS_AUTO || variant == NMT_LSH_LOGITS_GEMM ||
                  variant == NMT_LSH_LOGITS_SDDMM || variant == NMT_LSH_LOGITS_WARP);
    NMT_ARG_CHECK(n_rows == 0 || max_count == 0 || (x && out_w && cand && count && logits));
    if (n_rows == 0 || max_count <= first)
        return NMT_STATUS_OK;
    cudaStream_t s = (cudaStream_t)stream;
    const int32_t rows_in_group = rows_per_group < n_rows ? rows_per_group : n_rows;
    const int32_t groups = (int32_t)(((int64_t)n_rows + rows_per_group - 1) / rows_per_group);
    if (variant == NMT_LSH_LOGITS_AUTO)
        variant = rows_in_group == 1               ? NMT_LSH_LOGITS_SDDMM
                  : rows_in_group <= kWarpAutoRows ? NMT_LSH_LOGITS_WARP
                                                   : NMT_LSH_LOGITS_GEMM;

    if (variant == NMT_LSH_LOGITS_SDDMM) {
        const int64_t cand_blocks =
            ((int64_t)max_count - first + kSddmmCands - 1) / kSddmmCands;
        const dim3 grid((unsigned)n_rows,
                        (unsigned)cand_tile_blocks(cand_blocks, n_rows, kTargetBlocks));
        if (dim % 4 == 0 && aligned16(out_w))
            sddmm_logits_kernel<4><<<grid, kSddmmThreads, 0, s>>>(
                rows_per_group, dim, x, ldx, out_w, out_b, cand, cand_ld, count, first,
                max_count, logits, ld);
        else
            sddmm_logits_kernel<1><<<grid, kSddmmThreads, 0, s>>>(
                rows_per_group, dim, x, ldx, out_w, out_b, cand, cand_ld, count, first,
                max_count, logits, ld);
        NMT_LAUNCH_RETURN("sddmm_logits_kernel");
        return NMT_STATUS_OK;
    }

    const LogitsCall call = {n_rows, rows_per_group, dim, x, ldx, out_w, out_b, cand,
                             cand_ld, count, first, max_count, logits, ld};
    if (variant == NMT_LSH_LOGITS_WARP) {
        const int rb = rows_in_group <= 4 ? 4 : 8;
        const int64_t passes = (rows_in_group + rb - 1) / rb;
        if (passes > kMaxGridYZ)
            return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "nmt_cuda_lsh_logits: "
                                 "groups of %d rows are too many for the WARP grid",
                                 rows_in_group);
        const int64_t per_block = kWarpDotWarps * (kWarpSize / rb);
        const int64_t cand_tiles = ((int64_t)max_count - first + per_block - 1) / per_block;
        const dim3 grid((unsigned)groups, (unsigned)passes,
                        (unsigned)cand_tile_blocks(cand_tiles, passes * groups,
                                                   kGemmTargetBlocks));
        const bool vec4 = dim % 4 == 0 && aligned16(out_w); /* x is staged as floats */
        if (rb == 4 && vec4)
            launch_logits(warp_logits_kernel<4, 4>, grid, kWarpDotThreads, call, s);
        else if (rb == 4)
            launch_logits(warp_logits_kernel<4, 1>, grid, kWarpDotThreads, call, s);
        else if (vec4)
            launch_logits(warp_logits_kernel<8, 4>, grid, kWarpDotThreads, call, s);
        else
            launch_logits(warp_logits_kernel<8, 1>, grid, kWarpDotThreads, call, s);
        NMT_LAUNCH_RETURN("warp_logits_kernel");
        return NMT_STATUS_OK;
    }

    /* Groups of <= 32 rows: 16-row tiles (less padding); larger: 64 (each
     * gathered candidate row is read by fewer blocks). */
    const int tm = rows_in_group > 32 ? kGemmLargeRows : kGemmSmallRows;
    const int64_t row_tiles = (rows_in_group + tm - 1) / tm;
    if (row_tiles > kMaxGridYZ)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "nmt_cuda_lsh_logits: %d groups "
                             "of %d rows are too many for the GEMM grid", groups, rows_in_group);
    const int64_t cand_tiles = ((int64_t)max_count - first + kGemmCands - 1) / kGemmCands;
    /* Groups fastest: every group's first tiles are dealt out in the first
     * wave and the blocks past the counts come last. With the tiles fastest,
     * the blocks that work were spread over every wave of the mostly idle grid
     * (51 us for 64 groups of ~300 tail words at V = 35k, H100). */
    const dim3 grid((unsigned)groups, (unsigned)row_tiles,
                    (unsigned)cand_tile_blocks(cand_tiles, row_tiles * groups,
                                               kGemmTargetBlocks));
    const bool vec4 = dim % 4 == 0 && ldx % 4 == 0 && aligned16(x) && aligned16(out_w);
    if (tm == kGemmLargeRows && vec4)
        launch_gemm<kGemmLargeRows, 4>(grid, call, s);
    else if (tm == kGemmLargeRows)
        launch_gemm<kGemmLargeRows, 1>(grid, call, s);
    else if (vec4)
        launch_gemm<kGemmSmallRows, 4>(grid, call, s);
    else
        launch_gemm<kGemmSmallRows, 1>(grid, call, s);
    NMT_LAUNCH_RETURN("gemm_logits_kernel");
    return NMT_STATUS_OK;
}
