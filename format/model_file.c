/* model_file.c: the reader of model file format v1 (docs/model-format.md).
 *
 * The whole file is mapped (mmap, private, every page read in at once: the
 * checks read every byte anyway), or where the system refuses to map it,
 * read into one 64-byte aligned buffer; then checked in order: preamble (magic, CRC, version, flags, size), section table (CRC,
 * tags, canonical placement with zero padding), each section's CRC, then the
 * contents (HPAR, VSRC, VTGT, SPMP, TENS, SPRS) and finally DATA, inflated when
 * compressed. No size read from the file is trusted before it has been
 * compared with the bytes actually there. Vocabulary entries themselves are
 * checked by nmt_vocab_create and tensor names and shapes by model.c. */
#define _DEFAULT_SOURCE /* madvise */
#include "model_file_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

typedef struct section {
    char tag[5];
    uint32_t crc;
    uint64_t offset, stored, unpacked;
} section;

/* The required sections, then the optional critical ones this reader knows. */
enum {
    SEC_HPAR, SEC_VSRC, SEC_VTGT, SEC_TENS, SEC_DATA, N_REQUIRED,
    SEC_SPMP = N_REQUIRED, SEC_SPRS, N_KNOWN
};
static const char *const known_tags[N_KNOWN] = {"HPAR", "VSRC", "VTGT", "TENS", "DATA",
                                                NMT_FILE_SPM_TAG, NMT_FILE_SPARSE_TAG};

static nmt_status check_preamble(const uint8_t *b, uint64_t size, const char *path,
                                 uint32_t *flags, uint32_t *n_sections, nmt_error *err)
{
    if (size < 8 || memcmp(b, NMT_FILE_MAGIC, 8) != 0) {
        if (size >= 4 && memcmp(b, "\x89NMT", 4) == 0)
            return nmt_file_bad(err, "%s: bad magic: the signature was altered, probably by a text-mode "
                       "transfer that rewrote line ends; copy the file in binary mode", path);
        return nmt_file_bad(err, "%s: not a model file (bad magic, expected \\x89NMT\\r\\n\\x1a\\n)", path);
    }
    if (size < NMT_FILE_PREAMBLE_SIZE)
        return nmt_file_bad(err, "%s: truncated: %llu bytes, shorter than the %u-byte preamble", path,
                   (unsigned long long)size, NMT_FILE_PREAMBLE_SIZE);
    uint32_t stored_crc = nmt_rd32(b + 28), crc = nmt_crc32_bytes(b, 28);
    if (crc != stored_crc)
        return nmt_file_bad(err, "%s: preamble CRC mismatch (stored %08x, computed %08x): the file is "
                   "corrupt", path, stored_crc, crc);
    uint32_t version = nmt_rd32(b + 8);
    if (version != NMT_FILE_VERSION)
        return nmt_file_bad(err, "%s: format version %u is not supported (this library reads version %u)",
                   path, version, NMT_FILE_VERSION);
    *flags = nmt_rd32(b + 12);
    if (*flags & ~NMT_FILE_FLAG_DEFLATE)
        return nmt_file_bad(err, "%s: unknown flags 0x%08x (only bit 0, deflate, is defined)", path, *flags);
    uint64_t declared = nmt_rd64(b + 16);
    if (declared != size)
        return nmt_file_bad(err, "%s: file is %llu bytes but its preamble says %llu: truncated or padded",
                   path, (unsigned long long)size, (unsigned long long)declared);
    *n_sections = nmt_rd32(b + 24);
    if (*n_sections < N_REQUIRED || *n_sections > NMT_FILE_MAX_SECTIONS)
        return nmt_file_bad(err, "%s: %u sections, expected %d to %u", path, *n_sections, N_REQUIRED,
                   NMT_FILE_MAX_SECTIONS);
    return NMT_STATUS_OK;
}

/* Reads the section table and checks placement: every section 64-byte
 * aligned, in file order, each starting at the first aligned offset after the
 * previous one, the file ending with the last; padding bytes zero. `required`
 * gets the index of each known section (N_KNOWN entries; -1 when absent). */
