/* cuda_model.h: the model v1 network on a CUDA device, as the backend sees
 * it: an opaque handle and the calls of one decode (encode, decoder step,
 * output layer), mirroring model/cpu/ (encoder, decoder_step, output_layer).
 * The state lives in model/cuda/cuda_model_impl.h, private to this folder:
 * the weights (weights.cu) and three parts that each own their workspace,
 * the encoder (encoder.cu), the decoder step (decoder_step.cu) and the
 * output layer (output_layer.c, with the shrink wing's lists), plus the
 * optional recall probe (output_probe.c) and the GEMMs' precision
 * (gemm.c, gemm_tf32x2.c). Plain C; the stream is an opaque pointer. */
#ifndef NMT_CUDA_MODEL_H
#define NMT_CUDA_MODEL_H

#include "cuda_ctx.h"
#include "model.h"
#include "nmt_enums.h"
#include "shrink.h"
#include "step_io.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_cuda_model nmt_cuda_model;

/* Uploads the weights and allocates every workspace for (max_sentences,
 * beam, max_src). ctx must outlive it. */
nmt_status nmt_cuda_model_create(const nmt_model *model, nmt_cuda_ctx *ctx,
                                 int32_t max_sentences, int32_t beam, int32_t max_src,
                                 nmt_cuda_model **out, nmt_error *err);
void nmt_cuda_model_free(nmt_cuda_model *m);

/* *bytes = the device memory nmt_cuda_model_create and
 * nmt_cuda_model_set_precision allocate for these sizes, measured by each
 * part's own layout (host arithmetic, no device): weights (and their
 * tf32x2 or 16-bit forms, and at fp32 and tf32x2 the fp16 copies of
 * nmt_cuda_model_set_precision), the parts' workspaces, the encoder side
 * context's cuBLAS workspace; with shrink (NULL: none), what
 * nmt_cuda_model_set_shrink allocates for it, its LSH index at the first
 * table size (a band whose cuckoo tables grow takes more); with
 * fused_output, the fused layer's workspace (nmt_cuda_model_set_fused_output).
 * The recall probe is not counted. */
nmt_status nmt_cuda_model_device_bytes(const nmt_model *model, int32_t max_sentences,
                                       int32_t beam, int32_t max_src,
                                       nmt_precision precision, const nmt_shrink *shrink,
                                       int fused_output, size_t *bytes, nmt_error *err);

/* The stream every call below launches on (a cudaStream_t). */
void *nmt_cuda_model_stream(const nmt_cuda_model *m);
int32_t nmt_cuda_model_vocab(const nmt_cuda_model *m);

/* Sets the GEMMs' arithmetic, once, after create (fp32 until then):
 * - FP32 and TF32X2 also keep an fp16 copy of the decoder layers, W_c and
 *   W_out for the few-row GEMMs of small batches (gemm_skinny.c), where
 *   every one of those weights is exact in fp16 (an fp16 model file's);
 * - TF32X2: split-activation TF32 (kernels/linear.h) for the decoder step
 *   and the output layer; refused (NMT_STATUS_ERROR_ARGUMENT, naming the
 *   tensor) unless those weights are exact in TF32, as every fp16 model
 *   file's are, and on a batch-invariant context (TF32 runs from
 *   NMT_TF32X2_MIN_ROWS rows only);
 * - BF16, FP16: 16-bit tensor cores for the encoder's input and key
 *   projections, the decoder layers, W_c and W_out, the weights rounded
 *   once into a 16-bit copy (the fp32 ones stay: the shrink wing's
 *   candidate logits and the recall probe read them).
 * AUTO is refused: the engine resolves it first (nmt_precision_for_model). */
nmt_status nmt_cuda_model_set_precision(nmt_cuda_model *m, nmt_precision precision,
                                        nmt_error *err);

/* The decoder step's 16-bit shadows (model/cuda/gemm.c, "Shadows"), on
 * unless turned off here: off, every 16-bit GEMM rounds its input in a pass
 * of its own, with the same results bit for bit (the CUDA backend turns
 * them off under NMT_TEST_NO_SHADOWS=1: a test, and A/B timing in one
 * build). */
