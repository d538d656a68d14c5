/* model_file_sparse.c: section SPRS of the model file reader
 * (docs/model-format.md, "SPRS: sparse matrices"): matrices pruned to a
 * fraction of their entries, each in CSR form (row offsets, column indices,
 * values), the layout the CPU SpMM (kernels/cpu/spmm.c) computes with.
 *
 * Every index is hostile: the table is checked against the section size
 * before anything is allocated, each block of arrays must sit exactly where
 * the canonical layout puts it (so blocks neither overlap nor leave room for
 * unchecked bytes: the padding must be zero), and the arrays themselves are
 * walked once: offsets start at 0, never decrease and end at nnz; columns lie
 * in range and strictly increase within a row. All size arithmetic is done in
 * 64 bits on values bounded first (rows, cols < 2^31, nnz < 2^31), so it
 * cannot overflow. Which names may be sparse and their shapes is model.c's
 * business, as for TENS. */
#include "model_file_impl.h"

#include <string.h>

static int name_char_ok(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
}

/* Bytes of one matrix's arrays: row offsets, column indices, values. */
static uint64_t block_size(const nmt_file_sparse *s)
{
    return 4 * (s->rows + 1) + 4 * s->nnz + (s->dtype == NMT_DTYPE_F32 ? 4 : 2) * s->nnz;
}

/* The CSR invariants, on the arrays in place. */
static nmt_status check_csr(const nmt_file_sparse *s, const char *path, nmt_error *err)
{
    uint32_t first = nmt_rd32(s->row_offsets);
    if (first != 0)
        return nmt_file_bad(err, "%s: section SPRS: tensor '%s': row_offsets[0] = %u, expected 0",
                            path, s->name, first);
    uint64_t prev = 0;
    for (uint64_t r = 0; r < s->rows; r++) {
        uint64_t end = nmt_rd32(s->row_offsets + 4 * (r + 1));
        if (end < prev || end > s->nnz)
            return nmt_file_bad(err, "%s: section SPRS: tensor '%s': row_offsets[%llu] = %llu, "
                                "outside [%llu, nnz %llu] (offsets never decrease)", path,
                                s->name, (unsigned long long)(r + 1), (unsigned long long)end,
                                (unsigned long long)prev, (unsigned long long)s->nnz);
        for (uint64_t k = prev; k < end; k++) {
            uint32_t col = nmt_rd32(s->col_indices + 4 * k);
            if (col >= s->cols)
                return nmt_file_bad(err, "%s: section SPRS: tensor '%s': row %llu: column %u out "
                                    "of range [0, %llu)", path, s->name, (unsigned long long)r,
                                    col, (unsigned long long)s->cols);
            if (k > prev && col <= nmt_rd32(s->col_indices + 4 * (k - 1)))
                return nmt_file_bad(err, "%s: section SPRS: tensor '%s': row %llu: column %u "
                                    "after %u (columns must strictly increase within a row)",
                                    path, s->name, (unsigned long long)r, col,
                                    nmt_rd32(s->col_indices + 4 * (k - 1)));
        }
        prev = end;
    }
    if (prev != s->nnz)
        return nmt_file_bad(err, "%s: section SPRS: tensor '%s': row_offsets[%llu] = %llu, "
                            "expected nnz = %llu", path, s->name, (unsigned long long)s->rows,
                            (unsigned long long)prev, (unsigned long long)s->nnz);
    return NMT_STATUS_OK;
}

/* Reads one table entry at p[*pos]; checks everything that needs no other entry. */
static nmt_status parse_entry(const uint8_t *p, uint64_t len, uint64_t *pos, uint32_t i,
                              const char *path, nmt_file_sparse *s, char *name_store,
                              nmt_error *err)
{
    if (len - *pos < 2)
        return nmt_file_bad(err, "%s: section SPRS: entry %u truncated", path, i);
    uint16_t nlen = nmt_rd16(p + *pos);
    *pos += 2;
    if (nlen == 0 || nlen > NMT_FILE_MAX_NAME || len - *pos < (uint64_t)nlen + 34)
        return nmt_file_bad(err, "%s: section SPRS: entry %u: name length %u invalid or past the "
                            "end", path, i, nlen);
    for (uint16_t c = 0; c < nlen; c++)
        if (!name_char_ok(p[*pos + c]))
            return nmt_file_bad(err, "%s: section SPRS: entry %u: name byte %u is 0x%02X (names "
                                "use [A-Za-z0-9_.])", path, i, c, p[*pos + c]);
    memcpy(name_store, p + *pos, nlen);
    name_store[nlen] = '\0';
    s->name = name_store;
    *pos += nlen;
    uint8_t dtype = p[*pos], reserved = p[*pos + 1];
    s->rows = nmt_rd64(p + *pos + 2);
    s->cols = nmt_rd64(p + *pos + 10);
    s->nnz = nmt_rd64(p + *pos + 18);
    s->offset = nmt_rd64(p + *pos + 26);
    *pos += 34;
    if (dtype > NMT_DTYPE_F16)
        return nmt_file_bad(err, "%s: section SPRS: tensor '%s': dtype %u unknown (0 f32, 1 f16)",
                            path, s->name, dtype);
    if (reserved != 0)
        return nmt_file_bad(err, "%s: section SPRS: tensor '%s': reserved byte is %u, not 0",
                            path, s->name, reserved);
    s->dtype = (nmt_dtype)dtype;
    if (s->rows < 1 || s->rows > NMT_FILE_MAX_DIM || s->cols < 1 || s->cols > NMT_FILE_MAX_DIM)
        return nmt_file_bad(err, "%s: section SPRS: tensor '%s': shape [%llu, %llu], each "
                            "dimension must lie in [1, %llu]", path, s->name,
                            (unsigned long long)s->rows, (unsigned long long)s->cols,
                            (unsigned long long)NMT_FILE_MAX_DIM);
    /* rows * cols < 2^62: no overflow. */
    if (s->nnz > s->rows * s->cols || s->nnz > NMT_FILE_MAX_NNZ)
        return nmt_file_bad(err, "%s: section SPRS: tensor '%s': nnz %llu exceeds its %llu x %llu "
                            "entries or the limit %llu", path, s->name,
                            (unsigned long long)s->nnz, (unsigned long long)s->rows,
                            (unsigned long long)s->cols, (unsigned long long)NMT_FILE_MAX_NNZ);
    return NMT_STATUS_OK;
}

