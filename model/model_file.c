/* model_file.c: the reader of model file format v1 (docs/model-format.md).
 *
 * The whole file is read into one 64-byte aligned buffer, then checked in
 * order: preamble (magic, CRC, version, flags, size), section table (CRC,
 * tags, canonical placement with zero padding), each section's CRC, then the
 * contents (HPAR, VSRC, VTGT, TENS) and finally DATA, inflated when
 * compressed. No size read from the file is trusted before it has been
 * compared with the bytes actually there. Vocabulary entries themselves are
 * checked by nmt_vocab_create and tensor names and shapes by model.c. */
#define _POSIX_C_SOURCE 200809L /* fileno, fstat */
#include "model_file.h"

#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

typedef struct section {
    char tag[5];
    uint32_t crc;
    uint64_t offset, stored, unpacked;
} section;

enum { SEC_HPAR, SEC_VSRC, SEC_VTGT, SEC_TENS, SEC_DATA, N_REQUIRED };
static const char *const required_tags[N_REQUIRED] = {"HPAR", "VSRC", "VTGT", "TENS", "DATA"};

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* zlib's crc32 takes a 32-bit length: feed large buffers in pieces. */
static uint32_t crc32_bytes(const uint8_t *p, uint64_t n)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt piece = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, p, piece);
        p += piece;
        n -= piece;
    }
    return (uint32_t)crc;
}

static uint64_t round_up64(uint64_t x) { return (x + (NMT_FILE_ALIGN - 1)) & ~(uint64_t)(NMT_FILE_ALIGN - 1); }

static void *alloc_aligned(uint64_t size)
{
    if (size > SIZE_MAX - NMT_FILE_ALIGN)
        return NULL;
    return aligned_alloc(NMT_FILE_ALIGN, (size_t)round_up64(size ? size : 1));
}

static nmt_status bad(nmt_error *err, const char *fmt, ...) NMT_PRINTF(2, 3);
static nmt_status bad(nmt_error *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->status = NMT_STATUS_ERROR_FORMAT;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return NMT_STATUS_ERROR_FORMAT;
}

static nmt_status check_preamble(const uint8_t *b, uint64_t size, const char *path,
                                 uint32_t *flags, uint32_t *n_sections, nmt_error *err)
{
    if (size < 8 || memcmp(b, NMT_FILE_MAGIC, 8) != 0) {
        if (size >= 4 && memcmp(b, "\x89NMT", 4) == 0)
            return bad(err, "%s: bad magic: the signature was altered, probably by a text-mode "
                       "transfer that rewrote line ends; copy the file in binary mode", path);
        return bad(err, "%s: not a model file (bad magic, expected \\x89NMT\\r\\n\\x1a\\n)", path);
    }
    if (size < NMT_FILE_PREAMBLE_SIZE)
        return bad(err, "%s: truncated: %llu bytes, shorter than the %u-byte preamble", path,
                   (unsigned long long)size, NMT_FILE_PREAMBLE_SIZE);
    uint32_t stored_crc = rd32(b + 28), crc = crc32_bytes(b, 28);
    if (crc != stored_crc)
        return bad(err, "%s: preamble CRC mismatch (stored %08x, computed %08x): the file is "
                   "corrupt", path, stored_crc, crc);
    uint32_t version = rd32(b + 8);
    if (version != NMT_FILE_VERSION)
        return bad(err, "%s: format version %u is not supported (this library reads version %u)",
                   path, version, NMT_FILE_VERSION);
    *flags = rd32(b + 12);
    if (*flags & ~NMT_FILE_FLAG_DEFLATE)
        return bad(err, "%s: unknown flags 0x%08x (only bit 0, deflate, is defined)", path, *flags);
    uint64_t declared = rd64(b + 16);
    if (declared != size)
        return bad(err, "%s: file is %llu bytes but its preamble says %llu: truncated or padded",
                   path, (unsigned long long)size, (unsigned long long)declared);
    *n_sections = rd32(b + 24);
    if (*n_sections < N_REQUIRED || *n_sections > NMT_FILE_MAX_SECTIONS)
        return bad(err, "%s: %u sections, expected %d to %u", path, *n_sections, N_REQUIRED,
                   NMT_FILE_MAX_SECTIONS);
    return NMT_STATUS_OK;
}

