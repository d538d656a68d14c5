/* model_file_tens.c: the tensor half of the model file reader
 * (docs/model-format.md, "TENS" and "DATA"): the tensor table, the extents
 * of the tensors in DATA, and inflating compressed DATA. Entry counts and
 * sizes are checked against the section size before anything is allocated,
 * and DATA's unpacked size against the tensors and deflate's maximum ratio
 * before it is inflated. */
#include "model_file_impl.h"

#include <string.h>

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
nmt_status nmt_file_parse_tensors(const uint8_t *p, uint64_t len, const char *path,
                                nmt_model_file *f, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_file_tensor **order = NULL;
    if (len < 4)
        return nmt_file_bad(err, "%s: section TENS: %llu bytes, too short for the tensor count", path,
                   (unsigned long long)len);
    uint32_t count = nmt_rd32(p);
    if (count == 0 || count > NMT_FILE_MAX_TENSORS || (uint64_t)count * 29 > len - 4)
        return nmt_file_bad(err, "%s: section TENS: tensor count %u impossible (limit %u, section of %llu "
                   "bytes)", path, count, NMT_FILE_MAX_TENSORS, (unsigned long long)len);
    NMT_ALLOC(f->tensors, count);
    NMT_ALLOC(f->names, len); /* names are shorter than their entries */
    uint64_t pos = 4, names_used = 0;
    for (uint32_t i = 0; i < count; i++) {
        nmt_file_tensor *t = &f->tensors[i];
        if (len - pos < 2)
            return nmt_file_bad(err, "%s: section TENS: entry %u truncated", path, i);
        uint16_t nlen = nmt_rd16(p + pos);
        pos += 2;
        if (nlen == 0 || nlen > NMT_FILE_MAX_NAME || len - pos < (uint64_t)nlen + 2)
            return nmt_file_bad(err, "%s: section TENS: entry %u: name length %u invalid or past the end",
                       path, i, nlen);
        for (uint16_t c = 0; c < nlen; c++)
            if (!name_char_ok(p[pos + c]))
                return nmt_file_bad(err, "%s: section TENS: entry %u: name byte %u is 0x%02X (names use "
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
            return nmt_file_bad(err, "%s: section TENS: tensor '%s': dtype %u unknown (0 f32, 1 f16)", path,
                       name, dtype);
        if (ndim < 1 || ndim > NMT_FILE_MAX_NDIM)
            return nmt_file_bad(err, "%s: section TENS: tensor '%s': ndim %u, expected 1 to %d", path, name,
                       ndim, NMT_FILE_MAX_NDIM);
        if (len - pos < (uint64_t)ndim * 8 + 16)
            return nmt_file_bad(err, "%s: section TENS: tensor '%s': entry truncated", path, name);
        t->dtype = (nmt_dtype)dtype;
        t->ndim = ndim;
        uint64_t elems = 1;
        for (int d = 0; d < ndim; d++) {
            t->dims[d] = nmt_rd64(p + pos);
            pos += 8;
            if (t->dims[d] < 1 || t->dims[d] > NMT_FILE_MAX_DIM)
                return nmt_file_bad(err, "%s: section TENS: tensor '%s': dims[%d] = %llu out of range [1, "
                           "%llu]", path, name, d, (unsigned long long)t->dims[d],
                           (unsigned long long)NMT_FILE_MAX_DIM);
            if (elems > NMT_FILE_MAX_UNPACKED / t->dims[d])
                return nmt_file_bad(err, "%s: section TENS: tensor '%s': too many elements (more than "
                           "%llu)", path, name, (unsigned long long)NMT_FILE_MAX_UNPACKED);
            elems *= t->dims[d];
        }
        t->offset = nmt_rd64(p + pos);
        t->size = nmt_rd64(p + pos + 8);
        pos += 16;
        uint64_t expect = elems * (dtype == NMT_DTYPE_F32 ? 4u : 2u);
        if (t->size != expect)
            return nmt_file_bad(err, "%s: section TENS: tensor '%s': %llu bytes, expected %llu for its "
                       "shape and dtype", path, name, (unsigned long long)t->size,
                       (unsigned long long)expect);
        if (t->offset % NMT_FILE_ALIGN)
            return nmt_file_bad(err, "%s: section TENS: tensor '%s': offset %llu not a multiple of %u",
                       path, name, (unsigned long long)t->offset, NMT_FILE_ALIGN);
    }
    if (pos != len)
        return nmt_file_bad(err, "%s: section TENS: %llu bytes after the last tensor", path,
                   (unsigned long long)(len - pos));
    f->n_tensors = (int32_t)count;
    NMT_ALLOC(order, count);
    for (uint32_t i = 0; i < count; i++)
        order[i] = &f->tensors[i];
    qsort(order, count, sizeof *order, compare_names);
    for (uint32_t i = 1; i < count; i++)
        if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
            status = nmt_file_bad(err, "%s: section TENS: tensor '%s' appears twice", path, order[i]->name);
            goto cleanup;
        }
cleanup:
    free(order);
    return status;
}

