/* lsh.h: LSH vocabulary shrinking for the output layer (Shi, Xu & Knight,
 * "Fast Locality Sensitive Hashing for Beam Search on GPU"; seed 003).
 *
 * Per decoder step, for the attentional states f (rows of `dim` floats):
 *  1. codes:      WTA band codes of every row (eqs. 4-8): P = u * W
 *                 permutations of the dim entries; I_p = the position (0..K-1)
 *                 of the largest of the first K permuted entries (ties: the
 *                 first); band b's code = sum_{i<u} I_{b*u+i} * K^i.
 *  2. hits:       hits[r, word] += number of bands whose code equals the
 *                 word's band code in that band (eq. 9), through per-band
 *                 cuckoo tables code -> (start, length) into bucket_words
 *                 (Alg. 1). Rows with row_live[r] == 0 add nothing.
 *  3. candidates: for each group of rows (the whole batch, one sentence, or
 *                 one row), the sorted list of words w with w < n_always or
 *                 hits[r, w] >= threshold for some row r of the group (eq. 10
 *                 plus the top-T merge of eq. 3). hits is read and reset to 0.
 *  4. logits:     logits[r, j] = f_r . W_out[cand_g[j]] + b_out[cand_g[j]] for
 *                 j < count_g, g the row's group: a GEMM over the gathered
 *                 candidate rows, or per row (groups of one row) an SDDMM.
 *  5. softmax + top-K over each row's candidates (softmax_topk.h,
 *                 nmt_*_softmax_topk_candidates), ids mapped back to words.
 *
 * Invariants the engine relies on: n_always >= 4 (PAD, UNK, BOS, EOS are ids
 * 0..3), so every list starts 0, 1, ..., n_always - 1 and a special id's
 * candidate index is its word id; lists are ascending, so "ties to the lower
 * candidate index" is "ties to the lower word id", as in the full softmax.
 * The target vocabulary is stored most frequent first (python/train/preprocess.py),
 * so the T most frequent words are ids 4 .. T + 3: n_always = 4 + T.
 *
 * Groups are uniform: group g holds rows [g * rows_per_group, (g + 1) *
 * rows_per_group) (the last one may be shorter; nmt_cand_lists carries
 * rows_per_group with the lists it describes). The CPU engine, whose
 * sentences have varying row counts, calls the CPU functions once per group.
 * CPU versions are the oracles. CUDA launchers take the nmt_lsh_tables struct
 * itself in host memory, its arrays (and every other array argument) in
 * device memory; slots and hash must be 16-byte aligned (one vector load a
 * probe, one a band's hash). */
#ifndef NMT_KERNELS_LSH_H
#define NMT_KERNELS_LSH_H

#include "nmt_status.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One slot of a band's cuckoo table: key -1 is an empty slot. */
typedef struct nmt_lsh_slot {
    int32_t key;    /* band code */
    int32_t start;  /* first word of the bucket in the band's bucket_words */
    int32_t length; /* words in the bucket (>= 1) */
    int32_t skip;   /* words of the bucket below the tables' skip_below (16-byte
                       slots: one vector load per probe) */
} nmt_lsh_slot;

/* The read-only lookup structure (host or device pointers alike). */
typedef struct nmt_lsh_tables {
    int32_t k, u, w;            /* WTA parameters {K, u, W} */
    int32_t dim;                /* entries of a hashed vector (H) */
    int32_t vocab;              /* words hashed */
    int32_t table_bits;         /* each band's table has 1 << table_bits slots */
    const int32_t *perm;        /* [u * w, k]: permutation p's first K positions */
    const nmt_lsh_slot *slots;  /* [w, 1 << table_bits] */
    const uint32_t *hash;       /* [w, 4]: (a1, b1, a2, b2) of the band's h1, h2 */
    const int32_t *bucket_words; /* [w, vocab]: each band's words grouped by code,
                                    ascending id within a bucket */
    int32_t skip_below;         /* the slots' skip counts words below this (0: none;
                                   nmt_cuda_lsh_slots_skip sets them) */
    /* Optional (NULL: absent), for the direct builder: the buckets' words >=
     * packed_below as 16-bit ids (nmt_lsh_pack). */
    const nmt_lsh_slot *packed_slots; /* [w, 1 << table_bits]: as slots, with start =
                                         first vector, length = vectors, skip = 0 */
    const uint16_t *packed_words;     /* 8-word vectors, 16-byte aligned */
    int32_t packed_below;
} nmt_lsh_tables;

/* Pads a packed vector past a bucket's last word (never a word: vocab <= 65535). */
#define NMT_LSH_PACK_PAD 0xFFFFu

