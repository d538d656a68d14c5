/* test_tokenizer.c: nmt_tokenize / nmt_detokenize against the vectors in
 * tests/data/tokenizer_cases.tsv (every column; the format is described in the
 * file's header), and nmt_utf8_valid / nmt_tokenize on invalid UTF-8
 * (overlong, surrogate, past U+10FFFF, truncated, 0xFF) with the offset. The
 * Python tokenizer passes the same vectors (tests/python/test_tokenizer_py.py).
 * The tokenizer's fast path (text below U+0300 skips NFC; its properties come
 * from a table): every pair of code points below U+0300 is NFC as it is, and
 * random lines of such text tokenize as they do through the normalizing path
 * (the same line with a U+FEFF, which that path drops). */
#include "test_util.h"
#include "tokenizer.h"
#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

enum { MAX_LINE = 4096, MAX_TOKENS = 64 };

/* Decodes the escapes \\ \t \n \r \uXXXX \UXXXXXXXX in place; returns the
 * new length or -1 on a malformed escape. */
static long unescape(char *s)
{
    char *out = s;
    for (const char *p = s; *p;) {
        if (*p != '\\') {
            *out++ = *p++;
            continue;
        }
        p++;
        switch (*p) {
        case '\\': *out++ = '\\'; p++; break;
        case 't': *out++ = '\t'; p++; break;
        case 'n': *out++ = '\n'; p++; break;
        case 'r': *out++ = '\r'; p++; break;
        case 'u':
        case 'U': {
            int digits = *p == 'u' ? 4 : 8;
            char hex[9] = {0};
            p++;
            for (int i = 0; i < digits; i++) {
                if (!p[i] || !strchr("0123456789abcdefABCDEF", p[i]))
                    return -1;
                hex[i] = p[i];
            }
            long cp = strtol(hex, NULL, 16);
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return -1;
            out += nmt_utf8_encode((int32_t)cp, out);
            p += digits;
            break;
        }
        default: return -1;
        }
    }
    *out = '\0';
    return (long)(out - s);
}

/* Splits a space-separated list in place; an empty string is an empty list. */
static int split_list(char *s, char **items)
{
    int n = 0;
    if (!*s)
        return 0;
    for (char *tok = s;; n++) {
        if (n == MAX_TOKENS)
            return -1;
        items[n] = tok;
        char *space = strchr(tok, ' ');
        if (!space)
            return n + 1;
        *space = '\0';
        tok = space + 1;
    }
}

