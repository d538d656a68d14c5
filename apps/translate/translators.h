/* translators.h: translate's translators (translators.c), with a label
 * each for the messages ("CUDA device N", "CPU worker N"). */
#ifndef NMT_TRANSLATE_TRANSLATORS_H
#define NMT_TRANSLATE_TRANSLATORS_H

#include "nmt.h"
#include "options.h"

enum { TRANSLATE_MAX_TRANSLATORS = 64 };

typedef struct translate_translators {
    nmt_translator *translators[TRANSLATE_MAX_TRANSLATORS];
    char labels[TRANSLATE_MAX_TRANSLATORS][48];
    int n;
} translate_translators;

/* How many the run makes: 0 for --dry-run, one a device of --devices (all:
 * the visible ones), --workers on the CPU, else 1. */
int translate_translators_planned(const translate_args *args);

/* Creates them (CUDA devices in parallel). EXIT_OK, or the exit status
 * with the reason printed; what was made is in *out either way, for
 * translate_free_translators. */
int translate_create_translators(const translate_args *args, const nmt_model *model,
                                 translate_translators *out);
void translate_free_translators(translate_translators *translators);

#endif /* NMT_TRANSLATE_TRANSLATORS_H */
