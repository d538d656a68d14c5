/* sentencepiece.cc: the C front of sentencepiece.h over Google's reference
 * SentencePiece (Debian's libsentencepiece-dev; the same code as spm_encode,
 * spm_decode and the Python module that OpenNMT-py users tokenize with, so the
 * engine's pieces are theirs byte for byte). Compiled only when CMake finds
 * the library (NMT_WITH_SENTENCEPIECE).
 *
 * The library is C++: every entry point catches what it may throw (an
 * allocation failure, a protobuf error) and turns it into a status, since no
 * exception may cross into the C callers. */
#include "sentencepiece.h"

#include "error.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

struct nmt_spm {
    sentencepiece::SentencePieceProcessor processor;
};

extern "C" int nmt_spm_available(void)
{
    return 1;
}

extern "C" nmt_status nmt_spm_load(const void *bytes, size_t size, const char *what,
                                   nmt_spm **spm, nmt_error *err)
{
    if (!spm || (!bytes && size))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "nmt_spm_load: NULL argument");
    *spm = nullptr;
    if (!what)
        what = "SentencePiece model";
    if (size == 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: the SentencePiece model is empty",
                             what);
    try {
        std::unique_ptr<nmt_spm> model(new nmt_spm);
        const sentencepiece::util::Status st = model->processor.LoadFromSerializedProto(
            std::string_view(static_cast<const char *>(bytes), size));
        if (!st.ok())
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                 "%s: not a usable SentencePiece model (%zu bytes): %s", what,
                                 size, st.error_message());
        if (model->processor.GetPieceSize() < 1)
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                 "%s: the SentencePiece model has no pieces", what);
        *spm = model.release();
        return NMT_STATUS_OK;
    } catch (const std::bad_alloc &) {
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                             "%s: out of memory loading the SentencePiece model", what);
    } catch (const std::exception &e) {
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                             "%s: not a usable SentencePiece model: %s", what, e.what());
    }
}

extern "C" void nmt_spm_free(nmt_spm *spm)
{
    delete spm;
}

extern "C" int32_t nmt_spm_piece_count(const nmt_spm *spm)
{
    return spm ? static_cast<int32_t>(spm->processor.GetPieceSize()) : 0;
}

extern "C" const char *nmt_spm_piece(const nmt_spm *spm, int32_t id)
{
    if (!spm || id < 0 || id >= spm->processor.GetPieceSize())
        return nullptr;
    return spm->processor.IdToPiece(id).c_str();
}

/* The pieces as nmt_tokens: one storage block of NUL-terminated pieces and a
 * token array pointing into it, both malloc'd (nmt_tokens_clear frees them). */
static nmt_status tokens_from_pieces(const std::vector<std::string> &pieces, nmt_tokens *out,
                                     nmt_error *err)
{
    if (pieces.size() > static_cast<size_t>(INT32_MAX))
        return nmt_error_set(err, NMT_STATUS_ERROR_INPUT, "%zu pieces: too many", pieces.size());
    size_t bytes = 1;
    for (const std::string &p : pieces)
        bytes += p.size() + 1;
    nmt_token *tokens = static_cast<nmt_token *>(calloc(pieces.size() ? pieces.size() : 1,
                                                        sizeof *tokens));
    char *storage = static_cast<char *>(malloc(bytes));
    if (!tokens || !storage) {
        free(tokens);
        free(storage);
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                             "out of memory for %zu SentencePiece pieces", pieces.size());
    }
    size_t at = 0;
    for (size_t i = 0; i < pieces.size(); i++) {
        memcpy(storage + at, pieces[i].data(), pieces[i].size());
        storage[at + pieces[i].size()] = '\0';
        tokens[i].text = tokens[i].key = storage + at;
        tokens[i].case_class = NMT_CASE_LOWER;
        tokens[i].word_id = -1;
        at += pieces[i].size() + 1;
    }
    out->n = static_cast<int32_t>(pieces.size());
    out->tokens = tokens;
    out->storage = storage;
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_spm_encode(const nmt_spm *spm, const char *text, size_t len,
                                     nmt_tokens *out, nmt_error *err)
{
    if (!spm || !out || (!text && len > 0))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "nmt_spm_encode: NULL argument");
    nmt_tokens_clear(out);
    size_t bad;
    if (!nmt_utf8_valid(text, len, &bad))
        return nmt_error_set(err, NMT_STATUS_ERROR_INPUT,
                             "invalid UTF-8 at byte offset %zu (byte 0x%02X)", bad,
                             static_cast<unsigned char>(text[bad]));
    if (len > static_cast<size_t>(INT32_MAX) / 4)
        return nmt_error_set(err, NMT_STATUS_ERROR_INPUT, "input of %zu bytes is too long", len);
    try {
        std::vector<std::string> pieces;
        const sentencepiece::util::Status st =
            spm->processor.Encode(std::string_view(text ? text : "", len), &pieces);
        if (!st.ok())
            return nmt_error_set(err, NMT_STATUS_ERROR_INPUT, "SentencePiece encoding failed: %s",
                                 st.error_message());
        return tokens_from_pieces(pieces, out, err);
    } catch (const std::bad_alloc &) {
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                             "out of memory encoding %zu bytes with SentencePiece", len);
    } catch (const std::exception &e) {
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "SentencePiece encoding failed: %s",
                             e.what());
    }
}

extern "C" nmt_status nmt_spm_decode(const nmt_spm *spm, const char *const *pieces, int32_t n,
                                     char **text, nmt_error *err)
{
    if (!spm || !text || n < 0 || (n > 0 && !pieces))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "nmt_spm_decode: invalid arguments");
    *text = nullptr;
    try {
        std::vector<std::string_view> views;
        views.reserve(static_cast<size_t>(n));
        for (int32_t i = 0; i < n; i++) {
            if (!pieces[i])
                return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                     "nmt_spm_decode: piece %d is NULL", i);
            views.emplace_back(pieces[i]);
        }
        std::string decoded;
        const sentencepiece::util::Status st = spm->processor.Decode(views, &decoded);
        if (!st.ok())
            return nmt_error_set(err, NMT_STATUS_ERROR_INPUT, "SentencePiece decoding failed: %s",
                                 st.error_message());
        char *copy = static_cast<char *>(malloc(decoded.size() + 1));
        if (!copy)
            return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                                 "out of memory for a decoded line of %zu bytes", decoded.size());
        memcpy(copy, decoded.data(), decoded.size());
        copy[decoded.size()] = '\0';
        *text = copy;
        return NMT_STATUS_OK;
    } catch (const std::bad_alloc &) {
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                             "out of memory decoding %d SentencePiece pieces", n);
    } catch (const std::exception &e) {
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "SentencePiece decoding failed: %s",
                             e.what());
    }
}
