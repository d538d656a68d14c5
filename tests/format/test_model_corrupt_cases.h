/* test_model_corrupt_cases.h: the targeted cases of test_model_corrupt.c
 * (included by it once; split only to keep each file readable). Each case
 * damages one field behind valid CRCs and names the message it expects. */

/* One TENS entry, wide enough to express invalid values. */
typedef struct tent {
    char name[300];
    uint16_t nlen;
    uint8_t dtype, ndim;
    uint64_t dims[8];
    uint64_t offset, size;
} tent;

static int tens_parse(const uint8_t *p, tent *e)
{
    int n = (int)rd32(p);
    size_t pos = 4;
    for (int i = 0; i < n; i++) {
        e[i].nlen = (uint16_t)(p[pos] | p[pos + 1] << 8);
        memcpy(e[i].name, p + pos + 2, e[i].nlen);
        pos += 2 + e[i].nlen;
        e[i].dtype = p[pos];
        e[i].ndim = p[pos + 1];
        pos += 2;
        for (int d = 0; d < e[i].ndim; d++, pos += 8)
            e[i].dims[d] = rd64(p + pos);
        e[i].offset = rd64(p + pos);
        e[i].size = rd64(p + pos + 8);
        pos += 16;
    }
    return n;
}

static size_t tens_build(const tent *e, int n, uint32_t count, uint8_t *out)
{
    size_t pos = 4;
    wr32(out, count);
    for (int i = 0; i < n; i++) {
        out[pos] = (uint8_t)e[i].nlen;
        out[pos + 1] = (uint8_t)(e[i].nlen >> 8);
        memcpy(out + pos + 2, e[i].name, e[i].nlen);
        pos += 2 + e[i].nlen;
        out[pos] = e[i].dtype;
        out[pos + 1] = e[i].ndim;
        pos += 2;
        for (int d = 0; d < e[i].ndim; d++, pos += 8)
            wr64(out + pos, e[i].dims[d]);
        wr64(out + pos, e[i].offset);
        wr64(out + pos + 8, e[i].size);
        pos += 16;
    }
    return pos;
}

static void expect_tens(const raw *base, const tent *e, int n, uint32_t count, const char *needle,
                        const char *what)
{
    static uint8_t buf[1 << 16];
    raw r = *base;
    int i = raw_find(&r, "TENS");
    r.sec[i] = buf;
    r.len[i] = r.unpacked[i] = tens_build(e, n, count, buf);
    expect_raw(&r, needle, what);
}

