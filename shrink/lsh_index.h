/* lsh_index.h: the LSH index of a model's output layer (kernels/lsh.h), built
 * on the host by a backend created with LSH on (nmt_shrink_index_build).
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

/* The cuckoo tables' first size, 2^bits slots a band for a band of at most
 * max_keys codes: the least with at least two slots a key (the build doubles
 * it when insertion cycles). The index build and the device-memory estimate
 * (model/cuda/output_layer.c) both size by it. */
int32_t nmt_lsh_first_table_bits(int32_t max_keys);


/* Once, when a backend takes the index (host tables, host memory; the
 * packer is shrink/lsh_pack.c): the direct builder's packed copy. Each
 * bucket's words >= below, ascending, as 16-bit ids in whole 8-word vectors (16 bytes, padded with NMT_LSH_PACK_PAD), the buckets of a band one
 * after another; packed_slots is t->slots with start = the bucket's first
 * vector, length = its vectors (0 when no word is >= below), skip = 0, so one
 * cuckoo probe pair finds it. Half the bytes of the int32 buckets and none of
 * the words below `below` (a top-T of thousands): the Europarl index at T =
 * 2000 fits the H100's L2, and a thread loads 8 words at a time.
 * nmt_lsh_pack_vectors: the vectors needed, or -1 when the tables cannot be
 * packed (vocab > 65535, or more than 2^31 - 1 vectors). nmt_lsh_pack fills
 * packed_slots [w << table_bits] and packed_words [8 * vectors]. */
int64_t nmt_lsh_pack_vectors(const nmt_lsh_tables *t, int32_t below);
void nmt_lsh_pack(const nmt_lsh_tables *t, int32_t below, nmt_lsh_slot *packed_slots,
                  uint16_t *packed_words);

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