/* Reads the section table and checks placement: every section 64-byte
 * aligned, in file order, each starting at the first aligned offset after the
 * previous one, the file ending with the last; padding bytes zero. */
static nmt_status read_sections(const uint8_t *b, uint64_t size, uint32_t n, const char *path,
                                section *sec, int *required, nmt_error *err)
{
    uint64_t table_end = NMT_FILE_PREAMBLE_SIZE + (uint64_t)n * NMT_FILE_SECTION_ENTRY_SIZE + 8;
    if (table_end > size)
        return bad(err, "%s: truncated: the table of %u sections ends at byte %llu, past the end "
                   "(%llu bytes)", path, n, (unsigned long long)table_end, (unsigned long long)size);
    const uint8_t *t = b + NMT_FILE_PREAMBLE_SIZE;
    uint32_t stored_crc = rd32(t + (uint64_t)n * NMT_FILE_SECTION_ENTRY_SIZE);
    uint32_t crc = crc32_bytes(t, (uint64_t)n * NMT_FILE_SECTION_ENTRY_SIZE);
    if (crc != stored_crc)
        return bad(err, "%s: section table CRC mismatch (stored %08x, computed %08x)", path,
                   stored_crc, crc);
    if (rd32(t + (uint64_t)n * NMT_FILE_SECTION_ENTRY_SIZE + 4) != 0)
        return bad(err, "%s: reserved word after the section table is not zero", path);
    for (int r = 0; r < N_REQUIRED; r++)
        required[r] = -1;
    uint64_t prev_end = table_end;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = t + (uint64_t)i * NMT_FILE_SECTION_ENTRY_SIZE;
        section *s = &sec[i];
        for (int k = 0; k < 4; k++) {
            char c = (char)e[k];
            if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
                return bad(err, "%s: section %u: tag byte %d is 0x%02X, not a letter or digit",
                           path, i, k, e[k]);
            s->tag[k] = c;
        }
        s->tag[4] = '\0';
        s->crc = rd32(e + 4);
        s->offset = rd64(e + 8);
        s->stored = rd64(e + 16);
        s->unpacked = rd64(e + 24);
        for (uint32_t j = 0; j < i; j++)
            if (memcmp(sec[j].tag, s->tag, 4) == 0)
                return bad(err, "%s: section %s appears twice", path, s->tag);
        int r = 0;
        while (r < N_REQUIRED && memcmp(required_tags[r], s->tag, 4) != 0)
            r++;
        if (r < N_REQUIRED)
            required[r] = (int)i;
        else if (s->tag[0] >= 'A' && s->tag[0] <= 'Z')
            /* An upper-case first letter marks a section a reader must understand. */
            return bad(err, "%s: unknown critical section %s (a newer format?)", path, s->tag);
        if (s->offset != round_up64(prev_end))
            return bad(err, "%s: section %s: offset %llu, expected %llu (sections follow each "
                       "other, 64-byte aligned)", path, s->tag, (unsigned long long)s->offset,
                       (unsigned long long)round_up64(prev_end));
        if (s->offset > size || s->stored > size - s->offset)
            return bad(err, "%s: section %s: %llu bytes at offset %llu run past the end of the "
                       "file (%llu bytes): truncated?", path, s->tag,
                       (unsigned long long)s->stored, (unsigned long long)s->offset,
                       (unsigned long long)size);
        for (uint64_t p = prev_end; p < s->offset; p++)
            if (b[p] != 0)
                return bad(err, "%s: padding byte %llu before section %s is not zero", path,
                           (unsigned long long)p, s->tag);
        prev_end = s->offset + s->stored;
    }
    if (prev_end != size)
        return bad(err, "%s: %llu bytes after the last section", path,
                   (unsigned long long)(size - prev_end));
    for (int r = 0; r < N_REQUIRED; r++)
        if (required[r] < 0)
            return bad(err, "%s: missing section %s", path, required_tags[r]);
    for (uint32_t i = 0; i < n; i++) {
        section *s = &sec[i];
        uint32_t c = crc32_bytes(b + s->offset, s->stored);
        if (c != s->crc)
            return bad(err, "%s: section %s: CRC mismatch (stored %08x, computed %08x): the file "
                       "is corrupt", path, s->tag, s->crc, c);
        int is_data = (int)i == required[SEC_DATA];
        if (!is_data && s->unpacked != s->stored)
            return bad(err, "%s: section %s: unpacked size %llu differs from stored size %llu "
                       "(only DATA may be compressed)", path, s->tag,
                       (unsigned long long)s->unpacked, (unsigned long long)s->stored);
        if (!is_data && s->stored > NMT_FILE_MAX_TEXT)
            return bad(err, "%s: section %s: %llu bytes, more than the limit of %llu", path,
                       s->tag, (unsigned long long)s->stored, (unsigned long long)NMT_FILE_MAX_TEXT);
    }
    return NMT_STATUS_OK;
}

