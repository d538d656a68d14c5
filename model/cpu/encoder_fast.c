/* encoder_fast.c: the CPU encoder of the fast path (nmt_cpu_state_set_fast),
 * the reference's arithmetic (encoder.c) batched over the sentences: the
 * sentences' positions are packed one after another, each layer direction's
 * input projection w_ih x + b_ih is one GEMM over all of them, and each step
 * of its recurrence one GEMM over the sentences still that long (a
 * sentence's step t reads its own position: t forward, len - 1 - t
 * backward), so no padding enters a recurrence. A row's product has the same
 * bits in any GEMM (kernels/linear_fixed.h; kernels/linear_blas.h where its
 * probe says so), so a sentence's results do not depend on its batch. */
#include "cpu_state.h"

#include "error.h"
#include "fp32_ops.h"
#include "half.h"
#include "lstm_cell.h"
#include "nhot.h"

#include <stdlib.h>
#include <string.h>

/* The fp16 copy of a matrix of count weights, when each is exactly an fp16
 * value; else none (the products read the fp32 weights). */
static nmt_status add_half_copy(nmt_cpu_state *state, const float *w, size_t count,
                                nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    uint16_t *w16 = NULL;
    NMT_ALLOC(w16, count);
    for (size_t i = 0; i < count; i++) {
        w16[i] = nmt_f32_to_f16(w[i]);
        if (nmt_f16_to_f32(w16[i]) != w[i]) {
            free(w16);
            return NMT_STATUS_OK;
        }
    }
    state->half_copies[state->n_half_copies++] =
        (nmt_cpu_half_copy){.w = w, .count = count, .w16 = w16};
cleanup:
    return status;
}

/* The int8 form of the slice (w, k) of n rows ldw apart. */
static nmt_status add_int8_slice(nmt_cpu_state *state, const float *w, int32_t n, int32_t k,
                                 int32_t ldw, nmt_error *err)
{
    nmt_cpu_int8_slice *s = &state->int8_slices[state->n_int8_slices];
    nmt_status status = nmt_int8_matrix_make(w, n, k, ldw, &s->q, err);
    if (status == NMT_STATUS_OK) {
        s->w = w, s->k = k;
        state->n_int8_slices++;
    }
    return status;
}

/* Every slice a decoder step multiplies (decoder_step.c, output_layer.c). */
static nmt_status add_int8_slices(nmt_cpu_state *state, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const nmt_model *model = state->model;
    const int32_t E = state->emb, H = state->hidden, G = 4 * H;
    for (int32_t l = 0; l < state->dec_layers; l++) {
        const nmt_lstm_weights *lstm = &model->dec[l];
        if (l == 0) {
            NMT_TRY(add_int8_slice(state, lstm->w_ih, G, E, E + H, err));
            NMT_TRY(add_int8_slice(state, lstm->w_ih + E, G, H, E + H, err));
        } else {
            NMT_TRY(add_int8_slice(state, lstm->w_ih, G, H, H, err));
        }
        NMT_TRY(add_int8_slice(state, lstm->w_hh, G, H, H, err));
    }
    NMT_TRY(add_int8_slice(state, model->attn_w_c, H, H, 2 * H, err));
    NMT_TRY(add_int8_slice(state, model->attn_w_c + H, H, H, 2 * H, err));
    NMT_TRY(add_int8_slice(state, model->out_w, state->vocab, H, H, err));
    const int32_t k = E > H ? E : H;
    state->ldq = (k + NMT_INT8_K_ALIGN - 1) / NMT_INT8_K_ALIGN * NMT_INT8_K_ALIGN;
    NMT_ALLOC(state->xq, (size_t)state->max_rows * state->ldq);
    NMT_ALLOC(state->x_scale, state->max_rows);
cleanup:
    return status;
}

