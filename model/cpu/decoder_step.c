/* decoder_step.c: the CPU reference decoder step and reorder (model-v1
 * "Decoder", steps 1-4; step 5 is output_layer.c). Every row is independent of the others: row r attends over its
 * own sentence (row_sentence[r]) only.
 *
 * x_t = [E_tgt[y_{t-1}]; f_{t-1}] is never materialized: the first layer's
 * w_ih is applied as two column slices (embedding part, input-feed part).
 * Likewise W_c [c; h] is two slices of W_c. A matrix the model stores sparse
 * is multiplied in CSR form after nmt_cpu_state_set_sparse (sparse.c). */
#include "cpu_state.h"

#include "attention.h"
#include "error.h"
#include "fp32_ops.h"
#include "gather.h"
#include "linear.h"
#include "lstm_cell.h"
#include "pointwise.h"

#include <string.h>

/* gates[r] = shared_gates[slot[r]] (add 0), or += (add 1; the sum of two
 * floats, so the same bits as the product accumulated into gates), for
 * r < n_rows, 4H wide. */
static void take_shared_gates(const nmt_cpu_state *state, int32_t n_rows, const int32_t *slot,
                              int add, float *gates)
{
    const int64_t G = 4 * (int64_t)state->hidden;
    for (int32_t r = 0; r < n_rows; r++) {
        const float *p = state->shared_gates + slot[r] * G;
        float *g = gates + r * G;
        if (add)
            nmt_cpu_fast_add(G, p, g);
        else
            memcpy(g, p, sizeof(float) * (size_t)G);
    }
}

/* gates = E_tgt[prev] W_e^T + b_ih, once a distinct token where rows share
 * one (the fast path's own product), else once a row. */
static void layer0_embedding(nmt_cpu_state *state, int32_t n_rows, const int32_t *prev_tokens,
                             float *gates)
{
    const nmt_model *model = state->model;
    const nmt_lstm_weights *lstm = &model->dec[0];
    const int32_t E = state->emb, H = state->hidden;
    int32_t U = n_rows;
    const int32_t *tokens = prev_tokens;
    if (state->token_slot) {
        U = 0;
        for (int32_t r = 0; r < n_rows; r++) {
            int32_t *slot = &state->token_slot[prev_tokens[r]];
            if (*slot < 0) {
                *slot = U;
                state->step_tokens[U++] = prev_tokens[r];
            }
            state->row_token[r] = *slot;
        }
        for (int32_t u = 0; u < U; u++)
            state->token_slot[state->step_tokens[u]] = -1;
        tokens = U < n_rows ? state->step_tokens : prev_tokens;
    }
    nmt_cpu_gather_rows(U, E, model->tgt_embedding, tokens, state->tgt_emb);
    float *out = U < n_rows ? state->shared_gates : gates;
    nmt_cpu_matmul(state, &state->sp_dec_ih[0][0], U, 4 * H, E, state->tgt_emb, E, lstm->w_ih,
                   E + H, lstm->b_ih, 0, out, 4 * H);
    if (U < n_rows)
        take_shared_gates(state, n_rows, state->row_token, 0, gates);
}

/* Layer 0's feed and recurrent products, once a parent when rows share
 * parents (cpu_state.h), else once a row: gates = (h W_hh^T + b_hh) +
 * ((feed W_f^T) + gates) either way. */
static void layer0_shared(nmt_cpu_state *state, int32_t n_rows, const float *feed,
                          const float *h, float *gates)
{
    const nmt_model *model = state->model;
    const nmt_lstm_weights *lstm = &model->dec[0];
    const int32_t E = state->emb, H = state->hidden, U = state->n_parents;
    const nmt_cpu_csr *sp_ih = state->sp_dec_ih[0];
    if (U < 1 || U >= n_rows) {
        nmt_cpu_matmul(state, &sp_ih[1], n_rows, 4 * H, H, feed, H, lstm->w_ih + E, E + H, NULL,
                       1, gates, 4 * H);
        nmt_cpu_matmul(state, &state->sp_dec_hh[0], n_rows, 4 * H, H, h, H, lstm->w_hh, H,
                       lstm->b_hh, 1, gates, 4 * H);
        return;
    }
    /* The parents' rows gathered into context, free until the attention. */
    nmt_cpu_gather_rows(U, H, feed, state->parent_rows, state->context);
    nmt_cpu_matmul(state, &sp_ih[1], U, 4 * H, H, state->context, H, lstm->w_ih + E, E + H, NULL,
                   0, state->shared_gates, 4 * H);
    take_shared_gates(state, n_rows, state->row_parent, 1, gates);
    nmt_cpu_gather_rows(U, H, h, state->parent_rows, state->context);
    nmt_cpu_matmul(state, &state->sp_dec_hh[0], U, 4 * H, H, state->context, H, lstm->w_hh, H,
                   lstm->b_hh, 0, state->shared_gates, 4 * H);
    take_shared_gates(state, n_rows, state->row_parent, 1, gates);
}

