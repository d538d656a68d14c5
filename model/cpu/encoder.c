/* encoder.c: the CPU reference encoder (model-v1 "Encoder").
 *
 * One sentence at a time, so no padding ever enters a recurrence and a
 * sentence's result never depends on its batch: N-hot source embedding, then
 * L bidirectional LSTM layers (each direction H/2; layer l > 0 reads
 * [fwd; bwd] of layer l-1), each direction as one GEMM over all positions
 * for w_ih x + b_ih followed by a per-position recurrence. The top layer is
 * the memory bank, keys = W_a m_j are computed once, and the decoder's rows
 * start from the encoder finals (forward after x_S, backward after x_1). */
#include "cpu_state.h"

#include "error.h"
#include "linear.h"
#include "lstm_cell.h"
#include "nhot.h"

#include <string.h>

/* One direction of one layer over `len` positions of `in` (rows in_dim wide).
 * Writes h_t into out[t * H + col] and leaves the final c in state->enc_c;
 * the final h is out[last position]. */
static void run_direction(nmt_cpu_state *state, const nmt_lstm_weights *lstm, const float *in,
                          int32_t in_dim, int32_t len, int reverse, float *out, int32_t col)
{
    int32_t H = state->hidden, half = state->half;
    float *gates_x = state->enc_gates_x;
    nmt_cpu_linear(len, 4 * half, in_dim, in, in_dim, lstm->w_ih, in_dim, lstm->b_ih, 0, gates_x,
                   4 * half);
    memset(state->enc_c, 0, sizeof(float) * (size_t)half);
    for (int32_t step = 0; step < len; step++) {
        int32_t t = reverse ? len - 1 - step : step;
        int32_t t_prev = reverse ? t + 1 : t - 1;
        const float *h_prev = step == 0 ? state->zeros : out + (int64_t)t_prev * H + col;
        nmt_cpu_linear(1, 4 * half, half, h_prev, half, lstm->w_hh, half, lstm->b_hh, 0,
                       state->enc_gates_h, 4 * half);
        nmt_cpu_lstm_cell(&(nmt_lstm_cell_args){
            .n_rows = 1, .hidden = half, .gates_x = gates_x + (int64_t)t * 4 * half,
            .ld_x = 4 * half, .gates_h = state->enc_gates_h, .c_prev = state->enc_c,
            .c_out = state->enc_c, .h_out = out + (int64_t)t * H + col, .ld_h = H});
    }
}

static nmt_status encode_sentence(nmt_cpu_state *state, const nmt_source_batch *batch, int32_t s,
                                  nmt_error *err)
{
    const nmt_model *model = state->model;
    int32_t E = state->emb, H = state->hidden, half = state->half, S = batch->src_len[s];
    int32_t first = batch->token_offset[s];
    float *memory = state->memory + (int64_t)s * state->max_src * H;
    float *keys = state->keys + (int64_t)s * state->max_src * H;
    int init = model->hp.dec_init_from_encoder;

    nmt_status status = nmt_cpu_nhot_lookup(S, E, model->hp.src_rows, batch->row_ptr + first,
                                            batch->cols, batch->values, model->src_embedding,
                                            state->src_emb, err);
    if (status != NMT_STATUS_OK) {
        nmt_error_prefix(err, "sentence %d: ", s);
        return status;
    }
    const float *in = state->src_emb;
    int32_t in_dim = E;
    for (int32_t l = 0; l < state->enc_layers; l++) {
        float *out = l == state->enc_layers - 1 ? memory : state->layer_out[l % 2];
        float *dec_h = state->dec_h[state->cur][l] + (int64_t)s * H;
        float *dec_c = state->dec_c[state->cur][l] + (int64_t)s * H;
        run_direction(state, &model->enc_fwd[l], in, in_dim, S, 0, out, 0);
        if (init) {
            memcpy(dec_h, out + (int64_t)(S - 1) * H, sizeof(float) * (size_t)half);
            memcpy(dec_c, state->enc_c, sizeof(float) * (size_t)half);
        }
        run_direction(state, &model->enc_bwd[l], in, in_dim, S, 1, out, half);
        if (init) {
            memcpy(dec_h + half, out + half, sizeof(float) * (size_t)half);
            memcpy(dec_c + half, state->enc_c, sizeof(float) * (size_t)half);
        }
        in = out;
        in_dim = H;
    }
    memset(memory + (int64_t)S * H, 0, sizeof(float) * (size_t)(state->max_src - S) * H);
    nmt_cpu_matmul(state, &state->sp_attn_a, S, H, H, memory, H, model->attn_w_a, H, NULL, 0, keys, H);
    memset(keys + (int64_t)S * H, 0, sizeof(float) * (size_t)(state->max_src - S) * H);
    return NMT_STATUS_OK;
}

nmt_status nmt_cpu_encode(nmt_cpu_state *state, const nmt_source_batch *batch, nmt_error *err)
{
    if (!state || !batch)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu encode: NULL state or batch");
    int32_t n = batch->n_sentences;
    if (n < 1 || n > state->max_sentences)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu encode: %d sentences outside [1, %d]", n, state->max_sentences);
    if (!batch->src_len || !batch->token_offset || !batch->row_ptr || !batch->cols ||
        !batch->values)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu encode: NULL batch array");
    for (int32_t s = 0; s < n; s++) {
        int32_t len = batch->src_len[s];
        if (len < 1 || len > state->max_src)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "cpu encode: sentence %d has %d tokens, outside [1, %d]", s, len,
                                 state->max_src);
        if (batch->token_offset[s] < 0 || batch->token_offset[s + 1] - batch->token_offset[s] != len)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "cpu encode: sentence %d: token_offset [%d, %d) disagrees with "
                                 "src_len %d", s, batch->token_offset[s],
                                 batch->token_offset[s + 1], len);
    }

    /* The batch is accepted: from here on the state holds it. */
    int32_t H = state->hidden;
    state->n_sentences = 0;
    state->n_rows = 0;
    state->n_parents = 0;
    for (int32_t s = 0; s < n; s++) {
        state->src_len[s] = batch->src_len[s];
        state->row_sentence[state->cur][s] = s;
    }
    for (int32_t l = 0; l < state->dec_layers; l++) {
        memset(state->dec_h[state->cur][l], 0, sizeof(float) * (size_t)n * H);
        memset(state->dec_c[state->cur][l], 0, sizeof(float) * (size_t)n * H);
    }
    memset(state->feed[state->cur], 0, sizeof(float) * (size_t)n * H);
    if (state->fast) {
        nmt_status status = nmt_cpu_encode_fast(state, batch, err);
        if (status != NMT_STATUS_OK)
            return status;
    }
    for (int32_t s = 0; s < n && !state->fast; s++) {
        nmt_status status = encode_sentence(state, batch, s, err);
        if (status != NMT_STATUS_OK)
            return status;
    }
    state->n_sentences = n;
    state->n_rows = n;
    return NMT_STATUS_OK;
}
