/* search_params.h: what a search looks for (the beam, the n-best list, the
 * length penalty and the length limit): one struct with one validator. The
 * public options, a request's overrides, the CPU search and the CUDA search
 * all hold and check these fields here, so a new decoding option is added
 * in one place. Plain C. */
#ifndef NMT_SEARCH_PARAMS_H
#define NMT_SEARCH_PARAMS_H

#include "nmt_status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest beam any search takes (the CUDA kernels' shared arrays). */
#define NMT_SEARCH_MAX_BEAM 256

typedef struct nmt_search_params {
    int32_t beam_size; /* B, 1..max_beam */
    int32_t n_best;    /* N, 1..B */
    float alpha;       /* length penalty exponent, 0..10 */
    float max_len_a;   /* max target length floor(a * S + b), EOS counted: a in 0..100, */
    int32_t max_len_b; /* b in 0..10000, not both 0 */
    /* forced tokens (scoring, prefixes): docs/decoding.md, "Target prefixes" */
    int32_t return_alternatives; /* 1: a line's n_best hypotheses are the n_best words that
                                    can follow its target prefix (none: at the first
                                    position), EOS excepted, each continued by the beam
                                    (CTranslate2's return_alternatives); 0 (default): the
                                    beam's n-best list */
} nmt_search_params;

/* Refuses params outside the ranges above with NMT_STATUS_ERROR_ARGUMENT and
 * a message that names the field; max_beam is the caller's capacity (at most
 * NMT_SEARCH_MAX_BEAM). */
nmt_status nmt_search_params_check(const nmt_search_params *params, int32_t max_beam,
                                   nmt_error *err);

/* Whether a and b ask for the same search (requests batch together). */
int nmt_search_params_equal(const nmt_search_params *a, const nmt_search_params *b);

#ifdef __cplusplus
}
#endif

#endif /* NMT_SEARCH_PARAMS_H */