static void check_case(int line_no, char **fields)
{
    char *expected_texts[MAX_TOKENS], *expected_keys[MAX_TOKENS], *expected_classes[MAX_TOKENS];
    long input_len = unescape(fields[0]);
    for (int f = 1; f < 5; f++)
        CHECK(unescape(fields[f]) >= 0, "line %d: bad escape in field %d", line_no, f);
    char *detok_expected = fields[4];
    int n_texts = split_list(fields[1], expected_texts);
    int n_keys = split_list(fields[2], expected_keys);
    int n_classes = split_list(fields[3], expected_classes);
    CHECK(input_len >= 0, "line %d: bad escape in the input", line_no);
    CHECK(n_texts >= 0 && n_texts == n_keys && n_keys == n_classes,
          "line %d: %d texts, %d keys, %d classes", line_no, n_texts, n_keys, n_classes);
    if (input_len < 0 || n_texts < 0 || n_texts != n_keys || n_keys != n_classes)
        return;

    nmt_tokens toks = {0};
    nmt_error err = {0};
    nmt_status st = nmt_tokenize(fields[0], (size_t)input_len, &toks, &err);
    CHECK(st == NMT_STATUS_OK, "line %d: tokenize: %s", line_no, err.message);
    if (st != NMT_STATUS_OK)
        return;
    CHECK(toks.n == n_texts, "line %d '%s': %d tokens, expected %d", line_no, fields[0], toks.n,
          n_texts);
    for (int i = 0; i < toks.n && i < n_texts; i++) {
        CHECK(strcmp(toks.tokens[i].text, expected_texts[i]) == 0,
              "line %d token %d: text '%s', expected '%s'", line_no, i, toks.tokens[i].text,
              expected_texts[i]);
        CHECK(strcmp(toks.tokens[i].key, expected_keys[i]) == 0,
              "line %d token %d: key '%s', expected '%s'", line_no, i, toks.tokens[i].key,
              expected_keys[i]);
        CHECK((int)toks.tokens[i].case_class == atoi(expected_classes[i]),
              "line %d token %d '%s': case class %d, expected %s", line_no, i,
              toks.tokens[i].text, (int)toks.tokens[i].case_class, expected_classes[i]);
    }

    /* Detokenizing the expected texts gives the expected line, and so does
     * detokenizing what the tokenizer produced (the round trip). */
    char *detok = NULL;
    st = nmt_detokenize((const char *const *)expected_texts, n_texts, &detok, &err);
    CHECK(st == NMT_STATUS_OK && strcmp(detok, detok_expected) == 0,
          "line %d: detokenized '%s', expected '%s'", line_no, detok ? detok : "(null)",
          detok_expected);
    free(detok);
    const char *texts[MAX_TOKENS];
    for (int i = 0; i < toks.n && i < MAX_TOKENS; i++)
        texts[i] = toks.tokens[i].text;
    detok = NULL;
    st = nmt_detokenize(texts, toks.n < MAX_TOKENS ? toks.n : MAX_TOKENS, &detok, &err);
    CHECK(st == NMT_STATUS_OK && strcmp(detok, detok_expected) == 0,
          "line %d: round trip '%s', expected '%s'", line_no, detok ? detok : "(null)",
          detok_expected);
    free(detok);

    /* Pre-tokenized input: the expected texts joined by spaces give the same
     * tokens (texts, keys, case classes), whatever the whitespace between. */
    size_t joined_len = 0;
    char joined[4096];
    for (int i = 0; i < n_texts && joined_len + strlen(expected_texts[i]) + 3 < sizeof joined;
         i++)
        joined_len += (size_t)snprintf(joined + joined_len, sizeof joined - joined_len, "%s%s",
                                       i ? (i % 2 ? " " : " \t ") : "", expected_texts[i]);
    nmt_tokens pre = {0};
    st = nmt_tokenize_pretokenized(joined, joined_len, &pre, &err);
    CHECK(st == NMT_STATUS_OK && pre.n == toks.n, "line %d: pretokenized '%s': %d tokens, %d "
          "expected (%s)", line_no, joined, pre.n, toks.n, err.message);
    for (int i = 0; st == NMT_STATUS_OK && i < pre.n && i < toks.n; i++)
        CHECK(!strcmp(pre.tokens[i].text, toks.tokens[i].text) &&
                  !strcmp(pre.tokens[i].key, toks.tokens[i].key) &&
                  pre.tokens[i].case_class == toks.tokens[i].case_class,
              "line %d token %d: pretokenized '%s'/'%s'/%d, tokenized '%s'/'%s'/%d", line_no, i,
              pre.tokens[i].text, pre.tokens[i].key, (int)pre.tokens[i].case_class,
              toks.tokens[i].text, toks.tokens[i].key, (int)toks.tokens[i].case_class);
    nmt_tokens_clear(&pre);

    /* Tokenizing into a used nmt_tokens replaces its contents. */
    st = nmt_tokenize(fields[0], (size_t)input_len, &toks, &err);
    CHECK(st == NMT_STATUS_OK && toks.n == n_texts, "line %d: second tokenize", line_no);
    nmt_tokens_clear(&toks);
}

static int check_tsv(void)
{
    const char *path = NMT_SOURCE_DIR "/tests/data/tokenizer_cases.tsv";
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f)
        return 0;
    static char line[MAX_LINE];
    int line_no = 0, cases = 0;
    while (fgets(line, sizeof line, f)) {
        line_no++;
        size_t len = strlen(line);
        CHECK(len > 0 && line[len - 1] == '\n', "line %d: too long or no newline", line_no);
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (line[0] == '#')
            continue;
        char *fields[5];
        int n_fields = 0;
        for (char *p = line; n_fields < 5; n_fields++) {
            fields[n_fields] = p;
            char *tab = strchr(p, '\t');
            if (!tab) {
                n_fields++;
                break;
            }
            *tab = '\0';
            p = tab + 1;
        }
        CHECK(n_fields == 5, "line %d: %d fields, expected 5", line_no, n_fields);
        if (n_fields != 5)
            continue;
        check_case(line_no, fields);
        cases++;
    }
    fclose(f);
    CHECK(cases >= 60, "only %d cases", cases);
    return cases;
}

