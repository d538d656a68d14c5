/* bench_lib_ok.h: CUBLAS_OK(call) and CUSPARSE_OK(call), the exit-on-failure
 * checks of the benches that time cuBLAS and cuSPARSE beside our kernels
 * (bench_nhot.cu, bench_spmm.cu), as CUDA_OK (tests/common/cuda_ok.h) is
 * for the runtime: file, line, call and the library's error string, exit 1.
 * Header only. */
#ifndef NMT_BENCH_LIB_OK_H
#define NMT_BENCH_LIB_OK_H

#include <cublas_v2.h>
#include <cusparse.h>
#include <stdio.h>
#include <stdlib.h>

#define CUBLAS_OK(call)                                                                    \
    do {                                                                                   \
        cublasStatus_t s_ = (call);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                    cublasGetStatusString(s_));                                            \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)
#define CUSPARSE_OK(call)                                                                  \
    do {                                                                                   \
        cusparseStatus_t s_ = (call);                                                      \
        if (s_ != CUSPARSE_STATUS_SUCCESS) {                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                    cusparseGetErrorString(s_));                                           \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#endif
