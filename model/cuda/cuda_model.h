/* cuda_model.h: the model v1 network on a CUDA device: weights in one device
 * arena (device_weights.cu), workspaces sized once (cuda_model.cu), the
 * encoder (encoder.cu) and the batched decoder step (decoder_step.cu).
 * Plain C: the stream is an opaque pointer; every pointer below is a device
 * pointer unless it says host.
 *
 * Layouts (n sentences of the batch, sorted longest first by the caller):
 * - encoder time-major: row t * n + i is sentence i's token t (padding rows
 *   are computed by the input GEMM but never enter a recurrence);
 * - memory, keys: [n, src_stride, H] sentence-major, src_stride = the longest
 *   sentence of the batch, rows past a sentence's length are zero;
 * - decoder rows: row r = p * beam + k is slot k of the sentence at position p
 *   of the active list (engine/cuda/cuda_backend.c). */
#ifndef NMT_CUDA_MODEL_H
#define NMT_CUDA_MODEL_H

#include "cuda_ctx.h"
#include "model.h"
#include "shrink.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Same fields as nmt_model's tensors, pointing into one device allocation,
 * except the decoder LSTMs: each layer is one [4H, in + H] matrix [W_ih W_hh]
 * (dec_w, rows dec_ld floats apart) and one bias b_ih + b_hh (dec_bias), so
 * a layer is one GEMM over the row [input; h] (model/cuda/decoder_step.cu). */
typedef struct nmt_device_weights {
    void *arena;
    size_t arena_bytes;
    float *src_embedding, *tgt_embedding;
    nmt_lstm_weights enc_fwd[NMT_MAX_LAYERS], enc_bwd[NMT_MAX_LAYERS];
    float *dec_w[NMT_MAX_LAYERS], *dec_bias[NMT_MAX_LAYERS];
    int32_t dec_ld[NMT_MAX_LAYERS];
    float *attn_w_a, *attn_w_c, *out_w, *out_b;
} nmt_device_weights;

/* Uploads every tensor of `model` (current device) into one arena. */
nmt_status nmt_device_weights_upload(const nmt_model *model, nmt_device_weights *weights,
                                     nmt_error *err);
void nmt_device_weights_free(nmt_device_weights *weights);

