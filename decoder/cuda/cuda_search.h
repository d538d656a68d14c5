/* cuda_search.h: the batched beam search on the GPU, the twin of
 * decoder/search.h (same model-v1 semantics, the same results). Like the CPU
 * search it never touches weights: it drives any network behind
 * nmt_cuda_step_model, whose calls mirror the CPU step interface (prepare
 * the rows, step, output) with the data left on the device. The engine's
 * CUDA backend wires model/cuda/ into it (engine/cuda/cuda_backend.c).
 *
 * Per batch (decoder/cuda/beam_search.c): sentences sorted longest first
 * (results mapped back), the time-major feature CSR packed and copied up in
 * one transfer, encode, then a step loop that only launches: step, output,
 * beam step, the beam step writing the next step's rows (prepare_rows,
 * decoder/cuda/beam_state.cu, only after a compaction); scores,
 * back-pointers, history and finished hypotheses stay on the device, and
 * one copy brings the n-best token sequences back. */
#ifndef NMT_CUDA_SEARCH_H
#define NMT_CUDA_SEARCH_H

#include "search.h"
#include "sentence_stream.h"
#include "source_batch.h"
#include "step_io.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A network as the GPU search drives it. Every call launches on `stream`
 * (a cudaStream_t) and must be capturable in a CUDA graph: no host
 * synchronization, no allocation, launches that depend only on the
 * arguments. The network keeps its decoder rows in two buffers; `buf` names
 * the live one (step reads buf, writes 1 - buf). */
typedef struct nmt_cuda_step_model {
    void *self;
    void *stream;
    int32_t vocab_size;
    int shrunk; /* shrunk output layer: EOS must be one of ids 0..3 (its column is its id) */
    /* Encodes a batch; rows p * beam of buffer buf get sentence p's initial
     * state, the other slots zeros. */
    nmt_status (*encode)(void *self, int buf, const nmt_cuda_encoder_input *in, nmt_error *err);
    /* Steps 1-4: new row r continues row rows->parent[r] of buffer buf with
     * token rows->tokens[r]; the result is buffer 1 - buf. carry_out: the
     * step also makes what lets the next step start sooner; carried_in: the
     * step before (on these rows' parents) had carry_out. Both only at up
     * to carry_rows rows. */
    nmt_status (*step)(void *self, int buf, int32_t n_rows, const nmt_cuda_rows *rows,
                       const int32_t *src_len, int32_t src_stride, int carried_in, int carry_out,
                       nmt_error *err);
    /* Step 5 over buffer buf: the 2 * beam best words of every row and
     * what the beam step reads besides (nmt_cuda_scores). logits_word: the
     * one column of scores->logits the caller reads (the beam step's EOS),
     * or NMT_LOGITS_ALL (the logit rules, sampling, forced words, an
     * ensemble's sum); with one column the network may leave the others
     * unwritten (a fused output layer). */
    nmt_status (*output)(void *self, int buf, int32_t n_rows, int32_t beam,
                         const nmt_cuda_rows *rows, const int32_t *excluded, int32_t n_excluded,
                         int32_t logits_word, nmt_cuda_scores *scores, nmt_error *err);
    /* NULL, or a measurement run after output when the search is timed
     * (collect_stats 2): the recall probe of a shrunk layer. */
    nmt_status (*probe)(void *self, int buf, int32_t n_rows, int32_t beam,
                        const nmt_cuda_rows *rows, const int32_t *excluded, int32_t n_excluded,
                        nmt_error *err);
    /* Continuous batching: encodes with in->side run on encoder_stream (a
     * cudaStream_t beside `stream`) and leave the initial states by slot;
     * place (on `stream`, after the caller made it wait for that encode)
     * puts slot slots[i]'s state into rows positions[i] * beam + k of
     * buffer buf. */
    void *encoder_stream;
    nmt_status (*place)(void *self, int buf, int32_t n, const int32_t *slots,
                        const int32_t *positions, int32_t beam, nmt_error *err);
    /* The attention weights every step leaves (device [rows, src_stride], the
     * same buffer at every call), or NULL when the network keeps none: a
     * search with config.attention records them (nmt_search_config). */
    const float *attn_weights;
    int32_t carry_rows; /* steps of at most this many rows may carry out / in (0: none) */
    /* Scoring (nmt_cuda_search_score), or NULL: stash keeps buffer buf's
     * n_rows rows' output-layer inputs as rows [at, at + n_rows) of the
     * network's stash (stash_rows rows) and gives *attn_argmax, the rows'
     * attention argmax (device, as output's); pick scores the stash's first
     * n_rows rows, log_probs[r] = log p(words[r]) under the full softmax (no
     * top-K): several steps' output layers in one. */
    nmt_status (*stash)(void *self, int buf, int32_t n_rows, int32_t at,
                        const int32_t **attn_argmax, nmt_error *err);
    nmt_status (*pick)(void *self, int32_t n_rows, const int32_t *words, float *log_probs,
                       nmt_error *err);
    int32_t stash_rows;
} nmt_cuda_step_model;

