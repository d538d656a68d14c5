/* options.h: the programs' settings, from an INI file (inih) and the
 * command line; the command line wins. translate's keys are every
 * program's; nmt-server adds its own (app_extra_settings). */
#ifndef NMT_APP_OPTIONS_H
#define NMT_APP_OPTIONS_H

#include "nmt.h"

#include <stddef.h>
#include <stdio.h>

enum {
    EXIT_OK = 0,
    EXIT_BAD_LINES = 1, /* some input lines were refused; all lines have output */
    EXIT_USAGE = 2,     /* bad option or configuration file */
    EXIT_MODEL = 3,     /* the model could not be loaded */
    EXIT_FAILED = 4,    /* translation failed (device error, out of memory) */
    EXIT_IO = 5         /* reading standard input or writing an output (standard
                           output, the --stats or --timing file) failed */
};

/* A list option's values (APP_OPT_LIST): -m's model files, an ensemble's
 * when there are several. n counts every value given, even past the room. */
typedef struct app_path_list {
    int n;
    char items[NMT_MAX_ENSEMBLE_MODELS][1024];
} app_path_list;

/* What a line's second file gives it (--score-target, --target-prefix). */
typedef enum translate_target {
    TRANSLATE_TARGET_NONE = 0,
    TRANSLATE_TARGET_PREFIX = 1, /* its translation continues the line */
    TRANSLATE_TARGET_SCORE = 2   /* the line is the translation to score */
} translate_target;

typedef struct translate_args {
    app_path_list models;  /* -m, once a model: several make an ensemble */
    float weights[NMT_MAX_ENSEMBLE_MODELS]; /* --weights: one a model (n_weights 0: 1/n) */
    int n_weights;
    char config_path[1024];
    nmt_options engine;
    int scores;     /* prefix each line with its score and a tab */
    int progress;   /* -1 auto (when stderr is a terminal), 0 off, 1 on */
    int show_help;
    int show_version;
    char stats_path[1024]; /* --stats / --timing: JSON counters written here after the run */
    char input_path[1024];  /* -i: read this file instead of standard input */
    char output_path[1024]; /* -o: write this file instead of standard output */
    int alignment;  /* append " ||| s-t ..." (source token s attended most by target token t) */
    int quiet;      /* no progress and no notes on stderr; errors still */
    int nbest_marian; /* --n-best-format marian: "ID ||| TEXT ||| F0= LOGPROB ||| SCORE" rows */
    int workers;      /* CPU: translators working in parallel (default 1) */
    long skip_lines;  /* read and skip this many lines first (resuming a failed run) */
    long limit_lines; /* then translate at most this many (-1: all; an MPI rank's shard) */
    int mpi;          /* --mpi: one shard of the input per rank of mpirun (shard.h) */
    int n_devices;    /* CUDA: --devices 0,1,... or all (-1); 0: --device-index alone */
    int devices[64];
    int device_given;  /* --device-index or --devices was set (file or command line) */
    const char *stats_option; /* "--stats" or "--timing", for messages */
    int max_len_given; /* --max-len-a or --max-len-b was set (file or command line) */
    int batch_tokens;  /* --batch-type tokens: --batch-size counted source tokens (batching.c) */
    int batch_size_given; /* --batch-size was set (file or command line) */
    int maxi_batch;    /* --maxi-batch: lines read ahead as one window (0: from the batch size) */
    int token_scores;  /* append " ||| " and each target token's log-probability, EOS last */
    int attention;     /* append " ||| " and a JSON document: source and target tokens and the
                          soft attention weights (engine.attention_weights) */
    /* forced tokens (scoring, prefixes): a file with a line for each input line */
    char score_target_path[1024];  /* --score-target FILE */
    char target_prefix_path[1024]; /* --target-prefix FILE */
    int beam_given;    /* --beam was set (file or command line): sampling's beam is 1 */
    char suppress[1 << 17]; /* --suppress: sequences, one a line (engine.suppress points here) */
    int dry_run;       /* --dry-run: tokenize and detokenize, no translator (nmt_pipeline) */
    int warmup_given;  /* --warmup was set (file or command line) */
    int host_threads;  /* --host-threads: the pipeline's pool (0: the cores) */
} translate_args;

/* The second file's role (after translate_args_parse: they exclude each
 * other) and path. */
translate_target translate_args_target(const translate_args *args, const char **path);

