/* model_file_write.c: the writer of model file format v1
 * (docs/model-format.md). It produces the one canonical layout the reader
 * accepts: sections HPAR, VSRC, VTGT, (SPMP,) TENS, (SPRS,) DATA in that order, each at the
 * first 64-byte aligned offset after the previous one, zero padding,
 * tensors in the given order at 64-byte aligned offsets in DATA. The file is
 * written next to its destination and renamed, so a reader never sees half a
 * file. python/pynmt/modelfile.py writes the same bytes for the same input. */
#include "model_file_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { MAX_WRITTEN_SECTIONS = 7 }; /* the five required ones, SPMP and SPRS */

static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void wr64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Vocabulary text: every token followed by '\n'. */
static nmt_status vocab_text(const char *const *tokens, int32_t n, const char *what, char **text,
                             uint64_t *len, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    uint64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t l = tokens[i] ? strlen(tokens[i]) : 0;
        if (l == 0 || memchr(tokens[i], '\n', l))
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "%s: entry %d is empty or contains a newline", what, i);
        total += l + 1;
    }
    NMT_ALLOC(*text, total ? total : 1);
    uint64_t pos = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t l = strlen(tokens[i]);
        memcpy(*text + pos, tokens[i], l);
        (*text)[pos + l] = '\n';
        pos += l + 1;
    }
    *len = total;
cleanup:
    return status;
}

static int name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > NMT_FILE_MAX_NAME)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

/* Builds TENS and the unpacked DATA. */
static nmt_status build_tensors(const nmt_write_tensor *tensors, int32_t n, nmt_dtype dtype,
                                uint8_t **tens, uint64_t *tens_len, uint8_t **data,
                                uint64_t *data_len, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    uint64_t dsize = dtype == NMT_DTYPE_F16 ? 2 : 4;
    uint64_t tlen = 4, end = 0;
    int32_t n_dense = 0;
    for (int32_t i = 0; i < n; i++)
        n_dense += !tensors[i].sparse;
    if (n_dense < 1 || (uint32_t)n > NMT_FILE_MAX_TENSORS)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "write: %d dense tensors of %d (1 to "
                             "%u)", n_dense, n, NMT_FILE_MAX_TENSORS);
    for (int32_t i = 0; i < n; i++) {
        const nmt_write_tensor *t = &tensors[i];
        if (!name_ok(t->name) || t->ndim < 1 || t->ndim > NMT_FILE_MAX_NDIM || !t->values)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "write: tensor %d ('%s'): bad name, ndim or values", i,
                                 t->name ? t->name : "");
        uint64_t elems = 1;
        for (int d = 0; d < t->ndim; d++) {
            if (t->dims[d] < 1 || t->dims[d] > NMT_FILE_MAX_DIM ||
                elems > NMT_FILE_MAX_UNPACKED / t->dims[d])
                return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                     "write: tensor '%s': dims[%d] = %llu out of range", t->name, d,
                                     (unsigned long long)t->dims[d]);
            elems *= t->dims[d];
        }
        if (t->sparse) {
            if (t->ndim != 2)
                return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "write: tensor '%s': only "
                                     "matrices can be stored sparse", t->name);
            continue;
        }
        tlen += 2 + strlen(t->name) + 2 + 8 * (uint64_t)t->ndim + 16;
        end = nmt_round_up64(end) + elems * dsize;
        if (end > NMT_FILE_MAX_UNPACKED)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "write: more than %llu bytes of "
                                 "tensor data", (unsigned long long)NMT_FILE_MAX_UNPACKED);
    }
    NMT_ALLOC(*tens, tlen);
    NMT_ALLOC(*data, end); /* zeroed: padding between tensors stays zero */
    uint8_t *p = *tens;
    wr32(p, (uint32_t)n_dense);
    p += 4;
    uint64_t offset = 0;
    for (int32_t i = 0; i < n; i++) {
        const nmt_write_tensor *t = &tensors[i];
        if (t->sparse)
            continue;
        uint64_t elems = 1;
        size_t nl = strlen(t->name);
        wr16(p, (uint16_t)nl);
        memcpy(p + 2, t->name, nl);
        p += 2 + nl;
        *p++ = (uint8_t)dtype;
        *p++ = (uint8_t)t->ndim;
        for (int d = 0; d < t->ndim; d++) {
            wr64(p, t->dims[d]);
            p += 8;
            elems *= t->dims[d];
        }
        offset = nmt_round_up64(offset);
        wr64(p, offset);
        wr64(p + 8, elems * dsize);
        p += 16;
        uint8_t *dst = *data + offset;
        for (uint64_t k = 0; k < elems; k++) {
            if (dtype == NMT_DTYPE_F16) {
                wr16(dst + 2 * k, nmt_f32_to_f16(t->values[k]));
            } else {
                uint32_t bits;
                memcpy(&bits, &t->values[k], 4);
                wr32(dst + 4 * k, bits);
            }
        }
        offset += elems * dsize;
    }
    *tens_len = tlen;
    *data_len = end;
