/* cpu_model.c: creation and release of the CPU reference engine's state
 * (model/cpu/cpu_model.h). Checks that the model's shapes are the ones model v1
 * computes with, then allocates every workspace for the largest batch the
 * state will ever see. Encoding is in encoder.c, the decoder step and
 * reorder in decoder_step.c, step 5 in output_layer.c. */
#include "cpu_state.h"

#include "error.h"

#include <stdlib.h>

static nmt_status check_lstm(const nmt_lstm_weights *lstm, int32_t input, int32_t hidden,
                             const char *what, int32_t layer, nmt_error *err)
{
    if (lstm->input_size != input || lstm->hidden_size != hidden || !lstm->w_ih || !lstm->w_hh ||
        !lstm->b_ih || !lstm->b_hh)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu model: %s layer %d is %d -> %d (want %d -> %d) or lacks a "
                             "tensor", what, layer, lstm->input_size, lstm->hidden_size, input,
                             hidden);
    return NMT_STATUS_OK;
}

static nmt_status check_model(const nmt_model *model, nmt_error *err)
{
    const nmt_hparams *hp = &model->hp;
    nmt_status status = NMT_STATUS_OK;
    if (hp->emb_size < 1 || hp->hidden_size < 2 || hp->hidden_size % 2 || hp->tgt_vocab < 1 ||
        hp->src_rows < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu model: bad sizes (E %d, H %d even >= 2, V_tgt %d, src rows %d)",
                             hp->emb_size, hp->hidden_size, hp->tgt_vocab, hp->src_rows);
    if (hp->enc_layers < 1 || hp->enc_layers > NMT_MAX_LAYERS || hp->dec_layers < 1 ||
        hp->dec_layers > NMT_MAX_LAYERS)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu model: layers (encoder %d, decoder %d) outside [1, %d]",
                             hp->enc_layers, hp->dec_layers, NMT_MAX_LAYERS);
    if (hp->dec_init_from_encoder && hp->enc_layers != hp->dec_layers)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu model: decoder initialized from the encoder needs equal layer "
                             "counts (encoder %d, decoder %d)", hp->enc_layers, hp->dec_layers);
    int32_t E = hp->emb_size, H = hp->hidden_size;
    for (int32_t l = 0; l < hp->enc_layers; l++) {
        NMT_TRY(check_lstm(&model->enc_fwd[l], l ? H : E, H / 2, "encoder forward", l, err));
        NMT_TRY(check_lstm(&model->enc_bwd[l], l ? H : E, H / 2, "encoder backward", l, err));
    }
    for (int32_t l = 0; l < hp->dec_layers; l++)
        NMT_TRY(check_lstm(&model->dec[l], l ? H : E + H, H, "decoder", l, err));
    if (!model->src_embedding || !model->tgt_embedding || !model->attn_w_a || !model->attn_w_c ||
        !model->out_w || !model->out_b)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu model: a weight tensor is NULL");
cleanup:
    return status;
}

nmt_status nmt_cpu_state_create(const nmt_model *model, int32_t max_sentences, int32_t beam_size,
                                int32_t max_src, nmt_cpu_state **state_out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cpu_state *state = NULL;
    if (!state_out)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu model: state_out is NULL");
    *state_out = NULL;
    if (!model)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu model: model is NULL");
    if (max_sentences < 1 || beam_size < 1 || max_src < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu model: max_sentences %d, beam_size %d and max_src %d must be "
                             ">= 1", max_sentences, beam_size, max_src);
    if ((int64_t)max_sentences * beam_size > INT32_MAX / 4 || max_src > INT32_MAX / 4)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu model: max_sentences %d x beam_size %d or max_src %d too large",
                             max_sentences, beam_size, max_src);
    NMT_TRY(check_model(model, err));

    NMT_ALLOC(state, 1);
    state->model = model;
    state->max_sentences = max_sentences;
    state->beam_size = beam_size;
    state->max_src = max_src;
    state->max_rows = max_sentences * beam_size;
    state->emb = model->hp.emb_size;
    state->hidden = model->hp.hidden_size;
    state->half = state->hidden / 2;
    state->enc_layers = model->hp.enc_layers;
    state->dec_layers = model->hp.dec_layers;
    state->vocab = model->hp.tgt_vocab;

    size_t E = (size_t)state->emb, H = (size_t)state->hidden, S = (size_t)max_src;
    size_t rows = (size_t)state->max_rows, V = (size_t)state->vocab;
    NMT_ALLOC(state->src_emb, S * E);
    NMT_ALLOC(state->layer_out[0], S * H);
    NMT_ALLOC(state->layer_out[1], S * H);
    NMT_ALLOC(state->enc_gates_x, S * 2 * H);
    NMT_ALLOC(state->enc_gates_h, 2 * H);
    NMT_ALLOC(state->enc_c, H / 2);
    NMT_ALLOC(state->zeros, H);
    NMT_ALLOC(state->src_len, max_sentences);
    NMT_ALLOC(state->memory, (size_t)max_sentences * S * H);
    NMT_ALLOC(state->keys, (size_t)max_sentences * S * H);
    for (int b = 0; b < 2; b++) {
        for (int32_t l = 0; l < state->dec_layers; l++) {
            NMT_ALLOC(state->dec_h[b][l], rows * H);
            NMT_ALLOC(state->dec_c[b][l], rows * H);
        }
        NMT_ALLOC(state->feed[b], rows * H);
        NMT_ALLOC(state->row_sentence[b], rows);
    }
    NMT_ALLOC(state->tgt_emb, rows * E);
    NMT_ALLOC(state->dec_gates, rows * 4 * H);
    NMT_ALLOC(state->context, rows * H);
    NMT_ALLOC(state->attn, rows * S);
    NMT_ALLOC(state->logits, rows * V);
    *state_out = state;
    return NMT_STATUS_OK;

cleanup:
    nmt_cpu_state_free(state);
    return status;
}

void nmt_cpu_state_free(nmt_cpu_state *state)
{
    if (!state)
        return;
    free(state->src_emb);
    free(state->layer_out[0]);
    free(state->layer_out[1]);
    free(state->enc_gates_x);
    free(state->enc_gates_h);
    free(state->enc_c);
    free(state->zeros);
    free(state->src_len);
    free(state->memory);
    free(state->keys);
    for (int b = 0; b < 2; b++) {
        for (int32_t l = 0; l < NMT_MAX_LAYERS; l++) {
            free(state->dec_h[b][l]);
            free(state->dec_c[b][l]);
        }
        free(state->feed[b]);
        free(state->row_sentence[b]);
    }
    free(state->tgt_emb);
    free(state->dec_gates);
    free(state->context);
    free(state->attn);
    free(state->logits);
    free(state->lsh_codes);
    free(state->lsh_hits);
    free(state->cand);
    free(state->cand_count);
    free(state->cand_log_probs);
    free(state->group_first);
    free(state->recall_values);
    free(state->recall_ids);
    nmt_cpu_state_free_sparse(state);
    nmt_cpu_state_free_fast(state);
    free(state);
}

int32_t nmt_cpu_state_vocab(const nmt_cpu_state *state)
{
    return state ? state->vocab : 0;
}

const float *nmt_cpu_state_attention(const nmt_cpu_state *state, int32_t *stride)
{
    *stride = state->max_src;
    return state->attn;
}

const float *nmt_cpu_state_logits(const nmt_cpu_state *state, int32_t *ld)
{
    *ld = state->vocab;
    return state->has_shrink ? NULL : state->logits;
}
