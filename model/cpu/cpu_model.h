/* cpu_model.h: the CPU reference engine: encoder, decoder step and the
 * output layer, each behind a function the search's step interface wraps
 * (engine/cpu_backend.c). Plain C, correct first:
 * every op comes from kernels/cpu/ and sentences are encoded one at a time,
 * so a sentence's result never depends on the batch around it.
 * All workspaces are sized at create time for (max_sentences, beam, max_src). */
#ifndef NMT_CPU_MODEL_H
#define NMT_CPU_MODEL_H

#include "model.h"
#include "shrink.h"
#include "source_batch.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_cpu_state nmt_cpu_state;

nmt_status nmt_cpu_state_create(const nmt_model *model, int32_t max_sentences, int32_t beam_size,
                                int32_t max_src, nmt_cpu_state **state, nmt_error *err);
void nmt_cpu_state_free(nmt_cpu_state *state);

/* Encodes the batch and sets row i to sentence i's initial decoder state. */
nmt_status nmt_cpu_encode(nmt_cpu_state *state, const nmt_source_batch *batch, nmt_error *err);

/* Shrinks the output vocabulary of every later step (shrink/shrink.h); the
 * shrink's tables must outlive the state. Allocates the LSH buffers. With
 * measure_recall, every step also scores the full vocabulary and counts how
 * often its top-B words all lie in the row's list (nmt_cpu_state_counters). */
nmt_status nmt_cpu_state_set_shrink(nmt_cpu_state *state, const nmt_shrink *shrink,
                                    int measure_recall, nmt_error *err);
/* full 1: every later output layer scores the whole vocabulary, shrink or
 * not (scoring); 0: the shrink again, when one is set. */
void nmt_cpu_state_full_softmax(nmt_cpu_state *state, int full);

/* The fast path's product (nmt_cpu_state_set_fast). */
typedef struct nmt_cpu_fast {
    int blas;        /* 1: the BLAS's SGEMM (kernels/linear_blas.h); 0: the engine's own
                        product (kernels/linear_fixed.h) */
    nmt_cpu_isa isa; /* the own product's instructions (AUTO: the best; supported) */
    int threads;     /* the own product's threads, >= 1 (the BLAS's are the BLAS's) */
    int int8;        /* the decoder step's products in int8 (kernels/linear_int8.h; the
                        own product only, where nmt_cpu_int8_supported(isa)) */
} nmt_cpu_fast;

/* From now on runs the production path: every dense product on the chosen
 * product and the encoder batched over the sentences, one GEMM for a
 * layer's input projections over every position of every sentence and one
 * for each step's recurrent products; the cells, tanh, attention and
 * softmax in fp32 (kernels/fp32_ops.h). A line's results keep the same bits
 * in any batch (with the BLAS, where nmt_cpu_blas_row_invariant); they
 * differ from the reference's by fp32 rounding. Allocates its workspaces
 * and threads; NMT_STATUS_ERROR_UNSUPPORTED for the BLAS when built
 * without one, or for an isa the CPU lacks. */
nmt_status nmt_cpu_state_set_fast(nmt_cpu_state *state, const nmt_cpu_fast *fast,
                                  nmt_error *err);

/* Computes with the CSR form of every matrix the model stores sparse
 * (decoder LSTM, attention, full output layer: nmt_model_sparse_of) from now
 * on, instead of its dense expansion; the results are the same bits
 * (model/cpu/sparse.c). The shrunk output layer stays dense. */
nmt_status nmt_cpu_state_set_sparse(nmt_cpu_state *state, nmt_error *err);
/* Matrices multiplied sparse (0 until set_sparse, or for a dense model). */
int32_t nmt_cpu_state_sparse_count(const nmt_cpu_state *state);

/* Steps taken so far and, with measure_recall, the recall counters:
 * row-steps, row-steps whose full top-B words were all candidates, and
 * candidate words scored (summed over row-steps). */
void nmt_cpu_state_counters(const nmt_cpu_state *state, int64_t *steps, int64_t recall[3]);

/* Steps 1-4 of one decoder step over the n_rows current rows: prev_tokens[r]
 * is row r's last token (BOS at the first step); computes h, c, the input
 * feed f_t and attn_argmax[r], the source position attended most. */
nmt_status nmt_cpu_decoder_step(nmt_cpu_state *state, int32_t n_rows,
                                 const int32_t *prev_tokens, int32_t *attn_argmax,
                                 nmt_error *err);

/* Step 5 over the same rows: log_probs[r * V + w], the log-softmax over the
 * whole vocabulary, or -inf outside row r's candidate list when shrinking. */
nmt_status nmt_cpu_output_layer(nmt_cpu_state *state, int32_t n_rows, float *log_probs,
                                nmt_error *err);

/* The target vocabulary size (a row of log_probs). */
int32_t nmt_cpu_state_vocab(const nmt_cpu_state *state);

/* The attention weights of the last decoder step: row r's over its
 * sentence's positions at r * *stride (zeros past its length); valid until
 * the next step or reorder. */
const float *nmt_cpu_state_attention(const nmt_cpu_state *state, int32_t *stride);

/* The full output layer's logits of the last step (row r at r * *ld, before
 * the log-softmax; valid until the next step), or NULL when shrinking (the
 * logits are then over candidate lists). */
const float *nmt_cpu_state_logits(const nmt_cpu_state *state, int32_t *ld);

/* New row i continues old row parent[i], i in [0, n_rows). */
nmt_status nmt_cpu_decoder_reorder(nmt_cpu_state *state, int32_t n_rows, const int32_t *parent,
                                   nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_CPU_MODEL_H */
