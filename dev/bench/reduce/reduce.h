/* reduce.h: multi-mode reduction and broadcast over dense row-major tensors
 * (Dikbayir et al.: several axes reduced in one launch through virtual
 * coordinates; broadcast without replicating the smaller operand).
 *
 * Lab code, not library code: the seed's reduce/broadcast kernels, kept to be
 * benchmarked against cuBLAS/CUB (bench_reduce) and tested against their CPU
 * twin (test_gpu_reduce, test_cpu_reduce); built only into those programs
 * (dev/bench/reduce/). No library path calls them: the engine's bias adds and
 * attention sums are fused into other kernels (linear, lstm_cell, attention).
 *
 * A tensor of ndim <= NMT_REDUCE_MAX_DIMS dimensions dims[0..ndim).
 * reduce_sum: out = sum of x over every axis whose bit is set in reduce_mask;
 *   out has the kept axes in order (an empty shape is one element).
 * broadcast_add: out = x + y, where y has only the axes whose bit is set in
 *   y_mask (in order) and is repeated along the others. out may alias x.
 * Bias add is y_mask = last axis; the beam-score add into candidate scores is
 * y_mask = first axis. */
#ifndef NMT_BENCH_REDUCE_H
#define NMT_BENCH_REDUCE_H

#include "nmt_status.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NMT_REDUCE_MAX_DIMS 6

/* The argument checks both devices share (reduce_cpu.c): ndim in
 * [1, NMT_REDUCE_MAX_DIMS], every dimension >= 1, no mask bit past ndim. */
nmt_status nmt_reduce_check_shape(const char *op, int32_t ndim, const int64_t *dims,
                                  uint32_t mask, nmt_error *err);

/* Refuses ndim out of range, a dimension < 1 or a mask naming a missing axis. */
nmt_status nmt_cpu_reduce_sum(int32_t ndim, const int64_t *dims, uint32_t reduce_mask,
                              const float *x, float *out, nmt_error *err);
nmt_status nmt_cpu_broadcast_add(int32_t ndim, const int64_t *dims, const float *x,
                                 uint32_t y_mask, const float *y, float *out, nmt_error *err);

nmt_status nmt_cuda_reduce_sum(int32_t ndim, const int64_t *dims, uint32_t reduce_mask,
                               const float *x, float *out, void *stream, nmt_error *err);
nmt_status nmt_cuda_broadcast_add(int32_t ndim, const int64_t *dims, const float *x,
                                  uint32_t y_mask, const float *y, float *out, void *stream,
                                  nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
