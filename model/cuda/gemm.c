/* gemm.c: the network's GEMMs by precision (cuda_model_impl.h): the table
 * of the matrices they read (nmt_cuda_weight: fp32 always, the tf32x2 and
 * 16-bit forms once turned on), the 16-bit part (weights rounded once at
 * create, one activation scratch per GEMM site) and the dispatch.
 *
 * bf16/fp16: cuBLASLt with 16-bit inputs and CUBLAS_COMPUTE_32F, so every
 * product is exact and the sums are fp32; what changes against fp32 is only
 * the rounding of the inputs (kernels/linear.h). The output layer's GEMM
 * runs over W_out's words rounded up to NMT_CUDA_OUT_ROWS_ALIGN (zero rows
 * and bias past the vocabulary), where cuBLASLt has its fast Hopper
 * kernels. The encoder's recurrent GEMMs stay fp32: a few rows a step
 * against an H/2-wide matrix that lives in L2, where rounding the
 * activations would cost a launch per step and save no bandwidth.
 *
 * Shadows (bf16 / fp16): the decoder step's 16-bit GEMMs read inputs that
 * the step's own kernels wrote, and those kernels also store each value
 * rounded (nmt_half_out) into a shadow laid out as the GEMM's scratch
 * (x16[l]: layer l's [input; h]; attn_in16: [context; h_top]; feed16: the
 * feed), so the GEMM skips its rounding pass; the fp32 values stay for
 * every other reader. One rule decides where: a producer writes the shadow
 * of a GEMM's input when that GEMM runs on the 16-bit tensor cores
 * (nmt_cuda_model_gemm_reads_x16: not as SpMM, not on the few-row kernel,
 * which read fp32 and round in registers); the feed's also needs the tanh
 * pass (not the few-row W_c's fused tanh) and a dense output layer
 * (nmt_cuda_model_feed16). Elsewhere the site rounds as before. The
 * rounding is elementwise and the shadow has the scratch's layout, so the
 * GEMM's operands, plan and bits are the same either way. Host code. */
#include "cuda_model_impl.h"

#include "align.h"
#include "cuda_check.h"
#include "linear.h"
#include "pointwise.h"

#include <string.h>

static nmt_cuda_weight fp32_weight(const float *w, int32_t ld)
{
    nmt_cuda_weight weight;
    memset(&weight, 0, sizeof weight);
    weight.f32 = w;
    weight.ld = ld;
    return weight;
}

void nmt_cuda_gemm_weights_init(nmt_cuda_model *m)
{
    const nmt_device_weights *w = &m->w;
    nmt_cuda_gemm_weights *g = &m->gw;
    memset(g, 0, sizeof *g);
    for (int32_t l = 0; l < m->enc_layers; l++) {
        g->enc_ih[0][l] = fp32_weight(w->enc_fwd[l].w_ih, w->enc_fwd[l].input_size);
        g->enc_ih[1][l] = fp32_weight(w->enc_bwd[l].w_ih, w->enc_bwd[l].input_size);
    }
    g->attn_a = fp32_weight(w->attn_w_a, m->hidden);
    for (int32_t l = 0; l < m->dec_layers; l++)
        g->dec[l] = fp32_weight(w->dec_w[l], w->dec_ld[l]);
    g->attn_c = fp32_weight(w->attn_w_c, 2 * m->hidden);
    g->out = fp32_weight(w->out_w, m->hidden);
}

