/* test_model_corrupt_sparse.h: the corruption corpus of section SPRS
 * (docs/model-format.md, "SPRS: sparse matrices"), included by
 * test_model_corrupt.c after its raw-section helpers. A pruned tiny fixture
 * with its decoder, attention and output matrices sparse is truncated and
 * flipped byte by byte (fp32, and fp16 with compressed DATA), then each rule
 * of the section is broken behind valid CRCs: header, table entries, block
 * placement and padding, each CSR invariant, and the model-level rules
 * (dense and sparse at once, a tensor that may not be sparse, shape, extra
 * names, non-finite values, the section missing or twice). */

/* The SPRS section of `base` edited by `edit` (which gets the section bytes,
 * the offset of the first entry's fields after its name, and the offset of
 * its arrays) must be refused with `needle`. */
typedef void (*sparse_edit)(uint8_t *sec, size_t *len, size_t fields, size_t arrays);

static void expect_sparse_edit(const raw *base, sparse_edit edit, const char *needle,
                               const char *what)
{
    raw r = *base;
    int i = raw_find(&r, "SPRS");
    uint8_t *copy = calloc(r.len[i] + 128, 1);
    memcpy(copy, r.sec[i], r.len[i]);
    size_t len = r.len[i];
    size_t fields = 8 + 2 + (size_t)(copy[8] | copy[9] << 8);
    size_t arrays = (size_t)rd64(copy + fields + 26);
    edit(copy, &len, fields, arrays);
    r.sec[i] = copy;
    r.len[i] = r.unpacked[i] = len;
    expect_raw(&r, needle, what);
    free(copy);
}

/* The first entry's shape and the first row with >= 2 nonzeros, for the edits. */
static uint64_t sp_rows(const uint8_t *s, size_t f) { return rd64(s + f + 2); }
static uint64_t sp_nnz(const uint8_t *s, size_t f) { return rd64(s + f + 18); }
static uint8_t *sp_offsets(uint8_t *s, size_t a) { return s + a; }
static uint8_t *sp_cols(uint8_t *s, size_t f, size_t a) { return s + a + 4 * (sp_rows(s, f) + 1); }
static uint64_t sp_row_with_two(uint8_t *s, size_t f, size_t a)
{
    for (uint64_t r = 0; r < sp_rows(s, f); r++)
        if (rd32(sp_offsets(s, a) + 4 * (r + 1)) - rd32(sp_offsets(s, a) + 4 * r) >= 2)
            return r;
    return 0;
}

