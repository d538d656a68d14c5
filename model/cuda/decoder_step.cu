/* decoder_step.cu: steps 1-4 of a model v1 decoder step over a batch of
 * hypothesis rows on the device, and the reorder of the rows by beam
 * back-pointers (model/cuda/cuda_model.h; the oracle is the CPU step model).
 * Step 5, the output layer, is model/cuda/output_layer.c.
 *
 * Per step, for n rows (every row of every active sentence, B per sentence):
 *   emb = E_tgt[prev token]                          gather
 *   layer 0 gates = W_ih[:, :E] emb + b_ih + W_ih[:, E:] feed + W_hh h   three GEMMs
 *     (column slices of W_ih instead of building x = [emb; feed])
 *   layer l gates = W_ih h_{l-1} + b_ih + W_hh h_l; lstm_cell adds b_hh
 *   attention over each row's sentence (ragged), context and argmax
 *   f = tanh(W_c[:, :H] c + W_c[:, H:] h)              two GEMMs into feed
 * h, c and feed are updated in place in the live buffer; reorder gathers
 * them into the other buffer. Nothing here allocates or synchronizes. */
#include "cuda_model.h"

#include "attention.h"
#include "cuda/cuda_check.h"
#include "gather.h"
#include "linear.h"
#include "lstm_cell.h"
#include "pointwise.h"

nmt_status nmt_cuda_decoder_step(nmt_cuda_model *m, int32_t n_rows, const int32_t *src_len,
                                 int32_t src_stride, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    void *stream = m->stream;
    const int32_t E = m->emb, H = m->hidden, L = m->dec_layers;
    const int cur = m->cur;
    const nmt_device_weights *w = &m->w;
    const float *top = m->dec_h[cur][L - 1];
    float *feed = m->feed[cur]; /* f_{t-1}, consumed by layer 0, then overwritten by f_t */
    if (n_rows < 1 || n_rows > m->max_rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda decoder step: %d rows (max %d)", n_rows, m->max_rows);

    NMT_TRY(nmt_cuda_gather_rows(n_rows, E, w->tgt_embedding, m->row_tokens, m->tgt_emb, stream,
                                 err));
    for (int32_t l = 0; l < L; l++) {
        const nmt_lstm_weights *lw = &w->dec[l];
        float *h = m->dec_h[cur][l], *c = m->dec_c[cur][l];
        if (l == 0) {
            NMT_TRY(nmt_cuda_linear(m->ctx, n_rows, 4 * H, E, m->tgt_emb, E, lw->w_ih, E + H,
                                    lw->b_ih, 0, m->gates, 4 * H, err));
            NMT_TRY(nmt_cuda_linear(m->ctx, n_rows, 4 * H, H, feed, H, lw->w_ih + E,
                                    E + H, NULL, 1, m->gates, 4 * H, err));
        } else {
            NMT_TRY(nmt_cuda_linear(m->ctx, n_rows, 4 * H, H, m->dec_h[cur][l - 1], H, lw->w_ih,
                                    H, lw->b_ih, 0, m->gates, 4 * H, err));
        }
        NMT_TRY(nmt_cuda_linear(m->ctx, n_rows, 4 * H, H, h, H, lw->w_hh, H, NULL, 1, m->gates,
                                4 * H, err));
        NMT_TRY(nmt_cuda_lstm_cell(n_rows, H, m->gates, 4 * H, NULL, lw->b_hh, c, c, h, H, stream,
                                   err));
    }
    NMT_TRY(nmt_cuda_attention(n_rows, H, src_stride, m->row_sentence, src_len, m->keys,
                               m->memory, top, m->context, NULL, m->attn_argmax, stream, err));
    NMT_TRY(nmt_cuda_linear(m->ctx, n_rows, H, H, m->context, H, w->attn_w_c, 2 * H, NULL, 0,
                            feed, H, err));
    NMT_TRY(nmt_cuda_linear(m->ctx, n_rows, H, H, top, H, w->attn_w_c + H, 2 * H, NULL, 1, feed,
                            H, err));
    NMT_TRY(nmt_cuda_tanh_inplace((int64_t)n_rows * H, feed, stream, err));
cleanup:
    return status;
}

nmt_status nmt_cuda_decoder_reorder(nmt_cuda_model *m, int32_t n_rows, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t H = m->hidden;
    const int cur = m->cur, next = 1 - m->cur;
    if (n_rows < 1 || n_rows > m->max_rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda reorder: %d rows (max %d)",
                             n_rows, m->max_rows);
    for (int32_t l = 0; l < m->dec_layers; l++) {
        NMT_TRY(nmt_cuda_gather_rows(n_rows, H, m->dec_h[cur][l], m->row_parent,
                                     m->dec_h[next][l], m->stream, err));
        NMT_TRY(nmt_cuda_gather_rows(n_rows, H, m->dec_c[cur][l], m->row_parent,
                                     m->dec_c[next][l], m->stream, err));
    }
    NMT_TRY(nmt_cuda_gather_rows(n_rows, H, m->feed[cur], m->row_parent, m->feed[next], m->stream,
                                 err));
    m->cur = next;
cleanup:
    return status;
}
