/* options.h: the translate program's settings, from an INI file (inih) and
 * the command line; the command line wins. */
#ifndef NMT_TRANSLATE_OPTIONS_H
#define NMT_TRANSLATE_OPTIONS_H

#include "nmt.h"

enum {
    EXIT_OK = 0,
    EXIT_BAD_LINES = 1, /* some input lines were refused; all lines have output */
    EXIT_USAGE = 2,     /* bad option or configuration file */
    EXIT_MODEL = 3,     /* the model could not be loaded */
    EXIT_FAILED = 4     /* translation failed (device error, out of memory) */
};

typedef struct translate_args {
    char model_path[1024];
    char config_path[1024];
    nmt_options engine;
    int scores;     /* prefix each line with its score and a tab */
    int progress;   /* -1 auto (when stderr is a terminal), 0 off, 1 on */
    int show_help;
    int show_version;
    char stats_path[1024]; /* --stats: JSON counters written here after the run */
} translate_args;

/* Fills args from argv (and the INI file named by -c). On failure writes a
 * message into `message` and returns EXIT_USAGE. */
int translate_args_parse(int argc, char **argv, translate_args *args, char *message,
                         size_t message_size);

void translate_print_help(const char *program);

/* Writes the --stats JSON file (stats_json.c); 0 on success. */
int translate_write_stats(const translate_args *args, const nmt_translator *translator,
                          long lines, char *message, size_t message_size);

#endif
