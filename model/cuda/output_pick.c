/* output_pick.c: scoring's output layer on the device (cuda_model.h,
 * nmt_cuda_output_stash and nmt_cuda_output_pick). A teacher-forced pass
 * knows every row's next word, so the output layer need not run between
 * two steps: each step's feeds (the output layer's input) are stashed, and
 * the stash of several steps is scored at once, one GEMM over all its rows
 * (the full layer's logits, as the output layer's GEMM makes them) and each
 * row's target word's log-probability (kernels/pick_log_prob.h): no
 * softmax, no top-K, and no shrinking, which scoring never uses. */
#include "cuda_model_impl.h"

#include "cuda_check.h"
#include "error.h"
#include "pick_log_prob.h"

int32_t nmt_cuda_output_stash_rows(const nmt_cuda_model *m)
{
    return m->max_rows;
}

nmt_status nmt_cuda_output_stash(nmt_cuda_model *m, int buf, int32_t n_rows, int32_t at,
                                 const int32_t **attn_argmax, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t H = m->hidden;
    if (n_rows < 1 || at < 0 || at > m->max_rows - n_rows || (buf != 0 && buf != 1))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda output stash: rows [%d, %d + %d) of %d, buffer %d", at, at,
                             n_rows, m->max_rows, buf);
    NMT_CUDA_TRY(cudaMemcpy2DAsync(m->out.stash + (size_t)at * (size_t)H, sizeof(float) * H,
                                   m->dec.feed[buf], sizeof(float) * (size_t)m->dec.feed_ld,
                                   sizeof(float) * H, (size_t)n_rows, cudaMemcpyDeviceToDevice,
                                   (cudaStream_t)m->stream));
    if (attn_argmax)
        *attn_argmax = m->dec.attn_argmax;
cleanup:
    return status;
}

nmt_status nmt_cuda_output_pick(nmt_cuda_model *m, int32_t n_rows, const int32_t *words,
                                float *log_probs, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_output_part *p = &m->out;
    if (n_rows < 1 || n_rows > m->max_rows || !words || !log_probs)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda output pick: %d rows (max %d)", n_rows, m->max_rows);
    NMT_TRY(nmt_cuda_model_gemm(m, NMT_GEMM_SITE_OUTPUT, n_rows, m->vocab, m->hidden, p->stash,
                                m->hidden, NULL, &m->gw.out, m->w.out_b, p->logits,
                                p->ld_logits, err));
    NMT_TRY(nmt_cuda_pick_log_prob(n_rows, m->vocab, p->logits, p->ld_logits, words, log_probs,
                                   m->stream, err));
    NMT_TRY(nmt_cuda_decoder_join(m, err));
cleanup:
    return status;
}