static void test_tens(const raw *base)
{
    static tent orig[200], e[200];
    int n = tens_parse(base->sec[raw_find(base, "TENS")], orig);
#define RESET() memcpy(e, orig, sizeof orig)
    int mid = n / 2, last = n - 1;
    uint64_t ends = 0;
    for (int i = 0; i < n; i++)
        if (orig[i].offset + orig[i].size > ends)
            ends = orig[i].offset + orig[i].size;
    RESET(); e[mid].dims[0] = 1ull << 40;
    expect_tens(base, e, n, (uint32_t)n, "dims[0] = 1099511627776 out of range", "dims 2^40");
    RESET(); e[mid].dims[0] = 0xFFFFFFFFFFFFFFF0ull;
    expect_tens(base, e, n, (uint32_t)n, "out of range", "negative-looking dims");
    RESET(); e[mid].dims[0] = 0;
    expect_tens(base, e, n, (uint32_t)n, "dims[0] = 0 out of range", "zero dims");
    RESET(); e[mid].ndim = 4;
    for (int d = 0; d < 4; d++)
        e[mid].dims[d] = 0x7FFFFFFF;
    expect_tens(base, e, n, (uint32_t)n, "too many elements", "product overflow");
    RESET(); e[mid].size += 4;
    expect_tens(base, e, n, (uint32_t)n, "expected", "size != product(dims) * 4");
    RESET(); e[mid].size = 0;
    expect_tens(base, e, n, (uint32_t)n, "expected", "size 0");
    RESET(); e[mid].dims[0] *= 2; e[mid].size *= 2;
    expect_tens(base, e, n, (uint32_t)n, NULL, "tensor grown over its neighbour");
    RESET(); e[mid].offset += 4;
    expect_tens(base, e, n, (uint32_t)n, "not a multiple of 64", "unaligned offset");
    RESET(); e[mid].offset = 1ull << 63;
    expect_tens(base, e, n, (uint32_t)n, "outside DATA", "offset 2^63");
    RESET(); e[mid].offset = 0xFFFFFFFFFFFFFFC0ull;
    expect_tens(base, e, n, (uint32_t)n, "outside DATA", "offset wrapping");
    RESET(); e[last].offset += 64;
    expect_tens(base, e, n, (uint32_t)n, "outside DATA", "last tensor past DATA");
    RESET(); e[1].offset = e[0].offset;
    expect_tens(base, e, n, (uint32_t)n, "overlap", "overlapping tensors");
    RESET(); e[mid].dtype = 2;
    expect_tens(base, e, n, (uint32_t)n, "dtype 2 unknown", "dtype 2");
    RESET(); e[mid].dtype = 1; e[mid].size /= 2;
    expect_tens(base, e, n, (uint32_t)n, "section DATA", "dtype f16 with f32 layout");
    RESET(); e[mid].ndim = 0;
    expect_tens(base, e, n, (uint32_t)n, "ndim 0", "ndim 0");
    RESET(); e[mid].ndim = 5; e[mid].dims[4] = 1;
    expect_tens(base, e, n, (uint32_t)n, "ndim 5", "ndim 5");
    RESET(); e[mid].nlen = 0;
    expect_tens(base, e, n, (uint32_t)n, "name length 0", "empty name");
    RESET(); e[mid].nlen = 256; memset(e[mid].name, 'a', 256);
    expect_tens(base, e, n, (uint32_t)n, "name length 256", "long name");
    RESET(); e[mid].name[3] = '/';
    expect_tens(base, e, n, (uint32_t)n, "name byte 3 is 0x2F", "slash in name");
    RESET(); e[mid].name[0] = '\0';
    expect_tens(base, e, n, (uint32_t)n, "name byte 0 is 0x00", "NUL in name");
    RESET(); memcpy(e[1].name, e[0].name, sizeof e[0].name); e[1].nlen = e[0].nlen;
    expect_tens(base, e, n, (uint32_t)n, "appears twice", "duplicate name");
    RESET(); e[mid].name[0] = 'X';
    expect_tens(base, e, n, (uint32_t)n, "missing tensor", "renamed tensor");
    RESET();
    expect_tens(base, e, n, 0, "tensor count 0", "count 0");
    expect_tens(base, e, n, 0xFFFFFFFFu, "impossible", "count 2^32-1");
    expect_tens(base, e, n, (uint32_t)n + 1, NULL, "count n+1");
    expect_tens(base, e, n, (uint32_t)n - 1, "after the last tensor", "count n-1");
    expect_tens(base, e, n - 1, (uint32_t)n - 1, "section DATA", "last entry dropped");
    expect_tens(base, e, 0, 0, "tensor count 0", "no entries");
    raw r = *base;
    int t = raw_find(&r, "TENS");
    r.len[t] = r.unpacked[t] = 2;
    expect_raw(&r, "too short", "TENS of 2 bytes");
    for (size_t cut = 5; cut + 1 < base->len[t]; cut += 13) {
        r.len[t] = r.unpacked[t] = cut;
        expect_raw(&r, NULL, "TENS truncated");
    }
#undef RESET
}

