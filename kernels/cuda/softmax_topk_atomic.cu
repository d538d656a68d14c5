/* softmax_topk_atomic.cu: the atomic variant of nmt_cuda_softmax_topk, for
 * kRegisterK < K (<= the policy's atomic_max_k; any K whose keys fit 48 KiB
 * of shared memory when asked for by name): Argueta & Chiang, "Accelerating
 * Sparse Matrix Operations in Neural Networks on GPUs", Alg. 4. One block a
 * row; its threads push packed keys through a shared top-K with 64-bit
 * atomicMax, pruned by the current K-th key, while each keeps its (m, d)
 * (Milakov & Gimelshein), merged at the end. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "softmax_topk_device.cuh"
#include "softmax_topk_variants.cuh"

/* One block per row; dynamic shared memory holds the k packed keys. */
template <bool CAND>
static __global__ void __launch_bounds__(kAtomicThreads)
    atomic_topk_kernel(int32_t vocab, const float *__restrict__ logits, int64_t ld, int k,
                       int k_out, const int32_t *__restrict__ excluded, int n_excluded,
                       float *__restrict__ top_values, int32_t *__restrict__ top_ids,
                       float *__restrict__ lse_out, nmt_cand_lists lists)
{
    extern __shared__ unsigned long long s_best[]; /* [k], descending when done */
    __shared__ OnlineMD s_md[kAtomicThreads / kWarpSize];
    const int row = blockIdx.x;
    const float *p = logits + (int64_t)row * ld;
    volatile unsigned long long *v_best = s_best;
    const int32_t *words;
    const int32_t n_words = row_length<CAND>(lists, row, vocab, &words);

    for (int i = threadIdx.x; i < k; i += blockDim.x)
        s_best[i] = 0;
    __syncthreads();
    OnlineMD md{-INFINITY, 0.0f};
    for (int w = threadIdx.x; w < n_words; w += blockDim.x) {
        float x = __ldcs(p + w);
        md_add(md, x);
        unsigned long long y = make_key(x, w);
        if (y <= v_best[k - 1] || is_excluded_at<CAND>(w, words, excluded, n_excluded))
            continue;
        /* Carry y down the list: each atomicMax leaves the larger key in
         * place and hands back the smaller one to carry on (Alg. 4, 11-14).
         * Slots only grow, so a slot already >= y can be skipped unread. */
        for (int n = 0; n < k && y; n++) {
            if (v_best[n] >= y)
                continue;
            unsigned long long c = atomicMax(&s_best[n], y);
            if (c < y)
                y = c;
        }
    }
    OnlineMD t = block_md(md, s_md); /* syncs: every atomic is done */
    float lse = t.m + logf(t.d);
    for (int i = threadIdx.x; i < k_out; i += blockDim.x)
        write_slot_at<CAND>(i < k ? (uint64_t)s_best[i] : 0, lse,
                            &top_values[(int64_t)row * k_out + i],
                            &top_ids[(int64_t)row * k_out + i], words);
    if (lse_out && threadIdx.x == 0)
        lse_out[row] = lse;
}


nmt_status nmt_softmax_topk_atomic(const SoftmaxTopkCall &c, bool cand, int k_sel,
                                   cudaStream_t stream, nmt_error *err)
{
    size_t smem = (size_t)k_sel * sizeof(unsigned long long);
    if (cand)
        atomic_topk_kernel<true><<<c.n_rows, kAtomicThreads, smem, stream>>>(
            c.vocab, c.logits, c.ld, k_sel, c.k, c.excluded, c.n_excluded, c.top_values,
            c.top_ids, c.lse, c.lists);
    else
        atomic_topk_kernel<false><<<c.n_rows, kAtomicThreads, smem, stream>>>(
            c.vocab, c.logits, c.ld, k_sel, c.k, c.excluded, c.n_excluded, c.top_values,
            c.top_ids, c.lse, c.lists);
    NMT_LAUNCH_RETURN("atomic_topk_kernel");
    return NMT_STATUS_OK;
}
