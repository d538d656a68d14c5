/* cuda_model_impl.h: private to model/cuda/ (dev/check-layers.py refuses an
 * *_impl.h included from another folder): the state behind nmt_cuda_model.
 *
 * The network is the weights plus three parts, each owning the workspace it
 * computes in (one device allocation a part, sized once at create, so
 * encode, step and output layer never allocate):
 *   encoder       (encoder.cu):      time-major scratch and the memory bank
 *   decoder step  (decoder_step.cu): the double-buffered decoder rows
 *   output layer  (output_layer.c):  logits, top-K, and the shrink wing's
 *                                    device index and lists
 * and the GEMMs' precision (gemm.c: fp32, split TF32 in gemm_tf32x2.c, bf16
 * or fp16; the few-row GEMMs in gemm_skinny.c), and the optional recall
 * probe (output_probe.c).
 *
 * Layouts (n sentences of the batch, sorted longest first by the search):
 * - encoder time-major: row t * n + i is sentence i's token t (padding rows
 *   are computed by the input GEMM but never enter a recurrence);
 * - memory, keys: [n, src_stride, H] sentence-major, src_stride = the longest
 *   sentence of the batch, rows past a sentence's length are zero;
 * - decoder rows: model/cuda/step_io.h. */
#ifndef NMT_CUDA_MODEL_IMPL_H
#define NMT_CUDA_MODEL_IMPL_H

#include "cuda_model.h"
#include "linear.h"
#include "spmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Same fields as nmt_model's tensors, pointing into one device allocation,
 * except the decoder LSTMs: each layer is one [4H, in + H] matrix [W_ih W_hh]
 * (dec_w, rows dec_ld floats apart) and one bias b_ih + b_hh (dec_bias), so
 * a layer is one GEMM over the row [input; h] (decoder_step.cu). */
typedef struct nmt_device_weights {
    void *arena;
    size_t arena_bytes;
    float *src_embedding, *tgt_embedding;
    nmt_lstm_weights enc_fwd[NMT_MAX_LAYERS], enc_bwd[NMT_MAX_LAYERS];
    float *dec_w[NMT_MAX_LAYERS], *dec_bias[NMT_MAX_LAYERS];
    int32_t dec_ld[NMT_MAX_LAYERS];
    float *attn_w_a, *attn_w_c, *out_w, *out_b;
} nmt_device_weights;

/* The arena's bytes (host arithmetic), and the upload: every tensor of
 * `model` (current device) into one arena. */
size_t nmt_device_weights_bytes(const nmt_model *model);
nmt_status nmt_device_weights_upload(const nmt_model *model, nmt_device_weights *weights,
                                     nmt_error *err);
void nmt_device_weights_free(nmt_device_weights *weights);

/* A second stream beside the model's (side_stream.c): its context (lowest
 * priority) and the events that fork work onto it and join it back; all
 * NULL when unused. Fork: the side stream waits for the model's stream so
 * far; done: marks the end of the side's work; join: the model's stream
 * waits for that mark. Free synchronizes the side stream first. */
typedef struct nmt_cuda_side {
    nmt_cuda_ctx *ctx;
    void *fork_event, *join_event; /* cudaEvent_t */
} nmt_cuda_side;
nmt_status nmt_cuda_side_create(const nmt_cuda_model *m, nmt_cuda_side *side, nmt_error *err);
void nmt_cuda_side_free(nmt_cuda_side *side);
nmt_status nmt_cuda_side_fork(const nmt_cuda_model *m, const nmt_cuda_side *side,
                              nmt_error *err);
nmt_status nmt_cuda_side_done(const nmt_cuda_side *side, nmt_error *err);
nmt_status nmt_cuda_side_join(const nmt_cuda_model *m, const nmt_cuda_side *side,
                              nmt_error *err);