/* Splits a vocabulary section: every token ends with '\n'. */
static nmt_status split_tokens(const char *text, uint64_t len, int32_t expected, const char *path,
                               const char *tag, const char *key, const char ***tokens,
                               size_t **lengths, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (len > 0 && text[len - 1] != '\n')
        return bad(err, "%s: section %s: the last token does not end with a newline", path, tag);
    uint64_t count = 0;
    for (uint64_t i = 0; i < len; i++)
        count += text[i] == '\n';
    if (count != (uint64_t)expected)
        return bad(err, "%s: section %s: %llu tokens, but HPAR says %s = %d", path, tag,
                   (unsigned long long)count, key, expected);
    NMT_ALLOC(*tokens, count);
    NMT_ALLOC(*lengths, count);
    uint64_t start = 0, k = 0;
    for (uint64_t i = 0; i < len; i++)
        if (text[i] == '\n') {
            (*tokens)[k] = text + start;
            (*lengths)[k] = (size_t)(i - start);
            k++;
            start = i + 1;
        }
cleanup:
    return status;
}

static int name_char_ok(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
}

static int compare_names(const void *a, const void *b)
{
    return strcmp((*(nmt_file_tensor *const *)a)->name, (*(nmt_file_tensor *const *)b)->name);
}

static int compare_offsets(const void *a, const void *b)
{
    uint64_t x = (*(nmt_file_tensor *const *)a)->offset, y = (*(nmt_file_tensor *const *)b)->offset;
    return x < y ? -1 : x > y;
}

/* Parses TENS. The entry count is checked against the section size before
 * anything is allocated (an entry takes at least 29 bytes). */
