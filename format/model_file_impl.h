/* model_file_impl.h: helpers shared by the two halves of the model file
 * reader, model_file.c (preamble, sections, text sections) and
 * model_file_tens.c (tensor table, DATA extents, inflate) and
 * model_file_sparse.c (section SPRS). Not a public
 * interface. */
#ifndef NMT_MODEL_FILE_IMPL_H
#define NMT_MODEL_FILE_IMPL_H

#include "model_file.h"

#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

static inline uint16_t nmt_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t nmt_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t nmt_rd64(const uint8_t *p)
{
    return (uint64_t)nmt_rd32(p) | (uint64_t)nmt_rd32(p + 4) << 32;
}

/* zlib's crc32 takes a 32-bit length: feed large buffers in pieces. */
static inline uint32_t nmt_crc32_bytes(const uint8_t *p, uint64_t n)
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

static inline uint64_t nmt_round_up64(uint64_t x)
{
    return (x + (NMT_FILE_ALIGN - 1)) & ~(uint64_t)(NMT_FILE_ALIGN - 1);
}

static inline void *nmt_alloc_aligned(uint64_t size)
{
    if (size > SIZE_MAX - NMT_FILE_ALIGN)
        return NULL;
    return aligned_alloc(NMT_FILE_ALIGN, (size_t)nmt_round_up64(size ? size : 1));
}

/* Records a NMT_STATUS_ERROR_FORMAT message. */
static inline nmt_status nmt_file_bad(nmt_error *err, const char *fmt, ...) NMT_PRINTF(2, 3);
static inline nmt_status nmt_file_bad(nmt_error *err, const char *fmt, ...)
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

/* model_file_tens.c */
nmt_status nmt_file_parse_tensors(const uint8_t *p, uint64_t len, const char *path,
                                  nmt_model_file *f, nmt_error *err);
nmt_status nmt_file_check_extents(nmt_model_file *f, uint64_t unpacked, const char *path,
                                  nmt_error *err);
/* model_file_sparse.c: section SPRS */
nmt_status nmt_file_parse_sparse(const uint8_t *p, uint64_t len, const char *path,
                                 nmt_model_file *f, nmt_error *err);
nmt_status nmt_file_inflate(const uint8_t *in, uint64_t stored, uint64_t unpacked,
                            const char *path, nmt_model_file *f, nmt_error *err);

#endif /* NMT_MODEL_FILE_IMPL_H */
