/* gemm_skinny.c: the network's few-row GEMMs (a batch-1 step at beam 5:
 * up to NMT_SKINNY_MAX_ROWS rows) on the skinny kernel (kernels/linear.h),
 * and the fp16 copies it reads at fp32 and tf32x2.
 *
 * A decoder step at batch 1 reads every weight of the decoder and the
 * output layer for 5 rows of work: the step's time is those bytes. The
 * shipped model's are 30 MB in fp32, more than the part of the H100's
 * 50 MB L2 that keeps them from one step to the next, so every step would
 * read them from memory; an fp16 model file's weights are exact in fp16,
 * and the same product from an fp16 copy (widened in registers, the same
 * fp32 products and sums) is half the bytes and stays in L2. The copy is
 * made only where every one of those weights is exact in fp16; otherwise
 * the kernel reads the fp32 weights. At bf16 / fp16 the kernel reads the
 * precision's own 16-bit weights with the activations rounded as the
 * tensor cores round them (gemm.c's 16-bit part).
 * Batch-invariant (the context's flag, the default): at fp32 the same
 * operands go to the chain kernel (nmt_cuda_linear_chain), whose sums are
 * the many-row GEMMs'; at bf16 / fp16 the few rows take cuBLASLt like the
 * many, and the carried layer 0 is off (decoder_step.cu). Host code. */
#include "cuda_model_impl.h"

#include "cuda_check.h"
#include "linear.h"
#include "lstm_cell.h"

#include <string.h>

/* The decoder-side matrices the skinny kernel reads (the decoder layers,
 * W_c, W_out: the table's last dec_layers + 2) into out; their count. */
static int skinny_matrices(nmt_cuda_model *m, nmt_cuda_weight_shape *out)
{
    nmt_cuda_weight_shape all[NMT_CUDA_GEMM_WEIGHTS];
    const int n_all = nmt_cuda_gemm_weight_shapes(m, all), n = m->dec_layers + 2;
    memcpy(out, all + (n_all - n), (size_t)n * sizeof *out);
    return n;
}

static void layout_skinny16(nmt_cuda_model *m, nmt_carver *c)
{
    nmt_cuda_weight_shape mats[NMT_MAX_LAYERS + 2];
    const int n = skinny_matrices(m, mats);
    for (int i = 0; i < n; i++) {
        void *p = nmt_carve(c, (size_t)mats[i].rows * mats[i].cols * sizeof(uint16_t));
        if (c->base) {
            mats[i].weight->w16 = p;
            mats[i].weight->ld16 = mats[i].cols;
            mats[i].weight->rows16 = mats[i].rows;
            mats[i].weight->bias16 = mats[i].weight->bias16_of = NULL;
        }
    }
}

size_t nmt_cuda_skinny16_part_bytes(nmt_cuda_model *m)
{
    return nmt_cuda_arena_bytes(layout_skinny16, m);
}

nmt_status nmt_cuda_model_set_skinny16(nmt_cuda_model *m, nmt_error *err)
{
    if (nmt_cuda_decoder_weights_inexact(m, nmt_fp16_exact) >= 0)
        return NMT_STATUS_OK; /* the kernel reads fp32 */
    nmt_cuda_weight_shape mats[NMT_MAX_LAYERS + 2];
    const int n = skinny_matrices(m, mats);
    /* exact values: the rounding changes none */
    const nmt_status status = nmt_cuda_make_half_copies(m, &m->skinny16.arena, layout_skinny16,
                                                        NMT_HALF_FP16, mats, n, err);
    if (status != NMT_STATUS_OK)
        return status;
    m->skinny16.on = 1;
    return NMT_STATUS_OK;
}

int nmt_cuda_model_skinny_runs(const nmt_cuda_model *m, const nmt_cuda_ctx *ctx,
                               nmt_gemm_site site, int32_t rows, int32_t n, int32_t k,
                               const nmt_cuda_weight *w)
{
    /* Batch-invariant 16-bit: cuBLASLt at every row count (its bits are the
     * chain kernel's, and it is the faster of the two at a few rows). */
    const int invariant_half = nmt_cuda_ctx_batch_invariant(ctx) && m->half16.on;
    return !invariant_half && !nmt_cuda_model_gemm_sparse(m, ctx, site, rows, n, k, w) &&
           nmt_linear_skinny_fits(rows, k) && w->f32;
}

/* What the skinny kernels read for w: the precision's 16-bit weights with
 * the activations rounded as its tensor cores round them, else the fp16
 * copy, else the fp32 weights, both with fp32 activations. */
typedef struct skinny_operand {
    const void *w;
    int32_t ld;
    nmt_weight_type type;
    nmt_skinny_x x_round;
} skinny_operand;