static nmt_status parse_tensors(const uint8_t *p, uint64_t len, const char *path,
                                nmt_model_file *f, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_file_tensor **order = NULL;
    if (len < 4)
        return bad(err, "%s: section TENS: %llu bytes, too short for the tensor count", path,
                   (unsigned long long)len);
    uint32_t count = rd32(p);
    if (count == 0 || count > NMT_FILE_MAX_TENSORS || (uint64_t)count * 29 > len - 4)
        return bad(err, "%s: section TENS: tensor count %u impossible (limit %u, section of %llu "
                   "bytes)", path, count, NMT_FILE_MAX_TENSORS, (unsigned long long)len);
    NMT_ALLOC(f->tensors, count);
    NMT_ALLOC(f->names, len); /* names are shorter than their entries */
    uint64_t pos = 4, names_used = 0;
    for (uint32_t i = 0; i < count; i++) {
        nmt_file_tensor *t = &f->tensors[i];
        if (len - pos < 2)
            return bad(err, "%s: section TENS: entry %u truncated", path, i);
        uint16_t nlen = rd16(p + pos);
        pos += 2;
        if (nlen == 0 || nlen > NMT_FILE_MAX_NAME || len - pos < (uint64_t)nlen + 2)
            return bad(err, "%s: section TENS: entry %u: name length %u invalid or past the end",
                       path, i, nlen);
        for (uint16_t c = 0; c < nlen; c++)
            if (!name_char_ok(p[pos + c]))
                return bad(err, "%s: section TENS: entry %u: name byte %u is 0x%02X (names use "
                           "[A-Za-z0-9_.])", path, i, c, p[pos + c]);
        char *name = f->names + names_used;
        memcpy(name, p + pos, nlen);
        name[nlen] = '\0';
        names_used += (uint64_t)nlen + 1;
        t->name = name;
        pos += nlen;
        uint8_t dtype = p[pos], ndim = p[pos + 1];
        pos += 2;
        if (dtype > NMT_DTYPE_F16)
            return bad(err, "%s: section TENS: tensor '%s': dtype %u unknown (0 f32, 1 f16)", path,
                       name, dtype);
        if (ndim < 1 || ndim > NMT_FILE_MAX_NDIM)
            return bad(err, "%s: section TENS: tensor '%s': ndim %u, expected 1 to %d", path, name,
                       ndim, NMT_FILE_MAX_NDIM);
        if (len - pos < (uint64_t)ndim * 8 + 16)
            return bad(err, "%s: section TENS: tensor '%s': entry truncated", path, name);
        t->dtype = (nmt_dtype)dtype;
        t->ndim = ndim;
        uint64_t elems = 1;
        for (int d = 0; d < ndim; d++) {
            t->dims[d] = rd64(p + pos);
            pos += 8;
            if (t->dims[d] < 1 || t->dims[d] > NMT_FILE_MAX_DIM)
                return bad(err, "%s: section TENS: tensor '%s': dims[%d] = %llu out of range [1, "
                           "%llu]", path, name, d, (unsigned long long)t->dims[d],
                           (unsigned long long)NMT_FILE_MAX_DIM);
            if (elems > NMT_FILE_MAX_UNPACKED / t->dims[d])
                return bad(err, "%s: section TENS: tensor '%s': too many elements (more than "
                           "%llu)", path, name, (unsigned long long)NMT_FILE_MAX_UNPACKED);
            elems *= t->dims[d];
        }
        t->offset = rd64(p + pos);
        t->size = rd64(p + pos + 8);
        pos += 16;
        uint64_t expect = elems * (dtype == NMT_DTYPE_F32 ? 4u : 2u);
        if (t->size != expect)
            return bad(err, "%s: section TENS: tensor '%s': %llu bytes, expected %llu for its "
                       "shape and dtype", path, name, (unsigned long long)t->size,
                       (unsigned long long)expect);
        if (t->offset % NMT_FILE_ALIGN)
            return bad(err, "%s: section TENS: tensor '%s': offset %llu not a multiple of %u",
                       path, name, (unsigned long long)t->offset, NMT_FILE_ALIGN);
    }
    if (pos != len)
        return bad(err, "%s: section TENS: %llu bytes after the last tensor", path,
                   (unsigned long long)(len - pos));
    f->n_tensors = (int32_t)count;
    NMT_ALLOC(order, count);
    for (uint32_t i = 0; i < count; i++)
        order[i] = &f->tensors[i];
    qsort(order, count, sizeof *order, compare_names);
    for (uint32_t i = 1; i < count; i++)
        if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
            status = bad(err, "%s: section TENS: tensor '%s' appears twice", path, order[i]->name);
            goto cleanup;
        }
cleanup:
    free(order);
    return status;
}

/* Checks tensor extents against the unpacked DATA size: inside, not
 * overlapping, and DATA no larger than the tensors need (so a hostile size
 * cannot make the reader allocate or inflate more than the tensors claim). */
static nmt_status check_extents(nmt_model_file *f, uint64_t unpacked, const char *path,
                                nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_file_tensor **order = NULL;
    uint64_t need = 0, end = 0;
    NMT_ALLOC(order, f->n_tensors);
    for (int32_t i = 0; i < f->n_tensors; i++) {
        nmt_file_tensor *t = &f->tensors[i];
        order[i] = t;
        if (t->size > unpacked || t->offset > unpacked - t->size) {
            status = bad(err, "%s: section TENS: tensor '%s': bytes [%llu, +%llu) lie outside DATA "
                         "(%llu bytes unpacked)", path, t->name, (unsigned long long)t->offset,
                         (unsigned long long)t->size, (unsigned long long)unpacked);
            goto cleanup;
        }
        need += round_up64(t->size); /* no overflow: each size <= 2^34 * 4, count <= 4096 */
        if (t->offset + t->size > end)
            end = t->offset + t->size;
    }
    qsort(order, (size_t)f->n_tensors, sizeof *order, compare_offsets);
    for (int32_t i = 1; i < f->n_tensors; i++)
        if (order[i]->offset < order[i - 1]->offset + order[i - 1]->size) {
            status = bad(err, "%s: section TENS: tensors '%s' and '%s' overlap in DATA", path,
                         order[i - 1]->name, order[i]->name);
            goto cleanup;
        }
    if (unpacked != end || unpacked > need || unpacked > NMT_FILE_MAX_UNPACKED) {
        status = bad(err, "%s: section DATA: %llu bytes unpacked, but the tensors end at %llu and "
                     "need %llu with alignment (limit %llu)", path, (unsigned long long)unpacked,
                     (unsigned long long)end, (unsigned long long)need,
                     (unsigned long long)NMT_FILE_MAX_UNPACKED);
        goto cleanup;
    }
cleanup:
    free(order);
    return status;
}

