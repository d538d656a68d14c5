/* decoder_step.cu: steps 1-4 of a model v1 decoder step over a batch of
 * hypothesis rows on the device (model/cuda/cuda_model.h; the oracle is the
 * CPU step model). Step 5, the output layer, is model/cuda/output_layer.c.
 *
 * Per step, for n rows (every row of every active sentence, B per sentence):
 *   inputs: one gather launch builds the new live rows from the old ones by
 *     back-pointer (feed, h, c of every layer) and writes E_tgt[prev token]
 *     beside them, so layer 0's GEMM input [emb; feed; h_0] is one row
 *   layer l: gates = [W_ih W_hh] [input; h_l]     one GEMM (fused weights)
 *     lstm_cell adds b_ih + b_hh, updates c, writes h into its own slot and
 *     into the next layer's input (the top layer's into attn_in)
 *   attention over each row's sentence (ragged): context into attn_in,
 *     beside h_top, and the argmax
 *   f = tanh(W_c [c; h_top])                      one GEMM, into the feed slot
 * Launches per step: 1 + 2 per layer + 3 (and cuBLAS's split-K reduction
 * where it picks one), down from 6 + 4 per layer + 4 with separate tensors:
 * at a few rows the launches, not the bytes, are the cost. Nothing here
 * allocates or synchronizes. */
#include "cuda_model.h"

#include "attention.h"
#include "cuda_check.h"
#include "gather.h"
#include "linear.h"
#include "lstm_cell.h"
#include "pointwise.h"

static_assert(2 * NMT_MAX_LAYERS + 1 <= NMT_GATHER_MAX_SEGMENTS, "one gather for the step inputs");

/* New row r <- old row row_parent[r] (feed, every h and c) and the target
 * embedding of row_tokens[r]; the other buffer becomes live. */
static nmt_status gather_step_inputs(nmt_cuda_model *m, int32_t n_rows, nmt_error *err)
{
    const int32_t E = m->emb, H = m->hidden, L = m->dec_layers;
    const int cur = m->cur, next = 1 - m->cur;
    nmt_gather_segment seg[NMT_GATHER_MAX_SEGMENTS];
    int n = 0;
    seg[n++] = (nmt_gather_segment){m->w.tgt_embedding, m->row_tokens, m->dec_x[next][0], E, E,
                                    m->dec_x_ld[0]};
    /* Layer 0's feed and h are adjacent: one segment of 2H. */
    seg[n++] = (nmt_gather_segment){m->feed[cur], m->row_parent, m->feed[next], 2 * H,
                                    m->dec_x_ld[0], m->dec_x_ld[0]};
    for (int32_t l = 1; l < L; l++)
        seg[n++] = (nmt_gather_segment){m->dec_h[cur][l], m->row_parent, m->dec_h[next][l], H,
                                        m->dec_x_ld[l], m->dec_x_ld[l]};
    for (int32_t l = 0; l < L; l++)
        seg[n++] = (nmt_gather_segment){m->dec_c[cur][l], m->row_parent, m->dec_c[next][l], H, H,
                                        H};
    nmt_status status = nmt_cuda_gather_segments(n_rows, n, seg, m->stream, err);
    if (status == NMT_STATUS_OK)
        m->cur = next;
    return status;
}

nmt_status nmt_cuda_decoder_step(nmt_cuda_model *m, int32_t n_rows, const int32_t *src_len,
                                 int32_t src_stride, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    void *stream = m->stream;
    const int32_t H = m->hidden, L = m->dec_layers;
    const nmt_device_weights *w = &m->w;
    if (n_rows < 1 || n_rows > m->max_rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda decoder step: %d rows (max %d)", n_rows, m->max_rows);

    status = gather_step_inputs(m, n_rows, err);
    if (status != NMT_STATUS_OK)
        return status;
    const int cur = m->cur;
    float *h_top = m->attn_in + H; /* the top layer's second copy of h */
    for (int32_t l = 0; l < L; l++) {
        const int32_t ld = m->dec_x_ld[l];
        float *h_next = l + 1 < L ? m->dec_x[cur][l + 1] : h_top;
        const int32_t ld_next = l + 1 < L ? m->dec_x_ld[l + 1] : 2 * H;
        NMT_TRY(nmt_cuda_model_linear(m, n_rows, 4 * H, w->dec_ld[l], m->dec_x[cur][l], ld,
                                      w->dec_w[l], w->dec_ld[l], m->dec_w2[l], NULL, m->gates,
                                      4 * H, err));
        NMT_TRY(nmt_cuda_lstm_cell(n_rows, H, m->gates, 4 * H, NULL, w->dec_bias[l],
                                   m->dec_c[cur][l], m->dec_c[cur][l], m->dec_h[cur][l], ld,
                                   h_next, ld_next, stream, err));
    }
    NMT_TRY(nmt_cuda_attention(n_rows, H, src_stride, m->row_sentence, src_len, m->keys,
                               m->memory, h_top, 2 * H, m->attn_in, 2 * H, NULL, m->attn_argmax,
                               stream, err));
    NMT_TRY(nmt_cuda_model_linear(m, n_rows, H, 2 * H, m->attn_in, 2 * H, w->attn_w_c, 2 * H,
                                  m->attn_w_c2, NULL, m->feed[cur], m->feed_ld, err));
    NMT_TRY(nmt_cuda_tanh_rows(n_rows, H, m->feed[cur], m->feed_ld, stream, err));
cleanup:
    return status;
}