static skinny_operand operand_of(const nmt_cuda_model *m, const nmt_cuda_weight *w)
{
    if (m->half16.on && w->w16) {
        const int bf16 = m->half16.kind == NMT_HALF_BF16;
        return (skinny_operand){w->w16, w->ld16, bf16 ? NMT_WEIGHT_BF16 : NMT_WEIGHT_FP16,
                                bf16 ? NMT_SKINNY_X_BF16 : NMT_SKINNY_X_FP16};
    }
    if (m->skinny16.on && w->w16)
        return (skinny_operand){w->w16, w->ld16, NMT_WEIGHT_FP16, NMT_SKINNY_X_F32};
    return (skinny_operand){w->f32, w->ld, NMT_WEIGHT_F32, NMT_SKINNY_X_F32};
}

nmt_status nmt_cuda_model_gemm_skinny(nmt_cuda_model *m, nmt_cuda_ctx *ctx, int32_t rows,
                                      int32_t n, int32_t k, const float *x, int32_t ldx,
                                      const nmt_cuda_weight *w, const float *bias, int tanh_out,
                                      float *y, int32_t ldy, nmt_error *err)
{
    const skinny_operand o = operand_of(m, w);
    /* Batch-invariant: the skinny kernel splits a sum over lanes and warps,
     * an order no many-row GEMM shares; the chain kernel reads the same
     * operands and gives the many-row GEMMs' bits. */
    if (nmt_cuda_ctx_batch_invariant(ctx))
        return nmt_cuda_linear_chain(ctx, rows, n, k, x, ldx, o.x_round, o.w, o.type, o.ld, bias,
                                     tanh_out, y, ldy, err);
    return nmt_cuda_linear_skinny(ctx, rows, n, k, x, ldx, o.x_round, o.w, o.type, o.ld, bias,
                                  tanh_out, y, ldy, NULL, err);
}

int nmt_cuda_model_lstm_layer_fused(const nmt_cuda_model *m, int32_t rows, int32_t k,
                                    const nmt_cuda_weight *w)
{
    /* Batch-invariant: the GEMM (the chain at a few rows), then the cell. */
    return nmt_cuda_model_skinny_runs(m, m->ctx, NMT_GEMM_SITE_DECODER, rows, 4 * m->hidden, k,
                                      w) &&
           !nmt_cuda_ctx_batch_invariant(m->ctx);
}

nmt_status nmt_cuda_model_lstm_layer(nmt_cuda_model *m, const nmt_cuda_layer_step *s,
                                     nmt_error *err)
{
    const int32_t H = m->hidden;
    if (!nmt_cuda_model_lstm_layer_fused(m, s->rows, s->k, s->w)) {
        const nmt_status status =
            nmt_cuda_model_gemm(m, NMT_GEMM_SITE_DECODER, s->rows, 4 * H, s->k, s->x, s->ldx,
                                s->x16, s->w, NULL, m->dec.gates, 4 * H, err);
        if (status != NMT_STATUS_OK)
            return status;
        const nmt_lstm_cell_args cell = {
            .n_rows = s->rows, .hidden = H, .gates_x = m->dec.gates, .ld_x = 4 * H,
            .bias = s->bias, .c_prev = s->c_rows ? s->c_prev : s->c, .c_rows = s->c_rows,
            .c_out = s->c, .h_out = s->h_out, .ld_h = s->ld_h, .h_out2 = s->h_out2,
            .ld_h2 = s->ld_h2, .h16 = s->h2_16};
        return nmt_cuda_lstm_cell(&cell, m->stream, err);
    }
    /* Few rows: the next GEMM runs the skinny kernel too (or SpMM), which
     * reads fp32, so the rule asks no shadow of this kernel; and the step
     * gathers this layer's c (the fused kernel reads it in place). */
    if ((s->h2_16 && s->h2_16->dst) || s->c_rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                             "cuda lstm layer: a shadow or c by parent asked of the few-row "
                             "kernel");
    /* The product's split as the skinny GEMM of 4H outputs has it: the same bits. */
    const skinny_operand o = operand_of(m, s->w);
    const nmt_lstm_skinny_form form = {.w_type = o.type, .x_round = o.x_round,
                                       .split = nmt_cuda_linear_skinny_plan(4 * H, NULL).split};
    const nmt_lstm_skinny_step step = {.n_rows = s->rows, .n_dot = s->rows, .x = s->x,
                                       .ldx = s->ldx, .w = o.w, .ldw = o.ld, .gates_x = NULL,
                                       .ld_x = 0, .bias = s->bias, .c_prev = s->c, .c_out = s->c,
                                       .h_out = s->h_out, .ld_h = s->ld_h, .h_out2 = s->h_out2,
                                       .ld_h2 = s->ld_h2};
    return nmt_cuda_lstm_skinny_steps(m->ctx, H, s->k, &step, 1, &form, err);
}
