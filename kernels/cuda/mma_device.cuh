/* mma_device.cuh: the 16-bit tensor-core step every batch-invariant 16-bit
 * product shares (linear_chain.cu, output_topk.cu): d += a . b over one k16
 * block, mma.sync m16n8k16 with an fp32 accumulator. Fragments (PTX ISA):
 * lane = 4 g + t; A rows g and g + 8, columns 2t, 2t + 1 and 8 more; B
 * column g, rows 2t, 2t + 1 and 8 more; D rows g, g + 8, columns 2t, 2t + 1.
 * Summing a product's k16 blocks in order from k = 0 gives the bits of
 * cuBLASLt's tiled unsplit 16-bit algorithms (kernels/cuda/linear_lt.cu). */
#ifndef NMT_KERNELS_CUDA_MMA_DEVICE_CUH
#define NMT_KERNELS_CUDA_MMA_DEVICE_CUH

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

#endif /* NMT_KERNELS_CUDA_MMA_DEVICE_CUH */