nmt_status nmt_cpu_state_set_fast(nmt_cpu_state *state, const nmt_cpu_fast *fast,
                                  nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!state || !fast)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu fast: NULL argument");
    if (fast->blas && !nmt_cpu_blas_available())
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "cpu kernels blas: the library was built without a BLAS (install "
                             "libopenblas-dev and rebuild)");
    if (!fast->blas && fast->threads < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu fast: %d threads",
                             fast->threads);
    if (!fast->blas)
        NMT_TRY(nmt_cpu_isa_check(fast->isa, err));
    if (fast->int8 && fast->blas)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "precision int8 runs on the fast kernels, not blas");
    if (fast->int8 && !nmt_cpu_int8_supported(fast->isa))
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "precision int8: its products need AVX-512 VNNI or AVX2, %s",
                             fast->isa == NMT_CPU_ISA_GENERIC ? "and --cpu-isa generic runs neither"
                                                              : "which this CPU or build lacks");
    const int32_t E = state->emb, H = state->hidden, half = state->half;
    const size_t packed = (size_t)state->max_sentences * state->max_src;
    if (fast->blas) {
        /* The largest scratch of every product the state makes. */
        const int32_t V = state->vocab;
        const int32_t shapes[][2] = {{4 * half, E}, {4 * half, H}, {4 * half, half},
                                     {4 * H, E},    {4 * H, H},    {H, H},
                                     {V, H}};
        size_t scratch = 0;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const size_t need = nmt_cpu_linear_blas_scratch(shapes[i][0], shapes[i][1]);
            scratch = need > scratch ? need : scratch;
        }
        NMT_ALLOC(state->blas_scratch, scratch);
    } else {
        state->gemm.isa = fast->isa == NMT_CPU_ISA_AUTO ? nmt_cpu_isa_best() : fast->isa;
        if (fast->threads > 1)
            NMT_TRY(nmt_thread_pool_create(fast->threads, &state->gemm.pool, err));
        const nmt_model *model = state->model;
        if (fast->int8)
            NMT_TRY(add_int8_slices(state, err));
        for (int32_t l = 0; !fast->int8 && model->weights_fp16 && l < state->dec_layers; l++) {
            const nmt_lstm_weights *lstm = &model->dec[l];
            NMT_TRY(add_half_copy(state, lstm->w_ih, (size_t)4 * H * lstm->input_size, err));
            NMT_TRY(add_half_copy(state, lstm->w_hh, (size_t)4 * H * H, err));
        }
        if (!fast->int8 && model->weights_fp16) {
            NMT_TRY(add_half_copy(state, model->attn_w_c, (size_t)2 * H * H, err));
            NMT_TRY(add_half_copy(state, model->out_w, (size_t)state->vocab * H, err));
        }
        /* The encoder's recurrent matrices: a step of a few sentences reads
         * all of them for a row or a few (2 MB in fp16 for the shipped model). */
        for (int32_t l = 0; model->weights_fp16 && l < state->enc_layers; l++) {
            NMT_TRY(add_half_copy(state, model->enc_fwd[l].w_hh, (size_t)4 * half * half, err));
            NMT_TRY(add_half_copy(state, model->enc_bwd[l].w_hh, (size_t)4 * half * half, err));
        }
    }
    NMT_ALLOC(state->enc_first, state->max_sentences);
    NMT_ALLOC(state->enc_in, packed * E);
    NMT_ALLOC(state->enc_out[0], packed * H);
    NMT_ALLOC(state->enc_out[1], packed * H);
    NMT_ALLOC(state->enc_gates_all, packed * 4 * half);
    NMT_ALLOC(state->enc_h_prev, (size_t)state->max_sentences * half);
    NMT_ALLOC(state->enc_gates_rows, (size_t)state->max_sentences * 4 * half);
    NMT_ALLOC(state->enc_c_rows, (size_t)state->max_sentences * half);
    if (!fast->blas) {
        NMT_ALLOC(state->parent_rows, state->max_rows);
        NMT_ALLOC(state->row_parent, state->max_rows);
        NMT_ALLOC(state->parent_slot, state->max_rows);
        NMT_ALLOC(state->step_tokens, state->max_rows);
        NMT_ALLOC(state->row_token, state->max_rows);
        NMT_ALLOC(state->token_slot, state->vocab);
        for (int32_t v = 0; v < state->vocab; v++)
            state->token_slot[v] = -1;
        NMT_ALLOC(state->shared_gates, (size_t)state->max_rows * 4 * H);
    }
    state->n_parents = 0;
    state->fast = 1;
    state->fast_blas = fast->blas != 0;
    return NMT_STATUS_OK;
