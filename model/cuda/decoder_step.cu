/* decoder_step.cu: steps 1-4 of a model v1 decoder step over a batch of
 * hypothesis rows on the device (model/cuda/cuda_model.h; the oracle is the
 * CPU step model). Step 5, the output layer, is model/cuda/output_layer.c.
 *
 * The part owns the double-buffered decoder rows (cuda_model_impl.h); the
 * search says which buffer is live, the step reads it and writes the other.
 * Per step, for n rows (every row of every active sentence, B per sentence):
 *   inputs: one gather launch builds the new live rows from the old ones by
 *     back-pointer (feed, the layers' h_last, c where the cell does not read
 *     it by parent: below) and writes E_tgt[prev token] beside them, so
 *     layer 0's GEMM input [emb; feed; h_0] is one row
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
 * the cost. Nothing here allocates or synchronizes.
 *
 * c is not gathered where a layer's cell is a launch of its own (many rows,
 * or batch invariance): the cell reads each row's old c at its parent's row
 * of the live buffer (c_by_parent), a whole [rows, H] copy fewer a layer.
 *
 * At 16 bits each GEMM's input also has a 16-bit shadow (gemm.c,
 * "Shadows"; step_shadows below): the gather, the cells, the attention and
 * the tanh store each value they write into a GEMM's input rounded beside
 * the fp32 one, so the GEMMs (and the output layer's) run no rounding pass
 * of their own: at 5,120 rows and two layers, four passes fewer a step.
 *
 * Carried (a few rows, the search says when): layer 0's gates are
 * E_tgt[y] W_e^T + [f; h_0] [W_f W_hh]^T + b. The first term depends on the
 * word only: word_gates holds it for every target word (made at create).
 * The second depends on the row before the beam step chose among the rows,
 * so it is made for every row of step t right after W_c (`carry_out`), on a
 * side stream beside the output layer and the beam step, which joins it at
 * its end (nmt_cuda_decoder_join). Step t + 1 then starts with one launch
 * that picks word_gates[y] and proj[parent], runs the cell and gathers the
 * other layers' rows (nmt_cuda_lstm_cell_gathered): no GEMM and no gather
 * on the chain before layer 1. The sums are in another order than the one
 * GEMM's, so the bits differ from the plain step at the last place. */
#include "cuda_model_impl.h"

#include "attention.h"
#include "cuda_check.h"
#include "gather.h"
#include "linear.h"
#include "lstm_cell.h"
#include "pointwise.h"

#include <string.h>

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
    p->word_gates = (float *)nmt_carve(c, (size_t)m->vocab * 4 * H * f);
    p->proj = (float *)nmt_carve(c, R * 4 * H * f);
}

/* The arena and the side context's own workspace (the carried product's
 * stream), as the encoder part counts its own. */
size_t nmt_cuda_decoder_part_bytes(nmt_cuda_model *m)
{
    return nmt_cuda_arena_bytes(layout_decoder, m) + nmt_cuda_ctx_device_bytes();
}

nmt_status nmt_cuda_decoder_part_create(nmt_cuda_model *m, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_decoder_part *d = &m->dec;
    const nmt_device_weights *w = &m->w;
    NMT_TRY(nmt_cuda_arena_carve(&d->arena, layout_decoder, m, err));
    d->feed16_buf = -1;
    /* Every word's embedding product: layer 0's weights' first E columns.
     * Only a carried step reads it, and a batch-invariant context carries
     * none: there it is not made (a cuBLAS call at start-up, its first). */
    if (!nmt_cuda_ctx_batch_invariant(m->ctx)) {
        NMT_TRY(nmt_cuda_linear(m->ctx, m->vocab, 4 * m->hidden, m->emb, w->tgt_embedding,
                                m->emb, w->dec_w[0], w->dec_ld[0], NULL, 0, d->word_gates,
                                4 * m->hidden, err));
        d->word_gates_made = 1;
    }
    NMT_TRY(nmt_cuda_side_create(m, &d->side, err));
cleanup:
    return status;
}

/* Layer 0's weights past the embedding's columns, [W_f W_hh]: the matrix
 * of the carried product, in each form the skinny kernel reads. */
