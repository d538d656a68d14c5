/* step_io.h: what passes between the GPU search (decoder/cuda/) and the CUDA
 * network (model/cuda/) at each call: the encoder's input, the rows a step
 * continues, and the scores the output layer leaves. Plain C, device
 * pointers unless a field says host. Nothing here reveals the network's
 * state: the search sees these structs and the step interface only
 * (decoder/cuda/cuda_search.h).
 *
 * Rows: row r = p * beam + k is slot k of the sentence at position p of the
 * search's active list; sentences are sorted longest first. The network keeps
 * its decoder state in two row buffers, 0 and 1; the search says which one is
 * live at each call (the step reads one and writes the other). */
#ifndef NMT_STEP_IO_H
#define NMT_STEP_IO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One batch for the encoder, sentences sorted longest first. */
typedef struct nmt_cuda_encoder_input {
    int32_t n_sentences;
    int32_t src_stride;     /* longest sentence: time steps and memory stride */
    const int32_t *active;  /* host [src_stride]: sentences longer than t (a prefix) */
    const int32_t *src_len; /* [n_sentences] */
    const int32_t *row_ptr; /* time-major CSR [src_stride * n_sentences + 1] */
    const int32_t *cols;
    const float *values;
    int32_t beam;           /* decoder rows p * beam + k; slot 0 gets the initial state */
    /* Continuous batching (decoder/cuda/stream_search.c): sentences joining a
     * running search (slot, dec_pos, side: zero/NULL for a whole batch). */
    const int32_t *slot;    /* [n_sentences]: memory-bank slot of sentence i (NULL: i) */
    int32_t mem_stride;     /* the bank's stride in positions, >= src_stride (0:
                               src_stride); positions past a sentence's length are
                               zeros (slot NULL) or left as they were */
    const int32_t *dec_pos; /* [n_sentences]: sentence i's decoder rows are
                               dec_pos[i] * beam + k (NULL: i); only those rows are
                               written, the others keep the running search's state */
    int side;               /* 1 (with slot): launch on the network's encoder stream, which
                               runs beside the decoder steps, and leave the initial states
                               by slot for nmt_cuda_encoder_place instead of writing rows
                               (dec_pos unused) */
} nmt_cuda_encoder_input;

/* The rows of one step, written by the search before the step. */
typedef struct nmt_cuda_rows {
    const int32_t *tokens;   /* [rows]: previous token of each row */
    const int32_t *sentence; /* [rows]: sentence (sorted index) of each row */
    const int32_t *parent;   /* [rows]: row of the live buffer each new row continues */
    const int32_t *live;     /* [rows]: 1 for a hypothesis alive in a sentence not done */
} nmt_cuda_rows;

/* The output layer's caller reads every column of the logits (no one word). */
enum { NMT_LOGITS_ALL = -1 };

/* What the output layer leaves for the search's beam step (buffers owned by
 * the network, the same pointers at every call). */
typedef struct nmt_cuda_scores {
    const float *top_values;    /* [rows, 2 * beam]: log p of the best words, best first */
    const int32_t *top_ids;     /* [rows, 2 * beam]: the words */
    const float *logits;        /* [rows, ld_logits]: column = word, or a shrunk list's index */
    int32_t ld_logits;
    const float *lse;           /* [rows]: log-sum-exp of the row's logits */
    const int32_t *attn_argmax; /* [rows]: source position attended most */
} nmt_cuda_scores;

#ifdef __cplusplus
}
#endif

#endif /* NMT_STEP_IO_H */
