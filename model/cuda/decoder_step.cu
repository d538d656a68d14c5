/* decoder_step.cu: steps 1-4 of a model v1 decoder step over a batch of
 * hypothesis rows on the device (model/cuda/cuda_model.h; the oracle is the
 * CPU step model). Step 5, the output layer, is model/cuda/output_layer.c.
 *
 * The part owns the double-buffered decoder rows (cuda_model_impl.h); the
 * search says which buffer is live, the step reads it and writes the other.
 * Per step, for n rows (every row of every active sentence, B per sentence):
 *   inputs: one gather launch builds the new live rows from the old ones by
 *     back-pointer (feed, the layers' h_last, c) and writes E_tgt[prev
 *     token] beside them, so layer 0's GEMM input [emb; feed; h_0] is one row
 *   layer l: gates = [W_ih W_hh] [input; h_l]     one GEMM (fused weights)
 *     lstm_cell adds b_ih + b_hh, updates c, writes h into h_last[l] and
 *     into the next layer's input (the top layer's into attn_in); up to
 *     NMT_SKINNY_MAX_ROWS rows the GEMM and the cell are one launch
 *     (nmt_cuda_model_lstm_layer): h_last lies outside the GEMM's input
 *     rows, which other blocks still read while one writes its h
 *   attention over each row's sentence (ragged): context into attn_in,
 *     beside h_top, and the argmax
 *   f = tanh(W_c [c; h_top])                      one GEMM, into the feed slot
 * Launches per step: 1 + 2 per layer + 3 (1 per layer at a few rows; and
 * cuBLAS's split-K reduction where it picks one), down from 6 + 4 per layer
 * + 4 with separate tensors: at a few rows the launches, not the bytes, are
 * the cost. Nothing here allocates or synchronizes. */
#include "cuda_model_impl.h"

#include "attention.h"
#include "cuda_check.h"
#include "gather.h"
#include "linear.h"
#include "lstm_cell.h"
#include "pointwise.h"

static_assert(2 * NMT_MAX_LAYERS + 2 <= NMT_GATHER_MAX_SEGMENTS, "one gather for the step inputs");

static void layout_decoder(nmt_cuda_model *m, nmt_carver *c)
{
    const size_t E = (size_t)m->emb, H = (size_t)m->hidden, R = (size_t)m->max_rows;
    const size_t f = sizeof(float);
    nmt_cuda_decoder_part *p = &m->dec;
    for (int32_t l = 0; l < m->dec_layers; l++)
        p->x_ld[l] = (int32_t)(l ? 2 * H : E + 2 * H);
    p->feed_ld = p->x_ld[0];
    for (int b = 0; b < 2; b++) {
        for (int32_t l = 0; l < m->dec_layers; l++) {
            p->x[b][l] = (float *)nmt_carve(c, R * (size_t)p->x_ld[l] * f);
            p->c[b][l] = (float *)nmt_carve(c, R * H * f);
            /* NULL while measuring: offsets from a NULL base mean nothing. */
            p->h[b][l] = p->x[b][l] ? p->x[b][l] + (l ? H : E + H) : NULL;
        }
        p->feed[b] = p->x[b][0] ? p->x[b][0] + E : NULL;
    }
    for (int32_t l = 0; l < m->dec_layers; l++)
        p->h_last[l] = (float *)nmt_carve(c, R * H * f);
    p->attn_in = (float *)nmt_carve(c, R * 2 * H * f);
    p->gates = (float *)nmt_carve(c, R * 4 * H * f);
    p->attn_argmax = (int32_t *)nmt_carve(c, R * sizeof(int32_t));
}

size_t nmt_cuda_decoder_part_bytes(nmt_cuda_model *m)
{
    return nmt_cuda_arena_bytes(layout_decoder, m);
}

nmt_status nmt_cuda_decoder_part_create(nmt_cuda_model *m, nmt_error *err)
{
    return nmt_cuda_arena_carve(&m->dec.arena, layout_decoder, m, err);
}