static nmt_cuda_weight recurrent_weight(const nmt_cuda_model *m)
{
    nmt_cuda_weight r = m->gw.dec[0];
    const int32_t E = m->emb;
    r.f32 = r.f32 ? r.f32 + E : NULL;
    r.w2 = NULL;
    r.w16 = r.w16 ? (const uint16_t *)r.w16 + E : NULL;
    r.bias16 = r.bias16_of = NULL;
    r.sparse = NULL;
    return r;
}

int32_t nmt_cuda_model_carry_rows(const nmt_cuda_model *m)
{
    const int32_t H = m->hidden, E = m->emb;
    const nmt_cuda_weight r = recurrent_weight(m);
    /* Batch-invariant: the carried gates add two sums, where the plain step's
     * GEMM sums the row once over [emb; feed; h_0]. */
    if (!m->dec.side.ctx || !m->dec.word_gates_made || nmt_cuda_ctx_batch_invariant(m->ctx))
        return 0;
    for (int32_t rows = 1; rows <= NMT_SKINNY_MAX_ROWS && rows <= m->max_rows; rows++)
        if (!nmt_cuda_model_skinny_runs(m, m->ctx, NMT_GEMM_SITE_DECODER, rows, 4 * H,
                                        E + 2 * H, &m->gw.dec[0]) ||
            !nmt_cuda_model_skinny_runs(m, m->dec.side.ctx, NMT_GEMM_SITE_DECODER, rows, 4 * H,
                                        2 * H, &r))
            return rows - 1;
    return NMT_SKINNY_MAX_ROWS < m->max_rows ? NMT_SKINNY_MAX_ROWS : m->max_rows;
}