int nmt_cuda_gemm_weight_shapes(nmt_cuda_model *m, nmt_cuda_weight_shape *out)
{
    nmt_cuda_gemm_weights *g = &m->gw;
    const nmt_model *model = m->model;
    const int32_t H = m->hidden;
    int n = 0;
    for (int32_t l = 0; l < m->enc_layers; l++)
        for (int d = 0; d < 2; d++) {
            const nmt_lstm_weights *lw = d ? &model->enc_bwd[l] : &model->enc_fwd[l];
            out[n++] = (nmt_cuda_weight_shape){&g->enc_ih[d][l], 4 * lw->hidden_size,
                                                lw->input_size, NULL};
        }
    out[n++] = (nmt_cuda_weight_shape){&g->attn_a, H, H, NULL};
    for (int32_t l = 0; l < m->dec_layers; l++)
        out[n++] = (nmt_cuda_weight_shape){&g->dec[l], 4 * H,
                                  model->dec[l].input_size + model->dec[l].hidden_size, NULL};
    out[n++] = (nmt_cuda_weight_shape){&g->attn_c, H, 2 * H, NULL};
    out[n++] = (nmt_cuda_weight_shape){&g->out, m->vocab, H, m->w.out_b};
    return n;
}

int32_t nmt_cuda_decoder_weights_inexact(const nmt_cuda_model *m,
                                         int (*exact)(const float *values, size_t n))
{
    const nmt_model *model = m->model;
    const int32_t H = m->hidden;
    for (int32_t l = 0; l < m->dec_layers; l++) {
        const nmt_lstm_weights *d = &model->dec[l];
        const size_t g = 4 * (size_t)d->hidden_size;
        if (!exact(d->w_ih, g * (size_t)d->input_size) ||
            !exact(d->w_hh, g * (size_t)d->hidden_size))
            return l;
    }
    if (!exact(model->attn_w_c, (size_t)H * 2 * H) ||
        !exact(model->out_w, (size_t)m->vocab * H))
        return m->dec_layers;
    return -1;
}

/* The 16-bit arena: the weights (rows cols apart), then each site's
 * activation scratch, sized for the widest GEMM input of that site, then
 * the decoder step's shadows (below), each laid out as a scratch: [rows, k]
 * dense. */
static void layout_half(nmt_cuda_model *m, nmt_carver *c)
{
    const size_t h = 2; /* bytes of a bf16 or fp16 value */
    nmt_cuda_weight_shape shapes[NMT_CUDA_GEMM_WEIGHTS];
    const int n = nmt_cuda_gemm_weight_shapes(m, shapes);
    for (int i = 0; i < n; i++) {
        const nmt_cuda_weight_shape *s = &shapes[i];
        const int32_t rows16 =
            s->bias ? (int32_t)nmt_align_up((size_t)s->rows, NMT_CUDA_OUT_ROWS_ALIGN) : s->rows;
        void *p = nmt_carve(c, (size_t)rows16 * s->cols * h);
        float *bias16 = s->bias ? (float *)nmt_carve(c, (size_t)rows16 * sizeof(float)) : NULL;
        if (c->base) {
            s->weight->w16 = p;
            s->weight->ld16 = s->cols;
            s->weight->rows16 = rows16;
            s->weight->bias16 = bias16;
            s->weight->bias16_of = bias16 ? s->bias : NULL;
        }
    }
    const size_t R = (size_t)m->max_rows, H = (size_t)m->hidden;
    const size_t enc_rows = (size_t)m->max_src * (size_t)m->max_sentences;
    const size_t enc_k = (size_t)(m->emb > m->hidden ? m->emb : m->hidden);
    size_t dec_k = 2 * H; /* W_c's input; a layer's is [input; h] (m may hold sizes only) */
    for (int32_t l = 0; l < m->dec_layers; l++) {
        const size_t k = (size_t)m->model->dec[l].input_size + m->model->dec[l].hidden_size;
        dec_k = k > dec_k ? k : dec_k;
    }
    const size_t scratch[NMT_GEMM_SITES] = {enc_rows * enc_k, R * dec_k, R * H, R * H};
    for (int s = 0; s < NMT_GEMM_SITES; s++) {
        void *p = nmt_carve(c, scratch[s] * h);
        if (c->base)
            m->half16.scratch[s] = p;
    }
    nmt_cuda_half_part *p = &m->half16;
    for (int32_t l = 0; l < m->dec_layers; l++) {
        const size_t k = (size_t)m->model->dec[l].input_size + m->model->dec[l].hidden_size;
        p->x16[l] = (uint16_t *)nmt_carve(c, R * k * h);
    }
    p->attn_in16 = (uint16_t *)nmt_carve(c, R * 2 * H * h);
    p->feed16 = (uint16_t *)nmt_carve(c, R * H * h);
}

