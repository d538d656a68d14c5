/* output_pick.c: scoring's output layer on the device (cuda_model.h,
 * nmt_cuda_output_pick): the full layer's logits, as the output layer's
 * GEMM makes them, and each row's one target word's log-probability
 * (kernels/pick_log_prob.h): no softmax, no top-K, and no shrinking, which
 * scoring never uses. */
#include "cuda_model_impl.h"

#include "error.h"
#include "pick_log_prob.h"

nmt_status nmt_cuda_output_pick(nmt_cuda_model *m, int buf, int32_t n_rows,
                                const int32_t *words, float *log_probs,
                                const int32_t **attn_argmax, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_output_part *p = &m->out;
    if (n_rows < 1 || n_rows > m->max_rows || (buf != 0 && buf != 1) || !words || !log_probs)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda output pick: %d rows (max %d), buffer %d", n_rows,
                             m->max_rows, buf);
    NMT_TRY(nmt_cuda_model_gemm(m, NMT_GEMM_SITE_OUTPUT, n_rows, m->vocab, m->hidden,
                                m->dec.feed[buf], m->dec.feed_ld, &m->gw.out, m->w.out_b,
                                p->logits, p->ld_logits, err));
    NMT_TRY(nmt_cuda_pick_log_prob(n_rows, m->vocab, p->logits, p->ld_logits, words, log_probs,
                                   m->stream, err));
    NMT_TRY(nmt_cuda_decoder_join(m, err));
    if (attn_argmax)
        *attn_argmax = m->dec.attn_argmax;
cleanup:
    return status;
}