cleanup:
    nmt_cpu_state_free_fast(state);
    return status;
}

void nmt_cpu_state_free_fast(nmt_cpu_state *state)
{
    state->fast = state->fast_blas = 0;
    nmt_thread_pool_free(state->gemm.pool);
    state->gemm.pool = NULL;
    for (int32_t i = 0; i < state->n_half_copies; i++)
        free(state->half_copies[i].w16);
    state->n_half_copies = 0;
    for (int32_t i = 0; i < state->n_int8_slices; i++)
        nmt_int8_matrix_free(&state->int8_slices[i].q);
    state->n_int8_slices = 0;
    free(state->xq);
    free(state->x_scale);
    state->xq = NULL;
    state->x_scale = NULL;
    free(state->blas_scratch);
    free(state->enc_first);
    free(state->enc_in);
    free(state->enc_out[0]);
    free(state->enc_out[1]);
    free(state->enc_gates_all);
    free(state->enc_h_prev);
    free(state->enc_gates_rows);
    free(state->enc_c_rows);
    state->blas_scratch = state->enc_in = state->enc_gates_all = NULL;
    state->enc_out[0] = state->enc_out[1] = NULL;
    state->enc_h_prev = state->enc_gates_rows = state->enc_c_rows = NULL;
    state->enc_first = NULL;
    free(state->parent_rows);
    free(state->row_parent);
    free(state->parent_slot);
    free(state->step_tokens);
    free(state->row_token);
    free(state->token_slot);
    free(state->shared_gates);
    state->parent_rows = state->row_parent = state->parent_slot = NULL;
    state->step_tokens = state->row_token = state->token_slot = NULL;
    state->shared_gates = NULL;
    state->n_parents = 0;
}

/* One direction of one layer over every sentence: h_t into column `col` of
 * out's packed rows; the final c of sentence s left in enc_c_rows[s]. */
static void run_direction(nmt_cpu_state *state, const nmt_lstm_weights *lstm, const float *in,
                          int32_t in_dim, int32_t n, const int32_t *len, int32_t total,
                          int reverse, float *out, int32_t col)
{
    const int32_t H = state->hidden, half = state->half, G = 4 * half;
    const int32_t *first = state->enc_first;
    float *gates_x = state->enc_gates_all;
    nmt_cpu_matmul(state, NULL, total, G, in_dim, in, in_dim, lstm->w_ih, in_dim, lstm->b_ih, 0,
                   gates_x, G);
    memset(state->enc_c_rows, 0, sizeof(float) * (size_t)n * half);
    int32_t max_len = 0;
    for (int32_t s = 0; s < n; s++)
        max_len = len[s] > max_len ? len[s] : max_len;
    /* sentence[i]: the i-th sentence at least step + 1 long. */
    int32_t sentence[n];
    for (int32_t step = 0; step < max_len; step++) {
        int32_t rows = 0;
        for (int32_t s = 0; s < n; s++)
            if (len[s] > step)
                sentence[rows++] = s;
        for (int32_t i = 0; i < rows; i++) {
            const int32_t s = sentence[i];
            const int32_t t_prev = reverse ? len[s] - step : step - 1;
            float *h_prev = state->enc_h_prev + (size_t)i * half;
            if (step == 0)
                memset(h_prev, 0, sizeof(float) * (size_t)half);
            else
                memcpy(h_prev, out + (int64_t)(first[s] + t_prev) * H + col,
                       sizeof(float) * (size_t)half);
        }
        nmt_cpu_matmul(state, NULL, rows, G, half, state->enc_h_prev, half, lstm->w_hh, half,
                       lstm->b_hh, 0, state->enc_gates_rows, G);
        for (int32_t i = 0; i < rows; i++) {
            const int32_t s = sentence[i];
            const int64_t row = first[s] + (reverse ? len[s] - 1 - step : step);
            float *c = state->enc_c_rows + (size_t)s * half;
            nmt_cpu_fast_lstm_cell(1, half, gates_x + row * G, G,
                                   state->enc_gates_rows + (size_t)i * G, NULL, c, c,
                                   out + row * H + col, H, NULL, 0);
        }
    }
}