/* Encoder workspace, time-major [max_src * max_sentences, .]. */
typedef struct nmt_cuda_encoder_part {
    void *arena;
    float *x;            /* [., E]: N-hot source embeddings */
    float *out[2];       /* [., H]: [fwd; bwd] of a layer, ping-pong */
    float *gates_x;      /* [., 4 * H/2]: w_ih x + b_ih of one direction */
    float *gates_x_pair; /* [max_src * min(max_sentences, 8), 4 * H/2]: the backward
                          * direction's beside it, for the paired steps of a batch of
                          * up to NMT_SKINNY_MAX_ROWS sentences (encoder.cu) */
    float *gates_h;      /* [max_sentences, 4 * H/2] */
    float *c[2];         /* [max_sentences, H/2]: running c, forward and backward */
    float *memory, *keys; /* [max_sentences, src_stride, H]: read by the decoder step */
    /* Continuous batching: joiners encoded on a second stream while the
     * decoder steps (step_io.h, nmt_cuda_encoder_input.side) leave their
     * initial states here by slot until nmt_cuda_encoder_place. */
    float *init_h[NMT_MAX_LAYERS], *init_c[NMT_MAX_LAYERS]; /* [max_sentences, H] */
    nmt_cuda_ctx *side_ctx; /* owned: its own stream and cuBLAS handle */
} nmt_cuda_encoder_part;

/* Decoder rows [max_rows, .], double-buffered (the search says which buffer
 * is live). Each layer's GEMM input is one row buffer x[.][l] = [input; h_l]:
 *   layer 0: [E_tgt(prev token); feed f_{t-1}; h_0]   (E + 2H floats)
 *   layer l: [h_{l-1}; h_l]                            (2H floats)
 * h and feed point into those rows (strides x_ld, feed_ld). The cells write
 * h twice: into h_last (one buffer: the next step's gather copies it into
 * the h slots) and into the next layer's input (the top layer's into
 * attn_in); never into the rows their own GEMM reads, so a launch that
 * multiplies and runs the cell (few rows) does not race. */
typedef struct nmt_cuda_decoder_part {
    void *arena;
    float *x[2][NMT_MAX_LAYERS];
    int32_t x_ld[NMT_MAX_LAYERS];
    float *h[2][NMT_MAX_LAYERS]; /* inside x, rows x_ld[l] apart: the GEMM's h input */
    float *h_last[NMT_MAX_LAYERS]; /* [., H]: h after the last step, in the live rows' order */
    float *c[2][NMT_MAX_LAYERS]; /* [., H] */
    float *feed[2];              /* inside x[.][0]: f_{t-1}, rows feed_ld apart */
    int32_t feed_ld;
    float *attn_in;              /* [., 2H]: [context; h_top], the W_c GEMM's input */
    float *gates;                /* [., 4H] */
    int32_t *attn_argmax;        /* [.] */
    float *attn_weights;         /* [., max_src]: the attention weights, rows src_stride floats
                                    apart; NULL unless nmt_cuda_model_set_attention (its own
                                    allocation, freed with the arenas) */
    /* Layer 0 carried over the beam step (decoder_step.cu, "carried"): */
    float *word_gates;           /* [V, 4H]: E_tgt[w] . W_ih0[:, :E]^T of every target word */
    int word_gates_made;         /* word_gates holds them (not under batch invariance) */
    float *proj;                 /* [., 4H]: [feed; h_0] . [W_feed W_hh]^T of the last step's
                                    rows, made beside its output layer */
    nmt_cuda_side side;          /* owned: the stream proj is made on */
    int proj_pending;            /* proj launched; the output layer joins it */
    /* The feed's shadow the last step wrote (nmt_cuda_model_feed16): its
     * buffer (-1: none) and rows, which the output layer checks first. */
    int feed16_buf;
    int32_t feed16_rows;
} nmt_cuda_decoder_part;

/* Output layer: logits and top-K [max_rows, .], and with shrinking the
 * device index and the candidate lists (one per group: batch, sentence or
 * row). */
