/* lsh_index.c: the host-built LSH index of the output layer (model/lsh_index.h;
 * Shi, Xu & Knight section 4.2.2): WTA permutations, the band codes of every
 * output row, per-band buckets of words sharing a code, and per-band cuckoo
 * tables (Pagh & Rodler, "Cuckoo hashing") mapping a code to its bucket.
 *
 * Everything random comes from one splitmix64 stream seeded by config->seed,
 * consumed in a fixed order, so an index is identical on every platform.
 * Layout, hash family and rehash policy: docs/lsh.md. */
#include "lsh_index.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

/* A cycle is declared after this many evictions of one insertion (a random
 * cuckoo table at load <= 1/2 needs O(log n) with high probability). */
#define LSH_EVICTIONS_BASE 32
#define LSH_EVICTIONS_PER_BIT 4
/* Redraws of one band's hash parameters before every table doubles. */
#define LSH_MAX_REDRAWS 16
/* Doublings before giving up: at load 1/32 a failure to place distinct keys
 * means a broken invariant (e.g. a key inserted twice), not bad luck, and
 * growing further would only exhaust memory. */
#define LSH_MAX_GROWTH 4

struct nmt_lsh_index {
    nmt_lsh_tables tables; /* points into the arrays below */
    int32_t *perm;
    nmt_lsh_slot *slots;
    uint32_t *hash;
    int32_t *bucket_words;
    int32_t *word_codes; /* [vocab, w] */
    nmt_lsh_index_info info;
};

static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform enough in [0, n) for n <= dim: the modulo bias is n / 2^64. */
static int32_t random_below(uint64_t *state, int32_t n)
{
    return (int32_t)(splitmix64_next(state) % (uint64_t)n);
}

static nmt_status check_config(const float *out_w, int32_t vocab, int32_t dim,
                               const nmt_lsh_index_config *c, nmt_error *err)
{
    if (!c || !out_w)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "lsh: %s is NULL",
                             !c ? "config" : "out_w");
    if (vocab < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "lsh: vocab=%d must be >= 1", vocab);
    if (dim < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "lsh: dim=%d must be >= 1", dim);
    if (c->k < 2 || c->k > dim)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "lsh: K=%d must be in [2, dim=%d]",
                             c->k, dim);
    if (c->u < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "lsh: u=%d must be >= 1", c->u);
    if (c->w < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "lsh: W=%d must be >= 1", c->w);
    /* K^u < 2^31 so a band code fits an int32; stop multiplying at the bound
     * so the check itself cannot overflow. */
    int64_t power = 1;
    for (int32_t i = 0; i < c->u && power < ((int64_t)1 << 31); i++)
        power *= c->k;
    if (power >= ((int64_t)1 << 31))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "lsh: K^u = %d^%d must be < 2^31 (a band code is an int32)", c->k,
                             c->u);
    /* u * K <= K^u < 2^31 here, so u * K * W < 2^62 is exact in int64. */
    if ((int64_t)c->u * c->w * c->k > INT32_MAX)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "lsh: u*W*K = %d*%d*%d permutation entries exceed 2^31 - 1", c->u,
                             c->w, c->k);
    if ((int64_t)c->w * vocab > INT32_MAX)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "lsh: W*vocab = %d*%d bucket entries exceed 2^31 - 1", c->w, vocab);
    return NMT_STATUS_OK;
}

/* perm[p, 0..K): the first K positions of a random permutation of [0, dim),
 * by K steps of a Fisher-Yates shuffle from the identity. */
static void draw_permutations(int32_t n_perms, int32_t k, int32_t dim, int32_t *positions,
                              uint64_t *rng, int32_t *perm)
{
    for (int32_t p = 0; p < n_perms; p++) {
        for (int32_t i = 0; i < dim; i++)
            positions[i] = i;
        for (int32_t i = 0; i < k; i++) {
            int32_t j = i + random_below(rng, dim - i);
            int32_t tmp = positions[i];
            positions[i] = positions[j];
            positions[j] = tmp;
            perm[(int64_t)p * k + i] = positions[i];
        }
    }
}

/* bucket_words of one band: the words sorted by code, ascending id within a
 * code. LSD radix sort on 8-bit digits (stable, and words start ascending),
 * skipping the digits above the largest code: O(vocab) per band where a
 * comparison sort would dominate the build for W = 500 bands. The band's
 * codes are first copied out of the word-major word_codes so the sort's
 * random reads stay in cache. Returns the number of distinct codes. */
