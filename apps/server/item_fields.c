/* item_fields.c: the fields a /translator/translate or /translator/score
 * item may have (server.h, docs/server.md): one table row a field (its JSON
 * type, range and the request option it sets), which checks an item and
 * reads it into nmt_request_options. */
#include "server.h"

#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef enum item_kind {
    ITEM_STRING,
    ITEM_INT,    /* a JSON integer in [lo, hi], an int field */
    ITEM_INT64,  /* a JSON integer in [lo, hi], an int64_t or uint64_t field */
    ITEM_FLOAT,  /* a JSON number in [lo, hi], a float field */
    ITEM_DOUBLE, /* a JSON number in [lo, hi], a double field */
    ITEM_BOOL,   /* true or false, an int field */
    ITEM_CHOICE, /* one of choices' names, its index into an int field */
    ITEM_SEQUENCES /* a list of token sequences, each a string of target tokens or a list
                      of them: suppress, made text at submit (server_sequences_text) */
} item_kind;

typedef struct item_field {
    const char *name;
    item_kind kind;
    double lo, hi;
    size_t option; /* offset + 1 of its nmt_request_options field; 0: the answer reads it */
    const char *const *choices; /* ITEM_CHOICE, ending with NULL */
} item_field;

static const char *const kCoveragePenalties[] = {"none", "wu", "summary", NULL};

#define OPTION(field) .option = offsetof(nmt_request_options, field) + 1

/* Every field an item may have: one row a field, its type, range and the
 * request option it sets. */
static const item_field kItemFields[] = {
    {.name = "src", .kind = ITEM_STRING},
    {.name = "id", .kind = ITEM_INT, .lo = 0, .hi = INT_MAX}, /* the model's: the first item's */
    {.name = "beam_size", .kind = ITEM_INT, .lo = 1, .hi = 256, OPTION(beam_size)},
    {.name = "n_best", .kind = ITEM_INT, .lo = 1, .hi = 256, OPTION(n_best)},
    {.name = "alpha", .kind = ITEM_FLOAT, .lo = 0, .hi = 10, OPTION(alpha)},
    {.name = "max_len_a", .kind = ITEM_FLOAT, .lo = 0, .hi = 100, OPTION(max_len_a)},
    {.name = "max_len_b", .kind = ITEM_INT, .lo = 0, .hi = 10000, OPTION(max_len_b)},
    {.name = "shrink", .kind = ITEM_BOOL, OPTION(shrink)},
    {.name = "deadline_ms", .kind = ITEM_DOUBLE, .lo = 0, .hi = 1e9, OPTION(deadline_ms)},
    {.name = "target_prefix", .kind = ITEM_STRING, OPTION(target_prefix)},
    {.name = "return_alternatives", .kind = ITEM_BOOL, OPTION(return_alternatives)},
    {.name = "tgt", .kind = ITEM_STRING, OPTION(target)}, /* /translator/score's only */
    {.name = "align", .kind = ITEM_BOOL},
    {.name = "token_scores", .kind = ITEM_BOOL},
    {.name = "attention", .kind = ITEM_BOOL},
    /* sampling and the logit rules (docs/decoding.md), CTranslate2's names;
     * sample_key: the samples' key, the item's index when absent (server_read_item) */
    {.name = "sampling_topk", .kind = ITEM_INT, .lo = 0, .hi = 512, OPTION(sampling_topk)},
    {.name = "sampling_topp", .kind = ITEM_FLOAT, .lo = 0, .hi = 1, OPTION(sampling_topp)},
    {.name = "sampling_temperature", .kind = ITEM_FLOAT, .lo = 0, .hi = 100,
     OPTION(sampling_temperature)},
    {.name = "seed", .kind = ITEM_INT64, .lo = 0, .hi = 9007199254740991.0, OPTION(seed)},
    {.name = "sample_key", .kind = ITEM_INT64, .lo = 0, .hi = 9007199254740991.0,
     OPTION(line_key)},
    {.name = "min_length", .kind = ITEM_INT, .lo = 0, .hi = 10000, OPTION(min_length)},
    {.name = "no_repeat_ngram_size", .kind = ITEM_INT, .lo = 0, .hi = 64,
     OPTION(no_repeat_ngram_size)},
    {.name = "repetition_penalty", .kind = ITEM_FLOAT, .lo = 0, .hi = 100,
     OPTION(repetition_penalty)},
    {.name = "ban_unk", .kind = ITEM_BOOL, OPTION(ban_unk)},
    {.name = "disable_unk", .kind = ITEM_BOOL, OPTION(ban_unk)},
    {.name = "suppress", .kind = ITEM_SEQUENCES},
    {.name = "coverage_penalty", .kind = ITEM_CHOICE, .choices = kCoveragePenalties,
     OPTION(coverage_penalty)},
    {.name = "coverage_beta", .kind = ITEM_FLOAT, .lo = 0, .hi = 100, OPTION(coverage_beta)},
    {.name = NULL}};

