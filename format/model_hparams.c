/* model_hparams.c: the HPAR section of a model file: ASCII "key=value\n"
 * lines, parsed strictly (docs/model-format.md, section HPAR). Every key is
 * required exactly once; values are checked for range here, so the rest of
 * the loader may multiply sizes without fearing int32 overflow of a single
 * dimension. */
#include "model_file.h"

#include "error.h"

#include <stdio.h>
#include <string.h>

enum {
    KEY_MODEL, KEY_EMB, KEY_HIDDEN, KEY_ENC_LAYERS, KEY_DEC_LAYERS, KEY_SRC_WORDS, KEY_TGT_VOCAB,
    KEY_FEATURES, KEY_DEC_INIT, KEY_TOKENIZER, N_KEYS
};
/* Keys from here on may be left out (defaults: tokenizer=engine). */
enum { N_REQUIRED_KEYS = KEY_TOKENIZER };

static const char *const key_names[N_KEYS] = {
    "model", "emb_size", "hidden_size", "enc_layers", "dec_layers", "src_words", "tgt_vocab",
    "features", "dec_init", "tokenizer",
};

/* Rows each feature kind adds to the source embedding (the word kind's rows
 * are the vocabulary itself). */
static const struct { const char *name; nmt_feature_kind kind; int32_t rows; } feature_kinds[] = {
    {"word", NMT_FEATURE_WORD, 0},
    {"case", NMT_FEATURE_CASE, 4},
};
#define N_FEATURE_KINDS ((int)(sizeof feature_kinds / sizeof feature_kinds[0]))

nmt_status nmt_hparams_set_features(nmt_hparams *hp, const nmt_feature_kind *kinds, int32_t n,
                                    nmt_error *err)
{
    if (n < 1 || n > NMT_MAX_FEATURE_KINDS || kinds[0] != NMT_FEATURE_WORD)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "features: 1 to %d kinds, the word first", NMT_MAX_FEATURE_KINDS);
    int64_t rows = hp->src_words;
    for (int32_t i = 0; i < n; i++) {
        int k = 0;
        while (k < N_FEATURE_KINDS && feature_kinds[k].kind != kinds[i])
            k++;
        if (k == N_FEATURE_KINDS)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "features: unknown kind %d",
                                 (int)kinds[i]);
        for (int32_t j = 0; j < i; j++)
            if (kinds[j] == kinds[i])
                return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                     "features: '%s' given twice", feature_kinds[k].name);
        hp->features[i].kind = kinds[i];
        hp->features[i].first_row = (int32_t)(i == 0 ? 0 : rows);
        hp->features[i].n_rows = i == 0 ? hp->src_words : feature_kinds[k].rows;
        if (i > 0)
            rows += feature_kinds[k].rows;
    }
    hp->n_features = n;
    hp->src_rows = (int32_t)rows;
    return NMT_STATUS_OK;
}

/* A decimal integer without sign or leading zeros, at most 9 digits, so it
 * fits an int32 before the range check. */
static int parse_int(const char *s, size_t len, int32_t *out)
{
    if (len == 0 || len > 9 || (len > 1 && s[0] == '0'))
        return 0;
    int32_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

static int value_is(const char *v, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(v, word, len) == 0;
}

static nmt_status parse_features(const char *v, size_t len, nmt_hparams *hp, const char *where,
                                 int line, nmt_error *err)
{
    nmt_feature_kind kinds[NMT_MAX_FEATURE_KINDS];
    int32_t n = 0;
    size_t start = 0;
    while (start <= len) {
        size_t end = start;
        while (end < len && v[end] != ',')
            end++;
        int k = 0;
        while (k < N_FEATURE_KINDS && !value_is(v + start, end - start, feature_kinds[k].name))
            k++;
        if (k == N_FEATURE_KINDS)
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                 "%s: line %d: features: unknown feature kind '%.*s' (known: word, case)",
                                 where, line, (int)(end - start > 32 ? 32 : end - start), v + start);
        if (n == NMT_MAX_FEATURE_KINDS)
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                 "%s: line %d: features: more than %d kinds", where, line,
                                 NMT_MAX_FEATURE_KINDS);
        kinds[n++] = feature_kinds[k].kind;
        start = end + 1;
    }
    nmt_error sub;
    if (nmt_hparams_set_features(hp, kinds, n, &sub) != NMT_STATUS_OK)
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: line %d: %s", where, line,
                             sub.message);
    return NMT_STATUS_OK;
}