static void test_data(const raw *base, const uint8_t *zb, size_t zlen)
{
    raw r = *base;
    int d = raw_find(&r, "DATA");
    /* Uncompressed: sizes must agree. */
    r.unpacked[d] = r.len[d] + 64;
    expect_raw(&r, "differs from stored size", "uncompressed DATA unpacked > stored");
    r.unpacked[d] = r.len[d] = base->len[d] - 4;
    expect_raw(&r, "outside DATA", "DATA 4 bytes short");
    r = *base;
    r.pre[12] = 1; /* says deflate, holds raw floats */
    r.unpacked[d] = base->len[d];
    expect_raw(&r, "section DATA", "raw DATA flagged as deflate");

    raw z;
    raw_split(zb, &z);
    r = z;
    r.pre[12] = 0;
    expect_raw(&r, "differs from stored size", "deflated DATA not flagged");
    r = z;
    d = raw_find(&r, "DATA");
    uint64_t unpacked = z.unpacked[d];
    r.unpacked[d] = unpacked + 64;
    expect_raw(&r, "section DATA", "unpacked claim + 64");
    r.unpacked[d] = 1ull << 40;
    expect_raw(&r, "section DATA", "unpacked claim 2^40");
    r.unpacked[d] = unpacked - 2;
    expect_raw(&r, "outside DATA", "unpacked claim - 2");
    /* Streams: truncated, with trailing bytes, corrupted, of the wrong length. */
    r = z;
    r.len[d] = z.len[d] / 2;
    expect_raw(&r, "section DATA", "zlib stream cut in half");
    uint8_t *longer = malloc(z.len[d] + 8);
    memcpy(longer, z.sec[d], z.len[d]);
    memset(longer + z.len[d], 0x55, 8);
    r.sec[d] = longer;
    r.len[d] = z.len[d] + 8;
    expect_raw(&r, "after the end of the zlib stream", "bytes after the zlib stream");
    /* A flipped bit can leave what the stream inflates to as it was (a
     * match's distance moved onto equal bytes, e.g. within the alignment
     * padding's zeros: seed 1795511234, byte 332 of 1,052), so the file
     * holds the same data and must load; every flip that changes the data
     * must be refused (zlib's Adler-32, then the DATA checks). */
    uint8_t *inflated = malloc(unpacked), *reflated = malloc(unpacked);
    uLongf n_inflated = (uLongf)unpacked;
    CHECK(inflated && reflated && uncompress(inflated, &n_inflated, z.sec[d], z.len[d]) == Z_OK &&
              n_inflated == unpacked,
          "zlib stream of the fixture: does not inflate");
    for (size_t at = 2; inflated && reflated && at < z.len[d]; at += z.len[d] / 16 + 1) {
        memcpy(longer, z.sec[d], z.len[d]);
        longer[at] ^= 0x10;
        r.len[d] = z.len[d];
        uLongf n = (uLongf)unpacked;
        if (uncompress(reflated, &n, longer, z.len[d]) == Z_OK && n == unpacked &&
            memcmp(reflated, inflated, unpacked) == 0) {
            size_t len = 0;
            uint8_t *b = raw_join(&r, &len);
            nmt_model *m = NULL;
            nmt_error e = {0};
            CHECK(nmt_model_load_memory(b, len, "model.bin", &m, &e) == NMT_STATUS_OK,
                  "zlib byte %zu flipped, same data: refused: %s", at, e.message);
            nmt_model_free(m);
            free(b);
        } else {
            expect_raw(&r, NULL, "zlib byte flipped");
        }
    }
    free(inflated);
    free(reflated);
    size_t half = (size_t)unpacked / 2;
    uint8_t *plain = calloc(unpacked, 1);
    uLongf cap = compressBound(unpacked);
    uint8_t *packed = malloc(cap);
    compress2(packed, &cap, plain, half, 6);
    r.sec[d] = packed;
    r.len[d] = cap;
    expect_raw(&r, "section DATA", "stream of half the size");
    cap = compressBound(unpacked + 100);
    free(packed);
    packed = malloc(cap);
    uint8_t *more = calloc(unpacked + 100, 1);
    compress2(packed, &cap, more, unpacked + 100, 6);
    r.sec[d] = packed;
    r.len[d] = cap;
    expect_raw(&r, "section DATA", "stream 100 bytes too long");
    free(more);
    free(packed);
    free(plain);
    free(longer);
    raw_free(&z);
}