size_t nmt_cuda_half_part_bytes(nmt_cuda_model *m)
{
    return nmt_cuda_arena_bytes(layout_half, m);
}

nmt_status nmt_cuda_make_half_copies(nmt_cuda_model *m, void **arena,
                                     void (*layout)(nmt_cuda_model *, nmt_carver *),
                                     nmt_half_kind kind, const nmt_cuda_weight_shape *shapes,
                                     int n, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    cudaStream_t stream = (cudaStream_t)m->stream;
    NMT_TRY(nmt_cuda_arena_carve(arena, layout, m, err));
    for (int i = 0; i < n; i++) {
        const nmt_cuda_weight *w = shapes[i].weight;
        const size_t rows = (size_t)shapes[i].rows, cols = (size_t)shapes[i].cols;
        NMT_TRY(nmt_cuda_to_half(m->ctx, kind, shapes[i].rows, shapes[i].cols, w->f32, w->ld,
                                 (void *)w->w16, err));
        if (w->rows16 > shapes[i].rows) /* zeros in either 16-bit format */
            NMT_CUDA_TRY(cudaMemsetAsync((uint16_t *)w->w16 + rows * cols, 0,
                                         ((size_t)w->rows16 - rows) * cols * sizeof(uint16_t),
                                         stream));
        if (w->bias16) {
            NMT_CUDA_TRY(cudaMemcpyAsync((float *)w->bias16, w->bias16_of, rows * sizeof(float),
                                         cudaMemcpyDeviceToDevice, stream));
            if (w->rows16 > shapes[i].rows)
                NMT_CUDA_TRY(cudaMemsetAsync((float *)w->bias16 + rows, 0,
                                             ((size_t)w->rows16 - rows) * sizeof(float), stream));
        }
    }
    NMT_CUDA_TRY(cudaStreamSynchronize(stream));
    return NMT_STATUS_OK;
cleanup:
    cudaFree(*arena);
    *arena = NULL;
    for (int i = 0; i < n; i++) {
        shapes[i].weight->w16 = NULL;
        shapes[i].weight->bias16 = shapes[i].weight->bias16_of = NULL;
        shapes[i].weight->rows16 = 0;
    }
    return status;
}

nmt_status nmt_cuda_model_set_half(nmt_cuda_model *m, nmt_half_kind kind, nmt_error *err)
{
    nmt_cuda_weight_shape shapes[NMT_CUDA_GEMM_WEIGHTS];
    const int n = nmt_cuda_gemm_weight_shapes(m, shapes);
    const nmt_status status =
        nmt_cuda_make_half_copies(m, &m->half16.arena, layout_half, kind, shapes, n, err);
    if (status != NMT_STATUS_OK)
        return status;
    m->half16.kind = kind;
    m->half16.on = 1;
    return NMT_STATUS_OK;
}

/* How a GEMM runs: the dispatch of nmt_cuda_model_gemm_on, and so also
 * whether it reads a shadow (nmt_cuda_model_gemm_reads_x16). rows: the
 * bucketed rows. */
typedef enum gemm_path {
    GEMM_SPARSE,
    GEMM_SKINNY,
    GEMM_HALF,
    GEMM_TF32X2,
    GEMM_F32
} gemm_path;