static void e_version(uint8_t *s, size_t *l, size_t f, size_t a) { wr32(s, 2); }
static void e_count0(uint8_t *s, size_t *l, size_t f, size_t a) { wr32(s + 4, 0); }
static void e_count_big(uint8_t *s, size_t *l, size_t f, size_t a) { wr32(s + 4, 100000); }
static void e_short(uint8_t *s, size_t *l, size_t f, size_t a) { *l = 7; }
static void e_name_len0(uint8_t *s, size_t *l, size_t f, size_t a) { s[8] = s[9] = 0; }
static void e_name_char(uint8_t *s, size_t *l, size_t f, size_t a) { s[10] = '/'; }
static void e_dtype(uint8_t *s, size_t *l, size_t f, size_t a) { s[f] = 2; }
static void e_reserved(uint8_t *s, size_t *l, size_t f, size_t a) { s[f + 1] = 1; }
static void e_rows0(uint8_t *s, size_t *l, size_t f, size_t a) { wr64(s + f + 2, 0); }
static void e_cols_huge(uint8_t *s, size_t *l, size_t f, size_t a) { wr64(s + f + 10, 1ull << 40); }
static void e_nnz_over(uint8_t *s, size_t *l, size_t f, size_t a)
{
    wr64(s + f + 18, sp_rows(s, f) * rd64(s + f + 10) + 1);
}
static void e_nnz_max(uint8_t *s, size_t *l, size_t f, size_t a) { wr64(s + f + 18, ~0ull); }
static void e_offset_plus(uint8_t *s, size_t *l, size_t f, size_t a) { wr64(s + f + 26, a + 64); }
static void e_offset_minus(uint8_t *s, size_t *l, size_t f, size_t a) { wr64(s + f + 26, a - 4); }
static void e_offset_huge(uint8_t *s, size_t *l, size_t f, size_t a) { wr64(s + f + 26, ~0ull - 63); }
static void e_padding(uint8_t *s, size_t *l, size_t f, size_t a) { s[a - 1] = 1; }
static void e_trailing(uint8_t *s, size_t *l, size_t f, size_t a) { *l += 4; }
static void e_cut(uint8_t *s, size_t *l, size_t f, size_t a) { *l -= 1; }
static void e_first_offset(uint8_t *s, size_t *l, size_t f, size_t a) { wr32(sp_offsets(s, a), 1); }
static void e_decreasing(uint8_t *s, size_t *l, size_t f, size_t a)
{
    /* the first row that starts after a nonzero ends one before its start */
    uint64_t r = 0;
    while (r + 1 < sp_rows(s, f) && rd32(sp_offsets(s, a) + 4 * r) == 0)
        r++;
    wr32(sp_offsets(s, a) + 4 * (r + 1), rd32(sp_offsets(s, a) + 4 * r) - 1);
}
static void e_offset_past_nnz(uint8_t *s, size_t *l, size_t f, size_t a)
{
    wr32(sp_offsets(s, a) + 4, (uint32_t)sp_nnz(s, f) + 5);
}
static void e_last_short(uint8_t *s, size_t *l, size_t f, size_t a)
{
    uint64_t rows = sp_rows(s, f);
    uint32_t last = rd32(sp_offsets(s, a) + 4 * rows), before = rd32(sp_offsets(s, a) + 4 * (rows - 1));
    if (last > before)
        wr32(sp_offsets(s, a) + 4 * rows, last - 1);
    else /* the last row is empty: end every row at 0 */
        for (uint64_t r = 1; r <= rows; r++)
            wr32(sp_offsets(s, a) + 4 * r, 0);
}
static void e_col_range(uint8_t *s, size_t *l, size_t f, size_t a)
{
    uint64_t r = sp_row_with_two(s, f, a);
    uint32_t last = rd32(sp_offsets(s, a) + 4 * (r + 1)) - 1;
    wr32(sp_cols(s, f, a) + 4 * last, (uint32_t)rd64(s + f + 10));
}
static void e_col_repeat(uint8_t *s, size_t *l, size_t f, size_t a)
{
    uint64_t r = sp_row_with_two(s, f, a);
    uint32_t k = rd32(sp_offsets(s, a) + 4 * r);
    wr32(sp_cols(s, f, a) + 4 * (k + 1), rd32(sp_cols(s, f, a) + 4 * k));
}
static void e_col_swap(uint8_t *s, size_t *l, size_t f, size_t a)
{
    uint64_t r = sp_row_with_two(s, f, a);
    uint32_t k = rd32(sp_offsets(s, a) + 4 * r), c0 = rd32(sp_cols(s, f, a) + 4 * k);
    wr32(sp_cols(s, f, a) + 4 * k, rd32(sp_cols(s, f, a) + 4 * (k + 1)));
    wr32(sp_cols(s, f, a) + 4 * (k + 1), c0);
}
static void e_col_negative(uint8_t *s, size_t *l, size_t f, size_t a)
{
    wr32(sp_cols(s, f, a), 0xFFFFFFFFu);
}
static void e_cols_wider(uint8_t *s, size_t *l, size_t f, size_t a)
{
    wr64(s + f + 10, rd64(s + f + 10) + 1); /* arrays still valid: only the shape is wrong */
}

/* Files the writer makes from edited tensor lists. */
static void expect_written(const fixture *f, const nmt_write_tensor *t, int32_t n,
                           const char *needle, const char *what)
{
    size_t len = 0;
    nmt_error err = {0};
    uint8_t *b = fixture_bytes_n(f, &f->hp, t, n, NMT_DTYPE_F32, 0, &len, &err);
    CHECK(b != NULL, "%s: write failed: %s", what, err.message);
    if (b)
        expect_refused(b, len, needle, what);
    free(b);
}

static int32_t fixture_index(const fixture *f, const char *name)
{
    for (int32_t i = 0; i < f->n; i++)
        if (!strcmp(f->tensors[i].name, name))
            return i;
    return -1;
}

static void test_sparse_model_rules(const fixture *f)
{
    nmt_write_tensor t[FIXTURE_MAX_TENSORS + 1];
    int32_t n = f->n, out = fixture_index(f, "output.w");
    memcpy(t, f->tensors, sizeof(nmt_write_tensor) * (size_t)n);
    t[n] = t[out];
    t[n].sparse = 0;
    expect_written(f, t, n + 1, "both dense (section TENS) and sparse", "dense and sparse");
    t[n].name = "extra.w";
    t[n].sparse = 1;
    expect_written(f, t, n + 1, "section SPRS: unexpected tensor 'extra.w'", "extra sparse");
    int32_t enc = fixture_index(f, "encoder.0.fwd.w_ih"), emb = fixture_index(f, "tgt_embedding");
    t[enc].sparse = 1;
    expect_written(f, t, n, "'encoder.0.fwd.w_ih' cannot be stored sparse", "sparse encoder");
    t[enc].sparse = 0;
    t[emb].sparse = 1;
    expect_written(f, t, n, "'tgt_embedding' cannot be stored sparse", "sparse embedding");
    t[emb].sparse = 0;
    size_t elems = fixture_elems(f, out);
    float *bad = malloc(elems * sizeof *bad);
    memcpy(bad, f->values[out], elems * sizeof *bad);
    bad[elems - 1] = NAN;
    t[out].values = bad;
    expect_written(f, t, n, "tensor 'output.w': nonzero", "NaN in a sparse matrix");
    bad[elems - 1] = -INFINITY;
    expect_written(f, t, n, "is infinite", "-inf in a sparse matrix");
    free(bad);
}

