/* source_batch.h: the encoders' input on both devices: a batch of
 * tokenized source sentences as one N-hot feature CSR, and the builder that
 * makes it from tokens (model/source_batch.c; buffers sized once for
 * (max_sentences, max_src)). */
#ifndef NMT_SOURCE_BATCH_H
#define NMT_SOURCE_BATCH_H

#include "model.h"
#include "tokenizer.h"

/* A batch of tokenized source sentences, features as one CSR matrix whose
 * rows are all tokens of all sentences, sentence after sentence. */
typedef struct nmt_source_batch {
    int32_t n_sentences;
    const int32_t *src_len;      /* [n_sentences] tokens, each >= 1 */
    const int32_t *token_offset; /* [n_sentences + 1] first token row of each sentence */
    const int32_t *row_ptr;      /* [n_tokens + 1] */
    const int32_t *cols;         /* feature rows of src_embedding */
    const float *values;         /* feature weights (1.0 in v1) */
    const uint64_t *line_key;    /* [n_sentences]: sampling's key of each sentence's random
                                    streams (decoder/logit_rules.h) */
} nmt_source_batch;


typedef struct nmt_source_builder {
    const nmt_model *model;
    int cased; /* the model has a case feature: words are looked up lowercased */
    int32_t max_sentences, max_tokens;
    int32_t n_sentences, n_tokens;
    int32_t *src_len, *token_offset, *row_ptr, *cols;
    float *values;
    uint64_t *line_key;
} nmt_source_builder;

nmt_status nmt_source_builder_init(nmt_source_builder *builder, const nmt_model *model,
                                   int32_t max_sentences, int32_t max_src, nmt_error *err);
void nmt_source_builder_free(nmt_source_builder *builder);
void nmt_source_builder_reset(nmt_source_builder *builder);
/* Sets every token's word_id: the source vocabulary's id of its word
 * (model-v1: the lowercased key when the model has a case feature, else the
 * token as written; unknown words NMT_UNK_ID). Reads only what init set, so
 * any thread may call it while another builds a batch. */
void nmt_source_word_ids(const nmt_source_builder *builder, nmt_tokens *tokens);
/* Appends one sentence (>= 1 token) whose sampling key is line_key; a
 * token's word_id when set (>= 0), else its word looked up. */
nmt_status nmt_source_builder_add(nmt_source_builder *builder, const nmt_tokens *tokens,
                                  uint64_t line_key, nmt_error *err);
nmt_source_batch nmt_source_builder_batch(const nmt_source_builder *builder);

#endif /* NMT_SOURCE_BATCH_H */
