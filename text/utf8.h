/* utf8.h: internal UTF-8 helpers shared by the vocabulary and the tokenizer:
 * strict decoding (RFC 3629: no overlongs, surrogates or code points past
 * U+10FFFF) and the Unicode White_Space set. nmt_utf8_valid itself is
 * declared in tokenizer.h. See docs/tokenization.md. */
#ifndef NMT_UTF8_H
#define NMT_UTF8_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Decodes one code point at s[0, len) (len >= 1). Returns its byte length
 * (1-4) and stores the code point, or returns 0 when the sequence starting at
 * s is invalid (overlong, surrogate, past U+10FFFF, truncated, bad byte). */
int nmt_utf8_decode(const char *s, size_t len, int32_t *code_point);

/* Writes the UTF-8 encoding of a valid code point; returns its length. */
int nmt_utf8_encode(int32_t code_point, char *out);

/* 1 for the Unicode White_Space property (U+0009-000D, U+0020, U+0085,
 * U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000). */
int nmt_unicode_is_space(int32_t code_point);

#ifdef __cplusplus
}
#endif

#endif /* NMT_UTF8_H */
