/* test_vocab.c: nmt_vocab lookups (every token, UNK for absent ones, prefixes
 * and extensions of present ones), the refusals (duplicate, empty, invalid
 * UTF-8, ASCII and Unicode whitespace, NUL) with the entry named, and a 50k
 * generated vocabulary all found. */
#include "test_util.h"
#include "vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { UNK = -7 };

static void check_small(void)
{
    const char *tokens[] = {"<unk>", "<s>", "</s>", "der", "Hund", "￭.", "straße", "élève", "😀", "a"};
    const int32_t n = (int32_t)(sizeof tokens / sizeof tokens[0]);
    nmt_vocab *v = NULL;
    nmt_error err = {0};
    nmt_status st = nmt_vocab_create(tokens, NULL, n, "small", &v, &err);
    CHECK(st == NMT_STATUS_OK, "create: %s", err.message);
    if (!v)
        return;
    CHECK(nmt_vocab_size(v) == n, "size %d", nmt_vocab_size(v));
    for (int32_t i = 0; i < n; i++) {
        CHECK(nmt_vocab_lookup(v, tokens[i], strlen(tokens[i]), UNK) == i, "lookup %s", tokens[i]);
        CHECK(strcmp(nmt_vocab_token(v, i), tokens[i]) == 0, "token %d", i);
    }
    const char *absent[] = {"", "de", "derr", "hund", "Der", ".", "strasse", "b", "<UNK>"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        CHECK(nmt_vocab_lookup(v, absent[i], strlen(absent[i]), UNK) == UNK, "absent '%s'", absent[i]);
    /* Length, not NUL, ends the key: "derby" cut to 3 bytes is "der". */
    CHECK(nmt_vocab_lookup(v, "derby", 3, UNK) == 3, "length-limited lookup");
    CHECK(nmt_vocab_token(v, -1) == NULL && nmt_vocab_token(v, n) == NULL, "out of range ids");
    CHECK(nmt_vocab_lookup(NULL, "der", 3, UNK) == UNK, "NULL vocab");
    nmt_vocab_free(v);
    nmt_vocab_free(NULL);

    /* Explicit lengths: the tokens need not be NUL-terminated. */
    const char *buf = "abcabd";
    const char *sub[] = {buf, buf + 3};
    size_t lens[] = {3, 3};
    st = nmt_vocab_create(sub, lens, 2, "lengths", &v, &err);
    CHECK(st == NMT_STATUS_OK, "create with lengths: %s", err.message);
    if (v) {
        CHECK(nmt_vocab_lookup(v, "abd", 3, UNK) == 1, "abd");
        CHECK(strcmp(nmt_vocab_token(v, 0), "abc") == 0, "copied and terminated");
        nmt_vocab_free(v);
    }

    /* An empty vocabulary is allowed and finds nothing. */
    st = nmt_vocab_create(NULL, NULL, 0, "empty", &v, &err);
    CHECK(st == NMT_STATUS_OK && v, "empty vocab: %s", err.message);
    CHECK(nmt_vocab_lookup(v, "a", 1, UNK) == UNK, "empty vocab lookup");
    nmt_vocab_free(v);
}

/* Expects refusal of a vocabulary whose entry `bad_index` is `bad`; the
 * message must name `what`, the entry index and contain `reason`. */
static void check_refused(const char *bad, size_t bad_len, int32_t bad_index, const char *reason)
{
    const char *tokens[4] = {"eins", "zwei", "drei", "vier"};
    size_t lengths[4] = {4, 4, 4, 4};
    tokens[bad_index] = bad;
    lengths[bad_index] = bad_len;
    nmt_vocab *v = (nmt_vocab *)&v; /* must be reset to NULL */
    nmt_error err = {0};
    nmt_status st = nmt_vocab_create(tokens, lengths, 4, "test.bin: source vocabulary", &v, &err);
    char entry[32];
    snprintf(entry, sizeof entry, "entry %d", bad_index);
    CHECK(st == NMT_STATUS_ERROR_FORMAT, "%s: status %d", reason, (int)st);
    CHECK(v == NULL, "%s: output not NULL", reason);
    CHECK(err.status == st, "%s: err.status", reason);
    CHECK(strstr(err.message, "test.bin: source vocabulary") != NULL, "%s: no what: %s", reason, err.message);
    CHECK(strstr(err.message, entry) != NULL, "%s: no '%s': %s", reason, entry, err.message);
    CHECK(strstr(err.message, reason) != NULL, "%s: message: %s", reason, err.message);
    if (st != NMT_STATUS_OK)
        printf("refused as expected: %s\n", err.message);
    if (st == NMT_STATUS_OK)
        nmt_vocab_free(v);
}

static void check_refusals(void)
{
    check_refused("", 0, 2, "empty");
    check_refused("zwei", 4, 3, "duplicates entry 1");
    check_refused("a\xC0\xAF", 3, 1, "not valid UTF-8");          /* overlong '/' */
    check_refused("\xED\xA0\x80", 3, 0, "not valid UTF-8");       /* surrogate */
    check_refused("ab\xE2\x82", 4, 2, "not valid UTF-8");         /* truncated */
    check_refused("\xFF", 1, 2, "not valid UTF-8");
    check_refused("\xF4\x90\x80\x80", 4, 2, "not valid UTF-8");   /* > U+10FFFF */
    check_refused("a b", 3, 1, "whitespace");
    check_refused("a\tb", 3, 1, "whitespace");
    check_refused("x\n", 2, 0, "whitespace");
    check_refused("a\xC2\xA0" "b", 4, 3, "whitespace");           /* U+00A0 */
    check_refused("a\xE3\x80\x80", 4, 3, "whitespace");           /* U+3000 */
    check_refused("a\xE2\x80\xAF", 4, 3, "whitespace");           /* U+202F */
    check_refused("a\0b", 3, 2, "NUL");
}

static void check_large(void)
{
    enum { N = 50000 };
    char **tokens = calloc(N, sizeof *tokens);
    nmt_vocab *v = NULL;
    nmt_error err = {0};
    CHECK(tokens != NULL, "alloc");
    if (!tokens)
        return;
    /* Short, similar keys (many share prefixes and suffixes) plus a few
     * multi-byte ones: a weak hash or probe bug shows up as misses. */
    for (int i = 0; i < N; i++) {
        char buf[64];
        if (i % 7 == 0)
            snprintf(buf, sizeof buf, "ü%d", i);
        else if (i % 7 == 1)
            snprintf(buf, sizeof buf, "￭%x", i);
        else
            snprintf(buf, sizeof buf, "w%d", i);
        tokens[i] = strdup(buf);
    }
    nmt_status st = nmt_vocab_create((const char *const *)tokens, NULL, N, "large", &v, &err);
    CHECK(st == NMT_STATUS_OK, "large create: %s", err.message);
    if (v) {
        int misses = 0;
        for (int i = 0; i < N; i++) {
            if (nmt_vocab_lookup(v, tokens[i], strlen(tokens[i]), UNK) != i)
                misses++;
            if (strcmp(nmt_vocab_token(v, i), tokens[i]) != 0)
                misses++;
        }
        CHECK(misses == 0, "%d of %d tokens not found", misses, N);
        int false_hits = 0;
        for (int i = N; i < 2 * N; i++) {
            char buf[64];
            snprintf(buf, sizeof buf, "w%d", i);
            if (nmt_vocab_lookup(v, buf, strlen(buf), UNK) != UNK)
                false_hits++;
        }
        CHECK(false_hits == 0, "%d absent tokens found", false_hits);
        nmt_vocab_free(v);
    }
    for (int i = 0; i < N; i++)
        free(tokens[i]);
    free(tokens);
}

int main(void)
{
    check_small();
    check_refusals();
    check_large();
    return test_finish("test_vocab");
}