void nmt_cuda_model_set_shadows(nmt_cuda_model *m, int on);

/* Multiplies the matrices the model file stores sparse as SpMM
 * (gemm_sparse.c; kernels/spmm.h): the decoder layers, W_c and the full
 * output layer, at every row count with `always` (--sparse on), else only
 * where the measured break-even says the SpMM is faster than the dense GEMM
 * of the precision set (call after nmt_cuda_model_set_precision). Matrices
 * that never pay stay dense. On a batch-invariant context nothing is
 * prepared, and `always` is refused. _count: the matrices prepared sparse. */
nmt_status nmt_cuda_model_set_sparse(nmt_cuda_model *m, int always, nmt_error *err);
int32_t nmt_cuda_model_sparse_count(const nmt_cuda_model *m);

/* Shrinks every later output layer (shrink/shrink.h): builds the LSH index
 * from the model's W_out (shrink->index), uploads and packs it, and
 * allocates the lists; the host index is freed before this returns. With
 * probe, also the recall probe's buffers (nmt_cuda_output_probe). */
nmt_status nmt_cuda_model_set_shrink(nmt_cuda_model *m, const nmt_shrink *shrink, int probe,
                                     nmt_error *err);
int nmt_cuda_model_shrunk(const nmt_cuda_model *m);
/* What set_shrink allocated (its arena and side context; 0 before). */
size_t nmt_cuda_model_shrink_bytes(const nmt_cuda_model *m);

/* Encodes into the memory bank and sets the decoder rows of buffer buf:
 * slot 0 of sentence i to its initial state (encoder finals or zeros), other
 * slots and every input feed to zeros. */
nmt_status nmt_cuda_encode(nmt_cuda_model *m, int buf, const nmt_cuda_encoder_input *in,
                           nmt_error *err);

/* The encoder's own stream (a cudaStream_t) for encodes with in->side: the
 * caller orders it against the model's stream with events. */
void *nmt_cuda_encoder_side_stream(const nmt_cuda_model *m);

/* On the model's stream: rows dec_pos[i] * beam + k of buffer buf get the
 * initial state a side encode left for slot slot[i] (k = 0; zeros for the
 * other slots and every feed), for n sentences. The caller has made the
 * stream wait for that encode. */
nmt_status nmt_cuda_encoder_place(nmt_cuda_model *m, int buf, int32_t n, const int32_t *slot,
                                  const int32_t *dec_pos, int32_t beam, nmt_error *err);

/* Keeps every later step's attention weights (a [max_rows, max_src] buffer,
 * allocated here: without it the step computes none), for a search that
 * records them (nmt_search_config.attention); nmt_cuda_model_attention
 * gives the buffer (NULL before), row r's weights at r * src_stride of the
 * step (zeros past its sentence's length). _bytes: what it allocates. */
nmt_status nmt_cuda_model_set_attention(nmt_cuda_model *m, nmt_error *err);
const float *nmt_cuda_model_attention(const nmt_cuda_model *m);
size_t nmt_cuda_model_attention_bytes(int32_t max_sentences, int32_t beam, int32_t max_src);

/* Steps 1-4 of one decoder step over n_rows rows: new row r continues row
 * rows->parent[r] of buffer buf (its h, c and feed gathered into buffer
 * 1 - buf together with the embedding of rows->tokens[r]); h, c, the feed
 * f_t and attn_argmax are computed there. src_len: [sentences]; src_stride
 * as given to nmt_cuda_encode.
 * carry_out: also make layer 0's recurrent product of these rows for the
 * next step, beside the output layer (which joins it); carried_in: the step
 * before made it, so layer 0 starts from it (decoder_step.cu). Either needs
 * n_rows <= nmt_cuda_model_carry_rows (0: never, e.g. sparse layer 0; or
 * batch invariance), and carried_in needs the step before on these rows'
 * parents to have had carry_out. */
