/* sparse.c: the CPU engine's sparse matrices (nmt_cpu_state_set_sparse).
 * The model keeps each matrix its file stores sparse as one CSR
 * (format/model.h); the steps multiply some matrices as column slices (layer
 * 0's w_ih as [embedding | input feed], W_c as [context | h]), so each part
 * a step multiplies gets its own CSR here, with columns renumbered from the
 * slice's first. The SpMM then adds the same products in the same order as
 * nmt_cpu_linear on the dense matrix, whose other products are exact zeros:
 * sparse and dense runs give the same bits. */
#include "cpu_state.h"

#include "error.h"

#include <stdlib.h>

/* dst = columns [first, first + width) of src, renumbered from 0. */
static nmt_status slice_columns(const nmt_sparse_matrix *src, int32_t first, int32_t width,
                                nmt_cpu_csr *dst, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    int32_t nnz = 0;
    for (int32_t k = 0; k < src->nnz; k++)
        nnz += src->col_indices[k] >= first && src->col_indices[k] < first + width;
    dst->rows = src->rows;
    dst->cols = width;
    NMT_ALLOC(dst->row_offsets, (size_t)src->rows + 1);
    NMT_ALLOC(dst->col_indices, nnz > 0 ? (size_t)nnz : 1);
    NMT_ALLOC(dst->values, nnz > 0 ? (size_t)nnz : 1);
    nnz = 0;
    for (int32_t r = 0; r < src->rows; r++) {
        dst->row_offsets[r] = nnz;
        for (int32_t k = src->row_offsets[r]; k < src->row_offsets[r + 1]; k++) {
            int32_t c = src->col_indices[k];
            if (c >= first && c < first + width) {
                dst->col_indices[nnz] = c - first;
                dst->values[nnz++] = src->values[k];
            }
        }
    }
    dst->row_offsets[src->rows] = nnz;
cleanup:
    return status;
}

/* The parts of one matrix: widths[p] columns each, left to right. */
static nmt_status prepare(nmt_cpu_state *state, const float *dense, nmt_cpu_csr *parts,
                          const int32_t *widths, int n_parts, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const nmt_sparse_matrix *sp = nmt_model_sparse_of(state->model, dense);
    if (!sp)
        return NMT_STATUS_OK;
    for (int p = 0, first = 0; p < n_parts; first += widths[p], p++)
        NMT_TRY(slice_columns(sp, first, widths[p], &parts[p], err));
    state->n_sparse_used++;
cleanup:
    return status;
}

nmt_status nmt_cpu_state_set_sparse(nmt_cpu_state *state, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!state)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu sparse: state is NULL");
    const nmt_model *model = state->model;
    const int32_t E = state->emb, H = state->hidden;
    for (int32_t l = 0; l < state->dec_layers; l++) {
        const int32_t ih[2] = {l == 0 ? E : H, H}, whole = H;
        NMT_TRY(prepare(state, model->dec[l].w_ih, state->sp_dec_ih[l], ih, l == 0 ? 2 : 1, err));
        NMT_TRY(prepare(state, model->dec[l].w_hh, &state->sp_dec_hh[l], &whole, 1, err));
    }
    const int32_t halves[2] = {H, H}, cols_h = H; /* w_a [H, H], out_w [V, H] */
    NMT_TRY(prepare(state, model->attn_w_a, &state->sp_attn_a, &cols_h, 1, err));
    NMT_TRY(prepare(state, model->attn_w_c, state->sp_attn_c, halves, 2, err));
    NMT_TRY(prepare(state, model->out_w, &state->sp_out, &cols_h, 1, err));
cleanup:
    return status;
}

int32_t nmt_cpu_state_sparse_count(const nmt_cpu_state *state)
{
    return state ? state->n_sparse_used : 0;
}

static void csr_free(nmt_cpu_csr *c)
{
    free(c->row_offsets);
    free(c->col_indices);
    free(c->values);
}

void nmt_cpu_state_free_sparse(nmt_cpu_state *state)
{
    for (int32_t l = 0; l < NMT_MAX_LAYERS; l++) {
        csr_free(&state->sp_dec_ih[l][0]);
        csr_free(&state->sp_dec_ih[l][1]);
        csr_free(&state->sp_dec_hh[l]);
    }
    csr_free(&state->sp_attn_a);
    csr_free(&state->sp_attn_c[0]);
    csr_free(&state->sp_attn_c[1]);
    csr_free(&state->sp_out);
}