static void test_sparse(void)
{
    fixture f;
    fixture_init(&f, 0, 1, 1);
    fixture_prune(&f, 1.6f);
    size_t len = 0, z_len = 0;
    uint8_t *b = fixture_bytes(&f, NMT_DTYPE_F32, 0, &len);
    uint8_t *z = fixture_bytes(&f, NMT_DTYPE_F16, 1, &z_len);
    CHECK(b && z, "sparse fixture: write failed");
    if (!b || !z)
        goto done;
    test_blind(b, len, "tiny sparse fp32");
    test_blind(z, z_len, "tiny sparse fp16 compressed");
    test_every_flip(b, len, 1, "tiny sparse fp32");
    test_every_flip(z, z_len, 1, "tiny sparse fp16 compressed");

    raw base;
    raw_split(b, &base);
    static const struct {
        sparse_edit edit;
        const char *needle, *what;
    } cases[] = {
        {e_version, "SPRS: version 2 is not supported", "version"},
        {e_count0, "matrix count 0 impossible", "count 0"},
        {e_count_big, "matrix count 100000 impossible", "count 100000"},
        {e_short, "shorter than its 8-byte header", "7 bytes"},
        {e_name_len0, "name length 0", "name length 0"},
        {e_name_char, "name byte 0 is 0x2F", "name byte"},
        {e_dtype, "dtype 2 unknown", "dtype"},
        {e_reserved, "reserved byte is 1", "reserved byte"},
        {e_rows0, "each dimension must lie in", "rows 0"},
        {e_cols_huge, "each dimension must lie in", "cols 2^40"},
        {e_nnz_over, "nnz", "nnz > rows x cols"},
        {e_nnz_max, "nnz 18446744073709551615 exceeds", "nnz 2^64-1"},
        {e_offset_plus, "expected", "arrays 64 bytes late"},
        {e_offset_minus, "expected", "arrays 4 bytes early"},
        {e_offset_huge, "expected", "arrays offset 2^64-64"},
        {e_padding, "padding byte", "padding not zero"},
        {e_trailing, "bytes after the last matrix", "trailing bytes"},
        {e_cut, "run past the section end", "section cut by a byte"},
        {e_first_offset, "row_offsets[0] = 1, expected 0", "first offset 1"},
        {e_decreasing, "offsets never decrease", "decreasing offsets"},
        {e_offset_past_nnz, "offsets never decrease", "offset past nnz"},
        {e_last_short, "expected nnz", "last offset below nnz"},
        {e_col_range, "out of range", "column = cols"},
        {e_col_negative, "column 4294967295 out of range", "column 2^32-1"},
        {e_col_repeat, "strictly increase", "repeated column"},
        {e_col_swap, "strictly increase", "decreasing columns"},
        {e_cols_wider, "expected [", "shape one column wider"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char what[96];
        snprintf(what, sizeof what, "SPRS: %s", cases[c].what);
        expect_sparse_edit(&base, cases[c].edit, cases[c].needle, what);
    }
    /* The section missing, twice, or claiming compression. */
    raw r = base;
    int s = raw_find(&r, "SPRS");
    for (int k = s; k + 1 < r.n; k++) {
        memcpy(r.tag[k], r.tag[k + 1], 5);
        r.sec[k] = r.sec[k + 1];
        r.len[k] = r.len[k + 1];
        r.unpacked[k] = r.unpacked[k + 1];
    }
    r.n--;
    expect_raw(&r, "missing tensor 'decoder.0.w_ih'", "SPRS removed");
    r = base;
    r.unpacked[s]++;
    expect_raw(&r, "unpacked size", "SPRS unpacked size");
    r = base;
    r.n++;
    memcpy(r.tag[r.n - 1], "SPRS", 5);
    r.sec[r.n - 1] = base.sec[s];
    r.len[r.n - 1] = r.unpacked[r.n - 1] = base.len[s];
    expect_raw(&r, "section SPRS appears twice", "SPRS twice");
    test_sparse_model_rules(&f);
    raw_free(&base);
done:
    free(b);
    free(z);
    fixture_free(&f);
}
