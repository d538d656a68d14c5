/* device_weights.cu: uploads the fp32 host tensors of a model v1 into one
 * device arena (model/cuda/cuda_model.h). One cudaMalloc for all of them, so
 * the weights are one block of device memory freed at once; every tensor
 * starts on a 256-byte boundary (cuBLAS and vector loads like aligned rows).
 * Done once per backend: plain synchronous copies from pageable memory. */
#include "cuda_model.h"

#include "cuda/cuda_check.h"

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
    const nmt_lstm_weights *host_sets[3] = {model->enc_fwd, model->enc_bwd, model->dec};
    nmt_lstm_weights *dev_sets[3] = {w->enc_fwd, w->enc_bwd, w->dec};
    const int32_t layers[3] = {hp->enc_layers, hp->enc_layers, hp->dec_layers};
    for (int set = 0; set < 3; set++) {
        for (int32_t l = 0; l < layers[set]; l++) {
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
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (!slots[i].host)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "device weights: tensor %d of the model is NULL", i);
        total += align_up(slots[i].count);
    }
    w->arena_bytes = total * sizeof(float);
    NMT_CUDA_TRY(cudaMalloc(&w->arena, w->arena_bytes));
    {
        float *next = (float *)w->arena;
        for (int i = 0; i < n; i++) {
            *slots[i].device = next;
            NMT_CUDA_TRY(cudaMemcpy(next, slots[i].host, slots[i].count * sizeof(float),
                                    cudaMemcpyHostToDevice));
            next += align_up(slots[i].count);
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