typedef struct nmt_cuda_model {
    const nmt_model *model;
    nmt_cuda_ctx *ctx; /* not owned */
    void *stream;      /* cudaStream_t of ctx */
    nmt_device_weights w;
    int32_t max_sentences, beam, max_src, max_rows;
    int32_t emb, hidden, half, enc_layers, dec_layers, vocab;
    void *arena; /* every workspace below */

    /* Encoder, time-major [max_src * max_sentences, .]. */
    float *enc_x;           /* [., E]: N-hot source embeddings */
    float *enc_out[2];      /* [., H]: [fwd; bwd] of a layer, ping-pong */
    float *enc_gates_x;     /* [., 4 * H/2]: w_ih x + b_ih of one direction */
    float *enc_gates_h;     /* [max_sentences, 4 * H/2] */
    float *enc_c[2];        /* [max_sentences, H/2]: running c, forward and backward */
    float *memory, *keys;   /* [max_sentences, src_stride, H] */

    /* Decoder rows [max_rows, .], double-buffered: [cur] is live. Each
     * layer's GEMM input is one row buffer dec_x[.][l] = [input; h_l]:
     *   layer 0: [E_tgt(prev token); feed f_{t-1}; h_0]   (E + 2H floats)
     *   layer l: [h_{l-1}; h_l]                            (2H floats)
     * dec_h and feed point into those rows (strides dec_x_ld, feed_ld); the
     * cells write h twice: into its own slot and into the next layer's input
     * (the top layer's into attn_in). */
    int cur;
    float *dec_x[2][NMT_MAX_LAYERS];
    int32_t dec_x_ld[NMT_MAX_LAYERS];
    float *dec_h[2][NMT_MAX_LAYERS]; /* inside dec_x, rows dec_x_ld[l] apart */
    float *dec_c[2][NMT_MAX_LAYERS]; /* [., H] */
    float *feed[2];          /* inside dec_x[.][0]: f_{t-1}, rows feed_ld apart */
    int32_t feed_ld;
    float *attn_in;          /* [., 2H]: [context; h_top], the W_c GEMM's input */
    float *gates;            /* [., 4H] */
    float *logits;           /* [., V] */
    float *top_values;       /* [., 2 * beam] */
    int32_t *top_ids;        /* [., 2 * beam] */
    float *lse;              /* [.] */
    void *topk_workspace;    /* nmt_cuda_softmax_topk's, zeroed at create */
    size_t topk_workspace_bytes;
    int32_t *attn_argmax;    /* [.] */
    int32_t *row_tokens;     /* [.]: previous token of each row */
    int32_t *row_sentence;   /* [.]: sentence (sorted index) of each row */
    int32_t *row_parent;     /* [.]: old row each new row continues (reorder) */
    int32_t *row_live;       /* [.]: 1 for a hypothesis alive in a sentence not done */

    /* Output-layer shrinking (nmt_cuda_model_set_shrink, model/cuda/output_layer.c). */
    int has_shrink;
    nmt_shrink shrink;       /* shrink.tables: the host tables */
    nmt_lsh_tables lsh;      /* the same tables on the device */
    void *shrink_arena;      /* every buffer below */
    int32_t *lsh_codes;      /* [max_rows, W] */
    int32_t *lsh_hits;       /* [max_rows, V]: zero between steps */
    int32_t *cand;           /* [groups, V]: candidate lists (group: batch, sentence or row) */
    int32_t *cand_count;     /* [groups] */
    void *cand_workspace;
    size_t cand_workspace_bytes;
    void *direct_workspace;  /* NMT_LIST_BUILDER_DIRECT: group bitmaps, zero between steps */
    size_t direct_workspace_bytes;
    /* collect_stats: the full softmax's top-B words, for recall. */
    float *full_logits;              /* [max_rows, V] */
    float *full_top_values;          /* [max_rows, beam] */
    int32_t *full_top_ids;           /* [max_rows, beam] */
    unsigned long long *lsh_stats;   /* [3]: live row-steps, recall hits, candidate words */
    /* LSH with a dense prefix: a second stream (and cuBLAS handle) for the
     * prefix's GEMM, which needs only the feeds, beside the codes and the
     * lists on the model's stream; forked and joined by two events. */
    nmt_cuda_ctx *side_ctx;          /* owned; NULL when unused */
    void *fork_event, *join_event;   /* cudaEvent_t */

    /* Split-activation TF32 GEMMs (nmt_cuda_model_set_tf32x2): the decoder
     * step's and the output layer's weights doubled ([w w], rows 2k floats
     * apart) and the split scratch; used from NMT_TF32X2_MIN_ROWS rows. */
    int tf32x2;
    void *tf32x2_arena;
    float *dec_w2[NMT_MAX_LAYERS], *attn_w_c2, *out_w2;
    float *split;            /* [max_rows, 2 * (E + 2H)] */
} nmt_cuda_model;

/* Rows from which the decoder uses nmt_cuda_linear_tf32x2: below, the GEMMs
 * read the weights, not compute, and the doubled weights are twice the bytes. */
enum { NMT_TF32X2_MIN_ROWS = 64 };

/* Uploads the weights and allocates every workspace. ctx must outlive it. */
nmt_status nmt_cuda_model_create(const nmt_model *model, nmt_cuda_ctx *ctx,
                                 int32_t max_sentences, int32_t beam, int32_t max_src,
                                 nmt_cuda_model **out, nmt_error *err);
void nmt_cuda_model_free(nmt_cuda_model *m);

/* One batch for the encoder, sentences sorted longest first. */
typedef struct nmt_cuda_encoder_input {
    int32_t n_sentences;
    int32_t src_stride;     /* longest sentence: time steps and memory stride */
    const int32_t *active;  /* host [src_stride]: sentences longer than t (a prefix) */
    const int32_t *src_len; /* device [n_sentences] */
    const int32_t *row_ptr; /* device time-major CSR [src_stride * n_sentences + 1] */
    const int32_t *cols;    /* device */
    const float *values;    /* device */
    int32_t beam;           /* decoder rows p * beam + k; slot 0 gets the initial state */
} nmt_cuda_encoder_input;

