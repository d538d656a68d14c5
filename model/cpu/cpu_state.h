/* cpu_state.h: the CPU reference engine's state (private to model/cpu/: cpu_model.c,
 * encoder.c, decoder_step.c and output_layer.c). Every buffer is allocated once in
 * nmt_cpu_state_create for (max_sentences, beam_size, max_src); encode, step
 * and reorder never allocate. Decoder rows are double-buffered so reorder is
 * a gather from the current copy into the other one followed by a swap. */
#ifndef NMT_CPU_STATE_H
#define NMT_CPU_STATE_H

#include "cpu_model.h"
#include "linear.h"
#include "linear_blas.h"
#include "linear_fixed.h"
#include "linear_int8.h"
#include "shrink.h"
#include "spmm.h"

/* One matrix (or column slice of one) the steps multiply in CSR form
 * (sparse.c); row_offsets NULL: use the dense weights. */
typedef struct nmt_cpu_csr {
    int32_t rows, cols;
    int32_t *row_offsets, *col_indices;
    float *values;
} nmt_cpu_csr;

/* The int8 form of the dense slice (w, k) of a matrix (w: its first
 * weight), as the steps multiply it. */
typedef struct nmt_cpu_int8_slice {
    const float *w;
    int32_t k;
    nmt_int8_matrix q;
} nmt_cpu_int8_slice;

/* A matrix's fp16 copy: w16[i] holds w[i] for i < count. */
typedef struct nmt_cpu_half_copy {
    const float *w;
    size_t count;
    uint16_t *w16;
} nmt_cpu_half_copy;

struct nmt_cpu_state {
    const nmt_model *model;
    int32_t max_sentences, beam_size, max_src, max_rows;
    int32_t emb, hidden, half, enc_layers, dec_layers, vocab;

    /* Encoder workspaces, one sentence at a time. */
    float *src_emb;       /* [max_src, E] */
    float *layer_out[2];  /* [max_src, H]: [fwd; bwd] of the inner layers, ping-pong */
    float *enc_gates_x;   /* [max_src, 4 * H/2]: w_ih x + b_ih for every position */
    float *enc_gates_h;   /* [4 * H/2] */
    float *enc_c;         /* [H/2] running cell state of one direction */
    float *zeros;         /* [H]: the zero initial state */

    /* Per sentence of the current batch. */
    int32_t n_sentences;
    int32_t *src_len; /* [max_sentences] */
    float *memory;    /* [max_sentences, max_src, H]: top-layer [fwd; bwd], zero past src_len */
    float *keys;      /* [max_sentences, max_src, H]: W_a m_j */

    /* Decoder rows, double-buffered: [cur] is live. */
    int32_t n_rows;
    int cur;
    float *dec_h[2][NMT_MAX_LAYERS]; /* [max_rows, H] */
    float *dec_c[2][NMT_MAX_LAYERS]; /* [max_rows, H] */
    float *feed[2];                  /* [max_rows, H]: input feed f_{t-1} */
    int32_t *row_sentence[2];        /* [max_rows] */

    /* Step workspaces. */
    float *tgt_emb;     /* [max_rows, E] */
    float *dec_gates;   /* [max_rows, 4H] */
    float *context;     /* [max_rows, H] */
    float *attn;        /* [max_rows, max_src] */
    float *logits;      /* [max_rows, V] */

    /* Output-layer shrinking (nmt_cpu_state_set_shrink; off while has_shrink is 0). */
    int has_shrink;
    int full_softmax; /* 1: the whole vocabulary even with a shrink (nmt_cpu_state_full_softmax) */
    nmt_shrink shrink;
    int32_t *lsh_codes;      /* [max_rows, W] */
    int32_t *lsh_hits;       /* [max_rows, V]: zero between steps */
    int32_t *cand;           /* [max_rows, V]: one list per group (at most a group a row) */
    int32_t *cand_count;     /* [max_rows] */
    int32_t *group_first;    /* [max_rows + 1]: each group's first row, then n_rows */
    float *cand_log_probs;   /* [V]: one row's log-softmax over its candidates */
    /* Recall (set_shrink with measure_recall): the full softmax's top-B words. */
    int measure_recall;
    float *recall_values;    /* [max_rows, B] */
    int32_t *recall_ids;     /* [max_rows, B] */
    int64_t recall_stats[3]; /* row-steps, recalled, candidate words (nmt_cpu_lsh_recall) */
    int64_t steps;           /* step calls */

    /* Sparse matrices (nmt_cpu_state_set_sparse; all dense until then). Layer
     * 0's w_ih and W_c are two column slices each, as the dense code uses
     * them. The shrunk output layer and the recall probe read out_w dense. */
    nmt_cpu_csr sp_dec_ih[NMT_MAX_LAYERS][2]; /* [embedding | feed] (layer 0) or whole */
    nmt_cpu_csr sp_dec_hh[NMT_MAX_LAYERS];
    nmt_cpu_csr sp_attn_a;
    nmt_cpu_csr sp_attn_c[2];                 /* [context | h] */
    nmt_cpu_csr sp_out;
    int32_t n_sparse_used;                    /* matrices multiplied sparse */