static gemm_path path_of(const nmt_cuda_model *m, const nmt_cuda_ctx *ctx, nmt_gemm_site site,
                         int32_t rows, int32_t n, int32_t k, const nmt_cuda_weight *w)
{
    if (nmt_cuda_model_gemm_sparse(m, ctx, site, rows, n, k, w))
        return GEMM_SPARSE;
    if (nmt_cuda_model_skinny_runs(m, ctx, site, rows, n, k, w))
        return GEMM_SKINNY;
    if (m->half16.on && w->w16)
        return GEMM_HALF;
    if (m->tf32x2.on && w->w2 && rows >= NMT_TF32X2_MIN_ROWS)
        return GEMM_TF32X2;
    return GEMM_F32;
}

/* The rows a decoder-side GEMM computes: `rows` rounded up to a bucket (a
 * multiple of 16 up to 256 rows, of 64 above; never past max_rows). Beyond
 * batch 1 nearly every step has another row count, as sentences finish, and
 * cuBLAS chooses a kernel for each new shape on the host (tens of
 * microseconds for the 16-bit GEMMs: more than the step's GPU time at batch
 * 1,024); with buckets the shapes recur. The extra rows lie inside the
 * buffers (sized for max_rows) and past the live ones, which no one reads:
 * their outputs are discarded work, under a quarter of the live rows. */
static int32_t bucket_rows(const nmt_cuda_model *m, int32_t rows)
{
    if (rows <= 64)
        return rows;
    const int32_t b = rows <= 256 ? 16 : 64;
    const int64_t up = ((int64_t)rows + b - 1) / b * b;
    return up < m->max_rows ? (int32_t)up : m->max_rows;
}

static int32_t gemm_rows(const nmt_cuda_model *m, nmt_gemm_site site, int32_t rows)
{
    return site != NMT_GEMM_SITE_ENCODER && rows <= m->max_rows ? bucket_rows(m, rows) : rows;
}

int nmt_cuda_model_gemm_reads_x16(const nmt_cuda_model *m, nmt_gemm_site site, int32_t rows,
                                  int32_t n, int32_t k, const nmt_cuda_weight *w)
{
    return !m->half16.shadows_off &&
           path_of(m, m->ctx, site, gemm_rows(m, site, rows), n, k, w) == GEMM_HALF;
}

void nmt_cuda_model_set_shadows(nmt_cuda_model *m, int on)
{
    m->half16.shadows_off = !on;
}

nmt_status nmt_cuda_model_gemm_on(nmt_cuda_model *m, nmt_cuda_ctx *ctx, nmt_gemm_site site,
                                  int32_t rows, int32_t n, int32_t k, const float *x,
                                  int32_t ldx, const void *x16, const nmt_cuda_weight *w,
                                  const float *bias, float *y, int32_t ldy, nmt_error *err)
{
    rows = gemm_rows(m, site, rows);
    switch (path_of(m, ctx, site, rows, n, k, w)) {
    case GEMM_SPARSE:
        return nmt_cuda_spmm(rows, n, k, x, ldx, w->sparse, bias, 0, y, ldy, m->sparse.workspace,
                             m->sparse.workspace_bytes, m->stream, err);
    case GEMM_SKINNY:
        return nmt_cuda_model_gemm_skinny(m, ctx, rows, n, k, x, ldx, w, bias, 0, y, ldy, err);
    case GEMM_HALF: {
        /* W_out's width (all its words, or TOP's first n) rounded up, where
         * the padded outputs fit y's rows: the main stream's output layer
         * only (the side stream's prefix GEMM of the LSH lists shares its
         * rows' columns with the lists' kernel). */
        const int32_t n_pad = (int32_t)nmt_align_up((size_t)n, NMT_CUDA_OUT_ROWS_ALIGN);
        const int pad = site == NMT_GEMM_SITE_OUTPUT && n_pad > n && n_pad <= w->rows16 &&
                        n_pad <= ldy && bias && bias == w->bias16_of;
        if (x16) /* rounded by its producers: the scratch's values, no pass */
            return nmt_cuda_linear_half_rounded(ctx, m->half16.kind, rows, pad ? n_pad : n, k, x,
                                                ldx, x16, w->w16, w->ld16,
                                                pad ? w->bias16 : bias, y, ldy, err);
        return nmt_cuda_linear_half(ctx, m->half16.kind, rows, pad ? n_pad : n, k, x, ldx,
                                    w->w16, w->ld16, pad ? w->bias16 : bias, y, ldy,
                                    m->half16.scratch[site], err);
    }
    case GEMM_TF32X2:
        return nmt_cuda_linear_tf32x2(ctx, rows, n, k, x, ldx, w->w2, 2 * k, bias, y, ldy,
                                      m->tf32x2.split, err);
    case GEMM_F32: break;
    }
    return nmt_cuda_linear(ctx, rows, n, k, x, ldx, w->f32, w->ld, bias, 0, y, ldy, err);
}

