/* half.h: IEEE binary16 (fp16) and bfloat16 <-> binary32, on the host: the
 * model file's fp16 tensors (format/) and the CPU twins of the 16-bit GEMMs
 * (kernels/linear.h), which must round exactly as the GPU's
 * __float2half_rn / __float2bfloat16_rn do (nearest, ties to even); the two
 * formats by name, and a kernel's optional 16-bit output (nmt_half_out). */
#ifndef NMT_CORE_HALF_H
#define NMT_CORE_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* IEEE 754 binary16 <-> binary32. Widening is exact; narrowing rounds to
 * nearest even and overflows to infinity. */
static inline float nmt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0x1Fu) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else { /* subnormal: normalize */
        int shift = 0;
        while (!(mant & 0x400u)) {
            mant <<= 1;
            shift++;
        }
        bits = sign | ((uint32_t)(113 - shift) << 23) | ((mant & 0x3FFu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t nmt_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t abs = x & 0x7FFFFFFFu;
    if (abs > 0x7F800000u)
        return (uint16_t)(sign | 0x7E00u); /* NaN */
    if (abs >= 0x477FF000u)               /* rounds to >= 65536: infinity */
        return (uint16_t)(sign | 0x7C00u);
    if (abs < 0x38800000u) {              /* below 2^-14: subnormal or zero */
        if (abs < 0x33000000u)            /* below half the smallest subnormal */
            return sign;
        uint32_t exp = abs >> 23;
        uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126u - exp;      /* 14..24 */
        uint32_t q = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = abs - 0x38000000u; /* rebias the exponent: 127 -> 15 */
    uint32_t q = r >> 13;
    uint32_t rem = r & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u)))
        q++; /* a carry into the exponent is the right result */
    return (uint16_t)(sign | q);
}

/* bfloat16 is binary32's top half: widening is a shift. */
static inline float nmt_bf16_to_f32(uint16_t h)
{
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Narrowing drops 16 mantissa bits, to nearest even (NaN stays a quiet NaN;
 * the largest finite values round up to infinity, as on the GPU). */
static inline uint16_t nmt_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* The 16-bit formats of the tensor-core GEMMs (kernels/linear.h). */
typedef enum nmt_half_kind {
    NMT_HALF_BF16 = 0, /* 8 exponent bits, 7 mantissa bits: fp32's range */
    NMT_HALF_FP16 = 1  /* 5 exponent bits, 10 mantissa bits: to 65504 */
} nmt_half_kind;

/* x rounded to `kind` (nearest, ties to even): the bits the GPU's GEMMs
 * multiply, and those its kernels store (kernels/cuda/half_device.cuh). */
static inline uint16_t nmt_half_bits(nmt_half_kind kind, float x)
{
    return kind == NMT_HALF_BF16 ? nmt_f32_to_bf16(x) : nmt_f32_to_f16(x);
}

static inline float nmt_half_widen(nmt_half_kind kind, uint16_t h)
{
    return kind == NMT_HALF_BF16 ? nmt_bf16_to_f32(h) : nmt_f16_to_f32(h);
}

/* A kernel's optional 16-bit copy of an fp32 output, written by the kernel
 * that computes the values, so that a 16-bit GEMM reading them next needs
 * no rounding pass of its own (model/cuda/gemm.c, "Shadows"): element
 * (r, j) of the output goes to dst[r * ld + j] as nmt_half_bits(kind, v).
 * Kernels take it by pointer; NULL, or dst NULL: none. */
typedef struct nmt_half_out {
    uint16_t *dst;
    int32_t ld;
    nmt_half_kind kind;
} nmt_half_out;

/* The CPU twins' store of one element into o (nothing when there is none). */
static inline void nmt_half_out_put(const nmt_half_out *o, int64_t r, int64_t j, float v)
{
    if (o && o->dst)
        o->dst[r * o->ld + j] = nmt_half_bits(o->kind, v);
}

#ifdef __cplusplus
}
#endif

#endif /* NMT_CORE_HALF_H */