size_t nmt_cuda_model_attention_bytes(int32_t max_sentences, int32_t beam, int32_t max_src)
{
    return sizeof(float) * (size_t)max_sentences * (size_t)beam * (size_t)max_src;
}

nmt_status nmt_cuda_model_set_attention(nmt_cuda_model *m, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (m->dec.attn_weights)
        return NMT_STATUS_OK;
    NMT_CUDA_TRY(cudaMalloc((void **)&m->dec.attn_weights,
                            nmt_cuda_model_attention_bytes(m->max_sentences, m->beam,
                                                           m->max_src)));
cleanup:
    return status;
}

const float *nmt_cuda_model_attention(const nmt_cuda_model *m)
{
    return m->dec.attn_weights;
}

/* New row r <- row rows->parent[r] of buffer cur (feed and c) and of
 * h_last, and the target embedding of rows->tokens[r], into buffer next. */
static nmt_status gather_step_inputs(nmt_cuda_model *m, int cur, int32_t n_rows,
                                     const nmt_cuda_rows *rows, nmt_error *err)
{
    const int32_t E = m->emb, H = m->hidden, L = m->dec_layers;
    const int next = 1 - cur;
    const nmt_cuda_decoder_part *d = &m->dec;
    nmt_gather_segment seg[NMT_GATHER_MAX_SEGMENTS];
    int n = 0;
    seg[n++] = (nmt_gather_segment){m->w.tgt_embedding, rows->tokens, d->x[next][0], E, E,
                                    d->x_ld[0]};
    seg[n++] = (nmt_gather_segment){d->feed[cur], rows->parent, d->feed[next], H, d->x_ld[0],
                                    d->x_ld[0]};
    for (int32_t l = 0; l < L; l++)
        seg[n++] = (nmt_gather_segment){d->h_last[l], rows->parent, d->h[next][l], H, H,
                                        d->x_ld[l]};
    for (int32_t l = 0; l < L; l++)
        seg[n++] = (nmt_gather_segment){d->c[cur][l], rows->parent, d->c[next][l], H, H, H};
    return nmt_cuda_gather_segments(n_rows, n, seg, m->stream, err);
}

nmt_status nmt_cuda_decoder_step(nmt_cuda_model *m, int buf, int32_t n_rows,
                                 const nmt_cuda_rows *rows, const int32_t *src_len,
                                 int32_t src_stride, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    void *stream = m->stream;
    const int32_t H = m->hidden, L = m->dec_layers;
    const nmt_device_weights *w = &m->w;
    nmt_cuda_decoder_part *d = &m->dec;
    if (n_rows < 1 || n_rows > m->max_rows || (buf != 0 && buf != 1) || !rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda decoder step: %d rows (max %d), buffer %d", n_rows,
                             m->max_rows, buf);

    const int cur = 1 - buf;       /* the rows gathered into */
    float *h_top = d->attn_in + H; /* the top layer's second copy of h */
    NMT_TRY(gather_step_inputs(m, buf, n_rows, rows, err));
    for (int32_t l = 0; l < L; l++) {
        const int32_t ld = d->x_ld[l];
        float *h_next = l + 1 < L ? d->x[cur][l + 1] : h_top;
        const int32_t ld_next = l + 1 < L ? d->x_ld[l + 1] : 2 * H;
        NMT_TRY(nmt_cuda_model_lstm_layer(m, n_rows, w->dec_ld[l], d->x[cur][l], ld,
                                          &m->gw.dec[l], w->dec_bias[l], d->c[cur][l],
                                          d->h_last[l], H, h_next, ld_next, err));
    }
    NMT_TRY(nmt_cuda_attention(n_rows, H, src_stride, rows->sentence, src_len, m->enc.keys,
                               m->enc.memory, h_top, 2 * H, d->attn_in, 2 * H, d->attn_weights,
                               d->attn_argmax, stream, err));
    NMT_TRY(nmt_cuda_model_gemm_tanh(m, NMT_GEMM_SITE_DECODER, n_rows, H, 2 * H, d->attn_in,
                                     2 * H, &m->gw.attn_c, d->feed[cur], d->feed_ld, err));
cleanup:
    return status;
}
