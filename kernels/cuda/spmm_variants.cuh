/* spmm_variants.cuh: what the SpMM's front (spmm.cu: preparation, plan,
 * launchers) and its two kernels (spmm_row.cu, spmm_tile.cu) share: the
 * prepared matrix, one call's arguments, the vector loads of the CSR arrays
 * and the variants' launchers. Internal (C++), private to kernels/cuda. */
#ifndef NMT_SPMM_VARIANTS_CUH
#define NMT_SPMM_VARIANTS_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "device.cuh"
#include "nmt_status.h"
#include "spmm.h"

/* The index and value arrays are padded with zeros to a multiple of this
 * many entries: a vector load starts at a multiple of its width (<= 8
 * entries) below the row's end, so it never reads past the padding. */
static constexpr int kSpmmPadEntries = 8;

struct nmt_cuda_spmm_matrix {
    int32_t rows, cols, nnz;
    nmt_spmm_values value_type;
    int index_bits;
    double mean_row_nnz;
    void *block; /* the one device allocation, carved at 256-byte offsets */
    size_t block_bytes, read_bytes;
    int sm_count; /* of the device prepared on: AUTO's variant choice */
    const int32_t *row_offsets; /* [rows + 1] */
    const int32_t *row_order;   /* [rows]: nmt_spmm_row_order */
    const void *col_indices;    /* int32_t or uint16_t [nnz padded] */
    const void *values;         /* float or __half [nnz padded] */
};

/* One call as every kernel takes it (x and y as the caller passed them). */
struct SpmmCall {
    int32_t m, n, k;
    const float *x;
    int32_t ldx;
    const float *bias;
    int accumulate;
    float *y;
    int32_t ldy;
    const int32_t *row_offsets, *row_order;
    const void *col_indices, *values;
};

/* Entries a vector load of the CSR arrays takes: 16 bytes of values. */
template <typename Value> struct SpmmVec {
    static constexpr int kEntries = 16 / (int)sizeof(Value);
};
static_assert(SpmmVec<float>::kEntries <= kSpmmPadEntries &&
                  SpmmVec<__half>::kEntries <= kSpmmPadEntries,
              "the padding covers a vector load");

static __device__ __forceinline__ float spmm_to_float(float v) { return v; }
static __device__ __forceinline__ float spmm_to_float(__half v) { return __half2float(v); }

/* An entry from its bits (the low 16 for the 2-byte types). */
template <typename T> static __device__ __forceinline__ T spmm_from_bits(uint32_t b);
template <> __device__ __forceinline__ float spmm_from_bits<float>(uint32_t b)
{
    return __uint_as_float(b);
}
template <> __device__ __forceinline__ int32_t spmm_from_bits<int32_t>(uint32_t b)
{
    return (int32_t)b;
}
template <> __device__ __forceinline__ uint16_t spmm_from_bits<uint16_t>(uint32_t b)
{
    return (uint16_t)b;
}
template <> __device__ __forceinline__ __half spmm_from_bits<__half>(uint32_t b)
{
    return __ushort_as_half((unsigned short)b);
}

/* out[0 .. N) = p[0 .. N) in 16- or 8-byte loads through the read-only
 * path; p must be aligned to N x sizeof(T) (N a power of two, so an entry
 * index that is a multiple of N in an array that starts 256-byte aligned).
 * The words are unpacked with shifts (little-endian: entry 2i is the low
 * half of word i), so everything stays in registers. */
template <typename T, int N>
static __device__ __forceinline__ void spmm_load_vec(const T *__restrict__ p, T (&out)[N])
{
    constexpr int kBytes = N * (int)sizeof(T);
    static_assert(kBytes == 8 || kBytes % 16 == 0, "8, 16 or 32 bytes a load");
    static_assert(sizeof(T) == 4 || sizeof(T) == 2, "4- or 2-byte entries");
    uint32_t words[kBytes / 4];
    if constexpr (kBytes == 8) {
        const uint2 u = __ldg(reinterpret_cast<const uint2 *>(p));
        words[0] = u.x;
        words[1] = u.y;
    } else {
#pragma unroll
        for (int i = 0; i < kBytes / 16; i++) {
            const uint4 u = __ldg(reinterpret_cast<const uint4 *>(p) + i);
            words[4 * i] = u.x;
            words[4 * i + 1] = u.y;
            words[4 * i + 2] = u.z;
            words[4 * i + 3] = u.w;
        }
    }
#pragma unroll
    for (int e = 0; e < N; e++)
        out[e] = sizeof(T) == 4 ? spmm_from_bits<T>(words[e])
                                : spmm_from_bits<T>(words[e / 2] >> (16 * (e % 2)));
}

/* The mask of the `lanes` lanes (a power of two <= 32) of the calling
 * thread's subwarp: subwarps are aligned groups of lanes within the warp. */
static __device__ __forceinline__ unsigned spmm_subwarp_mask(int lanes)
{
    if (lanes == kWarpSize)
        return kFullMask;
    const int first = (int)(threadIdx.x % kWarpSize) / lanes * lanes;
    return ((1u << lanes) - 1u) << first;
}

/* Row variant (spmm_row.cu): config.lanes in {4, 8, 16, 32}, config.rows in
 * {1, 4, 8}. */
nmt_status nmt_spmm_row(const SpmmCall &c, const nmt_cuda_spmm_matrix &w,
                        const nmt_spmm_config &config, cudaStream_t stream, nmt_error *err);

/* Tile variant (spmm_tile.cu): config.tile in {8, 16, 32, 64}. ld_t: the
 * row length of x^T and y^T in the workspace (a multiple of the tile). */
int32_t nmt_spmm_tile_ld(int32_t m, int tile);
/* Blocks the tile kernel launches for m rows of x and n rows of W. */
int64_t nmt_spmm_tile_blocks(int32_t m, int32_t n, int tile);
size_t nmt_spmm_tile_workspace_size(int32_t m, int32_t n, int32_t k, int tile);
nmt_status nmt_spmm_tile(const SpmmCall &c, const nmt_cuda_spmm_matrix &w,
                         const nmt_spmm_config &config, void *workspace, cudaStream_t stream,
                         nmt_error *err);

#endif /* NMT_SPMM_VARIANTS_CUH */
