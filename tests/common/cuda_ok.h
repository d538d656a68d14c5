/* cuda_ok.h: CUDA_OK(call), the exit-on-failure CUDA runtime check of the
 * GPU tests (gpu_test_util.h) and the benchmarks (dev/bench/bench_util.h):
 * on an error it prints the file, the line, the call and the error string,
 * and exits 1. The library's own checks (core/cuda/cuda_check.h) return a
 * status instead. Header only. */
#ifndef NMT_TEST_CUDA_OK_H
#define NMT_TEST_CUDA_OK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_OK(call)                                                                      \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                    cudaGetErrorString(e_));                                               \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#endif
