/* vocab.c: a token vocabulary. The tokens are copied, NUL-terminated, into one
 * buffer; string -> id goes through an open-addressing hash table (FNV-1a
 * 64-bit hash, power-of-two capacity at least twice the token count so the
 * load stays <= 0.5, linear probing). See docs/tokenization.md. */
#include "vocab.h"

#include "error.h"
#include "tokenizer.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

struct nmt_vocab {
    int32_t n;
    char *storage;      /* every token, NUL-terminated, back to back */
    size_t *offsets;    /* token id -> offset in storage */
    size_t *lengths;    /* token id -> byte length */
    int32_t *slots;     /* hash table of token ids, -1 = empty */
    size_t slot_mask;   /* capacity - 1 */
};

static uint64_t fnv1a(const char *s, size_t len)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Returns the slot holding `token`, or the empty slot where it would go. */
static size_t find_slot(const nmt_vocab *v, const char *token, size_t len)
{
    size_t slot = (size_t)fnv1a(token, len) & v->slot_mask;
    for (;;) {
        int32_t id = v->slots[slot];
        if (id < 0)
            return slot;
        if (v->lengths[id] == len && memcmp(v->storage + v->offsets[id], token, len) == 0)
            return slot;
        slot = (slot + 1) & v->slot_mask;
    }
}

/* Checks one entry; returns a status with the reason in err. */
static nmt_status check_token(const char *token, size_t len, int32_t index, const char *what,
                              nmt_error *err)
{
    if (len == 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: entry %d is empty", what, index);
    size_t bad;
    if (!nmt_utf8_valid(token, len, &bad))
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                             "%s: entry %d is not valid UTF-8 (bad byte 0x%02X at offset %zu)", what,
                             index, (unsigned char)token[bad], bad);
    size_t i = 0;
    while (i < len) {
        int32_t cp;
        int n = nmt_utf8_decode(token + i, len - i, &cp);
        if (cp == 0)
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                 "%s: entry %d contains a NUL byte at offset %zu", what, index, i);
        if (nmt_unicode_is_space(cp))
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                 "%s: entry %d contains whitespace U+%04X at offset %zu", what, index,
                                 (unsigned)cp, i);
        i += (size_t)n;
    }
    return NMT_STATUS_OK;
}

nmt_status nmt_vocab_create(const char *const *tokens, const size_t *lengths, int32_t n,
                            const char *what, nmt_vocab **vocab, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_vocab *v = NULL;
    if (!what)
        what = "vocabulary";
    if (!vocab || n < 0 || (n > 0 && !tokens))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: invalid arguments to nmt_vocab_create",
                             what);
    *vocab = NULL;
    if ((uint64_t)n > (uint64_t)INT32_MAX / 4)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: %d tokens is too many", what, n);

    NMT_ALLOC(v, 1);
    v->n = n;
    size_t capacity = 16;
    while (capacity < 2 * (size_t)n)
        capacity *= 2;
    v->slot_mask = capacity - 1;
    NMT_ALLOC(v->offsets, n + 1);
    NMT_ALLOC(v->lengths, n + 1);
    NMT_ALLOC(v->slots, capacity);
    memset(v->slots, 0xFF, capacity * sizeof *v->slots); /* every slot -1 */

    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!tokens[i]) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: entry %d is NULL", what, i);
            goto cleanup;
        }
        size_t len = lengths ? lengths[i] : strlen(tokens[i]);
        NMT_TRY(check_token(tokens[i], len, i, what, err));
        v->offsets[i] = total;
        v->lengths[i] = len;
        total += len + 1;
    }
    NMT_ALLOC(v->storage, total + 1);

    for (int32_t i = 0; i < n; i++) {
        char *dst = v->storage + v->offsets[i];
        memcpy(dst, tokens[i], v->lengths[i]);
        dst[v->lengths[i]] = '\0';
        size_t slot = find_slot(v, dst, v->lengths[i]);
        int32_t prev = v->slots[slot];
        if (prev >= 0) {
            int len = (int)(v->lengths[i] < 64 ? v->lengths[i] : 64);
            status = nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                   "%s: entry %d '%.*s' duplicates entry %d", what, i, len, dst, prev);
            goto cleanup;
        }
        v->slots[slot] = i;
    }
    *vocab = v;
    return NMT_STATUS_OK;

cleanup:
    nmt_vocab_free(v);
    return status;
}

void nmt_vocab_free(nmt_vocab *vocab)
{
    if (!vocab)
        return;
    free(vocab->storage);
    free(vocab->offsets);
    free(vocab->lengths);
    free(vocab->slots);
    free(vocab);
}

int32_t nmt_vocab_size(const nmt_vocab *vocab)
{
    return vocab ? vocab->n : 0;
}

int32_t nmt_vocab_lookup(const nmt_vocab *vocab, const char *token, size_t length, int32_t unk_id)
{
    if (!vocab || !token || vocab->n == 0)
        return unk_id;
    int32_t id = vocab->slots[find_slot(vocab, token, length)];
    return id >= 0 ? id : unk_id;
}

const char *nmt_vocab_token(const nmt_vocab *vocab, int32_t id)
{
    if (!vocab || id < 0 || id >= vocab->n)
        return NULL;
    return vocab->storage + vocab->offsets[id];
}