static void test_targeted(const uint8_t *b, size_t len, const uint8_t *zb, size_t zlen)
{
    raw base, r;
    raw_split(b, &base);
    size_t n;
    uint8_t *c;
    /* The raw builder itself reproduces the file. */
    c = raw_join(&base, &n);
    CHECK(n == len && memcmp(c, b, len) == 0, "raw_join does not reproduce the writer's bytes");
    free(c);

    /* Preamble. */
    c = malloc(len);
    memcpy(c, b, len);
    c[1] = 'X';
    expect_refused(c, len, "bad magic", "magic");
    memcpy(c, "\x89NMT\n\x1a\n", 7); /* CR LF -> LF, the rest shifted */
    expect_refused(c, len, "text-mode", "text-mode mangled magic");
    memcpy(c, b, len);
    c[9] ^= 1;
    expect_refused(c, len, "preamble CRC", "preamble byte without reseal");
    memcpy(c, b, len);
    c[40] ^= 1;
    expect_refused(c, len, "section table CRC", "table byte without reseal");
    memcpy(c, b, len);
    c[32 + 32 * 5 + 4] = 1;
    expect_refused(c, len, "reserved word", "reserved word after the table");
    memcpy(c, b, len);
    c[32 + 32 * 5 + 8] = 1; /* the padding before HPAR */
    expect_refused(c, len, "padding byte", "padding");
    for (int i = 0; i < base.n; i++) {
        memcpy(c, b, len);
        c[rd64(b + 32 + 32 * i + 8)] ^= 0x20;
        char needle[64];
        snprintf(needle, sizeof needle, "section %s: CRC mismatch", base.tag[i]);
        expect_refused(c, len, needle, needle);
    }
    free(c);
    r = base;
    r.pre[8] = 2;
    expect_raw(&r, "format version 2", "version 2");
    r = base;
    r.pre[12] = 2;
    expect_raw(&r, "unknown flags", "flags bit 1");
    r = base;
    r.pre[15] = 0x80;
    expect_raw(&r, "unknown flags", "flags bit 31");

    /* Section table. */
    r = base;
    r.n = 4; /* DATA dropped */
    expect_raw(&r, "sections, expected", "4 sections");
    r = base;
    memcpy(r.tag[2], "VSRC", 4);
    expect_raw(&r, "section VSRC appears twice", "duplicate section");
    memcpy(r.tag[2], "HP R", 4);
    expect_raw(&r, "tag byte 2 is 0x20", "tag with a space");
    memcpy(r.tag[2], "XTRA", 4);
    expect_raw(&r, "unknown critical section XTRA", "unknown critical section");
    r = base;
    r.offset_shift[3] = 64;
    expect_raw(&r, "offset", "section one block late");
    r = base;
    r.unpacked[0] += 1;
    expect_raw(&r, "differs from stored size", "HPAR unpacked size");
    /* An ancillary (lower-case) section is skipped: the file loads. */
    r = base;
    r.n = 6;
    memcpy(r.tag[5], "meta", 5);
    r.sec[5] = (uint8_t *)"trained on nothing\n";
    r.len[5] = r.unpacked[5] = 19;
    c = raw_join(&r, &n);
    nmt_model *m = NULL;
    nmt_error err = {0};
    CHECK(nmt_model_load_memory(c, n, "meta", &m, &err) == NMT_STATUS_OK, "ancillary: %s",
          err.message);
    nmt_model_free(m);
    free(c);
    r.tag[5][0] = 'M';
    expect_raw(&r, "unknown critical section Meta", "critical extra section");
    /* 65 sections: checked before the table is read. */
    c = calloc(4096, 1);
    memcpy(c, b, 32);
    wr32(c + 24, 65);
    wr64(c + 16, 4096);
    wr32(c + 28, crc(c, 28));
    expect_refused(c, 4096, "65 sections", "65 sections");
    wr32(c + 24, 64);
    wr32(c + 28, crc(c, 28));
    expect_refused(c, 4096, NULL, "64 empty sections");
    free(c);

    /* HPAR. */
    expect_hpar(&base, "hidden_size=10\n", "hidden_size=11\n", "line 3: hidden_size = 11 must be even");
    /* The optional tokenizer key: a bad value and a repeat are refused. */
    expect_hpar(&base, "dec_init=", "tokenizer=bpe\ndec_init=", "tokenizer: expected engine, pretokenized or sentencepiece");
    expect_hpar(&base, "dec_init=", "tokenizer=engine\ntokenizer=engine\ndec_init=", "duplicate key 'tokenizer'");
    expect_hpar(&base, "hidden_size=10\n", "hidden_size=1099511627776\n", "line 3: hidden_size: '1099511627776' is not a decimal integer");
    expect_hpar(&base, "hidden_size=10\n", "hidden_size=2000000\n", "hidden_size = 2000000 out of range");
    expect_hpar(&base, "hidden_size=10\n", "hidden_size=-10\n", "not a decimal integer");
    expect_hpar(&base, "hidden_size=10\n", "hidden_size=010\n", "not a decimal integer");
    expect_hpar(&base, "hidden_size=10\n", "hidden_size=\n", "not a decimal integer");
    expect_hpar(&base, "hidden_size=10\n", "hidden_size=1e3\n", "not a decimal integer");
    expect_hpar(&base, "enc_layers=2\n", "enc_layers=9\n", "enc_layers = 9 out of range [1, 8]");
    expect_hpar(&base, "enc_layers=2\n", "enc_layers=0\n", "enc_layers = 0 out of range");
    expect_hpar(&base, "dec_layers=2\n", "dec_layers=1\n", "line 9: dec_init = encoder needs enc_layers = dec_layers");
    expect_hpar(&base, "emb_size=8\n", "emb_size=8\nemb_size=8\n", "line 3: duplicate key 'emb_size' (first on line 2)");
    expect_hpar(&base, "emb_size=8\n", "", "missing key 'emb_size'");
    expect_hpar(&base, "emb_size=8\n", "emb_size=8\nbeam=5\n", "line 3: unknown key 'beam'");
    expect_hpar(&base, "emb_size=8\n", "emb_size = 8\n", "line 2: byte 0x20");
    expect_hpar(&base, "emb_size=8\n", "emb_size=8\r\n", "line 2: byte 0x0D");
    expect_hpar(&base, "emb_size=8\n", "emb_size=8\n\n", "line 3: expected key=value");
    expect_hpar(&base, "emb_size=8\n", "emb_size8\n", "line 2: expected key=value");
    expect_hpar(&base, "emb_size=8\n", "emb_size=0\n", "emb_size = 0 out of range");
    expect_hpar(&base, "model=lstm-attn-v1\n", "model=transformer\n", "line 1: model: 'transformer' is not supported");
    expect_hpar(&base, "features=word,case\n", "features=case,word\n", "the word first");
    expect_hpar(&base, "features=word,case\n", "features=word,word\n", "'word' given twice");
    expect_hpar(&base, "features=word,case\n", "features=word,suffix\n", "unknown feature kind 'suffix'");
    expect_hpar(&base, "features=word,case\n", "features=word,\n", "unknown feature kind ''");
    expect_hpar(&base, "features=word,case\n", "features=word\n", "tensor 'src_embedding': dims[0] = 11, expected 7");
    expect_hpar(&base, "dec_init=encoder\n", "dec_init=random\n", "dec_init: expected encoder or zeros");
    expect_hpar(&base, "dec_init=encoder\n", "dec_init=encoder", "does not end with a newline");
    expect_hpar(&base, "src_words=7\n", "src_words=8\n", "section VSRC: 7 tokens, but HPAR says src_words = 8");
    expect_hpar(&base, "tgt_vocab=9\n", "tgt_vocab=3\n", "tgt_vocab = 3 out of range");
    expect_hpar(&base, "emb_size=8\n", "emb_size=16\n", "tensor 'src_embedding': dims[1] = 8, expected 16");

    /* Vocabularies (7 source, 9 target entries). */
    expect_vocab(&base, "VSRC", "<pad>\n<unk>\n\nkatze\nist\nx\ny\n", "section VSRC: entry 2 is empty");
    expect_vocab(&base, "VSRC", "<pad>\n<unk>\nha\xffus\nkatze\nist\nx\ny\n", "entry 2 is not valid UTF-8");
    expect_vocab(&base, "VSRC", "<pad>\n<unk>\nha\xc0\xafus\nkatze\nist\nx\ny\n", "entry 2 is not valid UTF-8");
    expect_vocab(&base, "VSRC", "<pad>\n<unk>\nha us\nkatze\nist\nx\ny\n", "entry 2 contains whitespace");
    expect_vocab(&base, "VSRC", "<pad>\n<unk>\nhaus\r\nkatze\nist\nx\ny\n", "entry 2 contains whitespace");
    expect_vocab(&base, "VSRC", "<pad>\n<unk>\nhaus\nkatze\nhaus\nx\ny\n", "entry 4 'haus' duplicates entry 2");
    expect_vocab(&base, "VSRC", "<s>\n<unk>\nhaus\nkatze\nist\nx\ny\n", "section VSRC: entry 0 is '<s>', expected the special token '<pad>'");
    expect_vocab(&base, "VSRC", "<pad>\n<unk>\nhaus\nkatze\nist\nx\n", "6 tokens, but HPAR says src_words = 7");
    expect_vocab(&base, "VSRC", "<pad>\n<unk>\nhaus\nkatze\nist\nx\ny", "does not end with a newline");
    expect_vocab(&base, "VSRC", "", "0 tokens");
    expect_vocab(&base, "VTGT", "<pad>\n<unk>\n</s>\n<s>\na\nb\nc\nd\ne\n", "section VTGT: entry 2 is '</s>', expected the special token '<s>'");
    expect_vocab(&base, "VTGT", "<pad>\n<unk>\n<s>\n</s>\na\nb\nc\nd\n\xed\xa0\x80\n", "entry 8 is not valid UTF-8");

    test_tens(&base);
    test_data(&base, zb, zlen);
    raw_free(&base);
}