/* Device code calls the same hash (kernels/cuda/lsh.cu). */
#ifdef __CUDACC__
#define NMT_LSH_HOST_DEVICE __host__ __device__
#else
#define NMT_LSH_HOST_DEVICE
#endif

/* Cuckoo hash i (0 or 1) of a band: multiply-add-shift on 32 bits. Shared by
 * the builder and every lookup so that both agree bit for bit. */
static inline NMT_LSH_HOST_DEVICE uint32_t nmt_lsh_hash(const uint32_t *band_hash, int i,
                                                        int32_t key, int32_t table_bits)
{
    uint32_t x = (uint32_t)key * band_hash[2 * i] + band_hash[2 * i + 1];
    return table_bits > 0 ? x >> (32 - table_bits) : 0u;
}

/* Bucket of `code` in `band` (host tables) by the two-probe lookup: 1 and
 * (start, length) when present, 0 when no word of the band has that code.
 * The CUDA kernels probe the same slots with one 16-byte load each. */
static inline int nmt_lsh_tables_find(const nmt_lsh_tables *t, int32_t band, int32_t code,
                                      int32_t *start, int32_t *length)
{
    /* Codes are >= 0; a negative one must not match the empty key -1. */
    if (code < 0)
        return 0;
    const nmt_lsh_slot *slots = t->slots + ((size_t)band << t->table_bits);
    const uint32_t *band_hash = t->hash + (size_t)band * 4;
    for (int i = 0; i < 2; i++) {
        const nmt_lsh_slot *slot = &slots[nmt_lsh_hash(band_hash, i, code, t->table_bits)];
        if (slot->key == code) {
            *start = slot->start;
            *length = slot->length;
            return 1;
        }
    }
    return 0;
}

/* ---- 1. WTA band codes: codes[r, b] for r < n_rows, b < w ----------------- */
void nmt_cpu_lsh_codes(int32_t n_rows, const float *x, int32_t ldx, const nmt_lsh_tables *t,
                       int32_t *codes);
nmt_status nmt_cuda_lsh_codes(int32_t n_rows, const float *x, int32_t ldx,
                              const nmt_lsh_tables *t, int32_t *codes, void *stream,
                              nmt_error *err);

/* ---- 2. hit counts: hits[r, word] (ld = t->vocab) += matching bands ------- */
/* row_live: [n_rows] or NULL (all rows live). */
void nmt_cpu_lsh_hits(int32_t n_rows, const int32_t *codes, const int32_t *row_live,
                      const nmt_lsh_tables *t, int32_t *hits);

typedef enum nmt_lsh_lookup {
    NMT_LSH_LOOKUP_WARP = 0,  /* the warp walks each lane's bucket in turn (Fig. 4b) */
    NMT_LSH_LOOKUP_NAIVE = 1  /* each thread walks its own bucket (Fig. 4a) */
} nmt_lsh_lookup;

nmt_status nmt_cuda_lsh_hits(int32_t n_rows, const int32_t *codes, const int32_t *row_live,
                             const nmt_lsh_tables *t, nmt_lsh_lookup variant, int32_t *hits,
                             void *stream, nmt_error *err);

/* ---- 3. candidate lists -------------------------------------------------- */
/* The lists of a call, one per group of rows_per_group rows: row r's list is
 * group g = r / rows_per_group's, the count[g] ascending words
 * words[g * ld + j], j < count[g]. The builders (step 3) write words and
 * count; logits, softmax (softmax_topk.h) and recall only read them. */
typedef struct nmt_cand_lists {
    int32_t *words;         /* [groups, ld] */
    int64_t ld;             /* >= vocab for the builders, >= max_count for readers */
    int32_t *count;         /* [groups] */
    int32_t rows_per_group; /* >= 1 */
} nmt_cand_lists;

/* hits: [n_rows, vocab], read and reset to zero. */
void nmt_cpu_lsh_candidates(int32_t n_rows, int32_t vocab, int32_t *hits, int32_t threshold,
                            int32_t n_always, nmt_cand_lists lists);

/* Device workspace (bytes) for up to max_groups groups over vocab words. */
size_t nmt_cuda_lsh_candidates_workspace_size(int32_t max_groups, int32_t vocab);
nmt_status nmt_cuda_lsh_candidates(int32_t n_rows, int32_t vocab, int32_t *hits,
                                   int32_t threshold, int32_t n_always, nmt_cand_lists lists,
                                   void *workspace, size_t workspace_bytes, void *stream,
                                   nmt_error *err);

