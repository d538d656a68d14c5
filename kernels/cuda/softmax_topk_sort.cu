/* softmax_topk_sort.cu: the sort fallback of nmt_cuda_softmax_topk (any K,
 * full vocabulary only; the launcher's pick above the policy's atomic_max_k):
 * a pass of one block a row writes lse (Milakov & Gimelshein's (m, d)) and
 * every word's packed key (excluded: 0), CUB's segmented radix sort orders
 * each row's keys descending, and the first K are written out. Rows go in
 * chunks of at most max(chunk_words, V) words (CUB's int offsets). */
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "softmax_topk_device.cuh"
#include "softmax_topk_variants.cuh"

/* One block per row of the chunk: lse, and every word's key (excluded: 0). */
static __global__ void __launch_bounds__(256)
    keys_lse_kernel(int32_t vocab, const float *__restrict__ logits, int64_t ld,
                    const int32_t *__restrict__ excluded, int n_excluded,
                    uint64_t *__restrict__ keys, float *__restrict__ lse)
{
    __shared__ OnlineMD s_md[256 / kWarpSize];
    const int row = blockIdx.x;
    const float *p = logits + (int64_t)row * ld;
    OnlineMD md{-INFINITY, 0.0f};
    for (int w = threadIdx.x; w < vocab; w += blockDim.x) {
        float x = p[w];
        md_add(md, x);
        keys[(int64_t)row * vocab + w] = is_excluded(w, excluded, n_excluded) ? 0 : make_key(x, w);
    }
    OnlineMD t = block_md(md, s_md);
    if (threadIdx.x == 0)
        lse[row] = t.m + logf(t.d);
}

static __global__ void segment_offsets_kernel(int n, int32_t vocab, int *offsets)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n)
        offsets[i] = i * vocab;
}

static __global__ void write_sorted_kernel(int n_rows, int32_t vocab, int k_out,
                                           const uint64_t *__restrict__ sorted,
                                           const float *__restrict__ lse, float *top_values,
                                           int32_t *top_ids, float *lse_out)
{
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (int64_t)n_rows * k_out)
        return;
    int row = (int)(idx / k_out), i = (int)(idx - (int64_t)row * k_out);
    write_slot(i < vocab ? sorted[(int64_t)row * vocab + i] : 0, lse[row], &top_values[idx],
               &top_ids[idx]);
    if (lse_out && i == 0)
        lse_out[row] = lse[row];
}

/* ---- plan and launch ------------------------------------------------------- */

SortPlan nmt_softmax_topk_sort_plan(int32_t n_rows, int32_t vocab, int chunk_words)
{
    SortPlan p = {};
    int chunk_rows = (int)((int64_t)chunk_words / vocab);
    p.chunk_rows = chunk_rows < 1 ? 1 : (chunk_rows > n_rows ? n_rows : chunk_rows);
    p.n_keys = (size_t)p.chunk_rows * vocab;
    /* int offsets: a chunk holds at most max(chunk_words, vocab) words. */
    p.error = cub::DeviceSegmentedRadixSort::SortKeysDescending(
        NULL, p.temp_bytes, (const uint64_t *)NULL, (uint64_t *)NULL, (int64_t)p.n_keys,
        p.chunk_rows, (const int *)NULL, (const int *)NULL, 0, 64, (cudaStream_t)0);
    p.off_keys_in = kCounterBytes;
    p.off_keys_out = p.off_keys_in + nmt_align_up(p.n_keys * sizeof(uint64_t), 256);
    p.off_lse = p.off_keys_out + nmt_align_up(p.n_keys * sizeof(uint64_t), 256);
    p.off_offsets = p.off_lse + nmt_align_up((size_t)n_rows * sizeof(float), 256);
    p.off_temp = p.off_offsets + nmt_align_up(((size_t)p.chunk_rows + 1) * sizeof(int), 256);
    p.total = p.off_temp + p.temp_bytes;
    return p;
}

nmt_status nmt_softmax_topk_sort(const SoftmaxTopkCall &c, const SortPlan &plan, char *ws,
                                 cudaStream_t stream, nmt_error *err)
{
    const int32_t n_rows = c.n_rows, vocab = c.vocab, k = c.k;
    const float *logits = c.logits;
    float *top_values = c.top_values, *lse = c.lse;
    int32_t *top_ids = c.top_ids;
    uint64_t *keys_in = (uint64_t *)(ws + plan.off_keys_in);
    uint64_t *keys_out = (uint64_t *)(ws + plan.off_keys_out);
    float *lse_ws = (float *)(ws + plan.off_lse);
    int *offsets = (int *)(ws + plan.off_offsets);

    for (int32_t r0 = 0; r0 < n_rows; r0 += plan.chunk_rows) {
        int rows = n_rows - r0 < plan.chunk_rows ? n_rows - r0 : plan.chunk_rows;
        const float *chunk_logits = logits + (int64_t)r0 * c.ld;
        keys_lse_kernel<<<rows, 256, 0, stream>>>(vocab, chunk_logits, c.ld, c.excluded,
                                                  c.n_excluded, keys_in, lse_ws + r0);
        NMT_LAUNCH_RETURN("keys_lse_kernel");
        segment_offsets_kernel<<<(rows + 1 + 255) / 256, 256, 0, stream>>>(rows, vocab, offsets);
        NMT_LAUNCH_RETURN("segment_offsets_kernel");
        size_t temp = plan.temp_bytes;
        NMT_CUDA_RETURN(cub::DeviceSegmentedRadixSort::SortKeysDescending(
            ws + plan.off_temp, temp, keys_in, keys_out, (int64_t)rows * vocab, rows, offsets,
            offsets + 1, 0, 64, stream));
        int64_t n_out = (int64_t)rows * k;
        if (n_out > 0) {
            write_sorted_kernel<<<(unsigned)((n_out + 255) / 256), 256, 0, stream>>>(
                rows, vocab, k, keys_out, lse_ws + r0, top_values + (int64_t)r0 * k,
                top_ids + (int64_t)r0 * k, lse ? lse + r0 : NULL);
            NMT_LAUNCH_RETURN("write_sorted_kernel");
        }
    }
    return NMT_STATUS_OK;
}