/* Section SPMP, the SentencePiece model of tokenizer=sentencepiece
 * (docs/model-format.md): a file with the tiny test model in it, then each
 * rule of the section broken behind valid CRCs. The header and the pairing
 * with HPAR are the reader's checks, with or without SentencePiece built; the
 * model bytes themselves are parsed by SentencePiece when it is built. */
static void test_spmp(const uint8_t *spm, size_t spm_len)
{
    fixture f;
    fixture_init(&f, 0, 0, 1);
    size_t len;
    uint8_t *b = fixture_bytes_spm(&f, spm, spm_len, &len);
    CHECK(b != NULL, "SPMP: the writer refused the fixture");
    if (!b) {
        fixture_free(&f);
        return;
    }
    raw base, r;
    raw_split(b, &base);
    int s = raw_find(&base, "SPMP");
    CHECK(base.n == 6 && s == 3, "SPMP: written as section %d of %d, expected 3 of 6", s, base.n);
    nmt_model *m = NULL;
    nmt_error err = {0};
    nmt_status st = nmt_model_load_memory(b, len, "model.bin", &m, &err);
    if (nmt_spm_available())
        CHECK(st == NMT_STATUS_OK && m->spm && nmt_spm_piece_count(m->spm) == 64,
              "SPMP: the valid file: status %d, %s", (int)st, err.message);
    else
        CHECK(st == NMT_STATUS_ERROR_UNSUPPORTED && strstr(err.message, "section SPMP") &&
                  strstr(err.message, "libsentencepiece-dev"),
              "SPMP without SentencePiece built: status %d, '%s'", (int)st, err.message);
    nmt_model_free(m);
    test_blind(b, len, "tiny sentencepiece");
    test_every_flip(b, len, 1, "tiny sentencepiece");

    /* The pairing with HPAR. */
    r = base;
    for (int i = s; i + 1 < r.n; i++) {
        memcpy(r.tag[i], r.tag[i + 1], 5);
        r.sec[i] = r.sec[i + 1];
        r.len[i] = r.len[i + 1];
        r.unpacked[i] = r.unpacked[i + 1];
    }
    r.n--;
    expect_raw(&r, "tokenizer=sentencepiece but there is no section SPMP", "SPMP missing");
    expect_hpar(&base, "tokenizer=sentencepiece\n", "", "HPAR does not say tokenizer=sentencepiece");
    expect_hpar(&base, "tokenizer=sentencepiece\n", "tokenizer=pretokenized\n",
                "HPAR does not say tokenizer=sentencepiece");
    expect_hpar(&base, "features=word\n", "features=word,case\n",
                "line 10: tokenizer=sentencepiece needs features=word");

    /* The header. */
    uint8_t *sec = malloc(base.len[s] + 16);
    r = base;
    r.sec[s] = sec;
#define SPMP_CASE(edit, needle, what)                        \
    do {                                                     \
        memcpy(sec, base.sec[s], base.len[s]);               \
        r.len[s] = r.unpacked[s] = base.len[s];              \
        edit;                                                \
        expect_raw(&r, needle, what);                        \
    } while (0)
    SPMP_CASE(wr32(sec, 2), "section SPMP: version 2 is not supported", "SPMP version 2");
    SPMP_CASE(wr32(sec, 0), "section SPMP: version 0", "SPMP version 0");
    SPMP_CASE(wr32(sec + 4, 0), "the SentencePiece model is empty", "SPMP size 0");
    SPMP_CASE(wr32(sec + 4, (uint32_t)spm_len + 1), "the header says", "SPMP size + 1");
    SPMP_CASE(wr32(sec + 4, (uint32_t)spm_len - 1), "the header says", "SPMP size - 1");
    SPMP_CASE(wr32(sec + 4, 0xFFFFFFFFu), "the header says 4294967295", "SPMP size 2^32-1");
    SPMP_CASE(r.len[s] = r.unpacked[s] = 7, "shorter than its 8-byte header", "SPMP 7 bytes");
    SPMP_CASE(r.len[s] = r.unpacked[s] = 0, "shorter than its 8-byte header", "SPMP empty");
    SPMP_CASE(r.unpacked[s] = base.len[s] + 1, "differs from stored size", "SPMP unpacked size");
    /* Bytes that are not a SentencePiece model, behind a consistent header:
     * SentencePiece's parser refuses them (when built; else the stub does). */
    if (nmt_spm_available()) {
        SPMP_CASE(memset(sec + 8, 0xFF, spm_len), "section SPMP: not a usable SentencePiece model",
                  "SPMP model bytes 0xFF");
        SPMP_CASE((r.len[s] = r.unpacked[s] = 8 + spm_len / 2, wr32(sec + 4, (uint32_t)spm_len / 2)),
                  "section SPMP: not a usable SentencePiece model", "SPMP model cut in half");
        SPMP_CASE((r.len[s] = r.unpacked[s] = 9, wr32(sec + 4, 1), sec[8] = 0),
                  "section SPMP", "SPMP one zero byte");
    }
#undef SPMP_CASE
    /* Two SPMP sections. */
    r = base;
    r.n = 7;
    memcpy(r.tag[6], "SPMP", 5);
    r.sec[6] = base.sec[s];
    r.len[6] = r.unpacked[6] = base.len[s];
    expect_raw(&r, "section SPMP appears twice", "SPMP twice");
    free(sec);
    raw_free(&base);
    free(b);
    fixture_free(&f);
}
