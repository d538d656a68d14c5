/* vocab.h: a token vocabulary: id -> UTF-8 string and string -> id through an
 * open-addressing hash table (no linear search). Owned by tokenizer/vocab code
 * (model/vocab.c); see docs/tokenization.md. */
#ifndef NMT_VOCAB_H
#define NMT_VOCAB_H

#include "nmt_status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_vocab nmt_vocab;

/* Builds a vocabulary from n tokens (copied). Refuses empty tokens, invalid
 * UTF-8, tokens containing whitespace (Unicode White_Space) or NUL and
 * duplicates, naming the entry (`what` is used in messages, e.g.
 * "model.bin: source vocabulary"). `lengths` may be NULL: NUL-terminated. */
nmt_status nmt_vocab_create(const char *const *tokens, const size_t *lengths, int32_t n,
                            const char *what, nmt_vocab **vocab, nmt_error *err);
void nmt_vocab_free(nmt_vocab *vocab);

int32_t nmt_vocab_size(const nmt_vocab *vocab);
/* The id of a token of `length` bytes, or `unk_id` when absent. */
int32_t nmt_vocab_lookup(const nmt_vocab *vocab, const char *token, size_t length, int32_t unk_id);
/* The token of an id (NUL-terminated), or NULL when out of range. */
const char *nmt_vocab_token(const nmt_vocab *vocab, int32_t id);

#ifdef __cplusplus
}
#endif

#endif /* NMT_VOCAB_H */
