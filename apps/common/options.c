/* options.c: command line and INI parsing for the programs (translate, and
 * nmt-server with its own rows on top), both driven by the option rows
 * (options.h, option_table.c). The same keys work in both places (`--beam 5`
 * or `beam = 5`, `--scores` or `scores = 1`); values are parsed strictly, and
 * a bad one is reported with its source (option or file:line). */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Which rows one source (the INI file or the command line) gave, for the
 * checks within a source; across sources the command line wins. */
enum { kMaxRows = 128 };

typedef struct setting_source {
    unsigned char given[kMaxRows]; /* by row: translate's, then the program's */
} setting_source;

/* The rows of translate and of the program, as one list. */
typedef struct option_rows {
    const app_option *rows[kMaxRows];
    void *settings[kMaxRows];
    int n, n_base; /* all of them; translate's */
} option_rows;

static int collect_rows(const app_extra_settings *extra, translate_args *args, option_rows *r)
{
    r->n = 0;
    for (const app_option *o = app_translate_options; o->name; o++) {
        if (r->n == kMaxRows)
            return 0;
        r->rows[r->n] = o;
        r->settings[r->n++] = args;
    }
    r->n_base = r->n;
    for (const app_option *o = extra ? extra->options : NULL; o && o->name; o++) {
        if (r->n == kMaxRows)
            return 0;
        r->rows[r->n] = o;
        r->settings[r->n++] = extra->settings;
    }
    return 1;
}

/* 1 when key is row's INI key: its name with '_' for '-'. */
static int is_key(const app_option *row, const char *key)
{
    const char *n = row->name;
    for (; *n && *key; n++, key++)
        if (*key != (*n == '-' ? '_' : *n))
            return 0;
    return !*n && !*key;
}

const app_option *app_option_by_key(const app_option *rows, const char *key)
{
    for (const app_option *o = rows; o && o->name; o++)
        if (o->scope != APP_OPT_CLI_ONLY && is_key(o, key))
            return o;
    return NULL;
}

/* The row of an INI key among rows [first, last), or -1. */
static int find_key(const option_rows *r, int first, int last, const char *key)
{
    for (int i = first; i < last; i++)
        if (r->rows[i]->scope != APP_OPT_CLI_ONLY && is_key(r->rows[i], key))
            return i;
    return -1;
}

int app_option_choice(const app_option *row, const char *text, int *value)
{
    for (const app_choice *c = row->choices; c && c->name; c++)
        if (!strcmp(text, c->name)) {
            *value = c->value;
            return 1;
        }
    return 0;
}

int app_option_store(const app_option *row, void *settings, const char *value)
{
    char *field = (char *)settings + row->offset;
    int i;
    switch (row->kind) {
    case APP_OPT_FLAG:
    case APP_OPT_BOOL:
        if (row->size != sizeof i || !app_parse_bool(value, &i))
            return 0;
        i = row->negate ? !i : i;
        memcpy(field, &i, sizeof i);
        return 1;
    case APP_OPT_INT:
        if (!app_parse_int(value, (long)row->lo, (long)row->hi, &i))
            return 0;
        if (row->size == sizeof(long)) {
            const long l = i;
            memcpy(field, &l, sizeof l);
        } else if (row->size == sizeof i) {
            memcpy(field, &i, sizeof i);
        } else {
            return 0;
        }
        return 1;
    case APP_OPT_CHOICE:
        if (row->size != sizeof i || !app_option_choice(row, value, &i))
            return 0;
        memcpy(field, &i, sizeof i);
        return 1;
    case APP_OPT_FLOAT: {
        float f;
        if (row->size != sizeof f || !app_parse_float(value, row->lo, row->hi, &f))
            return 0;
        memcpy(field, &f, sizeof f);
        return 1;
    }
    case APP_OPT_SIZE: {
        int64_t bytes;
        if (row->size != sizeof bytes || !app_parse_size(value, &bytes))
            return 0;
        memcpy(field, &bytes, sizeof bytes);
        return 1;
    }
    case APP_OPT_STRING: {
        const size_t len = strlen(value);
        if (len < (size_t)row->lo || len >= row->size)
            return 0;
        memcpy(field, value, len + 1);
        return 1;
    }
    case APP_OPT_CUSTOM:
        return 0;
    }
    return 0;
}