static void check_invalid_utf8(void)
{
    static const struct {
        const char *bytes;
        size_t len;
        long offset; /* -1: valid */
        const char *what;
    } cases[] = {
        {"", 0, -1, "empty"},
        {"abc", 3, -1, "ASCII"},
        {"gr\xC3\xBC\xC3\x9F" "e \xEF\xBF\xAD \xF0\x9F\x98\x80", 16, -1, "multi-byte"},
        {"\xF4\x8F\xBF\xBF", 4, -1, "U+10FFFF"},
        {"a\0b", 3, -1, "NUL is valid UTF-8"},
        {"ab\xC0\xAF", 4, 2, "overlong 2 bytes"},
        {"\xE0\x80\xAF", 3, 0, "overlong 3 bytes"},
        {"\xF0\x80\x80\xAF", 4, 0, "overlong 4 bytes"},
        {"x\xED\xA0\x80", 4, 1, "surrogate U+D800"},
        {"\xED\xBF\xBF", 3, 0, "surrogate U+DFFF"},
        {"\xF4\x90\x80\x80", 4, 0, "U+110000"},
        {"abc\xE2\x82", 5, 3, "truncated at the end"},
        {"\xE2\x82" "abc", 5, 0, "truncated before ASCII"},
        {"\xF0\x9F\x98", 3, 0, "truncated 4-byte"},
        {"\xFF", 1, 0, "0xFF"},
        {"a\xFE", 2, 1, "0xFE"},
        {"\x80", 1, 0, "stray continuation"},
        {"a\xBF" "b", 3, 1, "stray continuation inside"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t bad = 12345;
        int ok = nmt_utf8_valid(cases[i].bytes, cases[i].len, &bad);
        if (cases[i].offset < 0) {
            CHECK(ok == 1, "%s: refused at %zu", cases[i].what, bad);
            continue;
        }
        CHECK(ok == 0 && bad == (size_t)cases[i].offset, "%s: ok %d offset %zu, expected %ld",
              cases[i].what, ok, bad, cases[i].offset);
        nmt_tokens toks = {0};
        nmt_error err = {0};
        nmt_status st = nmt_tokenize(cases[i].bytes, cases[i].len, &toks, &err);
        char expected[64];
        snprintf(expected, sizeof expected, "byte offset %ld", cases[i].offset);
        CHECK(st == NMT_STATUS_ERROR_INPUT && toks.n == 0 && strstr(err.message, expected),
              "%s: tokenize status %d, message '%s'", cases[i].what, (int)st, err.message);
        nmt_tokens_clear(&toks);
    }

    /* The detokenizer refuses invalid tokens and NULL arguments. */
    const char *bad_tokens[] = {"ok", "\xC0\xAF"};
    char *text = NULL;
    nmt_error err = {0};
    CHECK(nmt_detokenize(bad_tokens, 2, &text, &err) == NMT_STATUS_ERROR_INPUT && !text &&
              strstr(err.message, "token 1"),
          "detokenize invalid UTF-8: %s", err.message);
    CHECK(nmt_detokenize(NULL, 0, &text, &err) == NMT_STATUS_OK && text && !*text,
          "detokenize nothing");
    free(text);

    /* BPE's "@@" continuation joins a word back; a mark at the end is dropped. */
    static const struct {
        const char *tokens[5];
        int n;
        const char *text;
    } bpe[] = {{{"new@@", "er", "houses"}, 3, "newer houses"},
               {{"un@@", "believ@@", "able", "!"}, 4, "unbelievable !"},
               {{"a", "b@@"}, 2, "a b"},
               {{"x@@", "@@", "y"}, 3, "xy"},
               {{"e-mail", "@", "host"}, 3, "e-mail @ host"}};
    for (size_t i = 0; i < sizeof bpe / sizeof bpe[0]; i++) {
        CHECK(nmt_detokenize(bpe[i].tokens, bpe[i].n, &text, &err) == NMT_STATUS_OK && text &&
                  !strcmp(text, bpe[i].text),
              "bpe case %zu: '%s', want '%s'", i, text ? text : "(null)", bpe[i].text);
        free(text);
        text = NULL;
    }
    nmt_tokens_clear(NULL);
}

/* NFC leaves every string of code points below U+0300 as it is: checked on
 * every pair (a composition takes two). */
static void check_nfc_below_0300(void)
{
    int bad = 0;
    for (int32_t a = 1; a < 0x300; a++) {
        for (int32_t b = 1; b < 0x300; b++) {
            char pair[8];
            const int n = nmt_utf8_encode(a, pair);
            const int m = n + nmt_utf8_encode(b, pair + n);
            utf8proc_uint8_t *nfc = NULL;
            const utf8proc_ssize_t len = utf8proc_map((const utf8proc_uint8_t *)pair, m, &nfc,
                                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            if (len != m || memcmp(nfc, pair, (size_t)m) != 0)
                bad++;
            free(nfc);
        }
    }
    CHECK(bad == 0, "%d pairs below U+0300 change under NFC", bad);
}

/* 1 when key is text with each code point lowercased by utf8proc itself. */
static int key_is_lowercase(const char *text, const char *key)
{
    char want[1024];
    size_t n = 0;
    for (size_t i = 0, len = strlen(text); i < len && n + 4 < sizeof want;) {
        int32_t cp;
        i += (size_t)nmt_utf8_decode(text + i, len - i, &cp);
        n += (size_t)nmt_utf8_encode(utf8proc_tolower(cp), want + n);
    }
    want[n] = '\0';
    return !strcmp(want, key);
}

/* Random lines below U+0300 (ASCII, Latin letters, controls, no-break
 * space, U+0130 and U+023A whose lowercase changes length) tokenize as the
 * same line with a U+FEFF appended, which goes through NFC; each key is
 * utf8proc's lowercase of its text. */
static void check_fast_path(void)
{
    static const int32_t alphabet[] = {'a', 'Z', 'q', '7', ' ', ' ', '\t', '.', ',', '-', '\'',
                                       0x01, 0x7F, 0x85, 0xA0, 0xAD, 0xC4, 0xE4, 0xDF, 0xC9,
                                       0x130, 0x23A, 0x1C5, 0x2B0, 0xD7, 0xBF, 0x2FF};
    const int n_alphabet = (int)(sizeof alphabet / sizeof alphabet[0]);
    nmt_error err;
    int mismatches = 0;
    for (int round = 0; round < 2000; round++) {
        char line[256];
        size_t len = 0;
        const int n = test_rand_int(0, 40);
        for (int i = 0; i < n; i++)
            len += (size_t)nmt_utf8_encode(alphabet[test_rand_int(0, n_alphabet)], line + len);
        char marked[264];
        memcpy(marked, line, len);
        memcpy(marked + len, "\xEF\xBB\xBF", 3);
        nmt_tokens fast = {0}, slow = {0};
        const int ok = nmt_tokenize(line, len, &fast, &err) == NMT_STATUS_OK &&
                       nmt_tokenize(marked, len + 3, &slow, &err) == NMT_STATUS_OK;
        int same = ok && fast.n == slow.n;
        for (int t = 0; same && t < fast.n; t++)
            same = !strcmp(fast.tokens[t].text, slow.tokens[t].text) &&
                   !strcmp(fast.tokens[t].key, slow.tokens[t].key) &&
                   fast.tokens[t].case_class == slow.tokens[t].case_class &&
                   key_is_lowercase(fast.tokens[t].text, fast.tokens[t].key);
        if (!same && mismatches++ < 3)
            fprintf(stderr, "fast path: line %d (%zu bytes): other tokens than through NFC, or a key not utf8proc's lowercase\n",
                    round, len);
        nmt_tokens_clear(&fast);
        nmt_tokens_clear(&slow);
    }
    CHECK(mismatches == 0, "%d random lines differ between the fast path and NFC", mismatches);
}

int main(void)
{
    test_seed();
    int cases = check_tsv();
    check_invalid_utf8();
    check_nfc_below_0300();
    check_fast_path();
    printf("test_tokenizer: %d cases\n", cases);
    return test_finish("test_tokenizer");
}