static int32_t sort_band(int32_t vocab, int32_t w, int32_t band, const int32_t *word_codes,
                         int32_t *band_codes, int32_t *words, int32_t *scratch)
{
    int32_t max_code = 0;
    for (int32_t v = 0; v < vocab; v++) {
        band_codes[v] = word_codes[(int64_t)v * w + band];
        words[v] = v;
        if (band_codes[v] > max_code)
            max_code = band_codes[v];
    }
    for (int shift = 0; shift < 31 && (max_code >> shift) > 0; shift += 8) {
        int32_t offsets[257] = {0};
        for (int32_t v = 0; v < vocab; v++)
            offsets[((band_codes[words[v]] >> shift) & 255) + 1]++;
        for (int d = 0; d < 256; d++)
            offsets[d + 1] += offsets[d];
        for (int32_t v = 0; v < vocab; v++)
            scratch[offsets[(band_codes[words[v]] >> shift) & 255]++] = words[v];
        memcpy(words, scratch, (size_t)vocab * sizeof *words);
    }
    int32_t keys = 0;
    for (int32_t v = 0; v < vocab; v++)
        keys += v == 0 || band_codes[words[v]] != band_codes[words[v - 1]];
    return keys;
}

/* One cuckoo insertion: place `item` at h1, evict the occupant to its other
 * slot, and so on. 0 when the chain exceeds the bound (a likely cycle); the
 * item then in hand is dropped, which is fine: the caller rebuilds the band. */
static int cuckoo_insert(nmt_lsh_slot *slots, const uint32_t *band_hash, int32_t table_bits,
                         nmt_lsh_slot item)
{
    int32_t max_evictions = LSH_EVICTIONS_BASE + LSH_EVICTIONS_PER_BIT * table_bits;
    uint32_t pos = nmt_lsh_hash(band_hash, 0, item.key, table_bits);
    for (int32_t i = 0; i <= max_evictions; i++) {
        nmt_lsh_slot evicted = slots[pos];
        slots[pos] = item;
        if (evicted.key == -1)
            return 1;
        item = evicted;
        uint32_t h1 = nmt_lsh_hash(band_hash, 0, item.key, table_bits);
        pos = pos == h1 ? nmt_lsh_hash(band_hash, 1, item.key, table_bits) : h1;
    }
    return 0;
}

static void draw_band_hash(uint64_t *rng, uint32_t *band_hash)
{
    for (int i = 0; i < 2; i++) {
        band_hash[2 * i] = (uint32_t)splitmix64_next(rng) | 1u; /* odd multiplier */
        band_hash[2 * i + 1] = (uint32_t)splitmix64_next(rng);
    }
}

/* Fills one band's table from its sorted bucket_words. 0 on a cycle. */
static int build_band_table(nmt_lsh_index *index, int32_t band)
{
    const nmt_lsh_tables *t = &index->tables;
    size_t n_slots = (size_t)1 << t->table_bits;
    nmt_lsh_slot *slots = index->slots + (size_t)band * n_slots;
    const uint32_t *band_hash = index->hash + (size_t)band * 4;
    const int32_t *words = index->bucket_words + (int64_t)band * t->vocab;
    for (size_t s = 0; s < n_slots; s++)
        slots[s] = (nmt_lsh_slot){.key = -1, .start = 0, .length = 0, .skip = 0};
    for (int32_t start = 0; start < t->vocab;) {
        int32_t code = index->word_codes[(int64_t)words[start] * t->w + band];
        int32_t end = start + 1;
        while (end < t->vocab && index->word_codes[(int64_t)words[end] * t->w + band] == code)
            end++;
        nmt_lsh_slot item = {.key = code, .start = start, .length = end - start, .skip = 0};
        if (!cuckoo_insert(slots, band_hash, t->table_bits, item))
            return 0;
        start = end;
    }
    return 1;
}

int32_t nmt_lsh_first_table_bits(int32_t max_keys)
{
    int32_t table_bits = 1;
    while (((int64_t)1 << table_bits) < 2 * (int64_t)max_keys)
        table_bits++;
    return table_bits;
}

/* All bands' tables: a band that cycles gets fresh hash parameters; after
 * LSH_MAX_REDRAWS failures of one band every table doubles and all bands are
 * rebuilt (a cycle at load <= 1/2 is rare, so this is a safety net). */
