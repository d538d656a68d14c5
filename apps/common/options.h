/* options.h: the programs' settings, from an INI file (inih) and the
 * command line; the command line wins. translate's keys are every
 * program's; nmt-server adds its own (app_extra_settings). */
#ifndef NMT_APP_OPTIONS_H
#define NMT_APP_OPTIONS_H

#include "nmt.h"

#include <getopt.h>
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

typedef struct translate_args {
    char model_path[1024];
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
} translate_args;

/* Fills args from argv (and the INI file named by -c). On failure writes a
 * message into `message` and returns EXIT_USAGE. */
int translate_args_parse(int argc, char **argv, translate_args *args, char *message,
                         size_t message_size);

/* A program's own settings besides translate's: its long options
 * (NULL-terminated, has_arg as getopt's; the key is the name with '_' for
 * '-'), its INI section, and the function that applies one by key: 1 done,
 * 0 bad value, -1 unknown key. In the INI file its keys go in its section
 * (or in [translate] beside the common ones). */
typedef struct app_extra_settings {
    const struct option *options;
    const char *section;
    int (*apply)(void *ctx, const char *key, const char *value);
    void *ctx;
} app_extra_settings;

/* translate_args_parse with a program's own settings (extra may be NULL). */
int app_args_parse(int argc, char **argv, translate_args *args, const app_extra_settings *extra,
                   char *message, size_t message_size);

/* Strict parsers for extra settings: 1 when text is a whole number in
 * [lo, hi] / a boolean (1/0, true/false, yes/no, on/off). */
int app_parse_int(const char *text, long lo, long hi, int *out);
int app_parse_bool(const char *text, int *out);
/* Bytes: digits with an optional K, M or G (1024-based) suffix; 0 on a bad
 * or overflowing value. */
int app_parse_size(const char *text, int64_t *out);
/* The other value parsers (option_values.c): 1 when the whole text is a
 * valid value, else 0. */
int app_parse_float(const char *text, double lo, double hi, float *out);
int app_parse_device(const char *text, nmt_device *out);
/* "fp32", "tf32x2", "bf16", "fp16" or "auto": --precision's names. */
const char *app_precision_name(nmt_precision precision);
int app_parse_devices(const char *text, translate_args *a);
int app_parse_lsh(const char *text, nmt_shrink_options *out);
int app_parse_share(const char *text, nmt_lsh_share *out);

/* batching.c: the keys batch_type and maxi_batch (as apply_setting: 1, 0 bad
 * value, -1 not one of them), and --batch-type tokens resolved into the
 * engine's batch_size and max_batch_tokens once every setting is in
 * (EXIT_OK, or EXIT_USAGE with the reason in message). */
int app_batching_setting(translate_args *args, const char *key, const char *value);
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

/* Writes the JSON counters (summed over the translators, and each one's
 * sentences and decode time) and closes the file; decode_wall_seconds is
 * the wall time while any translator was decoding. Returns EXIT_OK, or
 * EXIT_FAILED (the counters) or EXIT_IO (the write) with the reason in
 * message. */
int translate_write_stats(const translate_args *args, const nmt_translator *const *translators,
                          int n_translators, long lines, double decode_wall_seconds,
                          stats_output *out, char *message, size_t message_size);

#endif /* NMT_APP_OPTIONS_H */