static nmt_status inflate_data(const uint8_t *in, uint64_t stored, uint64_t unpacked,
                               const char *path, nmt_model_file *f, nmt_error *err)
{
    /* Deflate cannot expand data more than about 1032:1; a larger claim is a lie
     * that must not reach the allocator. */
    if (unpacked / 1032 > stored + 64)
        return bad(err, "%s: section DATA: %llu compressed bytes cannot inflate to %llu", path,
                   (unsigned long long)stored, (unsigned long long)unpacked);
    uint8_t *out = alloc_aligned(unpacked);
    if (!out)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "%s: out of memory inflating DATA "
                             "(%llu bytes)", path, (unsigned long long)unpacked);
    f->data_owner = out;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "%s: inflateInit failed", path);
    uint64_t in_left = stored, out_left = unpacked;
    zs.next_in = (Bytef *)in;
    zs.next_out = out;
    int rc = Z_OK;
    while (rc == Z_OK) {
        /* zlib counts in 32-bit uInt: refill the windows in pieces. */
        if (zs.avail_in == 0 && in_left > 0) {
            zs.avail_in = in_left > (1u << 30) ? (1u << 30) : (uInt)in_left;
            in_left -= zs.avail_in;
        }
        if (zs.avail_out == 0 && out_left > 0) {
            zs.avail_out = out_left > (1u << 30) ? (1u << 30) : (uInt)out_left;
            out_left -= zs.avail_out;
        }
        /* Z_BUF_ERROR (no progress: output full or input used up before the
         * stream's end) leaves the loop like any other error. */
        rc = inflate(&zs, Z_NO_FLUSH);
    }
    uint64_t produced = unpacked - out_left - zs.avail_out;
    uint64_t consumed = stored - in_left - zs.avail_in;
    const char *msg = zs.msg;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
            return bad(err, "%s: section DATA: corrupt zlib stream (%s)", path,
                       msg ? msg : "data error");
        if (rc == Z_MEM_ERROR)
            return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "%s: out of memory in inflate",
                                 path);
        return bad(err, "%s: section DATA: zlib stream inflates to more than %llu bytes or ends "
                   "early (%llu produced)", path, (unsigned long long)unpacked,
                   (unsigned long long)produced);
    }
    if (produced != unpacked)
        return bad(err, "%s: section DATA: inflated to %llu bytes, expected %llu", path,
                   (unsigned long long)produced, (unsigned long long)unpacked);
    if (consumed != stored)
        return bad(err, "%s: section DATA: %llu bytes after the end of the zlib stream", path,
                   (unsigned long long)(stored - consumed));
    f->data = out;
    return NMT_STATUS_OK;
}