nmt_status nmt_hparams_parse(const char *text, size_t len, const char *where, nmt_hparams *hp,
                             nmt_error *err)
{
    memset(hp, 0, sizeof *hp);
    int seen[N_KEYS] = {0};
    int32_t ints[N_KEYS] = {0};
    const char *features_value = NULL;
    size_t features_len = 0;
    int features_line = 0;
    int dec_init_line = 0;
    int tokenizer_line = 0;
    size_t pos = 0;
    int line = 0;
    if (len > 0 && text[len - 1] != '\n')
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                             "%s: the last line does not end with a newline", where);
    while (pos < len) {
        line++;
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = (size_t)(nl - s);
        pos += n + 1;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7E)
                return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                     "%s: line %d: byte 0x%02X at column %zu (only printable "
                                     "ASCII without spaces)", where, line, (unsigned char)s[i], i + 1);
        const char *eq = memchr(s, '=', n);
        if (!eq)
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                 "%s: line %d: expected key=value", where, line);
        size_t klen = (size_t)(eq - s);
        const char *v = eq + 1;
        size_t vlen = n - klen - 1;
        int key = 0;
        while (key < N_KEYS && !value_is(s, klen, key_names[key]))
            key++;
        if (key == N_KEYS)
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: line %d: unknown key '%.*s'",
                                 where, line, (int)(klen > 32 ? 32 : klen), s);
        if (seen[key])
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                 "%s: line %d: duplicate key '%s' (first on line %d)", where, line,
                                 key_names[key], seen[key]);
        seen[key] = line;
        switch (key) {
        case KEY_MODEL:
            if (!value_is(v, vlen, "lstm-attn-v1"))
                return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                     "%s: line %d: model: '%.*s' is not supported (expected "
                                     "lstm-attn-v1)", where, line, (int)(vlen > 32 ? 32 : vlen), v);
            break;
        case KEY_FEATURES:
            features_value = v;
            features_len = vlen;
            features_line = line;
            break;
        case KEY_TOKENIZER:
            if (value_is(v, vlen, "pretokenized"))
                hp->pretokenized = 1;
            else if (value_is(v, vlen, "sentencepiece"))
                hp->sentencepiece = 1;
            else if (!value_is(v, vlen, "engine"))
                return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                     "%s: line %d: tokenizer: expected engine, pretokenized or "
                                     "sentencepiece", where, line);
            tokenizer_line = line;
            break;
        case KEY_DEC_INIT:
            if (value_is(v, vlen, "encoder"))
                hp->dec_init_from_encoder = 1;
            else if (value_is(v, vlen, "zeros"))
                hp->dec_init_from_encoder = 0;
            else
                return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                     "%s: line %d: dec_init: expected encoder or zeros", where, line);
            dec_init_line = line;
            break;
        default: {
            int is_layers = key == KEY_ENC_LAYERS || key == KEY_DEC_LAYERS;
            int32_t lo = is_layers ? 1 : key == KEY_HIDDEN ? 2 : key == KEY_SRC_WORDS ? 2
                       : key == KEY_TGT_VOCAB ? 4 : 1;
            int32_t hi = is_layers ? NMT_MAX_LAYERS : NMT_HPAR_MAX_SIZE;
            if (!parse_int(v, vlen, &ints[key]))
                return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                     "%s: line %d: %s: '%.*s' is not a decimal integer", where,
                                     line, key_names[key], (int)(vlen > 32 ? 32 : vlen), v);
            if (ints[key] < lo || ints[key] > hi)
                return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                     "%s: line %d: %s = %d out of range [%d, %d]", where, line,
                                     key_names[key], ints[key], lo, hi);
            if (key == KEY_HIDDEN && ints[key] % 2)
                return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                     "%s: line %d: hidden_size = %d must be even (H/2 per "
                                     "encoder direction)", where, line, ints[key]);
        }
        }
    }
    for (int key = 0; key < N_REQUIRED_KEYS; key++)
        if (!seen[key])
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: missing key '%s'", where,
                                 key_names[key]);
    hp->emb_size = ints[KEY_EMB];
    hp->hidden_size = ints[KEY_HIDDEN];
    hp->enc_layers = ints[KEY_ENC_LAYERS];
    hp->dec_layers = ints[KEY_DEC_LAYERS];
    hp->src_words = ints[KEY_SRC_WORDS];
    hp->tgt_vocab = ints[KEY_TGT_VOCAB];
    nmt_status status = parse_features(features_value, features_len, hp, where, features_line, err);
    if (status != NMT_STATUS_OK)
        return status;
    /* Pieces carry their case ("▁Hund" and "▁hund" are two pieces) and are
     * looked up as they are; a case feature would have nothing to add. */
    if (hp->sentencepiece && hp->n_features > 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                             "%s: line %d: tokenizer=sentencepiece needs features=word (pieces "
                             "are looked up as they are, without a case feature)", where,
                             tokenizer_line);
    if (hp->dec_init_from_encoder && hp->enc_layers != hp->dec_layers)
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                             "%s: line %d: dec_init = encoder needs enc_layers = dec_layers "
                             "(%d != %d); use dec_init=zeros", where, dec_init_line,
                             hp->enc_layers, hp->dec_layers);
    return NMT_STATUS_OK;
}

size_t nmt_hparams_format(const nmt_hparams *hp, char *out, size_t cap)
{
    char features[64] = "";
    size_t flen = 0;
    for (int32_t i = 0; i < hp->n_features && i < NMT_MAX_FEATURE_KINDS; i++) {
        const char *name = NULL;
        for (int k = 0; k < N_FEATURE_KINDS; k++)
            if (feature_kinds[k].kind == hp->features[i].kind)
                name = feature_kinds[k].name;
        if (!name)
            return 0;
        flen += (size_t)snprintf(features + flen, sizeof features - flen, "%s%s", i ? "," : "",
                                 name);
    }
    int n = snprintf(out, cap,
                     "model=lstm-attn-v1\nemb_size=%d\nhidden_size=%d\nenc_layers=%d\n"
                     "dec_layers=%d\nsrc_words=%d\ntgt_vocab=%d\nfeatures=%s\ndec_init=%s\n",
                     hp->emb_size, hp->hidden_size, hp->enc_layers, hp->dec_layers, hp->src_words,
                     hp->tgt_vocab, features, hp->dec_init_from_encoder ? "encoder" : "zeros");
    if (hp->pretokenized && hp->sentencepiece)
        return 0;
    if (n >= 0 && (size_t)n < cap && (hp->pretokenized || hp->sentencepiece)) /* not the default */
        n += snprintf(out + n, cap - (size_t)n, "tokenizer=%s\n",
                      hp->sentencepiece ? "sentencepiece" : "pretokenized");
    if (n < 0 || (size_t)n >= cap)
        return 0;
    /* Round trip through the parser so a writer never emits what a reader refuses. */
    nmt_hparams check;
    if (nmt_hparams_parse(out, (size_t)n, "HPAR", &check, NULL) != NMT_STATUS_OK)
        return 0;
    return (size_t)n;
}
