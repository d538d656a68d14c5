/* gemm_tf32x2.c: the decoder's optional split-activation TF32 GEMMs
 * (model/cuda/cuda_model_impl.h, kernels/linear.h).
 *
 * At batch 64 and beam 5 (320 rows) the step's four GEMMs are fp32 SIMT
 * work, ~5 GFLOP a step, and most of the step's time (docs/perf/steps.md).
 * The weights of an fp16 model file are exact in TF32, so only the
 * activations need splitting into two TF32 parts for a tensor-core GEMM of
 * about fp32 accuracy; the weights are stored twice side by side so that one
 * GEMM over 2k does both halves. Host code; runs once at create. */
#include "align.h"
#include "cuda_model_impl.h"

#include "cuda_check.h"
#include "linear.h"

#include <string.h>

/* dst [n, 2k] = [src src], src [n, k] dense (device to device). */
static nmt_status double_rows(float *dst, const float *src, int32_t n, int32_t k, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const size_t row = (size_t)k * sizeof(float);
    for (int half = 0; half < 2; half++)
        NMT_CUDA_TRY(cudaMemcpy2D(dst + (size_t)half * k, 2 * row, src, row, row, (size_t)n,
                                  cudaMemcpyDeviceToDevice));
cleanup:
    return status;
}

/* The arena: each decoder layer's fused matrix (ld = input + hidden, as
 * weights.cu fuses it), W_c and W_out doubled, then the split activations. */
static size_t layout_tf32x2(const nmt_cuda_model *m, size_t *off_dec, size_t *off_c,
                            size_t *off_out, size_t *off_split)
{
    const size_t E = (size_t)m->emb, H = (size_t)m->hidden, V = (size_t)m->vocab;
    size_t bytes = 0;
    for (int32_t l = 0; l < m->dec_layers; l++) {
        const nmt_lstm_weights *d = &m->model->dec[l];
        off_dec[l] = bytes;
        bytes += nmt_align_up(4 * H * 2 * (size_t)(d->input_size + d->hidden_size) *
                                  sizeof(float), 256);
    }
    *off_c = bytes;
    bytes += nmt_align_up(H * 2 * (2 * H) * sizeof(float), 256);
    *off_out = bytes;
    bytes += nmt_align_up(V * 2 * H * sizeof(float), 256);
    *off_split = bytes;
    return bytes + nmt_align_up((size_t)m->max_rows * 2 * (E + 2 * H) * sizeof(float), 256);
}

size_t nmt_cuda_tf32x2_part_bytes(const nmt_cuda_model *m)
{
    size_t off_dec[NMT_MAX_LAYERS], off_c, off_out, off_split;
    return layout_tf32x2(m, off_dec, &off_c, &off_out, &off_split);
}

nmt_status nmt_cuda_model_set_tf32x2(nmt_cuda_model *m, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t H = m->hidden, V = m->vocab, L = m->dec_layers;
    const int32_t inexact = nmt_cuda_decoder_weights_inexact(m, nmt_tf32_exact);
    if (inexact >= 0 && inexact < L)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "tf32x2 GEMMs: decoder layer %d's weights are not exact in "
                             "TF32 (an fp16 model file's are; use fp32 GEMMs)", inexact);
    if (inexact == L)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "tf32x2 GEMMs: attn_w_c or out_w is not exact in TF32 (an fp16 "
                             "model file's are; use fp32 GEMMs)");
    size_t off_dec[NMT_MAX_LAYERS], off_c, off_out, off_split;
    const size_t bytes = layout_tf32x2(m, off_dec, &off_c, &off_out, &off_split);
    NMT_CUDA_TRY(cudaMalloc(&m->tf32x2.arena, bytes));
    char *base = (char *)m->tf32x2.arena;
    for (int32_t l = 0; l < L; l++) {
        float *w2 = (float *)(base + off_dec[l]);
        NMT_TRY(double_rows(w2, m->w.dec_w[l], 4 * H, m->w.dec_ld[l], err));
        m->gw.dec[l].w2 = w2;
    }
    float *attn_c2 = (float *)(base + off_c), *out2 = (float *)(base + off_out);
    NMT_TRY(double_rows(attn_c2, m->w.attn_w_c, H, 2 * H, err));
    m->gw.attn_c.w2 = attn_c2;
    NMT_TRY(double_rows(out2, m->w.out_w, V, H, err));
    m->gw.out.w2 = out2;
    m->tf32x2.split = (float *)(base + off_split);
    m->tf32x2.on = 1;
    return NMT_STATUS_OK;
cleanup:
    cudaFree(m->tf32x2.arena);
    m->tf32x2.arena = NULL;
    for (int32_t l = 0; l < L; l++)
        m->gw.dec[l].w2 = NULL;
    m->gw.attn_c.w2 = m->gw.out.w2 = NULL;
    return status;
}