static nmt_status build_tables(nmt_lsh_index *index, int32_t max_keys, uint64_t *rng,
                               nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_lsh_tables *t = &index->tables;
    int32_t table_bits = nmt_lsh_first_table_bits(max_keys);
    /* The hash keeps the top table_bits of 32 bits: stay well inside. */
    int32_t max_table_bits = table_bits + LSH_MAX_GROWTH < 30 ? table_bits + LSH_MAX_GROWTH : 30;
    for (;;) {
        if (table_bits > max_table_bits)
            return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                                 "lsh: cuckoo tables for %d keys failed up to 2^%d slots",
                                 max_keys, max_table_bits);
        free(index->slots);
        NMT_ALLOC(index->slots, (size_t)t->w << table_bits);
        t->table_bits = table_bits;
        int grown = 0;
        for (int32_t band = 0; band < t->w && !grown; band++) {
            int32_t redraws = 0;
            draw_band_hash(rng, index->hash + (size_t)band * 4);
            while (!build_band_table(index, band)) {
                index->info.rehashes++;
                if (++redraws >= LSH_MAX_REDRAWS) {
                    grown = 1;
                    break;
                }
                draw_band_hash(rng, index->hash + (size_t)band * 4);
            }
        }
        if (!grown)
            break;
        table_bits++;
    }
    t->slots = index->slots;
    t->hash = index->hash;
cleanup:
    return status;
}

nmt_status nmt_lsh_index_build(const float *out_w, int32_t vocab, int32_t dim,
                               const nmt_lsh_index_config *config, nmt_lsh_index **index_out,
                               nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_lsh_index *index = NULL;
    int32_t *positions = NULL, *scratch = NULL, *band_codes = NULL;
    if (!index_out)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "lsh: index is NULL");
    *index_out = NULL;
    NMT_TRY(check_config(out_w, vocab, dim, config, err));

    int32_t k = config->k, u = config->u, w = config->w;
    uint64_t rng = config->seed;
    NMT_ALLOC(index, 1);
    NMT_ALLOC(index->perm, (size_t)u * w * k);
    NMT_ALLOC(index->hash, (size_t)w * 4);
    NMT_ALLOC(index->bucket_words, (size_t)w * vocab);
    NMT_ALLOC(index->word_codes, (size_t)vocab * w);
    NMT_ALLOC(positions, dim);
    NMT_ALLOC(scratch, vocab);
    NMT_ALLOC(band_codes, vocab);

    nmt_lsh_tables *t = &index->tables;
    *t = (nmt_lsh_tables){.k = k, .u = u, .w = w, .dim = dim, .vocab = vocab,
                          .perm = index->perm, .bucket_words = index->bucket_words};
    draw_permutations(u * w, k, dim, positions, &rng, index->perm);
    nmt_cpu_lsh_codes(vocab, out_w, dim, t, index->word_codes);

    int32_t max_keys = 0;
    for (int32_t band = 0; band < w; band++) {
        int32_t keys = sort_band(vocab, w, band, index->word_codes, band_codes,
                                 index->bucket_words + (int64_t)band * vocab, scratch);
        if (keys > max_keys)
            max_keys = keys;
    }
    NMT_TRY(build_tables(index, max_keys, &rng, err));

    /* The largest bucket, from the finished tables. */
    size_t n_slots = (size_t)w << t->table_bits;
    for (size_t s = 0; s < n_slots; s++)
        if (index->slots[s].key != -1 && index->slots[s].length > index->info.max_bucket)
            index->info.max_bucket = index->slots[s].length;
    index->info.max_keys = max_keys;
    index->info.bytes = (int64_t)u * w * k * (int64_t)sizeof(int32_t) +
                        (int64_t)n_slots * (int64_t)sizeof(nmt_lsh_slot) +
                        (int64_t)w * 4 * (int64_t)sizeof(uint32_t) +
                        (int64_t)w * vocab * (int64_t)sizeof(int32_t);
    /* The words' codes only serve the build: [vocab, W] would double the
     * host memory of the index (100 MB at 50k words and W = 500). */
    free(index->word_codes);
    index->word_codes = NULL;
    *index_out = index;
    index = NULL;
cleanup:
    free(positions);
    free(scratch);
    free(band_codes);
    nmt_lsh_index_free(index);
    return status;
}

void nmt_lsh_index_free(nmt_lsh_index *index)
{
    if (!index)
        return;
    free(index->perm);
    free(index->slots);
    free(index->hash);
    free(index->bucket_words);
    free(index->word_codes);
    free(index);
}

const nmt_lsh_tables *nmt_lsh_index_tables(const nmt_lsh_index *index)
{
    return &index->tables;
}

nmt_lsh_index_info nmt_lsh_index_describe(const nmt_lsh_index *index)
{
    return index->info;
}

