/* sentencepiece.h: SentencePiece subword models (Kudo and Richardson 2018,
 * "SentencePiece: A simple and language independent subword tokenizer and
 * detokenizer for Neural Text Processing") applied inside the engine: a model
 * file that says tokenizer=sentencepiece carries the serialized SentencePiece
 * model (docs/model-format.md, section SPMP), whose pieces are the source
 * words and the target tokens.
 *
 * A C front over Google's reference implementation, Debian's
 * libsentencepiece (text/sentencepiece.cc), so that a piece is exactly what
 * spm_encode gives and a detokenized line exactly what spm_decode gives.
 * Built only when CMake finds the library; otherwise the stub
 * (text/nosentencepiece/sentencepiece.c) refuses every model with
 * NMT_STATUS_ERROR_UNSUPPORTED. Nothing here prints, throws or exits: every
 * failure is a status and a message. A loaded model is immutable and its
 * encode and decode may run on several threads at once. */
#ifndef NMT_SENTENCEPIECE_H
#define NMT_SENTENCEPIECE_H

#include "nmt_status.h"
#include "tokenizer.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_spm nmt_spm;

/* 1 when this build has SentencePiece support, 0 when it has the stub. */
int nmt_spm_available(void);

/* Loads a serialized SentencePiece model (the bytes of a .model file,
 * copied). `what` starts the messages ("model.bin: section SPMP"). Bytes that
 * are not a model: NMT_STATUS_ERROR_FORMAT with the library's reason; no
 * support built: NMT_STATUS_ERROR_UNSUPPORTED. */
nmt_status nmt_spm_load(const void *bytes, size_t size, const char *what, nmt_spm **spm,
                        nmt_error *err);
void nmt_spm_free(nmt_spm *spm);

/* The model's pieces, by SentencePiece id (NULL when out of range). */
int32_t nmt_spm_piece_count(const nmt_spm *spm);
const char *nmt_spm_piece(const nmt_spm *spm, int32_t id);

/* One line of text -> its pieces as tokens (`out` as for nmt_tokenize: zeroed
 * or holding earlier tokens). Each token's text and key are the piece as it
 * is, its case class NMT_CASE_LOWER: pieces carry their case, and a model
 * with this tokenizer has no case feature. Invalid UTF-8 is refused with
 * NMT_STATUS_ERROR_INPUT and the byte offset, as nmt_tokenize does, rather
 * than handed to the library, which would replace it silently. */
nmt_status nmt_spm_encode(const nmt_spm *spm, const char *text, size_t len, nmt_tokens *out,
                          nmt_error *err);

/* Pieces -> text with SentencePiece's decoder (malloc'd, NUL-terminated,
 * caller frees): "▁" becomes a space, control pieces such as </s> vanish, a
 * piece the model does not know becomes its unknown surface (" ⁇ "). */
nmt_status nmt_spm_decode(const nmt_spm *spm, const char *const *pieces, int32_t n, char **text,
                          nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_SENTENCEPIECE_H */
