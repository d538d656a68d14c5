/* tokenizer.c: tokenization with joiners, case features and detokenization.
 *
 * The rules (docs/tokenization.md, pinned by tests/data/tokenizer_cases.tsv,
 * mirrored by python/pynmt/tokenizer.py):
 *   1. the line must be valid UTF-8; U+FEFF is removed, then NFC (utf8proc);
 *   2. separators (White_Space, other Cc controls, U+200B) split chunks and
 *      are dropped;
 *   3. within a chunk a token is a maximal run of letters, marks and numbers
 *      (L*, M*, N*) or one other character (punctuation, symbol, Cf, ...)
 *      followed by the marks (M*) that combine with it; a literal U+FFED is
 *      a token of its own, escaped as NMT_JOINER_ESCAPE;
 *   4. every token but the first of its chunk carries the joiner prefix;
 *   5. key = the text with each code point lowercased (utf8proc_tolower,
 *      the simple one-to-one mapping); case class from the letters (L*):
 *      Lu and Lt are uppercase. */
#define _POSIX_C_SOURCE 200809L /* pthread_once */

#include "tokenizer.h"

#include "error.h"
#include "utf8.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define JOINER_CODE_POINT 0xFFED
#define JOINER_LEN 3
#define ESCAPE_LEN (sizeof NMT_JOINER_ESCAPE - 1)

/* A growable byte buffer; tokens refer to it by offset until the end. */
typedef struct byte_buffer {
    char *data;
    size_t size, capacity;
} byte_buffer;

typedef struct token_offsets {
    size_t text, key;
    nmt_case_class case_class;
} token_offsets;

/* Room for n more bytes (and a NUL). */
static nmt_status buffer_reserve(byte_buffer *b, size_t n, nmt_error *err)
{
    if (b->size + n + 1 <= b->capacity)
        return NMT_STATUS_OK;
    size_t capacity = b->capacity ? b->capacity : 64;
    while (b->size + n + 1 > capacity)
        capacity *= 2;
    char *data = realloc(b->data, capacity);
    if (!data)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "tokenizer: out of memory (%zu bytes)",
                             capacity);
    b->data = data;
    b->capacity = capacity;
    return NMT_STATUS_OK;
}

static nmt_status buffer_append(byte_buffer *b, const char *bytes, size_t n, nmt_error *err)
{
    const nmt_status status = buffer_reserve(b, n, err);
    if (status != NMT_STATUS_OK)
        return status;
    memcpy(b->data + b->size, bytes, n);
    b->size += n;
    return NMT_STATUS_OK;
}

static int is_separator_of(int32_t cp, utf8proc_category_t category)
{
    return nmt_unicode_is_space(cp) || cp == 0x200B || category == UTF8PROC_CATEGORY_CC;
}

/* Code points below U+0300 (Latin, every one NFC as it is) are most of the
 * text: their category, separator flag and lowercase come from a table made
 * once from utf8proc's, the rest from utf8proc itself. */
enum { TABLE_CODE_POINTS = 0x300 };

typedef struct code_point_props {
    uint8_t category;  /* utf8proc_category_t */
    uint8_t separator;
    uint16_t lower;    /* utf8proc_tolower: below U+2C67 for every one here */
} code_point_props;

static code_point_props props_table[TABLE_CODE_POINTS];
static pthread_once_t props_once = PTHREAD_ONCE_INIT;

static void fill_props_table(void)
{
    for (int32_t cp = 0; cp < TABLE_CODE_POINTS; cp++) {
        const utf8proc_category_t category = utf8proc_category(cp);
        props_table[cp] = (code_point_props){(uint8_t)category,
                                             (uint8_t)is_separator_of(cp, category),
                                             (uint16_t)utf8proc_tolower(cp)};
    }
}

static utf8proc_category_t category_of(int32_t cp)
{
    return cp < TABLE_CODE_POINTS ? (utf8proc_category_t)props_table[cp].category
                                  : utf8proc_category(cp);
}

static int is_separator(int32_t cp)
{
    return cp < TABLE_CODE_POINTS ? props_table[cp].separator
                                  : is_separator_of(cp, utf8proc_category(cp));
}

static int32_t lower_of(int32_t cp)
{
    return cp < TABLE_CODE_POINTS ? props_table[cp].lower : utf8proc_tolower(cp);
}

/* One code point of valid UTF-8 at s (len >= 1): its length. */
static int decode(const char *s, size_t len, int32_t *cp)
{
    if ((unsigned char)s[0] < 0x80) {
        *cp = (unsigned char)s[0];
        return 1;
    }
    return nmt_utf8_decode(s, len, cp);
}

