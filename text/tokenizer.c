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
#include "tokenizer.h"

#include "error.h"
#include "utf8.h"

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

static nmt_status buffer_append(byte_buffer *b, const char *bytes, size_t n, nmt_error *err)
{
    if (b->size + n + 1 > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 64;
        while (b->size + n + 1 > capacity)
            capacity *= 2;
        char *data = realloc(b->data, capacity);
        if (!data)
            return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "tokenizer: out of memory (%zu bytes)",
                                 capacity);
        b->data = data;
        b->capacity = capacity;
    }
    memcpy(b->data + b->size, bytes, n);
    b->size += n;
    return NMT_STATUS_OK;
}

static int is_separator(int32_t cp)
{
    return nmt_unicode_is_space(cp) || cp == 0x200B ||
           utf8proc_category(cp) == UTF8PROC_CATEGORY_CC;
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

/* The case class of s[0, len) (no joiner): see the file comment and
 * docs/tokenization.md. */
static nmt_case_class case_class_of(const char *s, size_t len)
{
    int letters = 0, upper = 0, first_upper = 0;
    size_t i = 0;
    while (i < len) {
        int32_t cp;
        i += (size_t)nmt_utf8_decode(s + i, len - i, &cp);
        utf8proc_category_t c = utf8proc_category(cp);
        if (c < UTF8PROC_CATEGORY_LU || c > UTF8PROC_CATEGORY_LO)
            continue;
        int is_upper = c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LT;
        if (letters == 0)
            first_upper = is_upper;
        letters++;
        upper += is_upper;
    }
    if (upper == 0)
        return NMT_CASE_LOWER;
    if (first_upper && upper == 1)
        return NMT_CASE_CAPITALIZED;
    if (letters >= 2 && upper == letters)
        return NMT_CASE_UPPER;
    return NMT_CASE_OTHER;
}

/* Appends one token for s[0, len) (already escaped if it is the joiner). */
static nmt_status emit_token(byte_buffer *buf, token_offsets **toks, int32_t *n_toks,
                             int32_t *cap_toks, const char *s, size_t len, int glued, int escaped,
                             nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (*n_toks == *cap_toks) {
        int32_t cap = *cap_toks ? *cap_toks * 2 : 16;
        token_offsets *t = realloc(*toks, (size_t)cap * sizeof *t);
        if (!t)
            return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "tokenizer: out of memory");
        *toks = t;
        *cap_toks = cap;
    }
    token_offsets *t = &(*toks)[(*n_toks)++];
    t->case_class = escaped ? NMT_CASE_LOWER : case_class_of(s, len);

    t->text = buf->size;
    if (glued)
        NMT_TRY(buffer_append(buf, NMT_JOINER, JOINER_LEN, err));
    NMT_TRY(buffer_append(buf, s, len, err));
    NMT_TRY(buffer_append(buf, "", 1, err));

    t->key = buf->size;
    if (glued)
        NMT_TRY(buffer_append(buf, NMT_JOINER, JOINER_LEN, err));
    if (escaped) {
        NMT_TRY(buffer_append(buf, s, len, err)); /* the escape is not lowercased */
    } else {
        size_t i = 0;
        while (i < len) {
            int32_t cp;
            char utf8[4];
            i += (size_t)nmt_utf8_decode(s + i, len - i, &cp);
            NMT_TRY(buffer_append(buf, utf8, (size_t)nmt_utf8_encode(utf8proc_tolower(cp), utf8), err));
        }
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

    /* Drop U+FEFF (byte order mark / zero-width no-break space) before NFC so
     * that the result is NFC even where it stood between combining marks. */
    NMT_ALLOC(stripped, len + 1);
    size_t stripped_len = 0;
    for (size_t i = 0; i < len;) {
        int32_t cp;
        int n = nmt_utf8_decode(text + i, len - i, &cp);
        if (cp != 0xFEFF) {
            memcpy(stripped + stripped_len, text + i, (size_t)n);
            stripped_len += (size_t)n;
        }
        i += (size_t)n;
    }
    utf8proc_ssize_t nfc_len = 0;
    if (stripped_len > 0) {
        nfc_len = utf8proc_map((const utf8proc_uint8_t *)stripped, (utf8proc_ssize_t)stripped_len,
                               &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        if (nfc_len < 0) {
            status = nmt_error_set(err, nfc_len == UTF8PROC_ERROR_NOMEM ? NMT_STATUS_ERROR_MEMORY
                                                                        : NMT_STATUS_ERROR_INTERNAL,
                                   "NFC normalization failed: %s", utf8proc_errmsg(nfc_len));
            nfc = NULL;
            goto cleanup;
        }
    }

    /* Scan: `start` is the open token's first byte (or -1), `open_is_word`
     * its kind; `in_chunk` says whether a token of this chunk came before. */
    const char *s = (const char *)nfc;
    size_t n = (size_t)nfc_len, i = 0;
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
        int cp_len = nmt_utf8_decode(s + i, n - i, &cp);
        utf8proc_category_t cat = utf8proc_category(cp);
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