/* Applies row i of r to value (a flag's value is "1"): 1 done, 0 a bad value. */
static int apply_row(const option_rows *r, int i, const char *value, setting_source *source)
{
    const app_option *row = r->rows[i];
    void *settings = r->settings[i];
    const int ok = row->set ? row->set(row, settings, value)
                            : app_option_store(row, settings, value);
    if (ok != 1)
        return 0;
    if (row->given) {
        const int one = 1;
        memcpy((char *)settings + row->given - 1, &one, sizeof one);
    }
    source->given[i] = 1;
    return 1;
}

/* 1 when source gave both --lsh and --top-words (translate's rows). */
static int shrink_conflict_in(const option_rows *r, const setting_source *source)
{
    const int lsh = find_key(r, 0, r->n_base, "lsh");
    const int top = find_key(r, 0, r->n_base, "top_words");
    return lsh >= 0 && top >= 0 && source->given[lsh] && source->given[top];
}

/* Debian's inih passes no line number to the handler; ini_parse returns the
 * first failing line, so the handler keeps the reason and the caller adds it. */
enum { kMaxIniKeys = 256 };

typedef struct ini_context {
    const option_rows *rows;
    const char *section; /* the program's own, or NULL */
    setting_source source;
    char reason[256];
    char keys[kMaxIniKeys][48]; /* the keys given so far: each may be given once */
    int n_keys;
} ini_context;

/* 1 when name was given before in the file (in any section: both set the
 * same setting), else records it. A repeat is a mistake the file's reader
 * cannot see (which one wins?), so it is refused. */
static int repeated_key(ini_context *ctx, const char *name)
{
    for (int i = 0; i < ctx->n_keys; i++)
        if (!strcmp(ctx->keys[i], name))
            return 1;
    if (ctx->n_keys < kMaxIniKeys && strlen(name) < sizeof ctx->keys[0])
        strcpy(ctx->keys[ctx->n_keys++], name);
    return 0;
}

static int on_ini_setting(void *user, const char *section, const char *name, const char *value)
{
    ini_context *ctx = user;
    const option_rows *r = ctx->rows;
    const char *own_section = ctx->section;
    if (ctx->reason[0])
        return 0;
    const int own = own_section && !strcmp(section, own_section);
    if (section[0] && strcmp(section, "translate") && !own) {
        snprintf(ctx->reason, sizeof ctx->reason, "unknown section [%s] (use [translate]%s%s%s)",
                 section, own_section ? " or [" : "", own_section ? own_section : "",
                 own_section ? "]" : "");
        return 0;
    }
    if (repeated_key(ctx, name)) {
        snprintf(ctx->reason, sizeof ctx->reason, "key '%s' is given twice (give each key once)",
                 name);
        return 0;
    }
    /* the program's section holds only its own keys; [translate] holds all */
    const int i = find_key(r, own ? r->n_base : 0, r->n, name);
    if (i < 0)
        snprintf(ctx->reason, sizeof ctx->reason, "unknown key '%s'", name);
    else if (!apply_row(r, i, value, &ctx->source))
        snprintf(ctx->reason, sizeof ctx->reason, "bad value for %s: '%s'", name, value);
    return !ctx->reason[0];
}

static const char *const shrink_conflict = "lsh and top_words (--lsh and --top-words) exclude "
                                           "each other";

/* Reads the INI file named by -c into the rows' settings. A directory opens
 * (and reads as nothing) on Linux, so it is refused by name; a read error is
 * not an empty file. Returns EXIT_OK or EXIT_USAGE with the reason in message. */
