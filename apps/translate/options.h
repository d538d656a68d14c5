/* options.h: the translate program's settings, from an INI file (inih) and
 * the command line; the command line wins. */
#ifndef NMT_TRANSLATE_OPTIONS_H
#define NMT_TRANSLATE_OPTIONS_H

#include "nmt.h"

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
    const char *stats_option; /* "--stats" or "--timing", for messages */
} translate_args;

/* Fills args from argv (and the INI file named by -c). On failure writes a
 * message into `message` and returns EXIT_USAGE. */
int translate_args_parse(int argc, char **argv, translate_args *args, char *message,
                         size_t message_size);

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

/* Writes the JSON counters and closes the file. Returns EXIT_OK, or EXIT_FAILED
 * (the counters) or EXIT_IO (the write) with the reason in message. */
int translate_write_stats(const translate_args *args, const nmt_translator *translator,
                          long lines, stats_output *out, char *message, size_t message_size);

#endif