nmt_status nmt_cuda_decoder_step(nmt_cuda_model *m, int buf, int32_t n_rows,
                                 const nmt_cuda_rows *rows, const int32_t *src_len,
                                 int32_t src_stride, int carried_in, int carry_out, nmt_error *err);
int32_t nmt_cuda_model_carry_rows(const nmt_cuda_model *m);

/* Step 5 over the feeds of buffer buf: the 2 * beam best words of every row,
 * lse and logits (over the whole vocabulary, or with shrinking over each
 * row's candidate list: column j = the list's j-th word, ids 0..3 always
 * columns 0..3), into *out. Rows are sentence by sentence, `beam` each;
 * rows->live says which count for the lists. excluded: [n_excluded] words
 * never generated (PAD, BOS). logits_word: the one column of out->logits
 * the caller reads, or NMT_LOGITS_ALL; with one column and the fused layer
 * set (below) the others are left unwritten. At 16 bits, right after the
 * nmt_cuda_decoder_step that wrote buffer buf's n_rows feeds, it reads their
 * 16-bit shadow (model/cuda/gemm.c, "Shadows"); otherwise it rounds the
 * feeds itself. */
nmt_status nmt_cuda_output_layer(nmt_cuda_model *m, int buf, int32_t n_rows, int32_t beam,
                                 const nmt_cuda_rows *rows, const int32_t *excluded,
                                 int32_t n_excluded, int32_t logits_word, nmt_cuda_scores *out,
                                 nmt_error *err);

/* Step 5 as one fused product, log-softmax and top-K (kernels/output_topk.h:
 * the logits are never written) wherever it runs: 16-bit precision (set it
 * first; at fp32 and tf32x2 this does nothing), the full vocabulary, a
 * caller that reads one logits column, and a shape the kernel takes;
 * elsewhere the unfused layer. Allocates the fused layer's workspace. The words and their order are the unfused layer's; lse
 * sums in another order (last bits). */
nmt_status nmt_cuda_model_set_fused_output(nmt_cuda_model *m, nmt_error *err);

/* Scoring's step 5 (output_pick.c), batched over steps: stash copies the
 * feeds of buffer buf's n_rows rows into rows [at, at + n_rows) of the
 * model's stash (_stash_rows rows: max_rows) and gives *attn_argmax (may be
 * NULL), the rows' attention argmax as nmt_cuda_output_layer leaves it;
 * pick scores the stash's first n_rows rows, log_probs[r] = log p(words[r])
 * (device) over the full vocabulary, no top-K, whatever the shrinking. */
int32_t nmt_cuda_output_stash_rows(const nmt_cuda_model *m);
nmt_status nmt_cuda_output_stash(nmt_cuda_model *m, int buf, int32_t n_rows, int32_t at,
                                 const int32_t **attn_argmax, nmt_error *err);
nmt_status nmt_cuda_output_pick(nmt_cuda_model *m, int32_t n_rows, const int32_t *words,
                                float *log_probs, nmt_error *err);

/* The recall probe (--stats 2 with shrinking; output_probe.c), after
 * nmt_cuda_output_layer on the same rows: scores the full vocabulary too and
 * counts the steps where the full top-beam words are all in the row's list.
 * Off the production path: set up only when nmt_cuda_model_set_shrink was
 * asked for it. */
int nmt_cuda_output_probe_on(const nmt_cuda_model *m);
nmt_status nmt_cuda_output_probe(nmt_cuda_model *m, int buf, int32_t n_rows, int32_t beam,
                                 const nmt_cuda_rows *rows, const int32_t *excluded,
                                 int32_t n_excluded, nmt_error *err);
/* The probe's counts since the last reset: live row-steps, recall hits,
 * candidate words (zeros when the probe is off). Synchronous. */
nmt_status nmt_cuda_output_probe_counts(const nmt_cuda_model *m, int64_t counts[3], int reset,
                                        nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_CUDA_MODEL_H */