typedef struct nmt_cuda_output_part {
    void *arena;
    float *logits;           /* [., ld_logits] full and TOP; [., V] over candidate lists */
    int32_t ld_logits;       /* V rounded up to kLogitsAlign floats */
    float *top_values;       /* [., 2 * beam] */
    int32_t *top_ids;        /* [., 2 * beam] */
    float *lse;              /* [.] */
    void *topk_workspace;    /* nmt_cuda_softmax_topk's, zeroed at create */
    size_t topk_workspace_bytes;
    float *stash;            /* [max_rows, H]: scoring's feeds of several steps, whose
                                output layer runs as one GEMM (output_pick.c) */
    void *fused_workspace;   /* nmt_cuda_output_topk's, or NULL: the fused layer is off
                                (nmt_cuda_model_set_fused_output) */
    size_t fused_workspace_bytes;

    int has_shrink;
    nmt_shrink shrink;       /* tables NULL once uploaded */
    nmt_shrink_policy policy;
    nmt_lsh_tables lsh;      /* the index on the device */
    void *shrink_arena;      /* every buffer below */
    size_t shrink_bytes;     /* its size */
    int32_t *lsh_codes;      /* [max_rows, W] */
    int32_t *lsh_hits;       /* [max_rows, V]: zero between steps */
    int32_t *cand;           /* [groups, V] */
    int32_t *cand_count;     /* [groups] */
    void *cand_workspace;
    size_t cand_workspace_bytes;
    void *direct_workspace;  /* NMT_LSH_LISTS_DIRECT: group bitmaps, zero between steps */
    size_t direct_workspace_bytes;
    /* LSH with a dense prefix: a second stream (and cuBLAS handle) for the
     * prefix's GEMM, which needs only the feeds, beside the codes and the
     * lists on the model's stream; forked and joined by two events. */
    nmt_cuda_side side;      /* owned; unused (NULL) without a dense prefix */
} nmt_cuda_output_part;

/* The recall probe (collect_stats 2 with shrinking): the full softmax's
 * top-B words of each row, and the counts. */
typedef struct nmt_cuda_probe_part {
    void *arena;
    float *full_logits;            /* [max_rows, V] */
    float *full_top_values;        /* [max_rows, beam] */
    int32_t *full_top_ids;         /* [max_rows, beam] */
    unsigned long long *counts;    /* [3]: live row-steps, recall hits, candidate words */
} nmt_cuda_probe_part;

/* A weight matrix in each form the GEMMs read (gemm.c): fp32 (always, rows
 * ld floats apart), [w w] for tf32x2 (rows 2k apart; decoder and output
 * layer only) and 16-bit (rows ld16 apart) once those are turned on, and the
 * SpMM's CSR (gemm_sparse.c) for GEMMs of the whole [sparse_rows,
 * sparse_cols] matrix at up to sparse_max_rows rows.
 * The 16-bit copy has rows16 rows: the matrix's, or for W_out at bf16/fp16
 * that many rounded up to NMT_CUDA_OUT_ROWS_ALIGN, the rows past the
 * matrix's zero, with bias16, its bias (bias16_of) padded with zeros to
 * rows16 (NULL for the other matrices). */
typedef struct nmt_cuda_weight {
    const float *f32;
    int32_t ld;
    const float *w2;
    const void *w16;
    int32_t ld16, rows16;
    const float *bias16, *bias16_of;
    const nmt_cuda_spmm_matrix *sparse;
    int32_t sparse_rows, sparse_cols, sparse_max_rows;
} nmt_cuda_weight;

/* Every matrix a GEMM of the network reads, by role. */
typedef struct nmt_cuda_gemm_weights {
    nmt_cuda_weight enc_ih[2][NMT_MAX_LAYERS]; /* [forward, backward][layer]: W_ih */
    nmt_cuda_weight attn_a;                    /* the keys' W_a */
    nmt_cuda_weight dec[NMT_MAX_LAYERS];       /* [W_ih W_hh] of a decoder layer */
    nmt_cuda_weight attn_c, out;               /* W_c, W_out */
} nmt_cuda_gemm_weights;