    /* The fast path (nmt_cpu_state_set_fast; the reference while fast is
     * 0): dense products on the own product or the BLAS's SGEMM, the fp32
     * ops, and the encoder batched over the sentences (encoder_fast.c). */
    int fast;
    int fast_blas;           /* the products on the BLAS's SGEMM */
    nmt_cpu_gemm gemm;       /* else the own product's path and threads (its pool owned) */
    /* With the own product, for a model whose weights are all fp16: fp16
     * copies of the matrices a decoder step multiplies (in fp32) and of the
     * encoder's recurrent ones, which the products read instead of the fp32
     * ones (the same bits, half the bytes: a step of few rows is bound by
     * reading its weights). */
    nmt_cpu_half_copy half_copies[4 * NMT_MAX_LAYERS + 2];
    int32_t n_half_copies;
    /* --precision int8: the decoder step's slices in int8 (kernels/linear_int8.h),
     * and the rows of a product quantized. */
    nmt_cpu_int8_slice int8_slices[3 * NMT_MAX_LAYERS + 3];
    int32_t n_int8_slices;
    uint8_t *xq;             /* [max_rows, the largest k padded] */
    int32_t ldq;
    float *x_scale;          /* [max_rows] */
    float *blas_scratch;     /* nmt_cpu_linear_blas's, for the largest product */
    int32_t *enc_first;      /* [max_sentences]: each sentence's first packed row */
    float *enc_in;           /* [max_sentences * max_src, E]: the embeddings, packed */
    float *enc_out[2];       /* [max_sentences * max_src, H]: layers' [fwd; bwd], ping-pong */
    float *enc_gates_all;    /* [max_sentences * max_src, 4 * H/2]: w_ih x + b_ih */
    float *enc_h_prev;       /* [max_sentences, H/2]: the step's previous h, gathered */
    float *enc_gates_rows;   /* [max_sentences, 4 * H/2]: w_hh h + b_hh */
    float *enc_c_rows;       /* [max_sentences, H/2]: each sentence's running c */
    /* Rows with one parent hold the same h, c and feed after a reorder, so
     * layer 0's feed and recurrent products are the same for them, and rows
     * of one token the same embedding product: the fast path runs those
     * once a parent and once a token (decoder_step.c; a row's product has
     * the same bits in any batch). n_parents 0: not known. */
    int32_t n_parents;
    int32_t *parent_rows;    /* [max_rows]: each parent's first new row */
    int32_t *row_parent;     /* [max_rows]: a row's parent, as its index in parent_rows */
    int32_t *parent_slot;    /* [max_rows]: reorder's scratch */
    int32_t *step_tokens;    /* [max_rows]: a step's distinct tokens */
    int32_t *row_token;      /* [max_rows]: a row's token, as its index in step_tokens */
    int32_t *token_slot;     /* [V]: -1 between steps */
    float *shared_gates;     /* [max_rows, 4H]: a product over the parents or tokens */
};

void nmt_cpu_state_free_sparse(nmt_cpu_state *state); /* sparse.c */
void nmt_cpu_state_free_fast(nmt_cpu_state *state);   /* encoder_fast.c */
/* The fast path's encoder: nmt_cpu_encode's work after its checks. */
nmt_status nmt_cpu_encode_fast(nmt_cpu_state *state, const nmt_source_batch *batch,
                               nmt_error *err);

/* The own product of a dense slice (w, ldw), from the fp16 copy of its
 * matrix where there is one. */
static inline void nmt_cpu_linear_fixed_any(const nmt_cpu_state *state, int32_t m, int32_t n,
                                            int32_t k, const float *x, int32_t ldx,
                                            const float *w, int32_t ldw, const float *bias,
                                            int accumulate, float *y, int32_t ldy)
{
    for (int32_t i = 0; i < state->n_int8_slices; i++) {
        const nmt_cpu_int8_slice *s = &state->int8_slices[i];
        if (w == s->w && k == s->k && n == s->q.n && m <= state->max_rows) {
            nmt_cpu_quantize_rows(m, k, x, ldx, state->xq, state->ldq, state->x_scale);
            nmt_cpu_linear_int8(&state->gemm, m, state->xq, state->ldq, state->x_scale, &s->q,
                                bias, accumulate, y, ldy);
            return;
        }
    }
    for (int32_t i = 0; i < state->n_half_copies; i++) {
        const nmt_cpu_half_copy *c = &state->half_copies[i];
        if (w >= c->w && w < c->w + c->count) {
            nmt_cpu_linear_fixed_half(&state->gemm, m, n, k, x, ldx, c->w16 + (w - c->w), ldw,
                                      bias, accumulate, y, ldy);
            return;
        }
    }
    nmt_cpu_linear_fixed(&state->gemm, m, n, k, x, ldx, w, ldw, bias, accumulate, y, ldy);
}

/* y = x . W^T (+ bias) (+ y): the CSR when the matrix has one (the same bits
 * as the reference's dense slice, sparse.c), else the dense slice (w, ldw)
 * on the fast path's product or the reference's loop. */
static inline void nmt_cpu_matmul(const nmt_cpu_state *state, const nmt_cpu_csr *sp, int32_t m,
                                  int32_t n, int32_t k, const float *x, int32_t ldx,
                                  const float *w, int32_t ldw, const float *bias, int accumulate,
                                  float *y, int32_t ldy)
{
    if (sp && sp->row_offsets)
        nmt_cpu_spmm(m, n, k, x, ldx, sp->row_offsets, sp->col_indices, sp->values, bias,
                     accumulate, y, ldy);
    else if (state->fast && state->fast_blas)
        nmt_cpu_linear_blas(m, n, k, x, ldx, w, ldw, bias, accumulate, y, ldy,
                            state->blas_scratch);
    else if (state->fast)
        nmt_cpu_linear_fixed_any(state, m, n, k, x, ldx, w, ldw, bias, accumulate, y, ldy);
    else
        nmt_cpu_linear(m, n, k, x, ldx, w, ldw, bias, accumulate, y, ldy);
}

#endif /* NMT_CPU_STATE_H */