static nmt_status read_sections(const uint8_t *b, uint64_t size, uint32_t n, uint32_t flags,
                                const char *path, section *sec, int *required, nmt_error *err)
{
    uint64_t table_end = NMT_FILE_PREAMBLE_SIZE + (uint64_t)n * NMT_FILE_SECTION_ENTRY_SIZE + 8;
    if (table_end > size)
        return nmt_file_bad(err, "%s: truncated: the table of %u sections ends at byte %llu, past the end "
                   "(%llu bytes)", path, n, (unsigned long long)table_end, (unsigned long long)size);
    const uint8_t *t = b + NMT_FILE_PREAMBLE_SIZE;
    uint32_t stored_crc = nmt_rd32(t + (uint64_t)n * NMT_FILE_SECTION_ENTRY_SIZE);
    uint32_t crc = nmt_crc32_bytes(t, (uint64_t)n * NMT_FILE_SECTION_ENTRY_SIZE);
    if (crc != stored_crc)
        return nmt_file_bad(err, "%s: section table CRC mismatch (stored %08x, computed %08x)", path,
                   stored_crc, crc);
    if (nmt_rd32(t + (uint64_t)n * NMT_FILE_SECTION_ENTRY_SIZE + 4) != 0)
        return nmt_file_bad(err, "%s: reserved word after the section table is not zero", path);
    for (int r = 0; r < N_KNOWN; r++)
        required[r] = -1;
    uint64_t prev_end = table_end;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = t + (uint64_t)i * NMT_FILE_SECTION_ENTRY_SIZE;
        section *s = &sec[i];
        for (int k = 0; k < 4; k++) {
            char c = (char)e[k];
            if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
                return nmt_file_bad(err, "%s: section %u: tag byte %d is 0x%02X, not a letter or digit",
                           path, i, k, e[k]);
            s->tag[k] = c;
        }
        s->tag[4] = '\0';
        s->crc = nmt_rd32(e + 4);
        s->offset = nmt_rd64(e + 8);
        s->stored = nmt_rd64(e + 16);
        s->unpacked = nmt_rd64(e + 24);
        for (uint32_t j = 0; j < i; j++)
            if (memcmp(sec[j].tag, s->tag, 4) == 0)
                return nmt_file_bad(err, "%s: section %s appears twice", path, s->tag);
        int r = 0;
        while (r < N_KNOWN && memcmp(known_tags[r], s->tag, 4) != 0)
            r++;
        if (r < N_KNOWN)
            required[r] = (int)i;
        else if (s->tag[0] >= 'A' && s->tag[0] <= 'Z')
            /* An upper-case first letter marks a section a reader must understand. */
            return nmt_file_bad(err, "%s: unknown critical section %s (a newer format?)", path, s->tag);
        if (s->offset != nmt_round_up64(prev_end))
            return nmt_file_bad(err, "%s: section %s: offset %llu, expected %llu (sections follow each "
                       "other, 64-byte aligned)", path, s->tag, (unsigned long long)s->offset,
                       (unsigned long long)nmt_round_up64(prev_end));
        if (s->offset > size || s->stored > size - s->offset)
            return nmt_file_bad(err, "%s: section %s: %llu bytes at offset %llu run past the end of the "
                       "file (%llu bytes): truncated?", path, s->tag,
                       (unsigned long long)s->stored, (unsigned long long)s->offset,
                       (unsigned long long)size);
        for (uint64_t p = prev_end; p < s->offset; p++)
            if (b[p] != 0)
                return nmt_file_bad(err, "%s: padding byte %llu before section %s is not zero", path,
                           (unsigned long long)p, s->tag);
        prev_end = s->offset + s->stored;
    }
    if (prev_end != size)
        return nmt_file_bad(err, "%s: %llu bytes after the last section", path,
                   (unsigned long long)(size - prev_end));
    for (int r = 0; r < N_REQUIRED; r++)
        if (required[r] < 0)
            return nmt_file_bad(err, "%s: missing section %s", path, known_tags[r]);
    for (uint32_t i = 0; i < n; i++) {
        section *s = &sec[i];
        uint32_t c = nmt_crc32_bytes(b + s->offset, s->stored);
        if (c != s->crc)
            return nmt_file_bad(err, "%s: section %s: CRC mismatch (stored %08x, computed %08x): the file "
                       "is corrupt", path, s->tag, s->crc, c);
        int is_data = (int)i == required[SEC_DATA];
        if (!(is_data && (flags & NMT_FILE_FLAG_DEFLATE)) && s->unpacked != s->stored)
            return nmt_file_bad(err, "%s: section %s: unpacked size %llu differs from stored size %llu "
                       "(only DATA may be compressed, when flag bit 0 is set)", path, s->tag,
                       (unsigned long long)s->unpacked, (unsigned long long)s->stored);
        /* SPRS holds weights, so it gets DATA's limit rather than the text one. */
        uint64_t limit = (int)i == required[SEC_SPRS] ? NMT_FILE_MAX_UNPACKED : NMT_FILE_MAX_TEXT;
        if (!is_data && s->stored > limit)
            return nmt_file_bad(err, "%s: section %s: %llu bytes, more than the limit of %llu", path,
                       s->tag, (unsigned long long)s->stored, (unsigned long long)limit);
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
        return nmt_file_bad(err, "%s: section %s: the last token does not end with a newline", path, tag);
    uint64_t count = 0;
    for (uint64_t i = 0; i < len; i++)
        count += text[i] == '\n';
    if (count != (uint64_t)expected)
        return nmt_file_bad(err, "%s: section %s: %llu tokens, but HPAR says %s = %d", path, tag,
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

/* Section SPMP (docs/model-format.md): present exactly when HPAR says
 * tokenizer=sentencepiece; a u32 version, a u32 model size that must be the
 * rest of the section, then the model bytes. The bytes themselves are parsed
 * by SentencePiece when the model is built (model.c). */
static nmt_status check_spm(nmt_model_file *f, const uint8_t *b, const section *spm,
                           nmt_error *err)
{
    const char *path = f->path;
    if (f->hp.sentencepiece && !spm)
        return nmt_file_bad(err, "%s: HPAR says tokenizer=sentencepiece but there is no section "
                            "SPMP (the SentencePiece model)", path);
    if (!spm)
        return NMT_STATUS_OK;
    if (!f->hp.sentencepiece)
        return nmt_file_bad(err, "%s: section SPMP holds a SentencePiece model but HPAR does not "
                            "say tokenizer=sentencepiece", path);
    if (spm->stored < NMT_FILE_SPM_HEADER)
        return nmt_file_bad(err, "%s: section SPMP: %llu bytes, shorter than its %u-byte header",
                            path, (unsigned long long)spm->stored, NMT_FILE_SPM_HEADER);
    const uint8_t *p = b + spm->offset;
    uint32_t version = nmt_rd32(p), size = nmt_rd32(p + 4);
    if (version != NMT_FILE_SPM_VERSION)
        return nmt_file_bad(err, "%s: section SPMP: version %u is not supported (this library "
                            "reads version %u)", path, version, NMT_FILE_SPM_VERSION);
    if (size == 0)
        return nmt_file_bad(err, "%s: section SPMP: the SentencePiece model is empty", path);
    if ((uint64_t)size != spm->stored - NMT_FILE_SPM_HEADER)
        return nmt_file_bad(err, "%s: section SPMP: the header says %u model bytes, the section "
                            "holds %llu", path, size,
                            (unsigned long long)(spm->stored - NMT_FILE_SPM_HEADER));
    f->spm_model = p + NMT_FILE_SPM_HEADER;
    f->spm_size = size;
    return NMT_STATUS_OK;
}

static nmt_status parse(nmt_model_file *f, nmt_error *err)
{
    nmt_status status;
    const uint8_t *b = f->buffer;
    uint64_t size = f->buffer_size;
    const char *path = f->path;
    uint32_t n_sections = 0;
    section sec[NMT_FILE_MAX_SECTIONS];
    int req[N_KNOWN];
    NMT_TRY(check_preamble(b, size, path, &f->flags, &n_sections, err));
    NMT_TRY(read_sections(b, size, n_sections, f->flags, path, sec, req, err));
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
    NMT_TRY(check_spm(f, b, req[SEC_SPMP] >= 0 ? &sec[req[SEC_SPMP]] : NULL, err));
    const section *ts = &sec[req[SEC_TENS]];
    NMT_TRY(nmt_file_parse_tensors(b + ts->offset, ts->stored, path, f, err));
    if (req[SEC_SPRS] >= 0) {
        const section *sp = &sec[req[SEC_SPRS]];
        NMT_TRY(nmt_file_parse_sparse(b + sp->offset, sp->stored, path, f, err));
    }
    const section *ds = &sec[req[SEC_DATA]];
    NMT_TRY(nmt_file_check_extents(f, ds->unpacked, path, err));
    f->data_size = ds->unpacked;
    if (f->flags & NMT_FILE_FLAG_DEFLATE) {
        NMT_TRY(nmt_file_inflate(b + ds->offset, ds->stored, ds->unpacked, path, f, err));
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
    file->buffer = nmt_alloc_aligned(size);
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

/* n bytes at offset of fd into buf; 0, or -1 with errno (0: the file is shorter). */
static int read_at(int fd, void *buf, size_t n, uint64_t offset)
{
    uint8_t *p = buf;
    while (n > 0) {
        const ssize_t got = pread(fd, p, n, (off_t)offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got == 0)
                errno = 0;
            return -1;
        }
        p += got;
        n -= (size_t)got;
        offset += (uint64_t)got;
    }
    return 0;
}

/* The file's bytes into file->buffer: a private mapping (its fp32 weights
 * are then used in place, from the page cache: no copy), or a read copy. */
static nmt_status map_or_read(int fd, uint64_t size, const char *path, nmt_model_file *file,
                              nmt_error *err)
{
    void *mapped = size > 0 && size <= SIZE_MAX
                       ? mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0)
                       : MAP_FAILED;
    struct stat st;
    if (mapped != MAP_FAILED) {
        /* Read ahead: the checks read every page. (MAP_POPULATE would copy
         * every page of a writable private mapping.) */
        madvise(mapped, (size_t)size, MADV_WILLNEED);
        /* A file cut short since fstat would fault where its pages ended. */
        if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < size) {
            munmap(mapped, (size_t)size);
            return nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: read failed: %s", path,
                                 "file shrank while reading");
        }
        file->buffer = mapped;
        file->buffer_size = size;
        file->mapped = 1;
        return NMT_STATUS_OK;
    }
    file->buffer = nmt_alloc_aligned(size);
    if (!file->buffer)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "%s: out of memory reading %llu "
                             "bytes", path, (unsigned long long)size);
    file->buffer_size = size;
    if (read_at(fd, file->buffer, (size_t)size, 0) != 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: read failed: %s", path,
                             errno ? strerror(errno) : "file shrank while reading");
    return NMT_STATUS_OK;
}