/* The decoder's initial state of layer l from the encoder's finals, as
 * encoder.c sets it: [fwd after x_S; bwd after x_1]. */
static void set_initial(nmt_cpu_state *state, int32_t l, const float *out, int32_t n,
                        const int32_t *len, int backward)
{
    const int32_t H = state->hidden, half = state->half, col = backward ? half : 0;
    for (int32_t s = 0; s < n; s++) {
        const int64_t row = state->enc_first[s] + (backward ? 0 : len[s] - 1);
        float *dec_h = state->dec_h[state->cur][l] + (int64_t)s * H + col;
        float *dec_c = state->dec_c[state->cur][l] + (int64_t)s * H + col;
        memcpy(dec_h, out + row * H + col, sizeof(float) * (size_t)half);
        memcpy(dec_c, state->enc_c_rows + (size_t)s * half, sizeof(float) * (size_t)half);
    }
}

nmt_status nmt_cpu_encode_fast(nmt_cpu_state *state, const nmt_source_batch *batch,
                               nmt_error *err)
{
    const nmt_model *model = state->model;
    const int32_t E = state->emb, H = state->hidden, half = state->half;
    const int32_t n = batch->n_sentences, *len = batch->src_len, max_src = state->max_src;
    int32_t total = 0;
    for (int32_t s = 0; s < n; s++) {
        const int32_t first = batch->token_offset[s];
        state->enc_first[s] = total;
        nmt_status status = nmt_cpu_nhot_lookup(len[s], E, model->hp.src_rows,
                                                batch->row_ptr + first, batch->cols,
                                                batch->values, model->src_embedding,
                                                state->enc_in + (size_t)total * E, err);
        if (status != NMT_STATUS_OK) {
            nmt_error_prefix(err, "sentence %d: ", s);
            return status;
        }
        total += len[s];
    }
    const float *in = state->enc_in;
    int32_t in_dim = E;
    float *out = NULL;
    for (int32_t l = 0; l < state->enc_layers; l++) {
        out = state->enc_out[l % 2];
        run_direction(state, &model->enc_fwd[l], in, in_dim, n, len, total, 0, out, 0);
        if (model->hp.dec_init_from_encoder)
            set_initial(state, l, out, n, len, 0);
        run_direction(state, &model->enc_bwd[l], in, in_dim, n, len, total, 1, out, half);
        if (model->hp.dec_init_from_encoder)
            set_initial(state, l, out, n, len, 1);
        in = out;
        in_dim = H;
    }
    for (int32_t s = 0; s < n; s++) {
        float *memory = state->memory + (int64_t)s * max_src * H;
        float *keys = state->keys + (int64_t)s * max_src * H;
        const int32_t S = len[s];
        memcpy(memory, out + (int64_t)state->enc_first[s] * H, sizeof(float) * (size_t)S * H);
        memset(memory + (int64_t)S * H, 0, sizeof(float) * (size_t)(max_src - S) * H);
        nmt_cpu_matmul(state, &state->sp_attn_a, S, H, H, memory, H, model->attn_w_a, H, NULL,
                       0, keys, H);
        memset(keys + (int64_t)S * H, 0, sizeof(float) * (size_t)(max_src - S) * H);
    }
    return NMT_STATUS_OK;
}