/* Validates f->buffer[0, f->buffer_size) and fills the rest of f. */
static nmt_status parse(nmt_model_file *f, nmt_error *err)
{
    nmt_status status;
    const uint8_t *b = f->buffer;
    uint64_t size = f->buffer_size;
    const char *path = f->path;
    uint32_t n_sections = 0;
    section sec[NMT_FILE_MAX_SECTIONS];
    int req[N_REQUIRED];
    NMT_TRY(check_preamble(b, size, path, &f->flags, &n_sections, err));
    NMT_TRY(read_sections(b, size, n_sections, path, sec, req, err));
    char where[300];
    snprintf(where, sizeof where, "%s: section HPAR", path);
    const section *hp = &sec[req[SEC_HPAR]];
    NMT_TRY(nmt_hparams_parse((const char *)b + hp->offset, hp->stored, where, &f->hp, err));
    const section *vs = &sec[req[SEC_VSRC]], *vt = &sec[req[SEC_VTGT]];
    NMT_TRY(split_tokens((const char *)b + vs->offset, vs->stored, f->hp.src_words, path, "VSRC",
                         "src_words", &f->src_tokens, &f->src_lengths, err));
    f->n_src_tokens = f->hp.src_words;
    NMT_TRY(split_tokens((const char *)b + vt->offset, vt->stored, f->hp.tgt_vocab, path, "VTGT",
                         "tgt_vocab", &f->tgt_tokens, &f->tgt_lengths, err));
    f->n_tgt_tokens = f->hp.tgt_vocab;
    const section *ts = &sec[req[SEC_TENS]];
    NMT_TRY(parse_tensors(b + ts->offset, ts->stored, path, f, err));
    const section *ds = &sec[req[SEC_DATA]];
    NMT_TRY(check_extents(f, ds->unpacked, path, err));
    f->data_size = ds->unpacked;
    if (f->flags & NMT_FILE_FLAG_DEFLATE) {
        NMT_TRY(inflate_data(b + ds->offset, ds->stored, ds->unpacked, path, f, err));
    } else {
        f->data = b + ds->offset; /* aligned: the buffer and the offset are */
        f->data_owner = f->buffer;
    }
cleanup:
    return status;
}

nmt_status nmt_model_file_read_memory(const void *bytes, size_t size, const char *name,
                                      nmt_model_file *file, nmt_error *err)
{
    memset(file, 0, sizeof *file);
    file->path = name ? name : "(memory)";
    file->buffer = alloc_aligned(size);
    if (!file->buffer)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "%s: out of memory (%zu bytes)",
                             file->path, size);
    if (size)
        memcpy(file->buffer, bytes, size);
    file->buffer_size = size;
    nmt_status status = parse(file, err);
    if (status != NMT_STATUS_OK)
        nmt_model_file_clear(file);
    return status;
}

nmt_status nmt_model_file_read(const char *path, nmt_model_file *file, nmt_error *err)
{
    memset(file, 0, sizeof *file);
    if (!path)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "model path is NULL");
    file->path = path;
    nmt_status status = NMT_STATUS_OK;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* fstat, not ftell: a directory opens fine on Linux and may claim any size. */
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: not a regular file", path);
        goto cleanup;
    }
    uint64_t size = (uint64_t)st.st_size;
    /* Check the preamble before reading the rest, so pointing the loader at a
     * large file of another kind fails at once. */
    uint8_t head[NMT_FILE_PREAMBLE_SIZE];
    size_t head_len = size < sizeof head ? (size_t)size : sizeof head;
    uint32_t flags, n_sections;
    if (fread(head, 1, head_len, fp) != head_len) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: read failed: %s", path,
                               ferror(fp) ? strerror(errno) : "file shrank while reading");
        goto cleanup;
    }
    NMT_TRY(check_preamble(head, size, path, &flags, &n_sections, err));
    file->buffer = alloc_aligned(size);
    if (!file->buffer) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "%s: out of memory reading %llu "
                               "bytes", path, (unsigned long long)size);
        goto cleanup;
    }
    file->buffer_size = size;
    memcpy(file->buffer, head, head_len);
    if (size > head_len && fread((uint8_t *)file->buffer + head_len, 1, (size_t)(size - head_len),
                                 fp) != (size_t)(size - head_len)) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: read failed: %s", path,
                               ferror(fp) ? strerror(errno) : "file shrank while reading");
        goto cleanup;
    }
    status = parse(file, err);
cleanup:
    fclose(fp);
    if (status != NMT_STATUS_OK)
        nmt_model_file_clear(file);
    return status;
}

void nmt_model_file_clear(nmt_model_file *file)
{
    if (!file)
        return;
    if (file->data_owner != file->buffer)
        free(file->data_owner);
    free(file->buffer);
    free(file->src_tokens);
    free(file->src_lengths);
    free(file->tgt_tokens);
    free(file->tgt_lengths);
    free(file->tensors);
    free(file->names);
    const char *path = file->path;
    memset(file, 0, sizeof *file);
    file->path = path;
}

const nmt_file_tensor *nmt_model_file_find(const nmt_model_file *file, const char *name)
{
    for (int32_t i = 0; i < file->n_tensors; i++)
        if (strcmp(file->tensors[i].name, name) == 0)
            return &file->tensors[i];
    return NULL;
}
