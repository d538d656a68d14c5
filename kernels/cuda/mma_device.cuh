/* mma_device.cuh: the 16-bit tensor-core step every batch-invariant 16-bit
 * product shares (linear_chain.cu, output_topk.cu): d += a . b over one k16
 * block, mma.sync m16n8k16 with an fp32 accumulator; and the moves that feed
 * it: cp.async into shared memory, ldmatrix into fragments. Fragments (PTX ISA):
 * lane = 4 g + t; A rows g and g + 8, columns 2t, 2t + 1 and 8 more; B
 * column g, rows 2t, 2t + 1 and 8 more; D rows g, g + 8, columns 2t, 2t + 1.
 * Summing a product's k16 blocks in order from k = 0 gives the bits of
 * cuBLASLt's tiled unsplit 16-bit algorithms (kernels/cuda/linear_lt.cu). */
#ifndef NMT_KERNELS_CUDA_MMA_DEVICE_CUH
#define NMT_KERNELS_CUDA_MMA_DEVICE_CUH

#include <math.h>
#include <stdint.h>

template <int BF16>
static __device__ __forceinline__ void mma_k16(float (&d)[4], const uint32_t (&a)[4],
                                               const uint32_t (&b)[2])
{
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* cp.async: 16 bytes from global into shared memory at a shared-window
 * address; src_bytes < 16 zero-fills the rest (0: nothing is read). */
static __device__ __forceinline__ void cp_async16_to(unsigned dst, const void *gmem, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
                 "r"(src_bytes));
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* ldmatrix: four (two) 8x8 16-bit matrices, lane l giving a row address of
 * matrix l / 8; register i holds matrix i's row lane / 4, columns 2 (lane % 4)
 * and the next: the mma fragments' layout. */
static __device__ __forceinline__ void ldmatrix_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3,
                                            const uint16_t *p)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(a));
}
static __device__ __forceinline__ void ldmatrix_x2(uint32_t &r0, uint32_t &r1, const uint16_t *p)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r0), "=r"(r1)
                 : "r"(a));
}

/* A batch-invariant product's output from its chain's sum: the bias added
 * after the chain, as cuBLASLt's epilogue adds it, then tanh if asked. */
static __device__ __forceinline__ float chain_finish(float acc, const float *bias, int j,
                                                     int tanh_out)
{
    const float v = bias ? acc + __ldg(&bias[j]) : acc;
    return tanh_out ? tanhf(v) : v;
}

#endif /* NMT_KERNELS_CUDA_MMA_DEVICE_CUH */