/* Each matrix of the table with its shape [rows, cols], in the table's
 * order (the encoder's, W_a, the decoder layers, W_c, W_out: the 16-bit
 * arena's order), and the bias a GEMM over it adds (W_out's; else NULL);
 * returns how many (at most NMT_CUDA_GEMM_WEIGHTS). */
typedef struct nmt_cuda_weight_shape {
    nmt_cuda_weight *weight;
    int32_t rows, cols;
    const float *bias;
} nmt_cuda_weight_shape;

/* The output layer's 16-bit GEMM runs over its words rounded up to this
 * many (zero rows of W_out, zero bias, logits nobody reads, inside the
 * logits' row pitch): at a multiple of 32 cuBLASLt picks a Hopper kernel
 * instead of an sm80 one. Set by bench_gemm_algos --graph --types fp16,bf16
 * --shapes 5120x4778x512,5120x4800x512 (docs/perf/precision.md, "Padded rows"). */
enum { NMT_CUDA_OUT_ROWS_ALIGN = 32 };
enum { NMT_CUDA_GEMM_WEIGHTS = 3 * NMT_MAX_LAYERS + 3 };
int nmt_cuda_gemm_weight_shapes(nmt_cuda_model *m, nmt_cuda_weight_shape *out);
/* The first of the decoder-side matrices (each decoder layer's w_ih and
 * w_hh, then W_c and W_out) that `exact` (nmt_tf32_exact, nmt_fp16_exact)
 * refuses: its layer, or dec_layers for W_c or W_out; -1 when none. What
 * the tf32x2 form and the few-row fp16 copies require of the weights. */
int32_t nmt_cuda_decoder_weights_inexact(const nmt_cuda_model *m,
                                         int (*exact)(const float *values, size_t n));

/* Where a GEMM runs. Each site has its own 16-bit activation scratch: the
 * encoder (on the second stream under continuous batching) and the output
 * layer's dense prefix (on the shrink wing's side stream) run beside the
 * decoder. */
typedef enum nmt_gemm_site {
    NMT_GEMM_SITE_ENCODER = 0,
    NMT_GEMM_SITE_DECODER = 1,
    NMT_GEMM_SITE_OUTPUT = 2,
    NMT_GEMM_SITE_OUTPUT_SIDE = 3,
    NMT_GEMM_SITES = 4
} nmt_gemm_site;

/* Split-activation TF32 GEMMs: the doubled weights (nmt_cuda_weight.w2 of
 * the decoder layers, W_c and W_out) and the split scratch; used from
 * NMT_TF32X2_MIN_ROWS rows. */
typedef struct nmt_cuda_tf32x2_part {
    int on;
    void *arena;
    float *split;            /* [max_rows, 2 * (E + 2H)] */
} nmt_cuda_tf32x2_part;

/* Rows from which the GEMMs use nmt_cuda_linear_tf32x2 when it is on: below,
 * they read the weights, not compute, and the doubled weights are twice the
 * bytes (docs/performance.md, "Precision"). */
enum { NMT_TF32X2_MIN_ROWS = 64 };

/* bf16 / fp16 GEMMs (gemm.c): the weights' 16-bit copies (nmt_cuda_weight.w16)
 * and the activation scratch of each site, [rows, k] 16-bit values; and the
 * decoder step's shadows (gemm.c, "Shadows"), [max_rows, k] each, the
 * inputs of its 16-bit GEMMs as the kernels that produce them round them. */
typedef struct nmt_cuda_half_part {
    int on;
    nmt_half_kind kind;
    void *arena;
    void *scratch[NMT_GEMM_SITES];
    uint16_t *x16[NMT_MAX_LAYERS]; /* layer l's [input; h_l] (decoder part's x) */
    uint16_t *attn_in16;           /* [context; h_top] */
    uint16_t *feed16;              /* the feed, rows H apart (the output layer's input) */
    int shadows_off;               /* nmt_cuda_model_set_shadows(m, 0) */
} nmt_cuda_half_part;

