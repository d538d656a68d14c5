/* source_batch.c: turns tokenized source lines into the N-hot feature CSR the
 * encoder reads (model-v1 "Source embedding: N-hot"): each token has one row
 * per feature kind, the word id and, when the model has it, the case class
 * row; every weight is 1.0. */
#include "source_batch.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

/* 1 when the model has a case feature of its own. */
static int words_cased(const nmt_model *model)
{
    int cased = 0;
    for (int32_t f = 0; f < model->hp.n_features; f++)
        cased |= model->hp.features[f].kind == NMT_FEATURE_CASE;
    return cased;
}

/* The lowercased key when the case is a feature of its own, else the token
 * as written (a cased vocabulary). */
static int32_t word_id(const nmt_model *model, int cased, const nmt_token *token)
{
    const char *word = cased ? token->key : token->text;
    return nmt_vocab_lookup(model->src_vocab, word, strlen(word), NMT_UNK_ID);
}

void nmt_source_builder_free(nmt_source_builder *builder)
{
    if (!builder)
        return;
    free(builder->src_len);
    free(builder->token_offset);
    free(builder->row_ptr);
    free(builder->cols);
    free(builder->values);
    free(builder->line_key);
    memset(builder, 0, sizeof *builder);
}

nmt_status nmt_source_builder_init(nmt_source_builder *builder, const nmt_model *model,
                                   int32_t max_sentences, int32_t max_src, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    memset(builder, 0, sizeof *builder);
    builder->model = model;
    builder->max_sentences = max_sentences;
    builder->max_tokens = max_sentences * max_src;
    const int32_t features = model->hp.n_features;
    builder->cased = words_cased(model);
    NMT_ALLOC(builder->src_len, max_sentences);
    NMT_ALLOC(builder->line_key, max_sentences);
    NMT_ALLOC(builder->token_offset, max_sentences + 1);
    NMT_ALLOC(builder->row_ptr, builder->max_tokens + 1);
    NMT_ALLOC(builder->cols, (size_t)builder->max_tokens * features);
    NMT_ALLOC(builder->values, (size_t)builder->max_tokens * features);
    return NMT_STATUS_OK;
cleanup:
    nmt_source_builder_free(builder);
    return status;
}

void nmt_source_builder_reset(nmt_source_builder *builder)
{
    builder->n_sentences = 0;
    builder->n_tokens = 0;
    builder->token_offset[0] = 0;
    builder->row_ptr[0] = 0;
}

void nmt_source_word_ids(const nmt_source_builder *builder, nmt_tokens *tokens)
{
    for (int32_t t = 0; t < tokens->n; t++)
        tokens->tokens[t].word_id = word_id(builder->model, builder->cased, &tokens->tokens[t]);
}

nmt_status nmt_source_builder_add(nmt_source_builder *builder, const nmt_tokens *tokens,
                                  uint64_t line_key, nmt_error *err)
{
    const nmt_hparams *hp = &builder->model->hp;
    if (builder->n_sentences >= builder->max_sentences ||
        builder->n_tokens + tokens->n > builder->max_tokens || tokens->n < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                             "source batch overflow: %d sentences, %d + %d tokens",
                             builder->n_sentences, builder->n_tokens, tokens->n);
    for (int32_t t = 0; t < tokens->n; t++) {
        const nmt_token *token = &tokens->tokens[t];
        int32_t row = builder->n_tokens + t;
        int32_t e = builder->row_ptr[row];
        for (int32_t f = 0; f < hp->n_features; f++) {
            const nmt_feature_table *table = &hp->features[f];
            int32_t id = 0;
            if (table->kind == NMT_FEATURE_WORD)
                id = token->word_id >= 0 ? token->word_id
                                         : word_id(builder->model, builder->cased, token);
            else if (table->kind == NMT_FEATURE_CASE)
                id = (int32_t)token->case_class;
            builder->cols[e] = table->first_row + id;
            builder->values[e] = 1.0f;
            e++;
        }
        builder->row_ptr[row + 1] = e;
    }
    builder->src_len[builder->n_sentences] = tokens->n;
    builder->line_key[builder->n_sentences] = line_key;
    builder->n_tokens += tokens->n;
    builder->n_sentences++;
    builder->token_offset[builder->n_sentences] = builder->n_tokens;
    return NMT_STATUS_OK;
}

nmt_source_batch nmt_source_builder_batch(const nmt_source_builder *builder)
{
    nmt_source_batch batch;
    batch.n_sentences = builder->n_sentences;
    batch.src_len = builder->src_len;
    batch.token_offset = builder->token_offset;
    batch.row_ptr = builder->row_ptr;
    batch.cols = builder->cols;
    batch.values = builder->values;
    batch.line_key = builder->line_key;
    return batch;
}
