/* nosentencepiece/sentencepiece.c: sentencepiece.h in a build without
 * libsentencepiece (CMake did not find it). Loading refuses with
 * NMT_STATUS_ERROR_UNSUPPORTED and says what to install, so a model file that
 * needs SentencePiece fails at load, naming the reason, instead of
 * translating with the wrong tokenizer. No model can exist, so the other
 * calls only ever see NULL. */
#include "sentencepiece.h"

#include "error.h"

#include <stdlib.h>

int nmt_spm_available(void)
{
    return 0;
}

nmt_status nmt_spm_load(const void *bytes, size_t size, const char *what, nmt_spm **spm,
                        nmt_error *err)
{
    (void)bytes;
    (void)size;
    if (spm)
        *spm = NULL;
    return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                         "%s: the model uses a SentencePiece tokenizer, but this build has no "
                         "SentencePiece support (install libsentencepiece-dev and rebuild)",
                         what ? what : "SentencePiece model");
}

void nmt_spm_free(nmt_spm *spm)
{
    (void)spm;
}

int32_t nmt_spm_piece_count(const nmt_spm *spm)
{
    (void)spm;
    return 0;
}

const char *nmt_spm_piece(const nmt_spm *spm, int32_t id)
{
    (void)spm;
    (void)id;
    return NULL;
}

nmt_status nmt_spm_encode(const nmt_spm *spm, const char *text, size_t len, nmt_tokens *out,
                          nmt_error *err)
{
    (void)spm;
    (void)text;
    (void)len;
    if (out)
        nmt_tokens_clear(out);
    return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                         "SentencePiece is not built in (install libsentencepiece-dev)");
}

nmt_status nmt_spm_decode(const nmt_spm *spm, const char *const *pieces, int32_t n, char **text,
                          nmt_error *err)
{
    (void)spm;
    (void)pieces;
    (void)n;
    if (text)
        *text = NULL;
    return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                         "SentencePiece is not built in (install libsentencepiece-dev)");
}