/* fp16 copies of the decoder-side weights at fp32 and tf32x2 (in
 * nmt_cuda_weight.w16), read by the few-row GEMMs (gemm_skinny.c). */
typedef struct nmt_cuda_skinny16_part {
    int on;
    void *arena;
} nmt_cuda_skinny16_part;

/* Sparse GEMMs (gemm_sparse.c): the prepared CSR matrices (at most the
 * decoder layers, W_c and W_out) and one SpMM workspace, used on the model's
 * stream only. */
enum { NMT_CUDA_SPARSE_MAX = NMT_MAX_LAYERS + 2 };
typedef struct nmt_cuda_sparse_part {
    int n_matrices;
    nmt_cuda_spmm_matrix *matrices[NMT_CUDA_SPARSE_MAX];
    void *workspace;
    size_t workspace_bytes;
} nmt_cuda_sparse_part;

struct nmt_cuda_model {
    const nmt_model *model;
    nmt_cuda_ctx *ctx; /* not owned */
    void *stream;      /* cudaStream_t of ctx */
    nmt_device_weights w;
    int32_t max_sentences, beam, max_src, max_rows;
    int32_t emb, hidden, half, enc_layers, dec_layers, vocab;
    nmt_cuda_encoder_part enc;
    nmt_cuda_decoder_part dec;
    nmt_cuda_output_part out;
    nmt_cuda_probe_part probe;
    nmt_cuda_gemm_weights gw;
    nmt_cuda_tf32x2_part tf32x2;
    nmt_cuda_half_part half16;
    nmt_cuda_skinny16_part skinny16;
    nmt_cuda_sparse_part sparse;
};

/* Each part's workspace, allocated by nmt_cuda_model_create and freed by
 * nmt_cuda_model_free (the part's file). */
nmt_status nmt_cuda_encoder_part_create(nmt_cuda_model *m, nmt_error *err);
nmt_status nmt_cuda_decoder_part_create(nmt_cuda_model *m, nmt_error *err);
nmt_status nmt_cuda_output_part_create(nmt_cuda_model *m, nmt_error *err);
nmt_status nmt_cuda_probe_part_create(nmt_cuda_model *m, nmt_error *err);
void nmt_cuda_output_part_free_shrink(nmt_cuda_model *m);
/* The output layer's last act: the main stream waits for a product the
 * step left on the side stream (decoder_step.cu). */
nmt_status nmt_cuda_decoder_join(nmt_cuda_model *m, nmt_error *err);
/* What each part's create allocates, measured by the same layout (host
 * arithmetic; m holds the sizes only). SIZE_MAX when it cannot be sized. */
size_t nmt_cuda_encoder_part_bytes(nmt_cuda_model *m);
size_t nmt_cuda_decoder_part_bytes(nmt_cuda_model *m);
size_t nmt_cuda_output_part_bytes(nmt_cuda_model *m);
size_t nmt_cuda_output_fused_bytes(const nmt_cuda_model *m); /* the fused layer's workspace */
/* nmt_cuda_model_set_shrink's arena and side context for shrink (NULL: 0),
 * the LSH index at its first table size. */
size_t nmt_cuda_shrink_part_bytes(const nmt_cuda_model *m, const nmt_shrink *shrink);
size_t nmt_cuda_tf32x2_part_bytes(const nmt_cuda_model *m);

/* The two halves of nmt_cuda_model_set_precision, which refuses a second
 * precision before calling either: gemm_tf32x2.c's doubled weights, and
 * gemm.c's 16-bit copies. */
nmt_status nmt_cuda_model_set_tf32x2(nmt_cuda_model *m, nmt_error *err);
nmt_status nmt_cuda_model_set_half(nmt_cuda_model *m, nmt_half_kind kind, nmt_error *err);

/* gemm_skinny.c: the fp16 copies (set at fp32 and tf32x2 where every
 * decoder-side weight is exact in fp16, else nothing), their bytes; whether
 * a GEMM runs on the skinny kernel (not as SpMM, at most
 * NMT_SKINNY_MAX_ROWS rows, w has its fp32 form), and the call. */