nmt_status nmt_cuda_decoder_join(nmt_cuda_model *m, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (m->dec.proj_pending) {
        m->dec.proj_pending = 0;
        NMT_TRY(nmt_cuda_side_join(m, &m->dec.side, err));
    }
cleanup:
    return status;
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

/* The shadows a step writes, each where the GEMM reading it runs at 16
 * bits (gemm.c, "Shadows"), else NULL: x16[l], layer l's input row;
 * attn_in16, W_c's; feed16, the output layer's. */
typedef struct step_shadows {
    uint16_t *x16[NMT_MAX_LAYERS];
    uint16_t *attn_in16;
    uint16_t *feed16;
} step_shadows;

static step_shadows shadows_of(const nmt_cuda_model *m, int32_t n_rows)
{
    const int32_t H = m->hidden;
    step_shadows s;
    memset(&s, 0, sizeof s);
    for (int32_t l = 0; l < m->dec_layers; l++)
        if (nmt_cuda_model_gemm_reads_x16(m, NMT_GEMM_SITE_DECODER, n_rows, 4 * H,
                                          m->w.dec_ld[l], &m->gw.dec[l]))
            s.x16[l] = m->half16.x16[l];
    if (nmt_cuda_model_gemm_reads_x16(m, NMT_GEMM_SITE_DECODER, n_rows, H, 2 * H, &m->gw.attn_c))
        s.attn_in16 = m->half16.attn_in16;
    s.feed16 = nmt_cuda_model_feed16(m, n_rows);
    return s;
}

/* Columns [col, ...) of a shadow whose rows are ld values apart (none
 * where the shadow is NULL). */
static nmt_half_out shadow_at(const nmt_cuda_model *m, uint16_t *shadow, int32_t col,
                              int32_t ld)
{
    return (nmt_half_out){shadow ? shadow + col : NULL, ld, m->half16.kind};
}

/* 1 when layer l's cell reads each row's old c at its parent's row of the
 * live buffer (the GEMM and the cell kernel), 0 when the step gathers it
 * first (the fused few-row launch reads c in place). */
static int c_by_parent(const nmt_cuda_model *m, int32_t n_rows, int32_t l)
{
    return !nmt_cuda_model_lstm_layer_fused(m, n_rows, m->w.dec_ld[l], &m->gw.dec[l]);
}

/* New row r <- row rows->parent[r] of buffer cur (feed, and c where the
 * cell does not read it by parent) and of h_last, and the target embedding
 * of rows->tokens[r], into buffer next; the layers' input rows also into
 * their shadows. */
static nmt_status gather_step_inputs(nmt_cuda_model *m, int cur, int32_t n_rows,
                                     const nmt_cuda_rows *rows, const step_shadows *sh,
                                     nmt_error *err)
{
    const int32_t E = m->emb, H = m->hidden, L = m->dec_layers;
    const int next = 1 - cur;
    const nmt_cuda_decoder_part *d = &m->dec;
    const int32_t ld0 = d->x_ld[0];
    nmt_gather_segment seg[NMT_GATHER_MAX_SEGMENTS];
    int n = 0;
    seg[n++] = (nmt_gather_segment){.src = m->w.tgt_embedding, .index = rows->tokens,
                                    .dst = d->x[next][0], .width = E, .ld_src = E,
                                    .ld_dst = ld0, .dst16 = shadow_at(m, sh->x16[0], 0, ld0)};
    seg[n++] = (nmt_gather_segment){.src = d->feed[cur], .index = rows->parent,
                                    .dst = d->feed[next], .width = H, .ld_src = ld0,
                                    .ld_dst = ld0, .dst16 = shadow_at(m, sh->x16[0], E, ld0)};
    for (int32_t l = 0; l < L; l++) /* h_l sits after layer l's input: E + H or H */
        seg[n++] = (nmt_gather_segment){
            .src = d->h_last[l], .index = rows->parent, .dst = d->h[next][l], .width = H,
            .ld_src = H, .ld_dst = d->x_ld[l],
            .dst16 = shadow_at(m, sh->x16[l], (int32_t)(d->h[next][l] - d->x[next][l]),
                               d->x_ld[l])};
    for (int32_t l = 0; l < L; l++)
        if (!c_by_parent(m, n_rows, l))
            seg[n++] = (nmt_gather_segment){.src = d->c[cur][l], .index = rows->parent,
                                            .dst = d->c[next][l], .width = H, .ld_src = H,
                                            .ld_dst = H};
    return nmt_cuda_gather_segments(n_rows, n, seg, m->stream, err);
}

/* Carried layer 0 (see the top): word_gates[token] + b + proj[parent] and
 * the cell, h into h_last, the next layer's input and the slot beside the
 * feed that this step's product reads; the other layers' rows gathered in
 * the same launch. */
static nmt_status carried_layer0(nmt_cuda_model *m, int buf, int32_t n_rows,
                                 const nmt_cuda_rows *rows, nmt_error *err)
{
    const int32_t H = m->hidden, L = m->dec_layers;
    const int next = 1 - buf;
    const nmt_cuda_decoder_part *d = &m->dec;
    nmt_lstm_gathered g;
    memset(&g, 0, sizeof g);
    g.n_rows = n_rows, g.hidden = H, g.token = rows->tokens, g.parent = rows->parent;
    g.table = d->word_gates, g.proj = d->proj, g.bias = m->w.dec_bias[0];
    g.c_prev = d->c[buf][0], g.c_out = d->c[next][0];
    g.h_out[0] = d->h_last[0], g.ld_h[0] = H;
    g.h_out[1] = L > 1 ? d->x[next][1] : d->attn_in + H;
    g.ld_h[1] = L > 1 ? d->x_ld[1] : 2 * H;
    g.h_out[2] = d->h[next][0], g.ld_h[2] = d->x_ld[0];
    for (int32_t l = 1; l < L; l++) {
        g.copies[g.n_copies++] = (nmt_lstm_gathered_copy){d->h_last[l], H, d->h[next][l],
                                                          d->x_ld[l]};
        if (!c_by_parent(m, n_rows, l))
            g.copies[g.n_copies++] = (nmt_lstm_gathered_copy){d->c[buf][l], H, d->c[next][l],
                                                              H};
    }
    return nmt_cuda_lstm_cell_gathered(&g, m->stream, err);
}

/* The next step's carried product of buffer cur's rows, [feed; h_0] .
 * [W_f W_hh]^T into proj, on the side stream from here; the output layer
 * joins it. The plain step's layer 0 read the old h_0 beside the feed, so
 * the new one is copied there first. */
static nmt_status leave_product(nmt_cuda_model *m, int cur, int32_t n_rows, int carried_in,
                                nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_decoder_part *d = &m->dec;
    const int32_t H = m->hidden;
    const cudaStream_t side = (cudaStream_t)nmt_cuda_ctx_stream(d->side.ctx);
    const nmt_cuda_weight r = recurrent_weight(m);
    NMT_TRY(nmt_cuda_side_fork(m, &d->side, err));
    if (!carried_in)
        NMT_CUDA_TRY(cudaMemcpy2DAsync(d->h[cur][0], sizeof(float) * (size_t)d->x_ld[0],
                                       d->h_last[0], sizeof(float) * (size_t)H,
                                       sizeof(float) * (size_t)H, (size_t)n_rows,
                                       cudaMemcpyDeviceToDevice, side));
    NMT_TRY(nmt_cuda_model_gemm_skinny(m, d->side.ctx, n_rows, 4 * H, 2 * H, d->feed[cur],
                                       d->feed_ld, &r, NULL, 0, d->proj, 4 * H, err));
    NMT_TRY(nmt_cuda_side_done(&d->side, err));
    d->proj_pending = 1;
cleanup:
    return status;
}

nmt_status nmt_cuda_decoder_step(nmt_cuda_model *m, int buf, int32_t n_rows,
                                 const nmt_cuda_rows *rows, const int32_t *src_len,
                                 int32_t src_stride, int carried_in, int carry_out, nmt_error *err)
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
    if ((carried_in || carry_out) && n_rows > nmt_cuda_model_carry_rows(m))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda decoder step: %d rows carry layer 0 (at most %d)", n_rows,
                             nmt_cuda_model_carry_rows(m));

    const int cur = 1 - buf;       /* the rows gathered into */
    float *h_top = d->attn_in + H; /* the top layer's second copy of h */
    step_shadows sh = shadows_of(m, n_rows);
    if (carried_in) {
        /* The carried cell writes no shadow: the GEMMs its rows feed round
         * their own (at the rows it runs they are the few-row kernel's). */
        memset(sh.x16, 0, sizeof sh.x16);
        if (L == 1)
            sh.attn_in16 = NULL;
    }
    const nmt_half_out context16 = shadow_at(m, sh.attn_in16, 0, 2 * H);
    if (carried_in)
        NMT_TRY(carried_layer0(m, buf, n_rows, rows, err));
    else
        NMT_TRY(gather_step_inputs(m, buf, n_rows, rows, &sh, err));
    for (int32_t l = carried_in ? 1 : 0; l < L; l++) {
        const int top = l + 1 == L;
        const nmt_half_out h2_16 = top ? shadow_at(m, sh.attn_in16, H, 2 * H)
                                       : shadow_at(m, sh.x16[l + 1], 0, d->x_ld[l + 1]);
        const nmt_cuda_layer_step step = {
            .rows = n_rows, .k = w->dec_ld[l], .x = d->x[cur][l], .ldx = d->x_ld[l],
            .x16 = sh.x16[l], .w = &m->gw.dec[l], .bias = w->dec_bias[l], .c_prev = d->c[buf][l],
            .c_rows = c_by_parent(m, n_rows, l) ? rows->parent : NULL, .c = d->c[cur][l],
            .h_out = d->h_last[l], .ld_h = H, .h_out2 = top ? h_top : d->x[cur][l + 1],
            .ld_h2 = top ? 2 * H : d->x_ld[l + 1], .h2_16 = &h2_16};
        NMT_TRY(nmt_cuda_model_lstm_layer(m, &step, err));
    }
    NMT_TRY(nmt_cuda_attention(n_rows, H, src_stride, rows->sentence, src_len, m->enc.keys,
                               m->enc.memory, h_top, 2 * H, d->attn_in, 2 * H, &context16,
                               d->attn_weights, d->attn_argmax, stream, err));
    NMT_TRY(nmt_cuda_model_gemm_tanh(m, NMT_GEMM_SITE_DECODER, n_rows, H, 2 * H, d->attn_in,
                                     2 * H, sh.attn_in16, &m->gw.attn_c, d->feed[cur],
                                     d->feed_ld, sh.feed16, err));
    d->feed16_buf = sh.feed16 ? cur : -1;
    d->feed16_rows = n_rows;
    if (carry_out)
        NMT_TRY(leave_product(m, cur, n_rows, carried_in, err));
cleanup:
    return status;
}
