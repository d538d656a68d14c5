/* cuda_model.cu: creation and release of the CUDA model state
 * (model/cuda/cuda_model.h). Checks the shapes model v1 computes with,
 * uploads the weights, and carves every workspace for (max_sentences, beam,
 * max_src) out of one device allocation, so encode, step and reorder never
 * allocate. */
#include "cuda_model.h"

#include "align.h"
#include "cuda_check.h"
#include "softmax_topk.h"

#include <stdlib.h>
#include <string.h>

/* Bump allocator over the arena: pass 1 (base NULL) only measures. */
typedef struct carver {
    char *base;
    size_t used;
} carver;

static void *carve(carver *c, size_t bytes)
{
    size_t at = nmt_align_up(c->used, 256);
    c->used = at + bytes;
    return c->base ? c->base + at : NULL;
}

static void carve_all(nmt_cuda_model *m, carver *c)
{
    const size_t N = (size_t)m->max_sentences, S = (size_t)m->max_src;
    const size_t E = (size_t)m->emb, H = (size_t)m->hidden, half = (size_t)m->half;
    const size_t R = (size_t)m->max_rows, V = (size_t)m->vocab, K = 2 * (size_t)m->beam;
    const size_t f = sizeof(float), i = sizeof(int32_t);
    m->enc_x = (float *)carve(c, S * N * E * f);
    m->enc_out[0] = (float *)carve(c, S * N * H * f);
    m->enc_out[1] = (float *)carve(c, S * N * H * f);
    m->enc_gates_x = (float *)carve(c, S * N * 4 * half * f);
    m->enc_gates_h = (float *)carve(c, N * 4 * half * f);
    m->enc_c[0] = (float *)carve(c, N * half * f);
    m->enc_c[1] = (float *)carve(c, N * half * f);
    m->memory = (float *)carve(c, N * S * H * f);
    m->keys = (float *)carve(c, N * S * H * f);
    for (int32_t l = 0; l < m->dec_layers; l++)
        m->dec_x_ld[l] = (int32_t)(l ? 2 * H : E + 2 * H);
    m->feed_ld = m->dec_x_ld[0];
    for (int b = 0; b < 2; b++) {
        for (int32_t l = 0; l < m->dec_layers; l++) {
            m->dec_x[b][l] = (float *)carve(c, R * (size_t)m->dec_x_ld[l] * f);
            m->dec_c[b][l] = (float *)carve(c, R * H * f);
            /* NULL while measuring: offsets from a NULL base mean nothing. */
            m->dec_h[b][l] = m->dec_x[b][l] ? m->dec_x[b][l] + (l ? H : E + H) : NULL;
        }
        m->feed[b] = m->dec_x[b][0] ? m->dec_x[b][0] + E : NULL;
    }
    m->attn_in = (float *)carve(c, R * 2 * H * f);
    m->gates = (float *)carve(c, R * 4 * H * f);
    m->logits = (float *)carve(c, R * V * f);
    m->top_values = (float *)carve(c, R * K * f);
    m->top_ids = (int32_t *)carve(c, R * K * i);
    m->lse = (float *)carve(c, R * f);
    m->topk_workspace_bytes = nmt_cuda_softmax_topk_workspace_size((int32_t)R, (int32_t)V,
                                                                   (int32_t)K);
    m->topk_workspace = carve(c, m->topk_workspace_bytes);
    m->attn_argmax = (int32_t *)carve(c, R * i);
    m->row_tokens = (int32_t *)carve(c, R * i);
    m->row_sentence = (int32_t *)carve(c, R * i);
    m->row_parent = (int32_t *)carve(c, R * i);
    m->row_live = (int32_t *)carve(c, R * i);
}

