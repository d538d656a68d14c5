/* model_config.c: the models nmt-server serves (server.h): -m's, as model
 * id 0, or the entries of --config-json, a file in OpenNMT-py's conf.json
 * shape, read as OpenNMT-py's TranslationServer reads it:
 *
 *   {"models_root": DIR,
 *    "models": [{"id": 100, "model": "x.bin", "timeout": 600,
 *                "on_timeout": "to_cpu" | "unload", "load": true,
 *                "opt": {"beam_size": 5, ...}}, ...]}
 *
 * An entry without "id" gets the next free id counting from 0; "model" (or
 * "models", a list of one) is a path under "model_root", else "models_root",
 * else ./available_models (an absolute path as it is), and every file must be
 * readable at start. "timeout" is in seconds (negative or absent: never),
 * "on_timeout" defaults to "to_cpu", "load" to false. "opt" holds
 * OpenNMT-py's translation options this engine has (beam_size, n_best,
 * batch_size, alpha, replace_unk, gpu, report_align) or any of translate's
 * INI keys; they override the server's options for that model. A key that
 * means nothing here (OpenNMT-py's tokenizer and Python hooks, or one no
 * reader knows) stops the start with --strict 1 and is ignored with a note
 * on stderr with --strict 0. */
#include "server.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Bounds on what the file may ask for: it is read once, at start. */
enum { kMaxModels = 256, kMaxConfigBytes = 1 << 20, kMaxSettings = 64, kValueBytes = 1100 };

/* OpenNMT-py's conf.json keys of an entry that have no meaning here. */
static const struct {
    const char *key, *why;
} kUnsupported[] = {
    {"tokenizer", "is not needed: the model file carries its tokenizer"},
    {"preprocess", "is not supported: no Python hooks"},
    {"postprocess", "is not supported: no Python hooks"},
    {"custom_opt", "is not supported: no Python hooks"},
    {"features", "is not supported: no source features"},
    {"ct2_model", "is not supported: the engine is this one"},
    {"ct2_translator_args", "is not supported: the engine is this one"},
    {"ct2_translate_batch_args", "is not supported: the engine is this one"},
    {NULL, NULL}};

static const char *const kEntryKeys[] = {"id", "model", "models", "model_root", "timeout",
                                         "on_timeout", "load", "opt", NULL};

typedef struct conf_reader {
    const char *path; /* the file, for messages */
    int strict;
    char *message;
    size_t size;
} conf_reader;

/* A key the reader does not take: 0 with the message under --strict 1, else
 * 1 after a note. */
static int unknown_key(const conf_reader *c, const char *where, const char *key, const char *why)
{
    if (c->strict) {
        snprintf(c->message, c->size, "%s: %s: \"%s\" %s (--strict 0 ignores it)", c->path,
                 where, key, why);
        return 0;
    }
    fprintf(stderr, "nmt-server: %s: %s: \"%s\" ignored: it %s\n", c->path, where, key, why);
    return 1;
}

static int in_list(const char *const *list, const char *key)
{
    for (; *list; list++)
        if (!strcmp(*list, key))
            return 1;
    return 0;
}

/* Every key of an entry is one this reader takes, or unknown_key let it be. */
static int check_entry_keys(const conf_reader *c, const char *where, json_t *entry)
{
    const char *key;
    json_t *value;
    json_object_foreach(entry, key, value) {
        (void)value;
        if (in_list(kEntryKeys, key))
            continue;
        const char *why = "is not a key of an entry";
        for (int k = 0; kUnsupported[k].key; k++)
            if (!strcmp(kUnsupported[k].key, key))
                why = kUnsupported[k].why;
        if (!unknown_key(c, where, key, why))
            return 0;
    }
    return 1;
}

