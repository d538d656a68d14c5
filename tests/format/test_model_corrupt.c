/* test_model_corrupt.c: a generated corpus of damaged model files, each of
 * which must be refused with NMT_STATUS_ERROR_FORMAT (or _IO) and a message,
 * never loaded and never crash (run it under valgrind: see
 * docs/model-format.md, "Testing").
 * - blind damage: truncation at every section boundary and at sampled bytes,
 *   every single byte of a tiny file flipped (each byte is covered by a CRC
 *   or must be zero padding, so every flip is caught), appended bytes;
 * - targeted damage behind valid CRCs: the file is split into sections, one
 *   is edited, and the CRCs and placement are recomputed (raw_join), so the
 *   deeper checks (HPAR, vocabularies, tensor table, DATA, zlib) are reached;
 * - section SPRS, the sparse matrices (test_model_corrupt_sparse.h). */
#include "model_fixture.h"
#include "sentencepiece.h"

#include <zlib.h>

#define MAX_RAW 10

typedef struct raw {
    uint8_t pre[32];
    int n;
    char tag[MAX_RAW][5];
    uint8_t *sec[MAX_RAW];
    size_t len[MAX_RAW];
    uint64_t unpacked[MAX_RAW];
    int64_t offset_shift[MAX_RAW]; /* added to the canonical offset */
} raw;

static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static void wr64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i); }
static uint32_t crc(const void *p, size_t n) { return (uint32_t)crc32(0, p, (uInt)n); }

/* Splits a valid file into its sections (copies). */
static void raw_split(const uint8_t *b, raw *r)
{
    memset(r, 0, sizeof *r);
    memcpy(r->pre, b, 32);
    r->n = (int)rd32(b + 24);
    for (int i = 0; i < r->n; i++) {
        const uint8_t *e = b + 32 + 32 * i;
        memcpy(r->tag[i], e, 4);
        r->len[i] = (size_t)rd64(e + 16);
        r->unpacked[i] = rd64(e + 24);
        r->sec[i] = malloc(r->len[i] + 1);
        memcpy(r->sec[i], b + rd64(e + 8), r->len[i]);
    }
}

static void raw_free(raw *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->sec[i]);
}

static int raw_find(const raw *r, const char *tag)
{
    for (int i = 0; i < r->n; i++)
        if (memcmp(r->tag[i], tag, 4) == 0)
            return i;
    return -1;
}

/* Canonical placement, all CRCs right; version and flags from r->pre. */
static uint8_t *raw_join(const raw *r, size_t *out_len)
{
    uint64_t pos = 32 + 32 * (uint64_t)r->n + 8, offs[MAX_RAW];
    for (int i = 0; i < r->n; i++) {
        offs[i] = ((pos + 63) & ~(uint64_t)63) + (uint64_t)r->offset_shift[i];
        pos = offs[i] + r->len[i];
    }
    uint8_t *b = calloc(pos + 64, 1);
    memcpy(b, r->pre, 32);
    for (int i = 0; i < r->n; i++) {
        uint8_t *e = b + 32 + 32 * i;
        memcpy(e, r->tag[i], 4);
        wr32(e + 4, crc(r->sec[i], r->len[i]));
        wr64(e + 8, offs[i]);
        wr64(e + 16, r->len[i]);
        wr64(e + 24, r->unpacked[i]);
        memcpy(b + offs[i], r->sec[i], r->len[i]);
    }
    wr32(b + 32 + 32 * r->n, crc(b + 32, 32 * (size_t)r->n));
    wr64(b + 16, pos);
    wr32(b + 24, (uint32_t)r->n);
    wr32(b + 28, crc(b, 28));
    *out_len = (size_t)pos;
    return b;
}

static void expect_raw(const raw *r, const char *needle, const char *what)
{
    size_t len;
    uint8_t *b = raw_join(r, &len);
    expect_refused(b, len, needle, what);
    free(b);
}

