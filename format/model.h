/* model.h: the in-memory model v1 (docs/model-v1.md).
 *
 * nmt_model_read (format/model.c) reads a file through model_file.c, checks
 * every hyper-parameter and tensor shape, and fills this struct with fp32
 * host copies of the weights (fp16 tensors are widened at load). All matrices
 * are row-major. H is the decoder hidden size; each encoder direction has H/2.
 *
 * Special target ids are fixed: PAD 0, UNK 1, BOS 2, EOS 3. Source word ids:
 * PAD 0, UNK 1. The source embedding table holds the word rows first, then
 * the rows of each further feature kind (docs/model-format.md). */
#ifndef NMT_MODEL_H
#define NMT_MODEL_H

#include "nmt_status.h"
#include "sentencepiece.h"
#include "vocab.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { NMT_PAD_ID = 0, NMT_UNK_ID = 1, NMT_BOS_ID = 2, NMT_EOS_ID = 3 };

#define NMT_MAX_LAYERS 8
#define NMT_MAX_FEATURE_KINDS 4

typedef enum nmt_feature_kind {
    NMT_FEATURE_WORD = 0, /* the lowercased word: rows [0, src_words) */
    NMT_FEATURE_CASE = 1  /* case class: 4 rows, see docs/tokenization.md */
} nmt_feature_kind;

typedef struct nmt_feature_table {
    nmt_feature_kind kind;
    int32_t first_row; /* first row of this kind in src_embedding */
    int32_t n_rows;
} nmt_feature_table;

typedef struct nmt_hparams {
    int32_t emb_size;     /* E (source and target) */
    int32_t hidden_size;  /* H; even */
    int32_t enc_layers;
    int32_t dec_layers;
    int32_t src_words;    /* source word vocabulary size */
    int32_t src_rows;     /* rows of src_embedding: words + other feature rows */
    int32_t tgt_vocab;    /* V_tgt */
    int32_t n_features;   /* feature kinds, the word first */
    nmt_feature_table features[NMT_MAX_FEATURE_KINDS];
    int32_t dec_init_from_encoder; /* 1: decoder starts from encoder finals; 0: zeros */
    int32_t pretokenized; /* 1 (optional key tokenizer=pretokenized): the model's text is
                             tokenized outside the engine: input and output are tokens */
    int32_t sentencepiece; /* 1 (tokenizer=sentencepiece): text is split into the pieces of
                              the SentencePiece model in section SPMP, and joined back by it */
} nmt_hparams;

/* One LSTM: gates = w_ih x + b_ih + w_hh h + b_hh, gate order i, f, g, o. */
typedef struct nmt_lstm_weights {
    int32_t input_size, hidden_size;
    float *w_ih; /* [4*hidden, input] */
    float *w_hh; /* [4*hidden, hidden] */
    float *b_ih; /* [4*hidden] */
    float *b_hh; /* [4*hidden] */
} nmt_lstm_weights;

/* A matrix the file stores sparse (section SPRS), in CSR form: row r's
 * nonzeros are values[row_offsets[r] .. row_offsets[r + 1]) at columns
 * col_indices[...], strictly increasing. The loader also expands it into
 * `dense` (zeros elsewhere), the pointer the struct fields below hold, so
 * every consumer of dense weights (the CUDA upload, tools) works unchanged;
 * the CPU engine computes with the CSR (model/cpu, kernels/cpu/spmm.c). */
typedef struct nmt_sparse_matrix {
    char name[48];
    int32_t rows, cols, nnz;
    const int32_t *row_offsets; /* [rows + 1] */
    const int32_t *col_indices; /* [nnz] */
    const float *values;        /* [nnz] */
    const float *dense;         /* [rows, cols] in the arena: the model field's pointer */
} nmt_sparse_matrix;

typedef struct nmt_model nmt_model; /* the API's opaque handle (include/nmt.h) */

struct nmt_model {
    nmt_hparams hp;
    nmt_vocab *src_vocab; /* source words (lowercased) */
    nmt_vocab *tgt_vocab; /* target tokens */
    nmt_spm *spm;         /* tokenizer=sentencepiece: the model of section SPMP; else NULL */
    float *src_embedding; /* [src_rows, E] */
    float *tgt_embedding; /* [tgt_vocab, E] */
    nmt_lstm_weights enc_fwd[NMT_MAX_LAYERS]; /* hidden H/2 */
    nmt_lstm_weights enc_bwd[NMT_MAX_LAYERS];
    nmt_lstm_weights dec[NMT_MAX_LAYERS];     /* layer 0 input E + H (input feed) */
    float *attn_w_a;  /* [H, H]: score_j = h . (w_a m_j) */
    float *attn_w_c;  /* [H, 2H]: f = tanh(w_c [c; h]) */
    float *out_w;     /* [V_tgt, H] */
    float *out_b;     /* [V_tgt] */
    void *arena;      /* one allocation holding every tensor above */
    size_t arena_mapped; /* > 0: the arena is the model file mapped (fp32, uncompressed: the
                            tensors used in place), this many bytes to munmap */
    int32_t weights_fp16; /* 1: the file stores every tensor in fp16 (NMT_PRECISION_AUTO) */
    int32_t n_sparse; /* matrices stored sparse in the file (section SPRS) */
    nmt_sparse_matrix *sparse; /* [n_sparse]; arrays in sparse_arena */
    void *sparse_arena;
    char description[512];
};

/* Loads and validates a model file; refuses malformed files with the reason
 * (the API's nmt_model_load, engine/model_api.c). */
nmt_status nmt_model_read(const char *path, nmt_model **model, nmt_error *err);
void nmt_model_destroy(nmt_model *model);
/* The CSR form of the matrix whose dense pointer is `dense` (a model field),
 * or NULL when it is stored dense. */
const nmt_sparse_matrix *nmt_model_sparse_of(const nmt_model *model, const float *dense);
/* Sizes and vocabularies in one line (the API's nmt_model_describe). */
const char *nmt_model_summary(const nmt_model *model);

#ifdef __cplusplus
}
#endif

#endif /* NMT_MODEL_H */
