/* translator.h: private to engine/: what the service (engine/service.c)
 * needs from a translator beyond the public API: translating with search
 * options other than the translator's own, per batch. */
#ifndef NMT_TRANSLATOR_H
#define NMT_TRANSLATOR_H

#include "nmt.h"

/* The search options a request may vary (the rest is the translator's). */
typedef struct nmt_search_overrides {
    int beam_size, n_best;
    float alpha, max_len_a;
    int max_len_b;
} nmt_search_overrides;

/* The translator's own. */
nmt_search_overrides nmt_translator_search(const nmt_translator *translator);

/* Refuses overrides the translator cannot run (beam above its own, ranges
 * as nmt_options'), naming the field. */
nmt_status nmt_translator_check_search(const nmt_translator *translator,
                                       const nmt_search_overrides *overrides, nmt_error *err);

/* nmt_translate_batch with overrides (NULL: the translator's). */
nmt_status nmt_translator_run(nmt_translator *translator, const char *const *lines, int n_lines,
                              const nmt_search_overrides *overrides, nmt_result *results,
                              nmt_error *err);

#endif /* NMT_TRANSLATOR_H */