static int is_mark(utf8proc_category_t c)
{
    return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

static int is_word_char(utf8proc_category_t c)
{
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) || is_mark(c) ||
           (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

/* The case class of a token from its letters (see the file comment and
 * docs/tokenization.md, section 5). */
static nmt_case_class case_class_from(int letters, int upper, int first_upper)
{
    if (upper == 0)
        return NMT_CASE_LOWER;
    if (first_upper && upper == 1)
        return NMT_CASE_CAPITALIZED;
    if (letters >= 2 && upper == letters)
        return NMT_CASE_UPPER;
    return NMT_CASE_OTHER;
}

/* Appends s[0, len)'s key (each code point lowercased) to buf, which has
 * room, and returns its case class (no joiner in s). */
static nmt_case_class append_key(byte_buffer *buf, const char *s, size_t len)
{
    int letters = 0, upper = 0, first_upper = 0;
    char *out = buf->data + buf->size;
    size_t i = 0;
    while (i < len) {
        int32_t cp;
        i += (size_t)decode(s + i, len - i, &cp);
        const utf8proc_category_t c = category_of(cp);
        if (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) {
            const int is_upper = c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LT;
            if (letters == 0)
                first_upper = is_upper;
            letters++;
            upper += is_upper;
        }
        out += nmt_utf8_encode(lower_of(cp), out);
    }
    buf->size = (size_t)(out - buf->data);
    return case_class_from(letters, upper, first_upper);
}

/* Appends one token for s[0, len) (already escaped if it is the joiner). */
static nmt_status emit_token(byte_buffer *buf, token_offsets **toks, int32_t *n_toks,
                             int32_t *cap_toks, const char *s, size_t len, int glued, int escaped,
                             nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (*n_toks == *cap_toks) {
        int32_t cap = *cap_toks ? *cap_toks * 2 : 32;
        token_offsets *t = realloc(*toks, (size_t)cap * sizeof *t);
        if (!t)
            return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "tokenizer: out of memory");
        *toks = t;
        *cap_toks = cap;
    }
    /* The text, then the key: at most 2 joiners, 2 NULs, len bytes and a
     * lowercase of at most 3 bytes for every 2 (4 for 4). */
    NMT_TRY(buffer_reserve(buf, 2 * JOINER_LEN + 2 + len + 2 * len, err));
    token_offsets *t = &(*toks)[(*n_toks)++];
    t->text = buf->size;
    if (glued)
        NMT_TRY(buffer_append(buf, NMT_JOINER, JOINER_LEN, err));
    NMT_TRY(buffer_append(buf, s, len, err));
    NMT_TRY(buffer_append(buf, "", 1, err));

    t->key = buf->size;
    if (glued)
        NMT_TRY(buffer_append(buf, NMT_JOINER, JOINER_LEN, err));
    if (escaped) {
        t->case_class = NMT_CASE_LOWER;
        NMT_TRY(buffer_append(buf, s, len, err)); /* the escape is not lowercased */
    } else {
        t->case_class = append_key(buf, s, len);
    }
    NMT_TRY(buffer_append(buf, "", 1, err));
cleanup:
    return status;
}

/* The tokens' offsets become pointers now that the buffer no longer moves;
 * out takes the buffer. */
static nmt_status finish_tokens(byte_buffer *buf, const token_offsets *toks, int32_t n_toks,
                                nmt_tokens *out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (n_toks > 0) {
        NMT_ALLOC(out->tokens, n_toks);
        for (int32_t t = 0; t < n_toks; t++) {
            out->tokens[t].text = buf->data + toks[t].text;
            out->tokens[t].key = buf->data + toks[t].key;
            out->tokens[t].case_class = toks[t].case_class;
            out->tokens[t].word_id = -1;
        }
        out->storage = buf->data;
        buf->data = NULL;
    }
    out->n = n_toks;
cleanup:
    return status;
}

void nmt_tokens_clear(nmt_tokens *tokens)
{
    if (!tokens)
        return;
    free(tokens->tokens);
    free(tokens->storage);
    tokens->n = 0;
    tokens->tokens = NULL;
    tokens->storage = NULL;
}

/* What both tokenizers refuse: NULL arguments, invalid UTF-8 (with the
 * first bad byte's offset), a line too long to index; clears out. */
static nmt_status check_line(const char *text, size_t len, nmt_tokens *out, nmt_error *err)
{
    if (!out || (!text && len > 0))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "nmt_tokenize: NULL argument");
    nmt_tokens_clear(out);
    size_t bad;
    if (!nmt_utf8_valid(text, len, &bad))
        return nmt_error_set(err, NMT_STATUS_ERROR_INPUT,
                             "invalid UTF-8 at byte offset %zu (byte 0x%02X)", bad,
                             (unsigned char)text[bad]);
    if (len > (size_t)INT32_MAX / 4)
        return nmt_error_set(err, NMT_STATUS_ERROR_INPUT, "input of %zu bytes is too long", len);
    pthread_once(&props_once, fill_props_table);
    return NMT_STATUS_OK;
}