nmt_status nmt_cuda_model_set_skinny16(nmt_cuda_model *m, nmt_error *err);
size_t nmt_cuda_skinny16_part_bytes(nmt_cuda_model *m);
int nmt_cuda_model_skinny_runs(const nmt_cuda_model *m, const nmt_cuda_ctx *ctx,
                               nmt_gemm_site site, int32_t rows, int32_t n, int32_t k,
                               const nmt_cuda_weight *w);
nmt_status nmt_cuda_model_gemm_skinny(nmt_cuda_model *m, nmt_cuda_ctx *ctx, int32_t rows,
                                      int32_t n, int32_t k, const float *x, int32_t ldx,
                                      const nmt_cuda_weight *w, const float *bias, int tanh_out,
                                      float *y, int32_t ldy, nmt_error *err);
/* A decoder layer's step, gates = x . w^T ([4H, k]), then the cell with
 * bias, the new c into c, h into h_out and h_out2 (and h2_16, h_out2's
 * shadow, where given): one launch of the skinny LSTM kernel where its GEMM
 * would run the skinny kernel (nmt_cuda_model_lstm_layer_fused: the same
 * weights, rounding and split: the same bits), else the GEMM into
 * m->dec.gates (from x16, x's shadow, where given) and the cell, which
 * reads row r's old c at row c_rows[r] of c_prev (the parents' rows, where
 * they lie: the step's gather leaves c out). c_rows NULL: c holds the old c
 * and is updated in place (c_prev unused); the fused launch takes only
 * that. x must not overlap c or the h outputs. */
typedef struct nmt_cuda_layer_step {
    int32_t rows, k;
    const float *x;
    int32_t ldx;
    const void *x16;              /* NULL: none (gemm.c, "Shadows") */
    const nmt_cuda_weight *w;
    const float *bias;
    const float *c_prev;          /* with c_rows: the old c, rows hidden apart */
    const int32_t *c_rows;        /* [rows]; NULL: c in place */
    float *c;
    float *h_out;
    int32_t ld_h;
    float *h_out2;
    int32_t ld_h2;
    const nmt_half_out *h2_16;    /* NULL: none */
} nmt_cuda_layer_step;
nmt_status nmt_cuda_model_lstm_layer(nmt_cuda_model *m, const nmt_cuda_layer_step *s,
                                     nmt_error *err);
/* 1 when the layer's step of `rows` rows over w ([4H, k]) is one fused
 * launch of GEMM and cell (which reads c in place), 0 when it is the GEMM
 * and then the cell kernel (which can read the old c by c_rows). */
int nmt_cuda_model_lstm_layer_fused(const nmt_cuda_model *m, int32_t rows, int32_t k,
                                    const nmt_cuda_weight *w);

/* The table of GEMM weights from the uploaded fp32 weights (at create). */
void nmt_cuda_gemm_weights_init(nmt_cuda_model *m);
size_t nmt_cuda_half_part_bytes(nmt_cuda_model *m);

/* gemm_sparse.c: whether a GEMM runs as SpMM (w's CSR, the whole matrix,
 * at most its sparse_max_rows rows, on the model's stream, a decoder or
 * output-layer site); and the part's release (nmt_cuda_model_free). */
int nmt_cuda_model_gemm_sparse(const nmt_cuda_model *m, const nmt_cuda_ctx *ctx,
                               nmt_gemm_site site, int32_t rows, int32_t n, int32_t k,
                               const nmt_cuda_weight *w);
void nmt_cuda_sparse_part_free(nmt_cuda_model *m);