nmt_status nmt_cuda_model_gemm_tanh(nmt_cuda_model *m, nmt_gemm_site site, int32_t rows,
                                    int32_t n, int32_t k, const float *x, int32_t ldx,
                                    const void *x16, const nmt_cuda_weight *w, float *y,
                                    int32_t ldy, void *y16, nmt_error *err)
{
    if (nmt_cuda_model_skinny_runs(m, m->ctx, site, rows, n, k, w)) {
        if (y16) /* the fused tanh writes no shadow: nmt_cuda_model_feed16 asks none of it */
            return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                                 "cuda gemm tanh: a shadow asked of the few-row kernel");
        return nmt_cuda_model_gemm_skinny(m, m->ctx, rows, n, k, x, ldx, w, NULL, 1, y, ldy, err);
    }
    const nmt_status status =
        nmt_cuda_model_gemm_on(m, m->ctx, site, rows, n, k, x, ldx, x16, w, NULL, y, ldy, err);
    if (status != NMT_STATUS_OK)
        return status;
    const nmt_half_out out16 = {(uint16_t *)y16, n, m->half16.kind};
    return nmt_cuda_tanh_rows(rows, n, y, ldy, y16 ? &out16 : NULL, m->stream, err);
}

nmt_status nmt_cuda_model_gemm(nmt_cuda_model *m, nmt_gemm_site site, int32_t rows, int32_t n,
                               int32_t k, const float *x, int32_t ldx, const void *x16,
                               const nmt_cuda_weight *w, const float *bias, float *y,
                               int32_t ldy, nmt_error *err)
{
    return nmt_cuda_model_gemm_on(m, m->ctx, site, rows, n, k, x, ldx, x16, w, bias, y, ldy,
                                  err);
}

nmt_status nmt_cuda_model_set_precision(nmt_cuda_model *m, nmt_precision precision,
                                        nmt_error *err)
{
    if (m->half16.on || m->tf32x2.on || m->skinny16.on)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda model: a GEMM precision is already set");
    switch (precision) {
    case NMT_PRECISION_FP32: return nmt_cuda_model_set_skinny16(m, err);
    case NMT_PRECISION_TF32X2: {
        if (nmt_cuda_ctx_batch_invariant(m->ctx))
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "precision tf32x2: its GEMMs switch to TF32 from %d rows, so a "
                                 "line's bits depend on its batch; turn batch invariance off to "
                                 "use it (or use fp32, bf16 or fp16)", NMT_TF32X2_MIN_ROWS);
        const nmt_status status = nmt_cuda_model_set_tf32x2(m, err);
        return status != NMT_STATUS_OK ? status : nmt_cuda_model_set_skinny16(m, err);
    }
    case NMT_PRECISION_BF16: return nmt_cuda_model_set_half(m, NMT_HALF_BF16, err);
    case NMT_PRECISION_FP16: return nmt_cuda_model_set_half(m, NMT_HALF_FP16, err);
    case NMT_PRECISION_AUTO: break; /* the engine resolves it (nmt_precision_for_model) */
    case NMT_PRECISION_INT8: break; /* the CPU's; the engine refuses it for CUDA */
    }
    return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda model: precision %d",
                         (int)precision);
}
