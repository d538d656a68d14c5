/* clones_impl.h: NMT_CLONES builds a function for AVX-512, AVX2 and the
 * baseline, picked once at load (GCC's target_clones, x86-64 Linux), for
 * loops whose operations and their order do not depend on the vector width
 * (no fused multiply-add: their files are built with -ffp-contract=off),
 * so only the speed changes. Private to kernels/cpu/. */
#ifndef NMT_CLONES_IMPL_H
#define NMT_CLONES_IMPL_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define NMT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NMT_CLONES
#endif

#endif
