/* source.h: builds the N-hot feature CSR of a batch of tokenized sentences
 * (engine/source.c). Buffers are sized once for (max_sentences, max_src). */
#ifndef NMT_SOURCE_H
#define NMT_SOURCE_H

#include "cpu_model.h"
#include "tokenizer.h"

typedef struct nmt_source_builder {
    const nmt_model *model;
    int32_t max_sentences, max_tokens;
    int32_t n_sentences, n_tokens;
    int32_t *src_len, *token_offset, *row_ptr, *cols;
    float *values;
} nmt_source_builder;

nmt_status nmt_source_builder_init(nmt_source_builder *builder, const nmt_model *model,
                                   int32_t max_sentences, int32_t max_src, nmt_error *err);
void nmt_source_builder_free(nmt_source_builder *builder);
void nmt_source_builder_reset(nmt_source_builder *builder);
/* Appends one sentence (>= 1 token). */
nmt_status nmt_source_builder_add(nmt_source_builder *builder, const nmt_tokens *tokens,
                                  nmt_error *err);
nmt_source_batch nmt_source_builder_batch(const nmt_source_builder *builder);

#endif /* NMT_SOURCE_H */
