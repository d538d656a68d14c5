/* ensemble.cu: an ensemble step's scores (kernels/ensemble.h), the twin of
 * kernels/cpu/ensemble.c.
 *
 * log_probs: a thread a word, grid.x over a row's words, grid.y (striding)
 * over the rows; each thread reads its word's logit in every member, in
 * member order, and keeps one fp32 sum (fmaf): the order is fixed, so a
 * row's scores do not depend on the rows beside it. The member table
 * travels by value in the launch's parameters. Memory-bound: one read a
 * member and one write a word.
 * gather_top_values: a thread a top-K slot. Both launch as decode-step
 * kernels (nmt_launch_pdl, pdl_enter first). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "device.cuh"
#include "ensemble.h"

static constexpr int kThreads = 256;
static constexpr int kMaxGridY = 65535;

static __global__ void __launch_bounds__(kThreads)
    ensemble_log_probs_kernel(int32_t n_rows, int32_t vocab, nmt_ensemble_members m,
                              float *__restrict__ out, int32_t ld_out)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    const int32_t w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= vocab)
        return;
    for (int32_t r = blockIdx.y; r < n_rows; r += gridDim.y) {
        float sum = 0.0f;
        for (int32_t i = 0; i < m.n; i++) {
            const nmt_ensemble_member &e = m.member[i];
            if (e.weight == 0.0f)
                continue;
            const float lse = e.lse ? __ldg(&e.lse[r]) : 0.0f;
            sum = fmaf(e.weight, __ldg(&e.logits[(int64_t)r * e.ld + w]) - lse, sum);
        }
        out[(int64_t)r * ld_out + w] = sum;
    }
}

static __global__ void __launch_bounds__(kThreads)
    gather_top_values_kernel(int64_t n, int32_t k, const float *__restrict__ scores, int32_t ld,
                             const int32_t *__restrict__ ids, float *__restrict__ values)
{
    pdl_enter();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const int32_t id = __ldg(&ids[i]);
    values[i] = id >= 0 ? __ldg(&scores[(i / k) * ld + id]) : -INFINITY;
}

extern "C" nmt_status nmt_cuda_ensemble_log_probs(int32_t n_rows, int32_t vocab,
                                                  const nmt_ensemble_members *m, float *out,
                                                  int32_t ld_out, void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && vocab >= 0 && ld_out >= vocab && m);
    NMT_ARG_CHECK(m->n >= 1 && m->n <= NMT_MAX_ENSEMBLE_MODELS);
    if (n_rows == 0 || vocab == 0)
        return NMT_STATUS_OK;
    NMT_ARG_CHECK(out != NULL);
    for (int32_t i = 0; i < m->n; i++)
        NMT_ARG_CHECK(m->member[i].logits && m->member[i].ld >= vocab &&
                      m->member[i].weight >= 0.0f);
    const dim3 grid((unsigned)((vocab + kThreads - 1) / kThreads),
                    (unsigned)(n_rows < kMaxGridY ? n_rows : kMaxGridY));
    nmt_launch_pdl(ensemble_log_probs_kernel, grid, kThreads, 0, (cudaStream_t)stream, n_rows,
                   vocab, *m, out, ld_out);
    NMT_LAUNCH_RETURN("ensemble_log_probs_kernel");
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_gather_top_values(int32_t n_rows, int32_t k, const float *scores,
                                                 int32_t ld, const int32_t *ids, float *values,
                                                 void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && k >= 0 && ld >= 0);
    const int64_t n = (int64_t)n_rows * k;
    if (n == 0)
        return NMT_STATUS_OK;
    NMT_ARG_CHECK(scores && ids && values);
    const unsigned blocks = (unsigned)((n + kThreads - 1) / kThreads);
    nmt_launch_pdl(gather_top_values_kernel, dim3(blocks), kThreads, 0, (cudaStream_t)stream, n,
                   k, scores, ld, ids, values);
    NMT_LAUNCH_RETURN("gather_top_values_kernel");
    return NMT_STATUS_OK;
}