nmt_status nmt_model_file_read(const char *path, nmt_model_file *file, nmt_error *err)
{
    memset(file, 0, sizeof *file);
    if (!path)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "model path is NULL");
    file->path = path;
    nmt_status status = NMT_STATUS_OK;
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* fstat, not a seek: a directory opens fine on Linux and may claim any size. */
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: not a regular file", path);
        goto cleanup;
    }
    uint64_t size = (uint64_t)st.st_size;
    /* Check the preamble before reading the rest, so pointing the loader at a
     * large file of another kind fails at once. */
    uint8_t head[NMT_FILE_PREAMBLE_SIZE];
    size_t head_len = size < sizeof head ? (size_t)size : sizeof head;
    uint32_t flags, n_sections;
    if (read_at(fd, head, head_len, 0) != 0) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_IO, "%s: read failed: %s", path,
                               errno ? strerror(errno) : "file shrank while reading");
        goto cleanup;
    }
    NMT_TRY(check_preamble(head, size, path, &flags, &n_sections, err));
    NMT_TRY(map_or_read(fd, size, path, file, err));
    status = parse(file, err);
cleanup:
    close(fd);
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
    if (file->mapped && file->buffer)
        munmap(file->buffer, (size_t)file->buffer_size);
    else
        free(file->buffer);
    free(file->src_tokens);
    free(file->src_lengths);
    free(file->tgt_tokens);
    free(file->tgt_lengths);
    free(file->tensors);
    free(file->names);
    free(file->sparse);
    free(file->sparse_names);
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