static int read_config(const char *path, const option_rows *rows, const char *section,
                       char *message, size_t message_size)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(message, message_size, "%s: cannot open: %s", path, strerror(errno));
        return EXIT_USAGE;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(message, message_size, "%s: is a directory, not an INI file", path);
        fclose(f);
        return EXIT_USAGE;
    }
    ini_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(message, message_size, "%s: out of memory", path);
        fclose(f);
        return EXIT_USAGE;
    }
    ctx->rows = rows;
    ctx->section = section;
    int r = ini_parse_file(f, on_ini_setting, ctx);
    const int read_error = ferror(f);
    const int read_errno = errno;
    fclose(f);
    int code = EXIT_USAGE;
    if (read_error)
        snprintf(message, message_size, "%s: cannot read: %s", path, strerror(read_errno));
    else if (r != 0)
        snprintf(message, message_size, "%s:%d: %s", path, r,
                 ctx->reason[0] ? ctx->reason : "syntax error");
    else if (shrink_conflict_in(rows, &ctx->source))
        snprintf(message, message_size, "%s: %s", path, shrink_conflict);
    else
        code = EXIT_OK;
    free(ctx);
    return code;
}

int translate_args_parse(int argc, char **argv, translate_args *args, char *message,
                         size_t message_size)
{
    return app_args_parse(argc, argv, args, NULL, message, message_size);
}

/* getopt's tables from the rows: a long option's code is kFirstCode + its
 * row; a short option's is its letter. The leading ':' makes a missing value
 * ':' (not '?', "unknown option"). */
enum { kFirstCode = 256 };

typedef struct getopt_tables {
    struct option longs[kMaxRows + 1];
    char shorts[2 * kMaxRows + 2];
} getopt_tables;

static void build_getopt(const option_rows *r, getopt_tables *t)
{
    int n = 0, s = 0;
    t->shorts[s++] = ':';
    for (int i = 0; i < r->n; i++) {
        const app_option *row = r->rows[i];
        if (row->scope == APP_OPT_INI_ONLY)
            continue;
        const int has_arg = row->kind == APP_OPT_FLAG ? no_argument : required_argument;
        t->longs[n++] = (struct option){row->name, has_arg, NULL, kFirstCode + i};
        if (row->short_name) {
            t->shorts[s++] = row->short_name;
            if (has_arg == required_argument)
                t->shorts[s++] = ':';
        }
    }
    t->longs[n] = (struct option){NULL, 0, NULL, 0};
    t->shorts[s] = 0;
}

/* The row of getopt's code, or -1 (':', '?'). */
static int code_row(const option_rows *r, int code)
{
    if (code >= kFirstCode && code < kFirstCode + r->n)
        return code - kFirstCode;
    for (int i = 0; code > 0 && code < kFirstCode && i < r->n; i++)
        if (r->rows[i]->short_name == code)
            return i;
    return -1;
}

/* getopt_long, refusing an abbreviated long option: glibc takes a unique
 * prefix (--score for --scores), which a typo or a later option would turn
 * into another setting. kAbbreviated, with the message, for one. */
enum { kAbbreviated = -2 };

static int next_option(int argc, char **argv, const getopt_tables *t, char *message,
                       size_t message_size)
{
    int index = -1;
    const int c = getopt_long(argc, argv, t->shorts, t->longs, &index);
    if (c < kFirstCode || index < 0 || optind < 1)
        return c;
    /* the option's own word: the one before its value when that is a word of its own */
    const char *word = optarg && optind >= 2 && optarg == argv[optind - 1] ? argv[optind - 2]
                                                                          : argv[optind - 1];
    const char *name = t->longs[index].name;
    const size_t len = strlen(name);
    if (!strncmp(word, "--", 2) && !strncmp(word + 2, name, len) &&
        (word[2 + len] == '\0' || word[2 + len] == '='))
        return c;
    snprintf(message, message_size, "unknown option '%.*s' (options are not abbreviated: "
             "--%s?)", (int)strcspn(word, "="), word, name);
    return kAbbreviated;
}

/* A word that begins several long options (getopt_long refuses it as
 * ambiguous): 1 with the message naming them, else 0. */
