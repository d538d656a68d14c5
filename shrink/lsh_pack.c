/* lsh_pack.c: the LSH index's packed copy for the direct list builder
 * (shrink/lsh_index.h, nmt_lsh_pack; the format is kernels/lsh.h's
 * packed_slots / packed_words, read by kernels/cuda/lsh_direct.cu). Host code,
 * run once when a backend takes the index. */
#include "lsh_index.h"

/* Words >= below in slot's bucket of band b (its words ascend). */
static int32_t words_from(const nmt_lsh_tables *t, int32_t b, const nmt_lsh_slot *slot,
                          int32_t below, const int32_t **first)
{
    const int32_t *bucket = t->bucket_words + (int64_t)b * t->vocab + slot->start;
    int32_t skip = 0;
    while (skip < slot->length && bucket[skip] < below)
        skip++;
    *first = bucket + skip;
    return slot->length - skip;
}

int64_t nmt_lsh_pack_vectors(const nmt_lsh_tables *t, int32_t below)
{
    if (t->vocab > 65535 || t->vocab < 1)
        return -1;
    const int64_t n_slots = (int64_t)1 << t->table_bits;
    int64_t vectors = 0;
    for (int32_t b = 0; b < t->w; b++)
        for (int64_t i = 0; i < n_slots; i++) {
            const nmt_lsh_slot *slot = &t->slots[b * n_slots + i];
            if (slot->key < 0)
                continue;
            const int32_t *first;
            vectors += (words_from(t, b, slot, below, &first) + 7) / 8;
        }
    return vectors <= 2147483647 ? vectors : -1;
}

void nmt_lsh_pack(const nmt_lsh_tables *t, int32_t below, nmt_lsh_slot *packed_slots,
                  uint16_t *packed_words)
{
    const int64_t n_slots = (int64_t)1 << t->table_bits;
    int64_t vector = 0;
    for (int32_t b = 0; b < t->w; b++)
        for (int64_t i = 0; i < n_slots; i++) {
            const nmt_lsh_slot *slot = &t->slots[b * n_slots + i];
            nmt_lsh_slot *packed = &packed_slots[b * n_slots + i];
            *packed = *slot;
            packed->skip = 0;
            if (slot->key < 0)
                continue;
            const int32_t *first;
            const int32_t n = words_from(t, b, slot, below, &first);
            const int32_t n_vectors = (n + 7) / 8;
            packed->start = (int32_t)vector;
            packed->length = n_vectors;
            uint16_t *out = packed_words + vector * 8;
            for (int32_t j = 0; j < n_vectors * 8; j++)
                out[j] = j < n ? (uint16_t)first[j] : (uint16_t)NMT_LSH_PACK_PAD;
            vector += n_vectors;
        }
}
