/* cuda_model.cu: creation and release of the CUDA model state
 * (model/cuda/cuda_model_impl.h). Checks the shapes model v1 computes with,
 * uploads the weights, and has each part carve its workspace for
 * (max_sentences, beam, max_src) out of its own device allocation, so
 * encode, step and output layer never allocate. */
#include "cuda_model_impl.h"

#include "align.h"
#include "cuda_check.h"

#include <stdlib.h>
#include <string.h>

void *nmt_carve(nmt_carver *c, size_t bytes)
{
    size_t at = nmt_align_up(c->used, 256);
    c->used = at + bytes;
    return c->base ? c->base + at : NULL;
}

size_t nmt_cuda_arena_bytes(void (*layout)(nmt_cuda_model *, nmt_carver *), nmt_cuda_model *m)
{
    nmt_carver c = {NULL, 0};
    layout(m, &c);
    return c.used > 0 ? c.used : 1;
}

nmt_status nmt_cuda_arena_carve(void **arena, void (*layout)(nmt_cuda_model *, nmt_carver *),
                                nmt_cuda_model *m, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_carver c = {NULL, 0};
    NMT_CUDA_TRY(cudaMalloc(arena, nmt_cuda_arena_bytes(layout, m)));
    c.base = (char *)*arena;
    layout(m, &c);
    return NMT_STATUS_OK;
cleanup:
    *arena = NULL;
    return status;
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

static nmt_status check_sizes(int32_t max_sentences, int32_t beam, int32_t max_src,
                              nmt_error *err)
{
    if (max_sentences < 1 || beam < 1 || beam > 256 || max_src < 1 ||
        (int64_t)max_sentences * beam > INT32_MAX / 4 || max_src > INT32_MAX / 4)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda model: max_sentences %d, beam %d (<= 256), max_src %d",
                             max_sentences, beam, max_src);
    return NMT_STATUS_OK;
}

static void set_sizes(nmt_cuda_model *m, const nmt_model *model, int32_t max_sentences,
                      int32_t beam, int32_t max_src)
{
    m->model = model;
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
}

nmt_status nmt_cuda_model_device_bytes(const nmt_model *model, int32_t max_sentences,
                                       int32_t beam, int32_t max_src,
                                       nmt_precision precision, const nmt_shrink *shrink,
                                       int fused_output, size_t *bytes, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_TRY(check_sizes(max_sentences, beam, max_src, err));
    NMT_TRY(check_shapes(model, err));
    {
        nmt_cuda_model sizes; /* the sizes only: the layouts measure, nothing is carved */
        memset(&sizes, 0, sizeof sizes);
        set_sizes(&sizes, model, max_sentences, beam, max_src);
        const size_t parts[] = {nmt_device_weights_bytes(model),
                                nmt_cuda_encoder_part_bytes(&sizes),
                                nmt_cuda_decoder_part_bytes(&sizes),
                                nmt_cuda_output_part_bytes(&sizes),
                                precision == NMT_PRECISION_TF32X2
                                    ? nmt_cuda_tf32x2_part_bytes(&sizes)
                                : precision == NMT_PRECISION_BF16 ||
                                        precision == NMT_PRECISION_FP16
                                    ? nmt_cuda_half_part_bytes(&sizes)
                                    : 0,
                                /* fp32, tf32x2: counted whether or not the
                                 * weights turn out exact in fp16 */
                                precision == NMT_PRECISION_FP32 ||
                                        precision == NMT_PRECISION_TF32X2
                                    ? nmt_cuda_skinny16_part_bytes(&sizes)
                                    : 0,
                                nmt_cuda_shrink_part_bytes(&sizes, shrink),
                                fused_output && (precision == NMT_PRECISION_BF16 ||
                                                 precision == NMT_PRECISION_FP16)
                                    ? nmt_cuda_output_fused_bytes(&sizes)
                                    : 0};
        *bytes = 0;
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            if (parts[i] == SIZE_MAX || parts[i] > SIZE_MAX - *bytes)
                return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                     "cuda model: cannot size part %zu for batch %d, beam %d",
                                     i, max_sentences, beam);
            *bytes += parts[i];
        }
    }
cleanup:
    return status;
}

nmt_status nmt_cuda_model_create(const nmt_model *model, nmt_cuda_ctx *ctx,
                                 int32_t max_sentences, int32_t beam, int32_t max_src,
                                 nmt_cuda_model **out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_model *m = NULL;
    *out = NULL;
    NMT_TRY(check_sizes(max_sentences, beam, max_src, err));
    NMT_TRY(check_shapes(model, err));
    m = (nmt_cuda_model *)calloc(1, sizeof *m);
    if (!m)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "cuda model: out of memory");
    set_sizes(m, model, max_sentences, beam, max_src);
    m->ctx = ctx;
    m->stream = nmt_cuda_ctx_stream(ctx);
    NMT_TRY(nmt_device_weights_upload(model, &m->w, err));
    nmt_cuda_gemm_weights_init(m);
    NMT_TRY(nmt_cuda_encoder_part_create(m, err));
    NMT_TRY(nmt_cuda_decoder_part_create(m, err));
    NMT_TRY(nmt_cuda_output_part_create(m, err));
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
    nmt_cuda_output_part_free_shrink(m); /* first: its side stream may still read the weights */
    nmt_cuda_ctx_free(m->enc.side_ctx);  /* the same for the encoder's */
    nmt_cuda_side_free(&m->dec.side);    /* and the decoder's */
    nmt_device_weights_free(&m->w);
    nmt_cuda_sparse_part_free(m);
    void *arenas[] = {m->out.fused_workspace, m->enc.arena, m->dec.arena, m->out.arena,
                      m->probe.arena,   m->tf32x2.arena, m->half16.arena,
                      m->skinny16.arena, m->dec.attn_weights};
    for (size_t i = 0; i < sizeof arenas / sizeof arenas[0]; i++)
        if (arenas[i])
            cudaFree(arenas[i]);
    free(m);
}

void *nmt_cuda_model_stream(const nmt_cuda_model *m)
{
    return m->stream;
}

int32_t nmt_cuda_model_vocab(const nmt_cuda_model *m)
{
    return m->vocab;
}