/* One option: one row of a table that feeds getopt, the INI reader and
 * --help (option_table.c holds translate's rows, server_options.c the
 * server's). The INI key is the long name with '_' for '-'. A row stores the
 * parsed value into a field of the program's settings struct by its kind, or
 * hands the text to set(), which may call app_option_store for the kind's
 * parsing. Adding an option is adding a row. */
typedef enum app_option_kind {
    APP_OPT_FLAG,   /* no value on the command line (1); in the INI file a boolean */
    APP_OPT_BOOL,   /* a boolean value: 1/0, true/false, yes/no, on/off */
    APP_OPT_INT,    /* a whole number in [lo, hi] (an int or long field) */
    APP_OPT_FLOAT,  /* a number in [lo, hi] (a float field) */
    APP_OPT_SIZE,   /* bytes: digits with an optional K, M or G suffix (an int64_t field) */
    APP_OPT_CHOICE, /* one of choices' names (an int-sized field gets the name's value) */
    APP_OPT_STRING, /* at least lo bytes, copied into a char array field */
    APP_OPT_LIST,   /* a string (at least lo bytes) added to an app_path_list field each
                       time the row is given, so it is never refused as given twice; the
                       INI file's values, then the command line's, each replace the last */
    APP_OPT_CUSTOM  /* set() alone reads the value */
} app_option_kind;

typedef enum app_option_scope {
    APP_OPT_EVERYWHERE = 0,
    APP_OPT_CLI_ONLY, /* no INI key (-c, -h, -V) */
    APP_OPT_INI_ONLY  /* no command-line option (unk_replace beside --no-unk-replace) */
} app_option_scope;

typedef struct app_choice {
    const char *name;
    int value;
} app_choice;

typedef struct app_option {
    const char *name;  /* --name */
    char short_name;   /* -x, or 0 */
    app_option_kind kind;
    size_t offset, size;        /* the field (APP_FIELD) */
    double lo, hi;              /* INT, FLOAT: the range; STRING: lo is the least length */
    const app_choice *choices;  /* CHOICE: ends with {NULL, 0} */
    int negate;                 /* FLAG, BOOL: the field gets the opposite (--no-x) */
    app_option_scope scope;
    size_t given;               /* APP_GIVEN: an int field set to 1 when the row is given */
    int (*set)(const struct app_option *row, void *settings, const char *value);
    const char *repeated; /* why this row given twice on the command line is refused,
                             for the message (NULL: "give each option once") */
    const char *arg;     /* --help: the value's name; a CHOICE without one lists its names */
    const char *help;    /* --help: the text, lines split by '\n'; NULL: not listed */
    const char *heading; /* --help: a line printed before this row */
} app_option;

#define APP_FIELD(type, field) .offset = offsetof(type, field), .size = sizeof(((type *)0)->field)
/* Offset + 1, so that 0 (a row that leaves it out) means none. */
#define APP_GIVEN(type, field) .given = offsetof(type, field) + 1

/* translate's rows (option_table.c), ending with a row whose name is NULL. */
extern const app_option app_translate_options[];

/* The row of INI key `key` (the long name with '_' for '-') among rows, or NULL. */
const app_option *app_option_by_key(const app_option *rows, const char *key);

/* Parses value by row's kind into row's field of settings: 1 done, 0 a bad value. */
int app_option_store(const app_option *row, void *settings, const char *value);
/* CHOICE: the value of the choice named text: 1, or 0 when there is none. */
int app_option_choice(const app_option *row, const char *text, int *value);
/* Prints rows' --help lines (text from column 26); what printf returned
 * last, negative when a write failed. */
int app_print_options(const app_option *rows);

/* Fills args from argv (and the INI file named by -c). Long options are
 * taken by their full names only (no abbreviations), and an option with a
 * value given twice is refused (rows' .repeated says why). On failure writes
 * a message into `message` and returns EXIT_USAGE. */
int translate_args_parse(int argc, char **argv, translate_args *args, char *message,
                         size_t message_size);

/* One setting by its INI key and value text (a program's own source of
 * settings, such as nmt-server's model options). */
typedef struct app_setting {
    const char *key, *value;
} app_setting;

/* A program's own settings besides translate's: its rows (fields of
 * settings) and its INI section. In the INI file its keys go in its section
 * (or in [translate] beside the common ones). overrides are translate's keys
 * applied after the command line (they win), named overrides_source in
 * messages; model_optional: the program finds its models elsewhere, so no
 * -m is no error. */
