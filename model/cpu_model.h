/* cpu_model.h: the CPU reference engine: encoder, decoder step and the
 * nmt_step_model adapter the beam search drives. Plain C, correct first:
 * every op comes from kernels/cpu/ and sentences are encoded one at a time,
 * so a sentence's result never depends on the batch around it.
 * All workspaces are sized at create time for (max_sentences, beam, max_src). */
#ifndef NMT_CPU_MODEL_H
#define NMT_CPU_MODEL_H

#include "model.h"
#include "search.h"
#include "shrink.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A batch of tokenized source sentences, features as one CSR matrix whose
 * rows are all tokens of all sentences, sentence after sentence. */
typedef struct nmt_source_batch {
    int32_t n_sentences;
    const int32_t *src_len;      /* [n_sentences] tokens, each >= 1 */
    const int32_t *token_offset; /* [n_sentences + 1] first token row of each sentence */
    const int32_t *row_ptr;      /* [n_tokens + 1] */
    const int32_t *cols;         /* feature rows of src_embedding */
    const float *values;         /* feature weights (1.0 in v1) */
} nmt_source_batch;

typedef struct nmt_cpu_state nmt_cpu_state;

nmt_status nmt_cpu_state_create(const nmt_model *model, int32_t max_sentences, int32_t beam_size,
                                int32_t max_src, nmt_cpu_state **state, nmt_error *err);
void nmt_cpu_state_free(nmt_cpu_state *state);

/* Encodes the batch and sets row i to sentence i's initial decoder state. */
nmt_status nmt_cpu_encode(nmt_cpu_state *state, const nmt_source_batch *batch, nmt_error *err);

/* Shrinks the output vocabulary of every later step (model/shrink.h); the
 * shrink's tables must outlive the state. Allocates the LSH buffers. With
 * measure_recall, every step also scores the full vocabulary and counts how
 * often its top-B words all lie in the row's list (nmt_cpu_state_counters). */
nmt_status nmt_cpu_state_set_shrink(nmt_cpu_state *state, const nmt_shrink *shrink,
                                    int measure_recall, nmt_error *err);

/* Steps taken so far and, with measure_recall, the recall counters:
 * row-steps, row-steps whose full top-B words were all candidates, and
 * candidate words scored (summed over row-steps). */
void nmt_cpu_state_counters(const nmt_cpu_state *state, int64_t *steps, int64_t recall[3]);

/* The step interface over this state (valid until the state is freed). */
nmt_step_model nmt_cpu_step_model(nmt_cpu_state *state);

#ifdef __cplusplus
}
#endif

#endif /* NMT_CPU_MODEL_H */