nmt_status nmt_cpu_decoder_step(nmt_cpu_state *state, int32_t n_rows,
                                 const int32_t *prev_tokens, int32_t *attn_argmax,
                                 nmt_error *err)
{
    const nmt_model *model = state->model;
    int32_t H = state->hidden, V = state->vocab, cur = state->cur;
    if (n_rows < 0 || n_rows > state->n_rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu step: %d rows but the state holds %d", n_rows, state->n_rows);
    if (n_rows == 0)
        return NMT_STATUS_OK;
    state->steps++;
    if (!prev_tokens || !attn_argmax)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu step: NULL argument");
    for (int32_t r = 0; r < n_rows; r++)
        if (prev_tokens[r] < 0 || prev_tokens[r] >= V)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "cpu step: row %d: token %d outside [0, %d)", r, prev_tokens[r],
                                 V);

    /* 1-2. Stacked LSTM; layer 0 reads [E_tgt[prev]; feed]. */
    float *feed = state->feed[cur];
    for (int32_t l = 0; l < state->dec_layers; l++) {
        const nmt_lstm_weights *lstm = &model->dec[l];
        float *h = state->dec_h[cur][l], *c = state->dec_c[cur][l];
        float *gates = state->dec_gates;
        const nmt_cpu_csr *sp_ih = state->sp_dec_ih[l];
        if (l == 0) {
            layer0_embedding(state, n_rows, prev_tokens, gates);
            layer0_shared(state, n_rows, feed, h, gates);
        } else {
            nmt_cpu_matmul(state, &sp_ih[0], n_rows, 4 * H, H, state->dec_h[cur][l - 1], H, lstm->w_ih,
                           H, lstm->b_ih, 0, gates, 4 * H);
            nmt_cpu_matmul(state, &state->sp_dec_hh[l], n_rows, 4 * H, H, h, H, lstm->w_hh, H,
                           lstm->b_hh, 1, gates, 4 * H);
        }
        if (state->fast)
            nmt_cpu_fast_lstm_cell(n_rows, H, gates, 4 * H, NULL, NULL, c, c, h, H, NULL, 0);
        else
            nmt_cpu_lstm_cell(&(nmt_lstm_cell_args){.n_rows = n_rows, .hidden = H,
                                                    .gates_x = gates, .ld_x = 4 * H, .c_prev = c,
                                                    .c_out = c, .h_out = h, .ld_h = H});
    }
    state->n_parents = 0; /* each row's state is its own now, until the next reorder */
    const float *top = state->dec_h[cur][state->dec_layers - 1];

    /* 3. Attention over each row's own sentence. */
    if (state->fast)
        nmt_cpu_fast_attention(n_rows, H, state->max_src, state->row_sentence[cur],
                               state->src_len, state->keys, state->memory, top, H,
                               state->context, H, state->attn, attn_argmax);
    else
        nmt_cpu_attention(n_rows, H, state->max_src, state->row_sentence[cur], state->src_len,
                          state->keys, state->memory, top, H, state->context, H, NULL,
                          state->attn, attn_argmax);

    /* 4. f_t = tanh(W_c [c_t; h_t]), kept as the next step's input feed. */
    nmt_cpu_matmul(state, &state->sp_attn_c[0], n_rows, H, H, state->context, H, model->attn_w_c,
                   2 * H, NULL, 0, feed, H);
    nmt_cpu_matmul(state, &state->sp_attn_c[1], n_rows, H, H, top, H, model->attn_w_c + H, 2 * H, NULL,
                   1, feed, H);
    if (state->fast)
        nmt_cpu_fast_tanh((int64_t)n_rows * H, feed);
    else
        nmt_cpu_tanh_inplace((int64_t)n_rows * H, feed);

    return NMT_STATUS_OK;
}

nmt_status nmt_cpu_decoder_reorder(nmt_cpu_state *state, int32_t n_rows, const int32_t *parent,
                                   nmt_error *err)
{
    int32_t H = state->hidden, cur = state->cur, next = 1 - cur;
    if (n_rows < 0 || n_rows > state->max_rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu reorder: %d rows outside [0, %d]", n_rows, state->max_rows);
    if (n_rows > 0 && !parent)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu reorder: parent is NULL");
    for (int32_t i = 0; i < n_rows; i++)
        if (parent[i] < 0 || parent[i] >= state->n_rows)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "cpu reorder: row %d: parent %d outside [0, %d)", i, parent[i],
                                 state->n_rows);
    for (int32_t l = 0; l < state->dec_layers; l++) {
        nmt_cpu_gather_rows(n_rows, H, state->dec_h[cur][l], parent, state->dec_h[next][l]);
        nmt_cpu_gather_rows(n_rows, H, state->dec_c[cur][l], parent, state->dec_c[next][l]);
    }
    nmt_cpu_gather_rows(n_rows, H, state->feed[cur], parent, state->feed[next]);
    for (int32_t i = 0; i < n_rows; i++)
        state->row_sentence[next][i] = state->row_sentence[cur][parent[i]];
    /* The parents, for the fast path's own product (not the BLAS's: its
     * rows' bits may depend on their number). */
    state->n_parents = 0;
    if (state->fast && !state->fast_blas) {
        for (int32_t p = 0; p < state->n_rows; p++)
            state->parent_slot[p] = -1;
        for (int32_t i = 0; i < n_rows; i++) {
            int32_t *slot = &state->parent_slot[parent[i]];
            if (*slot < 0) {
                *slot = state->n_parents;
                state->parent_rows[state->n_parents++] = i;
            }
            state->row_parent[i] = *slot;
        }
    }
    state->cur = next;
    state->n_rows = n_rows;
    return NMT_STATUS_OK;
}