/* y = x . w^T (+ bias) for `rows` rows: SpMM where
 * nmt_cuda_model_gemm_sparse says so; up to NMT_SKINNY_MAX_ROWS rows the
 * skinny kernel on the precision's weights (kernels/linear.h); else by the
 * model's precision: 16-bit when on (every matrix of the table has a 16-bit
 * form), split TF32 when on and w has the doubled form and rows >=
 * NMT_TF32X2_MIN_ROWS, else fp32 sgemm. x16 (NULL: none): x's shadow,
 * rounded by the kernels that wrote x ([rows, k] dense), which the 16-bit
 * GEMM reads instead of rounding x into the site's scratch; give it only
 * where nmt_cuda_model_gemm_reads_x16 says (elsewhere it is not read).
 * _on: on another context's stream and cuBLAS handle (the site's scratch
 * must not be in use on another stream at the time); _tanh: y = tanh(x .
 * w^T), no bias, the tanh fused where the skinny kernel runs, and y16 (NULL:
 * none; [rows, n] dense) gets the tanh's results rounded: y's shadow. */
nmt_status nmt_cuda_model_gemm(nmt_cuda_model *m, nmt_gemm_site site, int32_t rows, int32_t n,
                               int32_t k, const float *x, int32_t ldx, const void *x16,
                               const nmt_cuda_weight *w, const float *bias, float *y,
                               int32_t ldy, nmt_error *err);
nmt_status nmt_cuda_model_gemm_on(nmt_cuda_model *m, nmt_cuda_ctx *ctx, nmt_gemm_site site,
                                  int32_t rows, int32_t n, int32_t k, const float *x,
                                  int32_t ldx, const void *x16, const nmt_cuda_weight *w,
                                  const float *bias, float *y, int32_t ldy, nmt_error *err);
nmt_status nmt_cuda_model_gemm_tanh(nmt_cuda_model *m, nmt_gemm_site site, int32_t rows,
                                    int32_t n, int32_t k, const float *x, int32_t ldx,
                                    const void *x16, const nmt_cuda_weight *w, float *y,
                                    int32_t ldy, void *y16, nmt_error *err);
/* The shadows' rule (gemm.c, "Shadows"): 1 when the GEMM of (site, rows, n,
 * k, w) on the model's context runs on the 16-bit tensor cores, so its
 * input's producers write the shadow it then reads. */
int nmt_cuda_model_gemm_reads_x16(const nmt_cuda_model *m, nmt_gemm_site site, int32_t rows,
                                  int32_t n, int32_t k, const nmt_cuda_weight *w);
/* The feed's shadow (half16.feed16) when the step of `rows` rows writes it
 * and the output layer reads it (output_layer.c): 16 bits, W_c's tanh a
 * pass of its own, a dense output layer whose GEMM reads shadows or the
 * fused layer set; else NULL. */
uint16_t *nmt_cuda_model_feed16(const nmt_cuda_model *m, int32_t rows);

/* Bump allocator over a part's arena: pass 1 (base NULL) only measures. */
typedef struct nmt_carver {
    char *base;
    size_t used;
} nmt_carver;
void *nmt_carve(nmt_carver *c, size_t bytes);
/* Runs layout once to measure and returns the bytes (nothing allocated). */
size_t nmt_cuda_arena_bytes(void (*layout)(nmt_cuda_model *, nmt_carver *), nmt_cuda_model *m);
/* Runs layout once to measure, allocates *arena, runs it again to carve. */
nmt_status nmt_cuda_arena_carve(void **arena, void (*layout)(nmt_cuda_model *, nmt_carver *),
                                nmt_cuda_model *m, nmt_error *err);

/* The 16-bit copies of the n matrices of shapes: carves *arena by layout
 * (which sets each one's w16, rows16 and bias16), rounds each fp32 form to
 * kind into it on the model's stream, zeroes the padding rows, copies the
 * padded biases, and waits; on failure frees *arena and clears the
 * pointers. nmt_cuda_model_set_half's and _set_skinny16's. */
nmt_status nmt_cuda_make_half_copies(nmt_cuda_model *m, void **arena,
                                     void (*layout)(nmt_cuda_model *, nmt_carver *),
                                     nmt_half_kind kind, const nmt_cuda_weight_shape *shapes,
                                     int n, nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_CUDA_MODEL_IMPL_H */