/* A JSON scalar as an option's text: 1, or 0 for another type. */
static int value_text(json_t *v, char *out, size_t size)
{
    int n;
    if (json_is_string(v))
        n = snprintf(out, size, "%s", json_string_value(v));
    else if (json_is_boolean(v))
        n = snprintf(out, size, "%d", json_is_true(v));
    else if (json_is_integer(v))
        n = snprintf(out, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        n = snprintf(out, size, "%.17g", json_real_value(v));
    else
        return 0;
    return n >= 0 && (size_t)n < size;
}

/* An entry's settings for server_model_args: "model", then its opt. */
typedef struct entry_settings {
    app_setting list[kMaxSettings];
    char text[kMaxSettings][kValueBytes];
    int n;
} entry_settings;

static int add_setting(entry_settings *s, const char *key, const char *text)
{
    if (s->n == kMaxSettings || strlen(text) >= kValueBytes)
        return 0;
    strcpy(s->text[s->n], text);
    s->list[s->n] = (app_setting){.key = key, .value = s->text[s->n]};
    s->n++;
    return 1;
}

/* OpenNMT-py's opt names whose meaning this engine has under another key
 * (its -random_sampling_* are CTranslate2's sampling options; -min_length,
 * -seed and -coverage_penalty keep their names). */
static const struct {
    const char *onmt, *key;
} kOptAliases[] = {{"beam_size", "beam"},
                   {"replace_unk", "unk_replace"},
                   {"random_sampling_topk", "sampling_topk"},
                   {"random_sampling_topp", "sampling_topp"},
                   {"random_sampling_temp", "sampling_temperature"},
                   {"ban_unk_token", "ban_unk"},
                   {"beta", "coverage_beta"},
                   {NULL, NULL}};

/* One opt key and value into s (or spec, for report_align). */
static int add_opt(const conf_reader *c, const char *where, const char *key, json_t *value,
                   entry_settings *s, server_model_spec *spec)
{
    char text[kValueBytes];
    if (!value_text(value, text, sizeof text)) {
        snprintf(c->message, c->size, "%s: %s: opt \"%s\" must be a string, number or boolean",
                 c->path, where, key);
        return 0;
    }
    if (!strcmp(key, "report_align")) {
        if (!json_is_boolean(value)) {
            snprintf(c->message, c->size, "%s: %s: opt \"report_align\" must be true or false",
                     c->path, where);
            return 0;
        }
        spec->report_align = json_is_true(value);
        return 1;
    }
    if (!strcmp(key, "gpu")) { /* OpenNMT-py: -1 the CPU, else the CUDA device ordinal */
        if (!json_is_integer(value) || json_integer_value(value) < -1) {
            snprintf(c->message, c->size, "%s: %s: opt \"gpu\" must be -1 (CPU) or a device "
                     "ordinal", c->path, where);
            return 0;
        }
        const int cpu = json_integer_value(value) < 0;
        return add_setting(s, "device", cpu ? "cpu" : "cuda") &&
               (cpu || add_setting(s, "device_index", text));
    }
    if (!strcmp(key, "model") || !strcmp(key, "models"))
        return unknown_key(c, where, key, "belongs in the entry, not in opt");
    for (int k = 0; kOptAliases[k].onmt; k++)
        if (!strcmp(key, kOptAliases[k].onmt))
            key = kOptAliases[k].key;
    const app_option *row = app_option_by_key(app_translate_options, key);
    if (!row)
        return unknown_key(c, where, key, "is not an option of this engine (opt)");
    if (!add_setting(s, key, text)) {
        snprintf(c->message, c->size, "%s: %s: opt has too many keys (at most %d)", c->path,
                 where, kMaxSettings - 2);
        return 0;
    }
    return 1;
}

/* The entry's file: "models" (a list of one) or "model", under its root. */
static int entry_path(const conf_reader *c, const char *where, json_t *entry, const char *root,
                      char *path, size_t size)
{
    json_t *models = json_object_get(entry, "models");
    json_t *model = models ? NULL : json_object_get(entry, "model");
    if (json_is_array(models) && json_array_size(models) > 1) {
        snprintf(c->message, c->size, "%s: %s: several \"models\" (an ensemble) are not "
                 "supported yet", c->path, where);
        return 0;
    }
    if (json_is_array(models))
        model = json_array_get(models, 0);
    json_t *own_root = json_object_get(entry, "model_root");
    if (!json_is_string(model) || !json_string_length(model) ||
        (own_root && !json_is_string(own_root))) {
        snprintf(c->message, c->size, "%s: %s: needs \"model\": a file name (or \"models\": "
                 "[one]), and \"model_root\" is a string", c->path, where);
        return 0;
    }
    const char *name = json_string_value(model);
    if (own_root)
        root = json_string_value(own_root);
    const int n = name[0] == '/' ? snprintf(path, size, "%s", name)
                                 : snprintf(path, size, "%s/%s", root, name);
    struct stat st;
    FILE *f = n >= 0 && (size_t)n < size ? fopen(path, "rb") : NULL;
    if (!f || fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
        snprintf(c->message, c->size, "%s: %s: cannot open %s: %s", c->path, where, path,
                 n < 0 || (size_t)n >= size ? "path too long"
                 : f ? "a directory" : strerror(errno));
        if (f)
            fclose(f);
        return 0;
    }
    fclose(f);
    return 1;
}

/* timeout, on_timeout and load of an entry. */
static int entry_policy(const conf_reader *c, const char *where, json_t *entry,
                        server_model_spec *spec)
{
    json_t *timeout = json_object_get(entry, "timeout");
    json_t *on_timeout = json_object_get(entry, "on_timeout");
    json_t *load = json_object_get(entry, "load");
    spec->timeout_s = timeout ? json_number_value(timeout) : -1.0;
    const char *action = on_timeout ? json_string_value(on_timeout) : "to_cpu";
    if ((timeout && (!json_is_number(timeout) || !(fabs(spec->timeout_s) <= 1e9))) ||
        !action || (strcmp(action, "to_cpu") && strcmp(action, "unload")) ||
        (load && !json_is_boolean(load))) {
        snprintf(c->message, c->size, "%s: %s: \"timeout\" is seconds (negative: never), "
                 "\"on_timeout\" \"to_cpu\" or \"unload\", \"load\" true or false", c->path,
                 where);
        return 0;
    }
    spec->keep_weights = !strcmp(action, "to_cpu");
    spec->load = json_is_true(load);
    return 1;
}

static int id_taken(const server_model_spec *specs, int n, int id)
{
    for (int k = 0; k < n; k++)
        if (specs[k].id == id)
            return 1;
    return 0;
}

/* Entry i into specs[i]; *next_id is OpenNMT-py's counter of free ids. */
static int read_entry(const conf_reader *c, int argc, char **argv, json_t *entry, int i,
                      const char *root, server_model_spec *specs, int *next_id)
{
    server_model_spec *spec = &specs[i];
    char where[48];
    snprintf(where, sizeof where, "models[%d]", i);
    if (!json_is_object(entry)) {
        snprintf(c->message, c->size, "%s: %s: not an object", c->path, where);
        return 0;
    }
    json_t *id = json_object_get(entry, "id"), *opt = json_object_get(entry, "opt");
    if (id && (!json_is_integer(id) || json_integer_value(id) < 0 ||
               json_integer_value(id) > INT_MAX)) {
        snprintf(c->message, c->size, "%s: %s: \"id\" must be an integer in 0..%d", c->path,
                 where, INT_MAX);
        return 0;
    }
    if (id) {
        spec->id = (int)json_integer_value(id);
        if (id_taken(specs, i, spec->id)) {
            snprintf(c->message, c->size, "%s: %s: model id %d is taken", c->path, where,
                     spec->id);
            return 0;
        }
    } else {
        for (spec->id = *next_id; id_taken(specs, i, spec->id);)
            spec->id++;
        *next_id = spec->id + 1;
    }
    snprintf(where, sizeof where, "models[%d] (id %d)", i, spec->id);
    if (opt && !json_is_object(opt)) {
        snprintf(c->message, c->size, "%s: %s: \"opt\" must be an object", c->path, where);
        return 0;
    }
    entry_settings *s = calloc(1, sizeof *s);
    char path[sizeof spec->args.model_path];
    int ok = s && check_entry_keys(c, where, entry) && entry_policy(c, where, entry, spec) &&
             entry_path(c, where, entry, root, path, sizeof path) &&
             add_setting(s, "model", path);
    const char *key;
    json_t *value;
    json_object_foreach(opt, key, value) {
        if (ok)
            ok = add_opt(c, where, key, value, s, spec);
    }
    spec->opt_json = !ok ? NULL : opt ? json_dumps(opt, JSON_COMPACT) : strdup("{}");
    if (ok && !spec->opt_json)
        snprintf(c->message, c->size, "out of memory");
    char source[sizeof where + 1100];
    snprintf(source, sizeof source, "%s: %s", c->path, where);
    ok = ok && spec->opt_json &&
         server_model_args(argc, argv, s->list, s->n, source, &spec->args, c->message,
                           c->size) == EXIT_OK;
    if (!s)
        snprintf(c->message, c->size, "out of memory");
    free(s);
    return ok;
}

/* The file's models into specs (calloc'ed, n_specs of them). */
static int read_config(const conf_reader *c, int argc, char **argv, server_model_spec **specs,
                       int *n_specs)
{
    struct stat st;
    const char *bad = stat(c->path, &st) != 0 ? strerror(errno)
                      : S_ISDIR(st.st_mode)    ? "a directory"
                      : st.st_size > kMaxConfigBytes ? "larger than 1 MiB"
                                                     : NULL;
    if (bad) {
        snprintf(c->message, c->size, "--config-json %s: %s", c->path, bad);
        return 0;
    }
    json_error_t error;
    json_t *root = json_load_file(c->path, JSON_REJECT_DUPLICATES, &error);
    if (!root) {
        snprintf(c->message, c->size, "%s:%d:%d: %s", c->path, error.line, error.column,
                 error.text);
        return 0;
    }
    json_t *models = json_object_get(root, "models"), *models_root;
    models_root = json_object_get(root, "models_root");
    const size_t n = json_array_size(models);
    int ok = json_is_object(root) && n >= 1 && n <= kMaxModels &&
             (!models_root || json_is_string(models_root));
    if (!ok)
        snprintf(c->message, c->size, "%s: must be an object with \"models\": a list of 1..%d "
                 "entries (and \"models_root\": a directory)", c->path, kMaxModels);
    const char *key;
    json_t *value;
    json_object_foreach(ok ? root : NULL, key, value) {
        (void)value;
        if (ok && strcmp(key, "models") && strcmp(key, "models_root"))
            ok = unknown_key(c, "the top level", key, "is not a key of the file");
    }
    *specs = ok ? calloc(n, sizeof **specs) : NULL;
    if (ok && !*specs) {
        snprintf(c->message, c->size, "out of memory");
        ok = 0;
    }
    int next_id = 0;
    for (size_t i = 0; ok && i < n; i++) {
        ok = read_entry(c, argc, argv, json_array_get(models, i), (int)i,
                        models_root ? json_string_value(models_root) : "./available_models",
                        *specs, &next_id);
        *n_specs = (int)i + 1;
    }
    json_decref(root);
    return ok;
}

int server_model_specs(const server_args *args, int argc, char **argv, server_model_spec **specs,
                       int *n_specs, char *message, size_t size)
{
    *specs = NULL;
    *n_specs = 0;
    if (!args->server.config_json[0]) {
        server_model_spec *spec = calloc(1, sizeof *spec);
        if (!spec || !(spec->opt_json = strdup("{}"))) {
            free(spec);
            snprintf(message, size, "out of memory");
            return EXIT_USAGE;
        }
        spec->args = args->common;
        spec->timeout_s = -1.0;
        spec->load = 1;
        *specs = spec;
        *n_specs = 1;
        return EXIT_OK;
    }
    const conf_reader c = {.path = args->server.config_json, .strict = args->server.strict,
                           .message = message, .size = size};
    if (read_config(&c, argc, argv, specs, n_specs))
        return EXIT_OK;
    server_model_specs_free(*specs, *n_specs);
    *specs = NULL;
    *n_specs = 0;
    return EXIT_USAGE;
}

void server_model_specs_free(server_model_spec *specs, int n_specs)
{
    for (int i = 0; specs && i < n_specs; i++)
        free(specs[i].opt_json);
    free(specs);
}