static int abbreviation_of_several(const getopt_tables *t, const char *word, char *message,
                                   size_t message_size)
{
    const size_t len = strcspn(word, "=");
    if (strncmp(word, "--", 2) || len <= 2)
        return 0;
    int n = snprintf(message, message_size, "unknown option '%.*s' (options are not "
                     "abbreviated:", (int)len, word);
    int found = 0;
    for (const struct option *o = t->longs; o->name && n > 0 && (size_t)n < message_size; o++)
        if (!strncmp(o->name, word + 2, len - 2))
            n += snprintf(message + n, message_size - (size_t)n, "%s --%s", found++ ? "," : "",
                          o->name);
    if (n > 0 && (size_t)n < message_size)
        snprintf(message + n, message_size - (size_t)n, "?)");
    return found > 1;
}

/* 1 when row i, about to be given on the command line, was given there
 * already (itself, or another row with a value setting the same field), with
 * the message. */
static int given_twice(const option_rows *r, int i, const setting_source *command_line,
                       char *message, size_t message_size)
{
    const app_option *row = r->rows[i];
    if (row->kind == APP_OPT_FLAG)
        return 0; /* no value: giving it again changes nothing */
    for (int j = 0; j < r->n; j++) {
        const app_option *other = r->rows[j];
        const int same_field = other->kind != APP_OPT_FLAG && other->size > 0 &&
                               other->size == row->size && other->offset == row->offset &&
                               r->settings[j] == r->settings[i];
        if (!command_line->given[j] || (j != i && !same_field))
            continue;
        if (j == i)
            snprintf(message, message_size, "--%s is given twice: %s", row->name,
                     row->repeated ? row->repeated : "give each option once");
        else
            snprintf(message, message_size, "--%s and --%s set the same thing: give one",
                     other->name, row->name);
        return 1;
    }
    return 0;
}

/* A program's overrides (translate's INI keys), after the command line. */
static int apply_overrides(const option_rows *r, const app_extra_settings *extra,
                           setting_source *source, char *message, size_t message_size)
{
    for (int k = 0; extra && k < extra->n_overrides; k++) {
        const app_setting *o = &extra->overrides[k];
        const int i = find_key(r, 0, r->n_base, o->key);
        if (i < 0) {
            snprintf(message, message_size, "%s: unknown key '%s'", extra->overrides_source,
                     o->key);
            return 0;
        }
        if (!apply_row(r, i, o->value, source)) {
            snprintf(message, message_size, "%s: bad value for %s: '%s'",
                     extra->overrides_source, o->key, o->value);
            return 0;
        }
    }
    return 1;
}

static void set_defaults(translate_args *args)
{
    memset(args, 0, sizeof *args);
    nmt_options_init(&args->engine);
    args->progress = -1;
    args->workers = 1;
    args->limit_lines = -1;
}

