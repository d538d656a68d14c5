/* weights.cu: uploads the fp32 host tensors of a model v1 into one
 * device arena (model/cuda/cuda_model_impl.h). One cudaMalloc for all of them, so
 * the weights are one block of device memory freed at once; every tensor
 * starts on a 256-byte boundary (cuBLAS and vector loads like aligned rows).
 * The decoder's LSTM layers are stored fused (cuda_model_impl.h): W_ih and W_hh
 * side by side in one matrix (two strided copies) and their biases summed
 * on the host. Done once per backend: plain synchronous copies from pageable
 * memory. */
#include "cuda_model_impl.h"

#include "cuda_check.h"

#include <stdlib.h>
#include <string.h>

static const size_t ALIGN_FLOATS = 64; /* 256 bytes */

/* One tensor of the upload: host source, element count, device slot. */
typedef struct tensor_slot {
    const float *host;
    size_t count;
    float **device;
} tensor_slot;

static size_t align_up(size_t n)
{
    return (n + ALIGN_FLOATS - 1) / ALIGN_FLOATS * ALIGN_FLOATS;
}

/* Lists the tensors of the model; returns their number (at most `cap`). */
static int list_tensors(const nmt_model *model, nmt_device_weights *w, tensor_slot *slots,
                        int cap)
{
    const nmt_hparams *hp = &model->hp;
    const size_t E = (size_t)hp->emb_size, H = (size_t)hp->hidden_size;
    int n = 0;
#define ADD(host_ptr, cnt, dev_ptr)                                \
    do {                                                           \
        if (n < cap)                                               \
            slots[n] = (tensor_slot){(host_ptr), (cnt), (dev_ptr)}; \
        n++;                                                       \
    } while (0)
    ADD(model->src_embedding, (size_t)hp->src_rows * E, &w->src_embedding);
    ADD(model->tgt_embedding, (size_t)hp->tgt_vocab * E, &w->tgt_embedding);
    const nmt_lstm_weights *host_sets[2] = {model->enc_fwd, model->enc_bwd};
    nmt_lstm_weights *dev_sets[2] = {w->enc_fwd, w->enc_bwd};
    for (int set = 0; set < 2; set++) {
        for (int32_t l = 0; l < hp->enc_layers; l++) {
            const nmt_lstm_weights *h = &host_sets[set][l];
            nmt_lstm_weights *d = &dev_sets[set][l];
            const size_t gates = 4 * (size_t)h->hidden_size;
            d->input_size = h->input_size;
            d->hidden_size = h->hidden_size;
            ADD(h->w_ih, gates * (size_t)h->input_size, &d->w_ih);
            ADD(h->w_hh, gates * (size_t)h->hidden_size, &d->w_hh);
            ADD(h->b_ih, gates, &d->b_ih);
            ADD(h->b_hh, gates, &d->b_hh);
        }
    }
    ADD(model->attn_w_a, H * H, &w->attn_w_a);
    ADD(model->attn_w_c, H * 2 * H, &w->attn_w_c);
    ADD(model->out_w, (size_t)hp->tgt_vocab * H, &w->out_w);
    ADD(model->out_b, (size_t)hp->tgt_vocab, &w->out_b);
#undef ADD
    return n;
}

/* Floats of decoder layer l's fused matrix and of its bias. */
static size_t fused_floats(const nmt_lstm_weights *h)
{
    const size_t gates = 4 * (size_t)h->hidden_size;
    return align_up(gates * (size_t)(h->input_size + h->hidden_size)) + align_up(gates);
}

/* Writes a decoder layer fused at `at` (see cuda_model.h). */
static nmt_status upload_fused_layer(const nmt_lstm_weights *h, float *at, float **w_out,
                                     float **bias_out, int32_t *ld_out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t in = h->input_size, H = h->hidden_size, gates = 4 * H;
    const size_t ld = (size_t)(in + H);
    float *bias = NULL;
    if (!h->w_ih || !h->w_hh || !h->b_ih || !h->b_hh)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "device weights: a decoder LSTM tensor of the model is NULL");
    NMT_CUDA_TRY(cudaMemcpy2D(at, ld * sizeof(float), h->w_ih, (size_t)in * sizeof(float),
                              (size_t)in * sizeof(float), (size_t)gates, cudaMemcpyHostToDevice));
    NMT_CUDA_TRY(cudaMemcpy2D(at + in, ld * sizeof(float), h->w_hh, (size_t)H * sizeof(float),
                              (size_t)H * sizeof(float), (size_t)gates, cudaMemcpyHostToDevice));
    bias = (float *)malloc(sizeof(float) * (size_t)gates);
    if (!bias)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "device weights: out of host memory");
    for (int32_t g = 0; g < gates; g++)
        bias[g] = h->b_ih[g] + h->b_hh[g];
    *w_out = at;
    *bias_out = at + align_up((size_t)gates * ld);
    *ld_out = (int32_t)ld;
    NMT_CUDA_TRY(cudaMemcpy(*bias_out, bias, (size_t)gates * sizeof(float),
                            cudaMemcpyHostToDevice));
cleanup:
    free(bias);
    return status;
}

/* The arena's floats: every tensor aligned, the fused decoder layers. */
static size_t arena_floats(const nmt_model *model, const tensor_slot *slots, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += align_up(slots[i].count);
    for (int32_t l = 0; l < model->hp.dec_layers; l++)
        total += fused_floats(&model->dec[l]);
    return total;
}

size_t nmt_device_weights_bytes(const nmt_model *model)
{
    enum { MAX_TENSORS = 6 + 3 * NMT_MAX_LAYERS * 4 };
    tensor_slot slots[MAX_TENSORS];
    nmt_device_weights scratch;
    memset(&scratch, 0, sizeof scratch);
    const int n = list_tensors(model, &scratch, slots, MAX_TENSORS);
    return n > MAX_TENSORS ? 0 : arena_floats(model, slots, n) * sizeof(float);
}

nmt_status nmt_device_weights_upload(const nmt_model *model, nmt_device_weights *w,
                                     nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    enum { MAX_TENSORS = 6 + 3 * NMT_MAX_LAYERS * 4 };
    tensor_slot slots[MAX_TENSORS];
    memset(w, 0, sizeof *w);
    int n = list_tensors(model, w, slots, MAX_TENSORS);
    if (n > MAX_TENSORS)
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "device weights: %d tensors", n);
    for (int i = 0; i < n; i++)
        if (!slots[i].host)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "device weights: tensor %d of the model is NULL", i);
    w->arena_bytes = arena_floats(model, slots, n) * sizeof(float);
    NMT_CUDA_TRY(cudaMalloc(&w->arena, w->arena_bytes));
    {
        float *next = (float *)w->arena;
        for (int i = 0; i < n; i++) {
            *slots[i].device = next;
            NMT_CUDA_TRY(cudaMemcpy(next, slots[i].host, slots[i].count * sizeof(float),
                                    cudaMemcpyHostToDevice));
            next += align_up(slots[i].count);
        }
        for (int32_t l = 0; l < model->hp.dec_layers; l++) {
            NMT_TRY(upload_fused_layer(&model->dec[l], next, &w->dec_w[l], &w->dec_bias[l],
                                       &w->dec_ld[l], err));
            next += fused_floats(&model->dec[l]);
        }
    }
    return NMT_STATUS_OK;
cleanup:
    nmt_device_weights_free(w);
    return status;
}

void nmt_device_weights_free(nmt_device_weights *w)
{
    if (!w)
        return;
    if (w->arena)
        cudaFree(w->arena);
    memset(w, 0, sizeof *w);
}