nmt_status nmt_tokenize(const char *text, size_t len, nmt_tokens *out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    char *stripped = NULL;
    utf8proc_uint8_t *nfc = NULL;
    byte_buffer buf = {0};
    token_offsets *toks = NULL;
    int32_t n_toks = 0, cap_toks = 0;

    NMT_TRY(check_line(text, len, out, err));

    /* Text below U+0300 (no byte from 0xCC up: no combining mark, no
     * U+FEFF) is NFC as it is; the rest is normalized. */
    const char *s = text;
    size_t n = len;
    size_t below = 0;
    while (below < len && (unsigned char)text[below] < 0xCC)
        below++;
    if (below < len) {
        /* Drop U+FEFF (byte order mark / zero-width no-break space) before
         * NFC so that the result is NFC even where it stood between
         * combining marks. */
        NMT_ALLOC(stripped, len + 1);
        size_t stripped_len = 0;
        for (size_t i = 0; i < len;) {
            int32_t cp;
            int cp_len = nmt_utf8_decode(text + i, len - i, &cp);
            if (cp != 0xFEFF) {
                memcpy(stripped + stripped_len, text + i, (size_t)cp_len);
                stripped_len += (size_t)cp_len;
            }
            i += (size_t)cp_len;
        }
        utf8proc_ssize_t nfc_len = 0;
        if (stripped_len > 0) {
            nfc_len = utf8proc_map((const utf8proc_uint8_t *)stripped,
                                   (utf8proc_ssize_t)stripped_len, &nfc,
                                   UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            if (nfc_len < 0) {
                status = nmt_error_set(err, nfc_len == UTF8PROC_ERROR_NOMEM
                                                ? NMT_STATUS_ERROR_MEMORY
                                                : NMT_STATUS_ERROR_INTERNAL,
                                       "NFC normalization failed: %s", utf8proc_errmsg(nfc_len));
                nfc = NULL;
                goto cleanup;
            }
        }
        s = (const char *)nfc;
        n = (size_t)nfc_len;
    }
    /* Room for every token's text and key at once in most lines: 2 copies,
     * their joiners and NULs (it still grows when lowercasing lengthens). */
    NMT_TRY(buffer_reserve(&buf, 3 * n + 64, err));

    /* Scan: `start` is the open token's first byte (or -1), `open_is_word`
     * its kind; `in_chunk` says whether a token of this chunk came before. */
    size_t i = 0;
    ptrdiff_t start = -1;
    int open_is_word = 0, open_glued = 0, in_chunk = 0;
#define CLOSE_TOKEN()                                                                          \
    do {                                                                                       \
        if (start >= 0)                                                                        \
            NMT_TRY(emit_token(&buf, &toks, &n_toks, &cap_toks, s + start, i - (size_t)start,   \
                               open_glued, 0, err));                                           \
        start = -1;                                                                            \
    } while (0)
    while (i < n) {
        int32_t cp;
        int cp_len = decode(s + i, n - i, &cp);
        utf8proc_category_t cat = category_of(cp);
        if (is_separator(cp)) {
            CLOSE_TOKEN();
            in_chunk = 0;
        } else if (cp == JOINER_CODE_POINT) {
            CLOSE_TOKEN();
            NMT_TRY(emit_token(&buf, &toks, &n_toks, &cap_toks, NMT_JOINER_ESCAPE, ESCAPE_LEN,
                               in_chunk, 1, err));
            in_chunk = 1;
        } else if (start >= 0 && (is_mark(cat) || (open_is_word && is_word_char(cat)))) {
            /* extends the open token */
        } else {
            CLOSE_TOKEN();
            start = (ptrdiff_t)i;
            open_is_word = is_word_char(cat);
            open_glued = in_chunk;
            in_chunk = 1;
        }
        i += (size_t)cp_len;
    }
    CLOSE_TOKEN();
#undef CLOSE_TOKEN

    NMT_TRY(finish_tokens(&buf, toks, n_toks, out, err));

cleanup:
    free(stripped);
    free(nfc);
    free(buf.data);
    free(toks);
    return status;
}

nmt_status nmt_tokenize_pretokenized(const char *text, size_t len, nmt_tokens *out,
                                     nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    byte_buffer buf = {0};
    token_offsets *toks = NULL;
    int32_t n_toks = 0, cap_toks = 0;
    NMT_TRY(check_line(text, len, out, err));
    /* Tokens are the runs between separators, taken as they are: a leading
     * joiner glues a token to the previous one, a lone joiner is the escape. */
    size_t i = 0;
    while (i < len) {
        int32_t cp;
        size_t start = i;
        while (i < len) {
            int n = nmt_utf8_decode(text + i, len - i, &cp);
            if (is_separator(cp))
                break;
            i += (size_t)n;
        }
        size_t end = i;
        if (end > start) {
            const int glued = end - start > JOINER_LEN && !memcmp(text + start, NMT_JOINER,
                                                                  JOINER_LEN);
            const char *body = text + start + (glued ? JOINER_LEN : 0);
            const size_t body_len = end - start - (glued ? JOINER_LEN : 0);
            /* The escape, written out or as a lone joiner, stays the escape. */
            const int escape = (body_len == ESCAPE_LEN && !memcmp(body, NMT_JOINER_ESCAPE,
                                                                  ESCAPE_LEN)) ||
                               (!glued && body_len == JOINER_LEN &&
                                !memcmp(body, NMT_JOINER, JOINER_LEN));
            if (escape)
                NMT_TRY(emit_token(&buf, &toks, &n_toks, &cap_toks, NMT_JOINER_ESCAPE,
                                   ESCAPE_LEN, glued, 1, err));
            else
                NMT_TRY(emit_token(&buf, &toks, &n_toks, &cap_toks, body, body_len, glued, 0,
                                   err));
        }
        while (i < len) { /* the separators */
            int n = nmt_utf8_decode(text + i, len - i, &cp);
            if (!is_separator(cp))
                break;
            i += (size_t)n;
        }
    }
    NMT_TRY(finish_tokens(&buf, toks, n_toks, out, err));
cleanup:
    free(buf.data);
    free(toks);
    return status;
}

#define BPE_MARK "@@"
#define BPE_MARK_LEN 2

nmt_status nmt_detokenize(const char *const *tokens, int32_t n, char **text, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    byte_buffer buf = {0};
    if (!text || n < 0 || (n > 0 && !tokens))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "nmt_detokenize: invalid arguments");
    *text = NULL;
    int wrote_any = 0, glue_next = 0;
    for (int32_t t = 0; t < n; t++) {
        const char *tok = tokens[t];
        if (!tok) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "nmt_detokenize: token %d is NULL", t);
            goto cleanup;
        }
        size_t len = strlen(tok);
        size_t bad;
        if (!nmt_utf8_valid(tok, len, &bad)) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_INPUT,
                                   "nmt_detokenize: token %d: invalid UTF-8 at byte offset %zu", t, bad);
            goto cleanup;
        }
        int glued = len >= JOINER_LEN && memcmp(tok, NMT_JOINER, JOINER_LEN) == 0;
        if (glued) {
            tok += JOINER_LEN;
            len -= JOINER_LEN;
        }
        /* BPE's continuation mark (subword-nmt: "new@@ er" is "newer"); the
         * engine's own tokens never end in it. */
        const int continued = len >= BPE_MARK_LEN &&
                              !memcmp(tok + len - BPE_MARK_LEN, BPE_MARK, BPE_MARK_LEN);
        if (continued)
            len -= BPE_MARK_LEN;
        if (len == 0) {
            glue_next |= continued;
            continue; /* a bare joiner or mark adds nothing */
        }
        if (wrote_any && !glued && !glue_next)
            NMT_TRY(buffer_append(&buf, " ", 1, err));
        glue_next = continued;
        if (len == ESCAPE_LEN && memcmp(tok, NMT_JOINER_ESCAPE, ESCAPE_LEN) == 0)
            NMT_TRY(buffer_append(&buf, NMT_JOINER, JOINER_LEN, err));
        else
            NMT_TRY(buffer_append(&buf, tok, len, err));
        wrote_any = 1;
    }
    NMT_TRY(buffer_append(&buf, "", 1, err));
    *text = buf.data;
    return NMT_STATUS_OK;
cleanup:
    free(buf.data);
    return status;
}