/* The rules between settings, once every source is in. */
static int check_args(translate_args *args, int model_optional, char *message,
                      size_t message_size)
{
    if (!args->model_path[0] && !model_optional) {
        snprintf(message, message_size, "no model: give -m MODEL (or model = ... in the config)");
        return EXIT_USAGE;
    }
    /* onmt_translate's length limit is min(250, 1.25 S + 5): a user switching
     * to its rules gets its limit too, unless they set one. */
    if (args->engine.search_rules == NMT_SEARCH_RULES_ONMT && !args->max_len_given) {
        args->engine.max_len_a = 1.25f;
        args->engine.max_len_b = 5;
    }
    if (app_resolve_batching(args, message, message_size) != EXIT_OK)
        return EXIT_USAGE;
    /* Sampling draws --n-best samples with beam 1, unless the user set one. */
    const int sampling = args->engine.sampling_topk != 1;
    if (sampling && !args->beam_given)
        args->engine.beam_size = 1;
    args->engine.suppress = args->suppress[0] ? args->suppress : NULL;
    if (!sampling && args->engine.n_best > args->engine.beam_size) {
        snprintf(message, message_size, "--n-best %d is larger than --beam %d",
                 args->engine.n_best, args->engine.beam_size);
        return EXIT_USAGE;
    }
    if (args->score_target_path[0] && args->target_prefix_path[0]) {
        snprintf(message, message_size, "--score-target and --target-prefix exclude each other");
        return EXIT_USAGE;
    }
    if (args->dry_run && (args->score_target_path[0] || args->target_prefix_path[0])) {
        snprintf(message, message_size, "--dry-run decodes nothing: it takes no --%s",
                 args->score_target_path[0] ? "score-target" : "target-prefix");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

translate_target translate_args_target(const translate_args *args, const char **path)
{
    *path = args->score_target_path[0] ? args->score_target_path : args->target_prefix_path;
    return args->score_target_path[0]    ? TRANSLATE_TARGET_SCORE
           : args->target_prefix_path[0] ? TRANSLATE_TARGET_PREFIX
                                         : TRANSLATE_TARGET_NONE;
}

int app_args_parse(int argc, char **argv, translate_args *args, const app_extra_settings *extra,
                   char *message, size_t message_size)
{
    set_defaults(args);
    message[0] = 0;
    option_rows *rows = malloc(sizeof *rows);
    getopt_tables *tables = malloc(sizeof *tables);
    setting_source *command_line = calloc(1, sizeof *command_line);
    int code = EXIT_USAGE;
    if (!rows || !tables || !command_line) {
        snprintf(message, message_size, "out of memory");
        goto done;
    }
    if (!collect_rows(extra, args, rows)) {
        snprintf(message, message_size, "too many options (at most %d)", kMaxRows);
        goto done;
    }
    build_getopt(rows, tables);

    /* Pass 1: only the config file, so its settings come before the command line's. */
    int config = -2; /* -c is no INI key: found by name (-2: no row, not code_row's -1) */
    for (int i = 0; i < rows->n_base; i++)
        if (!strcmp(rows->rows[i]->name, "config"))
            config = i;
    int c;
    opterr = 0;
    optind = 0;
    while ((c = next_option(argc, argv, tables, message, message_size)) != -1)
        if (code_row(rows, c) == config && !apply_row(rows, config, optarg, command_line)) {
            snprintf(message, message_size, "bad value for --config: '%s'", optarg);
            goto done;
        }
    if (args->config_path[0] && read_config(args->config_path, rows,
                                            extra ? extra->section : NULL, message,
                                            message_size) != EXIT_OK)
        goto done;

    /* Pass 2: the command line. */
    memset(command_line, 0, sizeof *command_line); /* pass 1 gave -c */
    message[0] = 0;
    opterr = 0;
    optind = 0;
    while ((c = next_option(argc, argv, tables, message, message_size)) != -1) {
        const int i = code_row(rows, c);
        if (c == kAbbreviated) {
            goto done;
        } else if (i >= 0) {
            if (given_twice(rows, i, command_line, message, message_size))
                goto done;
            if (!apply_row(rows, i, optarg ? optarg : "1", command_line)) {
                snprintf(message, message_size, "bad value for --%s: '%s'", rows->rows[i]->name,
                         optarg ? optarg : "");
                goto done;
            }
        } else if (c == ':') {
            snprintf(message, message_size, "option %s needs a value", argv[optind - 1]);
            goto done;
        } else if (!abbreviation_of_several(tables, argv[optind - 1], message, message_size)) {
            snprintf(message, message_size, "unknown option '%s' (see --help)", argv[optind - 1]);
            goto done;
        } else {
            goto done;
        }
    }
    if (optind < argc) {
        snprintf(message, message_size,
                 "unexpected argument '%s' (input comes from stdin or -i FILE)", argv[optind]);
        goto done;
    }
    if (args->show_help || args->show_version)
        code = EXIT_OK;
    else if (shrink_conflict_in(rows, command_line))
        snprintf(message, message_size, "command line: %s", shrink_conflict);
    else if (apply_overrides(rows, extra, command_line, message, message_size))
        code = check_args(args, extra && extra->model_optional, message, message_size);
done:
    free(rows);
    free(tables);
    free(command_line);
    return code;
}
