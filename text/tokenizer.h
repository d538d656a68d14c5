/* tokenizer.h: UTF-8 validation, tokenization, case features, detokenization.
 * The rules are in docs/tokenization.md and pinned by the test vectors in
 * tests/data/tokenizer_cases.tsv, which the Python tools pass too.
 *
 * A token that was glued to the previous one in the text (no space between)
 * carries the joiner prefix U+FFED "￭", so detokenization is exact. */
#ifndef NMT_TOKENIZER_H
#define NMT_TOKENIZER_H

#include "nmt_status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NMT_JOINER "\xef\xbf\xad" /* U+FFED, 3 bytes */
/* A literal U+FFED in the input becomes this token (a symbol token of its
 * own, never lowercased); nmt_detokenize turns it back into U+FFED. Ordinary
 * text never tokenizes to it: "<" and "+" are always tokens of their own. */
#define NMT_JOINER_ESCAPE "<U+FFED>"

typedef enum nmt_case_class {
    NMT_CASE_LOWER = 0,       /* no uppercase letter */
    NMT_CASE_CAPITALIZED = 1, /* first letter upper, the rest lower */
    NMT_CASE_UPPER = 2,       /* all letters upper, two or more */
    NMT_CASE_OTHER = 3        /* mixed */
} nmt_case_class;

typedef struct nmt_token {
    const char *text;  /* joiner (if glued) + original-case form: target-side token */
    const char *key;   /* joiner (if glued) + lowercased form: source vocabulary key */
    nmt_case_class case_class;
    int32_t word_id;   /* the source vocabulary's id of the word: -1 from the
                          tokenizers; the translator looks it up when it prepares
                          the line, so the batch builder copies it */
} nmt_token;

/* The tokens of one line; the strings live in `storage`. */
typedef struct nmt_tokens {
    int32_t n;
    nmt_token *tokens;
    char *storage;
} nmt_tokens;

/* Returns 1 when s[0, len) is valid UTF-8 (no overlongs, surrogates or
 * code points past U+10FFFF); else 0 with the first bad byte's offset. */
int nmt_utf8_valid(const char *s, size_t len, size_t *bad_offset);

/* Tokenizes one line. Invalid UTF-8 is refused with NMT_STATUS_ERROR_INPUT
 * and a message giving the byte offset. `out` is cleared first (with
 * nmt_tokens_clear: it must be zero-initialized or hold earlier tokens). */
nmt_status nmt_tokenize(const char *text, size_t len, nmt_tokens *out, nmt_error *err);
void nmt_tokens_clear(nmt_tokens *tokens);

/* Pre-tokenized input: the tokens are the runs between whitespace, taken as
 * they are (no normalization, no splitting); a token starting with the
 * joiner is glued to the previous one; NMT_JOINER_ESCAPE (or a lone joiner)
 * is the escape token.
 * Case classes and keys as nmt_tokenize's. */
nmt_status nmt_tokenize_pretokenized(const char *text, size_t len, nmt_tokens *out,
                                     nmt_error *err);

/* Joins tokens back into text (malloc'd, NUL-terminated, caller frees):
 * single spaces between tokens, none before a token starting with the joiner
 * (which is removed) nor after one ending in BPE's "@@" (removed too:
 * "new@@ er" is "newer", subword-nmt's convention, for models with BPE
 * vocabularies); NMT_JOINER_ESCAPE becomes U+FFED again. */
nmt_status nmt_detokenize(const char *const *tokens, int32_t n, char **text, nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_TOKENIZER_H */