cleanup:
    return status;
}

static void wr_value(uint8_t *dst, float v, nmt_dtype dtype)
{
    if (dtype == NMT_DTYPE_F16) {
        wr16(dst, nmt_f32_to_f16(v));
    } else {
        uint32_t bits;
        memcpy(&bits, &v, 4);
        wr32(dst, bits);
    }
}

/* Builds section SPRS (docs/model-format.md) from the tensors marked sparse:
 * the CSR of each one's nonzero values; *len stays 0 when none is. */
static nmt_status build_sparse(const nmt_write_tensor *tensors, int32_t n, nmt_dtype dtype,
                               uint8_t **out, uint64_t *len, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const uint64_t dsize = dtype == NMT_DTYPE_F16 ? 2 : 4;
    uint64_t table = 8, end;
    uint32_t count = 0;
    *len = 0;
    for (int32_t i = 0; i < n; i++)
        if (tensors[i].sparse) {
            count++;
            table += 2 + strlen(tensors[i].name) + 34;
        }
    if (count == 0)
        return NMT_STATUS_OK;
    end = table;
    for (int32_t i = 0; i < n; i++) {
        const nmt_write_tensor *t = &tensors[i];
        if (!t->sparse)
            continue;
        uint64_t nnz = 0, elems = t->dims[0] * t->dims[1]; /* checked by build_tensors */
        for (uint64_t k = 0; k < elems; k++)
            nnz += t->values[k] != 0.0f;
        if (nnz > NMT_FILE_MAX_NNZ)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "write: tensor '%s': %llu "
                                 "nonzeros, over the limit %llu", t->name,
                                 (unsigned long long)nnz, (unsigned long long)NMT_FILE_MAX_NNZ);
        end = nmt_round_up64(end) + 4 * (t->dims[0] + 1) + (4 + dsize) * nnz;
    }
    NMT_ALLOC(*out, end); /* zeroed: the padding */
    uint8_t *b = *out, *e = b + 8;
    wr32(b, NMT_FILE_SPARSE_VERSION);
    wr32(b + 4, count);
    uint64_t at = table;
    for (int32_t i = 0; i < n; i++) {
        const nmt_write_tensor *t = &tensors[i];
        if (!t->sparse)
            continue;
        const uint64_t rows = t->dims[0], cols = t->dims[1];
        uint8_t *offsets = b + nmt_round_up64(at), *idx = offsets + 4 * (rows + 1);
        uint64_t nnz = 0;
        for (uint64_t r = 0; r < rows; r++) {
            wr32(offsets + 4 * r, (uint32_t)nnz);
            for (uint64_t c = 0; c < cols; c++)
                if (t->values[r * cols + c] != 0.0f)
                    wr32(idx + 4 * nnz++, (uint32_t)c);
        }
        wr32(offsets + 4 * rows, (uint32_t)nnz);
        uint8_t *vals = idx + 4 * nnz;
        for (uint64_t k = 0, j = 0; k < rows * cols; k++)
            if (t->values[k] != 0.0f)
                wr_value(vals + dsize * j++, t->values[k], dtype);
        size_t nl = strlen(t->name);
        wr16(e, (uint16_t)nl);
        memcpy(e + 2, t->name, nl);
        e += 2 + nl;
        e[0] = (uint8_t)dtype;
        e[1] = 0;
        wr64(e + 2, rows);
        wr64(e + 10, cols);
        wr64(e + 18, nnz);
        wr64(e + 26, (uint64_t)(offsets - b));
        e += 34;
        at = (uint64_t)(vals - b) + dsize * nnz;
    }
    *len = end;