static const item_field *item_field_named(const char *name)
{
    for (const item_field *f = kItemFields; f->name; f++)
        if (!strcmp(f->name, name))
            return f;
    return NULL;
}

/* Checks value against f and stores it into o: 1, or 0 with the message. */
static int read_field(const item_field *f, json_t *value, size_t i, nmt_request_options *o,
                      char *msg, size_t size)
{
    const double x = json_number_value(value);
    int ok, choice = -1;
    switch (f->kind) {
    case ITEM_STRING: ok = json_is_string(value); break;
    case ITEM_INT:
    case ITEM_INT64: ok = json_is_integer(value) && x >= f->lo && x <= f->hi; break;
    case ITEM_BOOL: ok = json_is_boolean(value); break;
    case ITEM_SEQUENCES: ok = server_is_sequences(value); break;
    case ITEM_CHOICE:
        for (int c = 0; json_is_string(value) && f->choices[c]; c++)
            if (!strcmp(json_string_value(value), f->choices[c]))
                choice = c;
        ok = choice >= 0;
        break;
    default: ok = json_is_number(value) && x >= f->lo && x <= f->hi; break;
    }
    if (!ok) {
        if (f->kind == ITEM_STRING)
            snprintf(msg, size, "item %zu: \"%s\" must be a string", i, f->name);
        else if (f->kind == ITEM_BOOL)
            snprintf(msg, size, "item %zu: \"%s\" must be true or false", i, f->name);
        else if (f->kind == ITEM_SEQUENCES)
            snprintf(msg, size, "item %zu: \"%s\" must be a list of sequences, each a string "
                     "of target tokens or a list of them", i, f->name);
        else if (f->kind == ITEM_CHOICE)
            snprintf(msg, size, "item %zu: \"%s\" must be \"%s\", \"%s\" or \"%s\"", i,
                     f->name, f->choices[0], f->choices[1], f->choices[2]);
        else
            snprintf(msg, size, "item %zu: \"%s\" must be %s in %g..%g", i, f->name,
                     f->kind == ITEM_INT ? "an integer" : "a number", f->lo, f->hi);
        return 0;
    }
    if (!f->option)
        return 1;
    char *field = (char *)o + f->option - 1;
    if (f->kind == ITEM_STRING) { /* the item's own string: it outlives the submit */
        const char *v = json_string_value(value);
        memcpy(field, &v, sizeof v);
    } else if (f->kind == ITEM_FLOAT) {
        const float v = (float)x;
        memcpy(field, &v, sizeof v);
    } else if (f->kind == ITEM_DOUBLE) {
        memcpy(field, &x, sizeof x);
    } else if (f->kind == ITEM_INT64) {
        const int64_t v = (int64_t)json_integer_value(value); /* >= 0: a uint64_t's bits too */
        memcpy(field, &v, sizeof v);
    } else {
        const int v = f->kind == ITEM_BOOL ? json_is_true(value)
                      : f->kind == ITEM_CHOICE ? choice
                                               : (int)x;
        memcpy(field, &v, sizeof v);
    }
    return 1;
}

/* Item i's request options (item an object; score: a /translator/score
 * item, whose "tgt" is required, and only there known); 0 with a message
 * for a bad or (strict) unknown field. */
int server_read_item(const server *s, const server_model_spec *spec, json_t *item, size_t i,
                     int score, nmt_request_options *o, char *msg, size_t size)
{
    nmt_request_options_init(o);
    o->line_key = (uint64_t)i; /* the item's samples: keyed by its index unless it says */
    char unknown[200] = "";
    size_t at = 0;
    const char *key;
    json_t *value;
    json_object_foreach(item, key, value) {
        const item_field *f = item_field_named(key);
        if (f && !score && f->option == offsetof(nmt_request_options, target) + 1)
            f = NULL; /* "tgt": a translation is not scored */
        if (!f && at < sizeof unknown)
            at += (size_t)snprintf(unknown + at, sizeof unknown - at, "%s\"%s\"",
                                   at ? ", " : "", key);
        else if (f && !read_field(f, value, i, o, msg, size))
            return 0;
    }
    if (score && !o->target) {
        snprintf(msg, size, "item %zu: must have a string \"tgt\", the translation to score",
                 i);
        return 0;
    }
    if (unknown[0] && s->settings.strict) {
        snprintf(msg, size, "item %zu: unknown field%s %s (nmt-server --strict 0 ignores "
                 "unknown fields)", i, strchr(unknown, ',') ? "s" : "", unknown);
        return 0;
    }
    if (json_is_true(json_object_get(item, "attention")) && !spec->args.engine.attention_weights) {
        snprintf(msg, size, "item %zu: \"attention\" needs model %d served with --attention "
                 "(it keeps the weights)", i, spec->id);
        return 0;
    }
    return 1;
}