/* Encodes into memory and keys, and sets the live decoder rows: slot 0 of
 * sentence i to its initial state (encoder finals or zeros), other slots
 * and every input feed to zeros. */
nmt_status nmt_cuda_encode(nmt_cuda_model *m, const nmt_cuda_encoder_input *in, nmt_error *err);

/* Steps 1-4 of one decoder step over n_rows rows (row_tokens, row_sentence,
 * row_parent set): new row r continues old row row_parent[r] (its h, c and
 * feed are gathered into the other buffer, which becomes live, together with
 * the embedding of row_tokens[r]), then h, c, the feed f_t and attn_argmax
 * are computed in place. src_len: device [sentences]; src_stride as given to
 * nmt_cuda_encode. */
nmt_status nmt_cuda_decoder_step(nmt_cuda_model *m, int32_t n_rows, const int32_t *src_len,
                                 int32_t src_stride, nmt_error *err);

/* Step 5 (model/cuda/output_layer.c): the 2 * beam best words of every row
 * (top_values = log p, top_ids = words), lse, and logits: over the whole
 * vocabulary, or with shrinking over each row's candidate list (column j =
 * the list's j-th word; ids 0..3 are always columns 0..3). Rows are sentence
 * by sentence, `beam` each; row_live says which count for the lists.
 * excluded: device [n_excluded] words never generated (PAD, BOS). */
nmt_status nmt_cuda_output_layer(nmt_cuda_model *m, int32_t n_rows, int32_t beam,
                                 const int32_t *excluded, int32_t n_excluded, nmt_error *err);

/* Shrinks every later output layer (model/shrink.h): uploads the LSH tables
 * and allocates codes, hits (zeroed), the candidate lists and, with
 * collect_stats, the full-softmax buffers of nmt_cuda_output_recall. */
nmt_status nmt_cuda_model_set_shrink(nmt_cuda_model *m, const nmt_shrink *shrink,
                                     int collect_stats, nmt_error *err);

/* Frees what nmt_cuda_model_set_shrink made (arena, side stream, events);
 * nmt_cuda_model_free calls it. */
void nmt_cuda_model_free_shrink(nmt_cuda_model *m);

/* Turns on the split-activation TF32 GEMMs (kernels/linear.h) of the
 * decoder step and the output layer. Refused (NMT_STATUS_ERROR_ARGUMENT,
 * naming the tensor) unless those weights are exact in TF32, as every fp16
 * model file's are. */
nmt_status nmt_cuda_model_set_tf32x2(nmt_cuda_model *m, nmt_error *err);

/* y = x . w^T (+ bias) for `rows` rows by the model's GEMM path: the
 * split TF32 one (w2 = w doubled) when on and rows >= NMT_TF32X2_MIN_ROWS,
 * else fp32 sgemm. */
nmt_status nmt_cuda_model_linear(nmt_cuda_model *m, int32_t rows, int32_t n, int32_t k,
                                 const float *x, int32_t ldx, const float *w, int32_t ldw,
                                 const float *w2, const float *bias, float *y, int32_t ldy,
                                 nmt_error *err);
/* The same on another context's stream and cuBLAS handle (m->side_ctx). */
nmt_status nmt_cuda_model_linear_on(nmt_cuda_model *m, nmt_cuda_ctx *ctx, int32_t rows,
                                    int32_t n, int32_t k, const float *x, int32_t ldx,
                                    const float *w, int32_t ldw, const float *w2,
                                    const float *bias, float *y, int32_t ldy, nmt_error *err);

/* collect_stats with shrinking, after nmt_cuda_output_layer: scores the full
 * vocabulary too and adds the step's counts to lsh_stats (kernels/lsh.h,
 * nmt_cuda_lsh_recall: the full top-beam words all in the row's list). */
nmt_status nmt_cuda_output_recall(nmt_cuda_model *m, int32_t n_rows, int32_t beam,
                                  const int32_t *excluded, int32_t n_excluded, nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_CUDA_MODEL_H */
