/* forced_upload.c: a batch's forced tokens on the device for the GPU search
 * (decoder/forced_tokens.h; the beam step reads them, forced_step.cuh):
 * checked, packed in the search's sentence order (longest source first)
 * into a pinned buffer and copied up in one transfer before the batch's
 * steps, in buffers that only grow, between batches (nmt_cuda_staged). */
#include "cuda_search_impl.h"

#include "forced_search.h"

#include <string.h>

nmt_status nmt_cuda_search_upload_forced(nmt_cuda_search *s, const nmt_search_config *config,
                                         int32_t n, nmt_forced_tokens *dev, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    memset(dev, 0, sizeof *dev);
    const nmt_forced_tokens *f = config->forced;
    if (!f)
        return NMT_STATUS_OK;
    NMT_TRY(nmt_forced_tokens_check(config, n, s->model.vocab_size, 0, err));
    if (s->model.shrunk && f->offset[n] > 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda search: forced tokens need "
                             "the full softmax (a shrunk layer's logit columns are not words)");
    /* [offset n + 1][alternative n][ids] */
    const size_t words = 2 * (size_t)n + 1 + (size_t)f->offset[n];
    NMT_TRY(nmt_cuda_staged_ensure(&s->forced, sizeof(int32_t) * words, err));
    int32_t *host = (int32_t *)s->forced.host;
    int32_t *offset = host, *alternative = host + n + 1, *ids = alternative + n;
    int32_t at = 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t b = s->order[i], first = f->offset[b], len = f->offset[b + 1] - first;
        offset[i] = at;
        alternative[i] = f->alternative ? f->alternative[b] : -1;
        memcpy(ids + at, f->ids + first, sizeof(int32_t) * (size_t)len);
        at += len;
    }
    offset[n] = at;
    NMT_CUDA_TRY(cudaMemcpyAsync(s->forced.dev, s->forced.host, sizeof(int32_t) * words,
                                 cudaMemcpyHostToDevice, s->stream));
    int32_t *base = (int32_t *)s->forced.dev;
    *dev = (nmt_forced_tokens){base, base + 2 * n + 1, f->alternative ? base + n + 1 : NULL};
cleanup:
    return status;
}