static nmt_status check_shapes(const nmt_model *model, nmt_error *err)
{
    const nmt_hparams *hp = &model->hp;
    const int32_t E = hp->emb_size, H = hp->hidden_size;
    if (E < 1 || H < 2 || H % 2 || hp->tgt_vocab < 4 || hp->src_rows < 1 ||
        hp->enc_layers < 1 || hp->enc_layers > NMT_MAX_LAYERS || hp->dec_layers < 1 ||
        hp->dec_layers > NMT_MAX_LAYERS ||
        (hp->dec_init_from_encoder && hp->enc_layers != hp->dec_layers))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda model: unsupported sizes (E %d, H %d, V %d, layers %d/%d)", E,
                             H, hp->tgt_vocab, hp->enc_layers, hp->dec_layers);
    for (int32_t l = 0; l < hp->enc_layers; l++)
        for (int d = 0; d < 2; d++) {
            const nmt_lstm_weights *w = d ? &model->enc_bwd[l] : &model->enc_fwd[l];
            if (w->input_size != (l ? H : E) || w->hidden_size != H / 2)
                return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                     "cuda model: encoder layer %d is %d -> %d", l,
                                     w->input_size, w->hidden_size);
        }
    for (int32_t l = 0; l < hp->dec_layers; l++)
        if (model->dec[l].input_size != (l ? H : E + H) || model->dec[l].hidden_size != H)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "cuda model: decoder layer %d is %d -> %d", l,
                                 model->dec[l].input_size, model->dec[l].hidden_size);
    return NMT_STATUS_OK;
}

nmt_status nmt_cuda_model_create(const nmt_model *model, nmt_cuda_ctx *ctx,
                                 int32_t max_sentences, int32_t beam, int32_t max_src,
                                 nmt_cuda_model **out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_model *m = NULL;
    carver c = {NULL, 0};
    *out = NULL;
    if (max_sentences < 1 || beam < 1 || beam > 256 || max_src < 1 ||
        (int64_t)max_sentences * beam > INT32_MAX / 4 || max_src > INT32_MAX / 4)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda model: max_sentences %d, beam %d (<= 256), max_src %d",
                             max_sentences, beam, max_src);
    NMT_TRY(check_shapes(model, err));
    m = (nmt_cuda_model *)calloc(1, sizeof *m);
    if (!m)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "cuda model: out of memory");
    m->model = model;
    m->ctx = ctx;
    m->stream = nmt_cuda_ctx_stream(ctx);
    m->max_sentences = max_sentences;
    m->beam = beam;
    m->max_src = max_src;
    m->max_rows = max_sentences * beam;
    m->emb = model->hp.emb_size;
    m->hidden = model->hp.hidden_size;
    m->half = m->hidden / 2;
    m->enc_layers = model->hp.enc_layers;
    m->dec_layers = model->hp.dec_layers;
    m->vocab = model->hp.tgt_vocab;
    NMT_TRY(nmt_device_weights_upload(model, &m->w, err));
    carve_all(m, &c);
    if (m->topk_workspace_bytes == SIZE_MAX) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_CUDA, "cuda model: cannot size the top-K "
                               "workspace (V %d, K %d)", m->vocab, 2 * beam);
        goto cleanup;
    }
    NMT_CUDA_TRY(cudaMalloc(&m->arena, c.used));
    c.base = (char *)m->arena;
    c.used = 0;
    carve_all(m, &c);
    /* Once: every softmax_topk call leaves its counters at zero again. */
    NMT_CUDA_TRY(cudaMemsetAsync(m->topk_workspace, 0, m->topk_workspace_bytes,
                                 (cudaStream_t)m->stream));
    *out = m;
    return NMT_STATUS_OK;
cleanup:
    nmt_cuda_model_free(m);
    return status;
}

void nmt_cuda_model_free(nmt_cuda_model *m)
{
    if (!m)
        return;
    nmt_cuda_model_free_shrink(m); /* first: its side stream may still read the weights */
    nmt_device_weights_free(&m->w);
    if (m->arena)
        cudaFree(m->arena);
    if (m->tf32x2_arena)
        cudaFree(m->tf32x2_arena);
    free(m);
}