cleanup:
    return status;
}

static nmt_status deflate_data(const uint8_t *in, uint64_t len, uint8_t **out, uint64_t *out_len,
                               nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    uLongf cap = compressBound((uLong)len);
    NMT_ALLOC(*out, cap);
    if (compress2(*out, &cap, in, (uLong)len, Z_BEST_COMPRESSION) != Z_OK)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "write: compress2 failed");
    *out_len = cap;
cleanup:
    return status;
}

nmt_status nmt_model_file_write(const char *path, const nmt_hparams *hp,
                                const char *const *src_tokens, int32_t n_src,
                                const char *const *tgt_tokens, int32_t n_tgt,
                                const nmt_write_tensor *tensors, int32_t n_tensors,
                                const nmt_write_options *options, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    char hpar[1024];
    char *vsrc = NULL, *vtgt = NULL, *tmp_path = NULL;
    uint8_t *tens = NULL, *data = NULL, *packed = NULL, *spm = NULL, *sprs = NULL;
    uint64_t vsrc_len = 0, vtgt_len = 0, tens_len = 0, data_len = 0, packed_len = 0, spm_len = 0;
    uint64_t sprs_len = 0;
    FILE *fp = NULL;
    nmt_dtype dtype = options ? options->dtype : NMT_DTYPE_F32;
    int compress = options ? options->compress : 0;

    size_t hpar_len = nmt_hparams_format(hp, hpar, sizeof hpar);
    if (hpar_len == 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: invalid hyper-parameters", path);
    if (n_src != hp->src_words || n_tgt != hp->tgt_vocab)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: %d source and %d target tokens, "
                             "hyper-parameters say %d and %d", path, n_src, n_tgt, hp->src_words,
                             hp->tgt_vocab);
    if (dtype != NMT_DTYPE_F32 && dtype != NMT_DTYPE_F16)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: unknown dtype %d", path, dtype);
    const size_t spm_size = options && options->sentencepiece ? options->sentencepiece_size : 0;
    if (!hp->sentencepiece != !spm_size)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: %s", path, hp->sentencepiece
                             ? "tokenizer=sentencepiece but no SentencePiece model given"
                             : "a SentencePiece model given but not tokenizer=sentencepiece");
    if (spm_size > NMT_FILE_MAX_TEXT - NMT_FILE_SPM_HEADER)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: a SentencePiece model of %zu "
                             "bytes is over the section limit", path, spm_size);
    NMT_TRY(vocab_text(src_tokens, n_src, "write: source vocabulary", &vsrc, &vsrc_len, err));
    NMT_TRY(vocab_text(tgt_tokens, n_tgt, "write: target vocabulary", &vtgt, &vtgt_len, err));
    NMT_TRY(build_tensors(tensors, n_tensors, dtype, &tens, &tens_len, &data, &data_len, err));
    NMT_TRY(build_sparse(tensors, n_tensors, dtype, &sprs, &sprs_len, err));
    if (compress)
        NMT_TRY(deflate_data(data, data_len, &packed, &packed_len, err));

    const char *tags[MAX_WRITTEN_SECTIONS] = {"HPAR", "VSRC", "VTGT"};
    const uint8_t *bytes[MAX_WRITTEN_SECTIONS] = {(const uint8_t *)hpar, (const uint8_t *)vsrc,
                                                  (const uint8_t *)vtgt};
    uint64_t stored[MAX_WRITTEN_SECTIONS] = {hpar_len, vsrc_len, vtgt_len};
    int n_sections = 3;
    if (spm_size) {
        /* SPMP: version, model size, the model (docs/model-format.md). */
        spm_len = NMT_FILE_SPM_HEADER + (uint64_t)spm_size;
        NMT_ALLOC(spm, spm_len);
        wr32(spm, NMT_FILE_SPM_VERSION);
        wr32(spm + 4, (uint32_t)spm_size);
        memcpy(spm + NMT_FILE_SPM_HEADER, options->sentencepiece, spm_size);
        tags[n_sections] = NMT_FILE_SPM_TAG;
        bytes[n_sections] = spm;
        stored[n_sections++] = spm_len;
    }
    tags[n_sections] = "TENS";
    bytes[n_sections] = tens;
    stored[n_sections++] = tens_len;
    if (sprs_len) {
        tags[n_sections] = NMT_FILE_SPARSE_TAG;
        bytes[n_sections] = sprs;
        stored[n_sections++] = sprs_len;
    }
    tags[n_sections] = "DATA";
    bytes[n_sections] = compress ? packed : data;
    stored[n_sections++] = compress ? packed_len : data_len;
    uint64_t offsets[MAX_WRITTEN_SECTIONS];
    uint8_t head[NMT_FILE_PREAMBLE_SIZE + MAX_WRITTEN_SECTIONS * NMT_FILE_SECTION_ENTRY_SIZE + 8];
    const size_t head_len = NMT_FILE_PREAMBLE_SIZE +
                            (size_t)n_sections * NMT_FILE_SECTION_ENTRY_SIZE + 8;
    memset(head, 0, sizeof head);
    uint64_t pos = head_len;
    for (int i = 0; i < n_sections; i++) {
        offsets[i] = nmt_round_up64(pos);
        pos = offsets[i] + stored[i];
        uint8_t *e = head + NMT_FILE_PREAMBLE_SIZE + i * NMT_FILE_SECTION_ENTRY_SIZE;
        memcpy(e, tags[i], 4);
        wr32(e + 4, nmt_crc32_bytes(bytes[i], stored[i]));
        wr64(e + 8, offsets[i]);
        wr64(e + 16, stored[i]);
        wr64(e + 24, i == n_sections - 1 ? data_len : stored[i]);
    }
    uint8_t *table = head + NMT_FILE_PREAMBLE_SIZE;
    wr32(table + n_sections * NMT_FILE_SECTION_ENTRY_SIZE,
         nmt_crc32_bytes(table, (uint64_t)n_sections * NMT_FILE_SECTION_ENTRY_SIZE));
    memcpy(head, NMT_FILE_MAGIC, 8);
    wr32(head + 8, NMT_FILE_VERSION);
    wr32(head + 12, compress ? NMT_FILE_FLAG_DEFLATE : 0);
    wr64(head + 16, pos);
    wr32(head + 24, (uint32_t)n_sections);
    wr32(head + 28, nmt_crc32_bytes(head, 28));

    NMT_ALLOC(tmp_path, strlen(path) + 5);
    snprintf(tmp_path, strlen(path) + 5, "%s.tmp", path);
    fp = fopen(tmp_path, "wb");
    if (!fp) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: cannot create: %s", tmp_path,
                               strerror(errno));
        goto cleanup;
    }
    static const uint8_t zeros[64];
    int ok = fwrite(head, 1, head_len, fp) == head_len;
    uint64_t at = head_len;
    for (int i = 0; i < n_sections && ok; i++) {
        ok = fwrite(zeros, 1, (size_t)(offsets[i] - at), fp) == offsets[i] - at &&
             fwrite(bytes[i], 1, (size_t)stored[i], fp) == stored[i];
        at = offsets[i] + stored[i];
    }
    if (fclose(fp) != 0)
        ok = 0;
    fp = NULL;
    if (!ok || rename(tmp_path, path) != 0) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: write failed: %s", path,
                               strerror(errno));
        remove(tmp_path);
    }
cleanup:
    if (fp) {
        fclose(fp);
        remove(tmp_path);
    }
    free(tmp_path);
    free(vsrc);
    free(vtgt);
    free(tens);
    free(data);
    free(packed);
    free(spm);
    free(sprs);
    return status;
}