/* Checks tensor extents against the unpacked DATA size: inside, not
 * overlapping, and DATA no larger than the tensors need (so a hostile size
 * cannot make the reader allocate or inflate more than the tensors claim). */
nmt_status nmt_file_check_extents(nmt_model_file *f, uint64_t unpacked, const char *path,
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
            status = nmt_file_bad(err, "%s: section TENS: tensor '%s': bytes [%llu, +%llu) lie outside DATA "
                         "(%llu bytes unpacked)", path, t->name, (unsigned long long)t->offset,
                         (unsigned long long)t->size, (unsigned long long)unpacked);
            goto cleanup;
        }
        need += nmt_round_up64(t->size); /* no overflow: each size <= 2^34 * 4, count <= 4096 */
        if (t->offset + t->size > end)
            end = t->offset + t->size;
    }
    qsort(order, (size_t)f->n_tensors, sizeof *order, compare_offsets);
    for (int32_t i = 1; i < f->n_tensors; i++)
        if (order[i]->offset < order[i - 1]->offset + order[i - 1]->size) {
            status = nmt_file_bad(err, "%s: section TENS: tensors '%s' and '%s' overlap in DATA", path,
                         order[i - 1]->name, order[i]->name);
            goto cleanup;
        }
    if (unpacked != end || unpacked > need || unpacked > NMT_FILE_MAX_UNPACKED) {
        status = nmt_file_bad(err, "%s: section DATA: %llu bytes unpacked, but the tensors end at %llu and "
                     "need %llu with alignment (limit %llu)", path, (unsigned long long)unpacked,
                     (unsigned long long)end, (unsigned long long)need,
                     (unsigned long long)NMT_FILE_MAX_UNPACKED);
        goto cleanup;
    }
cleanup:
    free(order);
    return status;
}

nmt_status nmt_file_inflate(const uint8_t *in, uint64_t stored, uint64_t unpacked,
                               const char *path, nmt_model_file *f, nmt_error *err)
{
    /* Deflate cannot expand data more than about 1032:1; a larger claim is a lie
     * that must not reach the allocator. */
    if (unpacked / 1032 > stored + 64)
        return nmt_file_bad(err, "%s: section DATA: %llu compressed bytes cannot inflate to %llu", path,
                   (unsigned long long)stored, (unsigned long long)unpacked);
    uint8_t *out = nmt_alloc_aligned(unpacked);
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
            return nmt_file_bad(err, "%s: section DATA: corrupt zlib stream (%s)", path,
                       msg ? msg : "data error");
        if (rc == Z_MEM_ERROR)
            return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "%s: out of memory in inflate",
                                 path);
        return nmt_file_bad(err, "%s: section DATA: zlib stream inflates to more than %llu bytes or ends "
                   "early (%llu produced)", path, (unsigned long long)unpacked,
                   (unsigned long long)produced);
    }
    if (produced != unpacked)
        return nmt_file_bad(err, "%s: section DATA: inflated to %llu bytes, expected %llu", path,
                   (unsigned long long)produced, (unsigned long long)unpacked);
    if (consumed != stored)
        return nmt_file_bad(err, "%s: section DATA: %llu bytes after the end of the zlib stream", path,
                   (unsigned long long)(stored - consumed));
    f->data = out;
    return NMT_STATUS_OK;
}

/* Validates f->buffer[0, f->buffer_size) and fills the rest of f. */