/* One HPAR text edit: replace `from` with `to` in the canonical text. */
static void expect_hpar(const raw *base, const char *from, const char *to, const char *needle)
{
    raw r = *base;
    int i = raw_find(&r, "HPAR");
    char text[2048];
    size_t len = base->len[i];
    memcpy(text, base->sec[i], len);
    text[len] = '\0';
    char *at = strstr(text, from);
    if (!at) {
        CHECK(0, "HPAR case: '%s' not in the text", from);
        return;
    }
    char edited[2048];
    snprintf(edited, sizeof edited, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    uint8_t *saved = r.sec[i];
    r.sec[i] = (uint8_t *)edited;
    r.len[i] = r.unpacked[i] = strlen(edited);
    char what[128];
    snprintf(what, sizeof what, "HPAR '%s' -> '%s'", from, to);
    expect_raw(&r, needle, what);
    r.sec[i] = saved;
}

static void expect_vocab(const raw *base, const char *tag, const char *text, const char *needle)
{
    raw r = *base;
    int i = raw_find(&r, tag);
    r.sec[i] = (uint8_t *)text;
    r.len[i] = r.unpacked[i] = strlen(text);
    char what[160];
    snprintf(what, sizeof what, "%s '%.100s'", tag, text);
    expect_raw(&r, needle, what);
}

static void test_blind(const uint8_t *b, size_t len, const char *what)
{
    int n = (int)rd32(b + 24), refused = 0, cases = 0;
    /* Truncation at every section start and end, one byte either side, and a sample. */
    for (int i = -1; i < n; i++) {
        uint64_t at[2] = {32 + 32 * (uint64_t)n + 8, 32};
        if (i >= 0) {
            at[0] = rd64(b + 32 + 32 * i + 8);
            at[1] = at[0] + rd64(b + 32 + 32 * i + 16);
        }
        for (int k = 0; k < 2; k++)
            for (int64_t d = -1; d <= 1; d++) {
                int64_t cut = (int64_t)at[k] + d;
                if (cut < 0 || (uint64_t)cut >= len)
                    continue;
                cases++;
                refused += expect_refused(b, (size_t)cut, NULL, what);
            }
    }
    for (int s = 0; s < 200; s++) {
        cases++;
        refused += expect_refused(b, (size_t)test_rand_int(0, (int32_t)len), NULL, what);
    }
    /* Appended bytes. */
    uint8_t *longer = malloc(len + 64);
    memcpy(longer, b, len);
    memset(longer + len, 0, 64);
    cases += 2;
    refused += expect_refused(longer, len + 1, "preamble says", what);
    refused += expect_refused(longer, len + 64, "preamble says", what);
    free(longer);
    fprintf(stderr, "%s: %d of %d truncations/extensions refused\n", what, refused, cases);
}

/* Every byte flipped (all bits, then the low bit): all must be refused. */
static void test_every_flip(const uint8_t *b, size_t len, size_t stride, const char *what)
{
    uint8_t *c = malloc(len);
    int refused = 0, cases = 0;
    for (size_t i = 0; i < len; i += stride)
        for (int m = 0; m < 2; m++) {
            memcpy(c, b, len);
            c[i] ^= m ? 0x01 : 0xFF;
            cases++;
            refused += expect_refused(c, len, NULL, what);
        }
    fprintf(stderr, "%s: %d of %d byte flips refused\n", what, refused, cases);
    free(c);
}

#include "test_model_corrupt_cases.h"
#include "test_model_corrupt_sparse.h"

int main(void)
{
    test_seed();
    fixture tiny, small;
    fixture_init(&tiny, 0, 1, 1);
    fixture_init(&small, 1, 1, 1);
    size_t tiny_len, tiny_z_len, small_len;
    uint8_t *tiny_b = fixture_bytes(&tiny, NMT_DTYPE_F32, 0, &tiny_len);
    uint8_t *tiny_z = fixture_bytes(&tiny, NMT_DTYPE_F16, 1, &tiny_z_len);
    uint8_t *small_b = fixture_bytes(&small, NMT_DTYPE_F32, 0, &small_len);
    if (!tiny_b || !tiny_z || !small_b)
        return 1;
    test_blind(tiny_b, tiny_len, "tiny fp32");
    test_blind(tiny_z, tiny_z_len, "tiny fp16 compressed");
    test_blind(small_b, small_len, "small fp32");
    test_every_flip(tiny_b, tiny_len, 1, "tiny fp32");
    test_every_flip(tiny_z, tiny_z_len, 1, "tiny fp16 compressed");
    test_every_flip(small_b, small_len, 7, "small fp32 (every 7th byte)");
    test_targeted(small_b, small_len, tiny_z, tiny_z_len);
    size_t spm_len = 0;
    uint8_t *spm = read_all(NMT_SOURCE_DIR "/tests/data/sentencepiece-tiny.model", &spm_len);
    CHECK(spm && spm_len > 0, "cannot read tests/data/sentencepiece-tiny.model");
    if (spm)
        test_spmp(spm, spm_len);
    free(spm);
    test_sparse();
    free(tiny_b);
    free(tiny_z);
    free(small_b);
    fixture_free(&tiny);
    fixture_free(&small);
    return test_finish("test_model_corrupt");
}