/* 2 + 3 without the hit matrix (kernels/cuda/lsh_direct.cu): the lists
 * nmt_cuda_lsh_hits on zero hits followed by nmt_cuda_lsh_candidates would
 * give, from the codes. A block per live row counts its matches in shared
 * memory (16-bit counters: W <= 65535, 2 * vocab bytes a block, refused with
 * NMT_STATUS_ERROR_UNSUPPORTED above the device's limit) and marks its
 * group's bitmap; the group's last row block to finish compacts the bitmap
 * into the list (one launch). The workspace (bitmaps and a counter a group,
 * nmt_cuda_lsh_direct_workspace_size) is zeroed once; every call leaves it
 * zeroed. Only words >= n_always are counted: the others are in every list
 * anyway, and since a bucket's words ascend, each bucket's walk starts at its
 * first word >= n_always (the slot's skip when t->skip_below == n_always, else
 * a binary search), so a large top-T costs the lookup nothing. Each warp walks
 * its 32 bands' buckets as one stream of loads. threshold 1 needs no counts:
 * the walk marks the bitmap directly. */
size_t nmt_cuda_lsh_direct_workspace_size(int32_t max_groups, int32_t vocab);
nmt_status nmt_cuda_lsh_candidates_direct(int32_t n_rows, const int32_t *codes,
                                          const int32_t *row_live, const nmt_lsh_tables *t,
                                          int32_t threshold, int32_t n_always,
                                          nmt_cand_lists lists, void *workspace,
                                          size_t workspace_bytes, void *stream, nmt_error *err);

/* Once, at set-up: slots[i].skip = the number of words below `below` in slot
 * i's bucket, for every slot of t (slots: t->slots, writable; device
 * pointers). The caller then sets t->skip_below = below, and the direct
 * builder skips those words without a search. below >= 0. */
nmt_status nmt_cuda_lsh_slots_skip(const nmt_lsh_tables *t, nmt_lsh_slot *slots, int32_t below,
                                   void *stream, nmt_error *err);

/* ---- 4. candidate logits: logits[r * ld + j] for first <= j < count[group(r)] */
/* Entries j < first and j >= count[group] are not written: the engine fills
 * j < first (= n_always, where every list holds word j at index j) with one
 * dense GEMM over the first rows of out_w, shared by every group. */
typedef struct nmt_lsh_logits_args {
    int32_t n_rows;
    int32_t dim;
    const float *x;       /* [n_rows, dim], rows ldx >= dim apart */
    int32_t ldx;
    const float *out_w;   /* [vocab, dim] row-major */
    const float *out_b;   /* [vocab] or NULL */
    nmt_cand_lists lists; /* read only */
    int32_t first;        /* >= 0 */
    float *logits;        /* [n_rows, ld] */
    int64_t ld;
} nmt_lsh_logits_args;

void nmt_cpu_lsh_logits(const nmt_lsh_logits_args *a);

typedef enum nmt_lsh_logits_kernel {
    NMT_LSH_LOGITS_AUTO = 0,  /* SDDMM for single rows, WARP for groups of up to 8 rows
                                 (a sentence's beam), GEMM for larger ones */
    NMT_LSH_LOGITS_GEMM = 1,  /* tiled GEMM over the gathered candidate rows of a group */
    NMT_LSH_LOGITS_SDDMM = 2, /* a warp per (row, candidate) dot product (Gale et al.) */
    NMT_LSH_LOGITS_WARP = 3   /* a warp per few candidates x 4 or 8 rows of a group */
} nmt_lsh_logits_kernel;

/* max_count: a host-side bound on every count[g] (e.g. vocab; a->lists.ld and
 * a->ld >= max_count): sizes the grid; blocks past a group's device-side count
 * return at once, so the count never comes back to the host. */
nmt_status nmt_cuda_lsh_logits(const nmt_lsh_logits_args *a, int32_t max_count,
                               nmt_lsh_logits_kernel variant, void *stream, nmt_error *err);

/* ---- evaluation: recall and candidate statistics -------------------------- */
/* For each live row r (row_live NULL: all), with full_top_ids[r, 0..b) the
 * words of the full softmax's top b: stats[0] += 1 (rows), stats[1] += 1 if
 * all b lie in the row's group list (recall hits), stats[2] += count of the
 * row's group (candidate words scored for it). Counts are accumulated
 * (int64) so a whole decode sums up on the device. */
void nmt_cpu_lsh_recall(int32_t n_rows, const int32_t *row_live, const int32_t *full_top_ids,
                        int32_t b, nmt_cand_lists lists, int64_t *stats);
nmt_status nmt_cuda_lsh_recall(int32_t n_rows, const int32_t *row_live,
                               const int32_t *full_top_ids, int32_t b, nmt_cand_lists lists,
                               unsigned long long *stats, void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