typedef struct app_extra_settings {
    const app_option *options;
    const char *section;
    void *settings;
    const app_setting *overrides;
    int n_overrides;
    const char *overrides_source;
    int model_optional;
} app_extra_settings;

/* translate_args_parse with a program's own settings (extra may be NULL). */
int app_args_parse(int argc, char **argv, translate_args *args, const app_extra_settings *extra,
                   char *message, size_t message_size);

/* The value parsers (option_values.c): 1 when the whole text is a valid
 * value, else 0. Integers in [lo, hi]; booleans 1/0, true/false, yes/no,
 * on/off; sizes digits with an optional K, M or G (1024-based) suffix. */
int app_parse_int(const char *text, long lo, long hi, int *out);
int app_parse_bool(const char *text, int *out);
int app_parse_size(const char *text, int64_t *out);
int app_parse_float(const char *text, double lo, double hi, float *out);
/* "fp32", "tf32x2", "bf16", "fp16" or "auto": --precision's names. */
const char *app_precision_name(nmt_precision precision);
int app_parse_devices(const char *text, translate_args *a);
int app_parse_lsh(const char *text, nmt_shrink_options *out);
/* --suppress's value: a file of sequences (one a line, tokens separated by
 * spaces) when one is named so, else a comma-separated list of them; into
 * out (size bytes), one sequence a line. */
int app_parse_suppress(const char *text, char *out, size_t size);
int app_parse_weights(const char *text, translate_args *a);

/* model_files.c: args' models loaded (app_models_load: EXIT_OK, or
 * EXIT_MODEL with the file and the reason in message), made into a
 * translator or service with --weights (an ensemble when there are
 * several), and freed (NULL ones skipped). */
typedef struct app_models {
    int n;
    nmt_model *models[NMT_MAX_ENSEMBLE_MODELS];
} app_models;
int app_models_load(const translate_args *args, app_models *models, char *message, size_t size);
void app_models_free(app_models *models);
nmt_status app_translator_create(const translate_args *args, const app_models *models,
                                 const nmt_options *options, nmt_translator **translator,
                                 nmt_error *err);
nmt_status app_service_create(const translate_args *args, const app_models *models,
                              const nmt_service_options *options, nmt_service **service,
                              nmt_error *err);

/* batching.c: --batch-type tokens resolved into the engine's batch_size and
 * max_batch_tokens once every setting is in (EXIT_OK, or EXIT_USAGE with the
 * reason in message). */
int app_resolve_batching(translate_args *args, char *message, size_t message_size);

/* std_streams.c: opens /dev/null in place of each of the standard streams
 * (0, 1, 2) that is closed, so that no file or pipe the program opens takes
 * its number; closed[fd] says which were. 0, or -1 when /dev/null cannot be
 * opened. */
int app_guard_std_streams(int closed[3]);

/* Prints --help on stdout; returns what printf returned (negative: a write error). */
int translate_print_help(const char *program);

/* The --stats / --timing file (stats_json.c). It is opened before anything
 * else, so that a bad path fails at once, and without truncation: a run that
 * fails before writing it leaves an existing file as it was and removes one it
 * created (translate_discard_stats). */
typedef struct stats_output {
    FILE *file;
    int created;
} stats_output;

/* EXIT_OK, or EXIT_USAGE with the reason in message. */
int translate_open_stats(const translate_args *args, stats_output *out, char *message,
                         size_t message_size);
void translate_discard_stats(const translate_args *args, stats_output *out);

/* A run's clock for --timing, in seconds: from the process's start to the
 * model loaded, to every translator ready (start-up), to the first output
 * line written; the pipeline's time from its start to the last line
 * written, and its lines; the wall time while any translator decoded. */
typedef struct translate_timing {
    double model_load, startup, first_output, pipeline, decode_wall;
    double model_read, driver_start; /* model_load's two threads: the file, the CUDA driver */
    long lines, pipeline_lines;
    int host_threads, dry_run;
    int warmup; /* the translators were made to warm up (CUDA) */
} translate_timing;

/* Writes the JSON counters (summed over the translators, and each one's
 * sentences and decode time, none in a dry run) and the timing, and closes
 * the file. Returns EXIT_OK, or EXIT_FAILED (the counters) or EXIT_IO (the
 * write) with the reason in message. */
int translate_write_stats(const translate_args *args, const nmt_translator *const *translators,
                          int n_translators, const translate_timing *timing, stats_output *out,
                          char *message, size_t message_size);

#endif /* NMT_APP_OPTIONS_H */
