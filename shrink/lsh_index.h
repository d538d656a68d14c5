/* lsh_index.h: the LSH index of a model's output layer (kernels/lsh.h), built
 * on the host when a translator is created with LSH on.
 *
 * Built from W_out [vocab, dim]: P = u * W random partial permutations (the
 * first K positions of a permutation of the dim entries, from `seed`), the
 * WTA band codes of every output row (nmt_cpu_lsh_codes), each band's words
 * grouped by code into bucket_words, and one cuckoo table per band mapping a
 * code to its bucket (start, length): two hash functions, so a lookup probes
 * at most two slots. Insertion evicts the occupant to its other slot; after
 * too many evictions (a cycle) the band is rebuilt with fresh hash
 * parameters, and the tables double in size after repeated failures. */
#ifndef NMT_LSH_INDEX_H
#define NMT_LSH_INDEX_H

#include "lsh.h"
#include "nmt_status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_lsh_index_config {
    int32_t k, u, w; /* K >= 2, K <= dim, u >= 1, K^u < 2^31, W >= 1 */
    uint64_t seed;   /* permutations and hash parameters */
} nmt_lsh_index_config;

typedef struct nmt_lsh_index nmt_lsh_index;

/* Refuses parameters outside the ranges above (NMT_STATUS_ERROR_ARGUMENT,
 * naming the parameter). */
nmt_status nmt_lsh_index_build(const float *out_w, int32_t vocab, int32_t dim,
                               const nmt_lsh_index_config *config, nmt_lsh_index **index,
                               nmt_error *err);
void nmt_lsh_index_free(nmt_lsh_index *index);

/* Host pointers into the index (valid until it is freed). */
const nmt_lsh_tables *nmt_lsh_index_tables(const nmt_lsh_index *index);


/* Build statistics: rebuilds after a cuckoo cycle, the most distinct codes in
 * one band, and the largest bucket. */
typedef struct nmt_lsh_index_info {
    int32_t rehashes, max_keys, max_bucket;
    int64_t bytes; /* perm + slots + hash + bucket_words */
} nmt_lsh_index_info;
nmt_lsh_index_info nmt_lsh_index_describe(const nmt_lsh_index *index);


#ifdef __cplusplus
}
#endif

#endif /* NMT_LSH_INDEX_H */