nmt_status nmt_file_parse_sparse(const uint8_t *p, uint64_t len, const char *path,
                                 nmt_model_file *f, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (len < 8)
        return nmt_file_bad(err, "%s: section SPRS: %llu bytes, shorter than its 8-byte header",
                            path, (unsigned long long)len);
    uint32_t version = nmt_rd32(p), count = nmt_rd32(p + 4);
    if (version != NMT_FILE_SPARSE_VERSION)
        return nmt_file_bad(err, "%s: section SPRS: version %u is not supported (this library "
                            "reads version %u)", path, version, NMT_FILE_SPARSE_VERSION);
    if (count == 0 || count > NMT_FILE_MAX_TENSORS ||
        (uint64_t)count * NMT_FILE_SPARSE_MIN_ENTRY > len - 8)
        return nmt_file_bad(err, "%s: section SPRS: matrix count %u impossible (limit %u, section "
                            "of %llu bytes)", path, count, NMT_FILE_MAX_TENSORS,
                            (unsigned long long)len);
    NMT_ALLOC(f->sparse, count);
    NMT_ALLOC(f->sparse_names, len); /* names are shorter than their entries */
    f->n_sparse = (int32_t)count;
    uint64_t pos = 8, names_used = 0;
    for (uint32_t i = 0; i < count; i++) {
        NMT_TRY(parse_entry(p, len, &pos, i, path, &f->sparse[i], f->sparse_names + names_used,
                            err));
        names_used += strlen(f->sparse[i].name) + 1;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(f->sparse[j].name, f->sparse[i].name) == 0)
                return nmt_file_bad(err, "%s: section SPRS: tensor '%s' appears twice", path,
                                    f->sparse[i].name);
    }
    /* The blocks follow the table in entry order, each at the next multiple of
     * 64 from the section start; the section ends with the last one. */
    uint64_t prev_end = pos;
    for (uint32_t i = 0; i < count; i++) {
        nmt_file_sparse *s = &f->sparse[i];
        uint64_t expect = nmt_round_up64(prev_end), size = block_size(s);
        if (s->offset != expect)
            return nmt_file_bad(err, "%s: section SPRS: tensor '%s': arrays at offset %llu, "
                                "expected %llu (blocks follow the table, 64-byte aligned)", path,
                                s->name, (unsigned long long)s->offset,
                                (unsigned long long)expect);
        if (s->offset > len || size > len - s->offset)
            return nmt_file_bad(err, "%s: section SPRS: tensor '%s': %llu bytes of arrays at "
                                "offset %llu run past the section end (%llu bytes)", path,
                                s->name, (unsigned long long)size,
                                (unsigned long long)s->offset, (unsigned long long)len);
        for (uint64_t b = prev_end; b < s->offset; b++)
            if (p[b] != 0)
                return nmt_file_bad(err, "%s: section SPRS: padding byte %llu before tensor "
                                    "'%s' is not zero", path, (unsigned long long)b, s->name);
        s->row_offsets = p + s->offset;
        s->col_indices = s->row_offsets + 4 * (s->rows + 1);
        s->values = s->col_indices + 4 * s->nnz;
        NMT_TRY(check_csr(s, path, err));
        prev_end = s->offset + size;
    }
    if (prev_end != len)
        return nmt_file_bad(err, "%s: section SPRS: %llu bytes after the last matrix", path,
                            (unsigned long long)(len - prev_end));
cleanup:
    return status;
}

const nmt_file_sparse *nmt_model_file_find_sparse(const nmt_model_file *file, const char *name)
{
    for (int32_t i = 0; i < file->n_sparse; i++)
        if (strcmp(file->sparse[i].name, name) == 0)
            return &file->sparse[i];
    return NULL;
}