/* What a search is sized and set up for, once. */
typedef struct nmt_cuda_search_config {
    int device;                      /* CUDA device of the stream */
    int32_t max_sentences, beam, max_src;
    int32_t src_rows;                /* source feature rows: the CSR's columns are checked */
    int32_t feature_kinds;           /* feature rows a token usually has (sizes, warm-up) */
    int32_t check_every;             /* steps between done-flag checks */
    int cuda_graphs;                 /* replay repeated steps and encoder passes as graphs */
    int timed;                       /* time each step's output layer (and run the probe) */
    int attention;                   /* keep a weights history (the model must give
                                        attn_weights), so batches may ask for attention */
    int batch_invariant;             /* the logit rules' and sampling's top-K plans: one at
                                        every row count */
} nmt_cuda_search_config;

typedef struct nmt_cuda_search nmt_cuda_search;

/* The model must outlive the search. */
nmt_status nmt_cuda_search_create(const nmt_cuda_step_model *model,
                                  const nmt_cuda_search_config *config,
                                  nmt_cuda_search **search, nmt_error *err);
void nmt_cuda_search_free(nmt_cuda_search *search);

/* Device bytes nmt_cuda_search_create allocates for config (host arithmetic,
 * no device), and what a search holds now (its input and history grow
 * between batches that need more; a failed growth leaves the search usable). */
size_t nmt_cuda_search_device_bytes(const nmt_cuda_search_config *config);
size_t nmt_cuda_search_device_bytes_now(const nmt_cuda_search *search);

/* Translates one batch: fills results[i] for sentence i (release each with
 * nmt_search_result_clear). The step loop never allocates; it waits only on
 * the done flags it asked for check_every steps earlier. */
nmt_status nmt_cuda_search_run(nmt_cuda_search *search, const nmt_source_batch *batch,
                               const nmt_search_config *config, nmt_search_result *results,
                               nmt_error *err);

/* Scoring (decoder/cuda/score_search.c): each sentence's config->forced
 * tokens and an EOS (decoder/forced_search.h, nmt_score_forced: one
 * hypothesis a sentence, the same numbers up to the devices' rounding),
 * teacher-forced: the encoder pass, then one step a target position for
 * the sentences still that long, one row each, at batch width, and the
 * output layer of as many steps as the model's stash holds at once (the
 * full softmax's normalizer and the target's logit: no top-K, no beam),
 * with nothing read back until one copy after the last step. The model
 * must have stash and pick. */
nmt_status nmt_cuda_search_score(nmt_cuda_search *search, const nmt_source_batch *batch,
                                 const nmt_search_config *config, nmt_search_result *results,
                                 nmt_error *err);

/* Continuous batching (decoder/cuda/stream_search.c): one search that runs
 * until `source` ends and every sentence it gave is delivered. Sentences
 * join at every check point (check_every steps) while rows are free, and
 * leave when done; each is delivered a check or two after its last step.
 * Every sentence is decoded exactly as nmt_cuda_search_run would decode it
 * (the same rows and products; tests/engine/test_gpu_stream.c). One search
 * configuration for the whole stream. The loop never allocates; pull and
 * deliver run on the calling thread between launches. Fails only when the
 * search itself fails, after delivering that error for every sentence it
 * held; a pulled batch the search refuses fails those sentences only. */
nmt_status nmt_cuda_search_stream(nmt_cuda_search *search, const nmt_search_config *config,
                                  const nmt_sentence_stream *source, nmt_error *err);

/* Decodes small synthetic batches (every power-of-two batch size up to the
 * maximum, source lengths of every power of two, a few steps each) and
 * clears the counters, so that one-time costs (cuBLAS's set-up, kernels
 * loaded on first use, the first graph captures) are paid at create, not by
 * the first real batches (decoder/cuda/search_warmup.c). */
nmt_status nmt_cuda_search_warm_up(nmt_cuda_search *search, nmt_error *err);

/* Counters since create or the last warm-up. */
typedef struct nmt_cuda_search_counts {
    int64_t steps;
    int64_t graph_runs, eager_runs; /* steps and encoder passes, by how they ran */
    double output_layer_ms;         /* timed searches only, else -1 */
} nmt_cuda_search_counts;
nmt_cuda_search_counts nmt_cuda_search_get_counts(const nmt_cuda_search *search);

#ifdef __cplusplus
}
#endif

#endif /* NMT_CUDA_SEARCH_H */
