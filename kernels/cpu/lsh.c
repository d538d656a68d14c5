/* lsh.c: CPU LSH vocabulary shrinking (kernels/lsh.h; Shi, Xu & Knight, "Fast
 * Locality Sensitive Hashing for Beam Search on GPU", sections 4.2.1-4.2.3):
 * WTA band codes (eqs. 4-8), cuckoo-table hit counts (eq. 9, Alg. 1),
 * thresholded candidate lists (eq. 10 plus the always-kept frequent words),
 * candidate logits and recall statistics. These are the oracles of the CUDA
 * kernels, so every step is the plainest loop that states the definition. */
#include "lsh.h"

#include <math.h>

/* The WTA code I_p of permutation p: position (0..K-1) of the largest of the
 * first K permuted entries. Strict '>' against a running best that starts at
 * -inf keeps the first of equal values and never selects a NaN, even in
 * position 0 (a NaN compares false both ways); with no value above -inf
 * (all -inf or NaN) the code is 0. */
static int32_t wta_index(const float *x, const int32_t *perm_p, int32_t k)
{
    int32_t best = 0;
    float best_value = -INFINITY;
    for (int32_t i = 0; i < k; i++)
        if (x[perm_p[i]] > best_value) {
            best = i;
            best_value = x[perm_p[i]];
        }
    return best;
}

void nmt_cpu_lsh_codes(int32_t n_rows, const float *x, int32_t ldx, const nmt_lsh_tables *t,
                       int32_t *codes)
{
    for (int32_t r = 0; r < n_rows; r++) {
        const float *row = x + (int64_t)r * ldx;
        for (int32_t b = 0; b < t->w; b++) {
            /* code = sum_i I_{b*u+i} * K^i; K^u < 2^31 (checked at build). */
            int32_t code = 0, place = 1;
            for (int32_t i = 0; i < t->u; i++) {
                const int32_t *perm_p = t->perm + ((int64_t)b * t->u + i) * t->k;
                code += wta_index(row, perm_p, t->k) * place;
                place *= t->k;
            }
            codes[(int64_t)r * t->w + b] = code;
        }
    }
}

void nmt_cpu_lsh_hits(int32_t n_rows, const int32_t *codes, const int32_t *row_live,
                      const nmt_lsh_tables *t, int32_t *hits)
{
    for (int32_t r = 0; r < n_rows; r++) {
        if (row_live && !row_live[r])
            continue;
        int32_t *row_hits = hits + (int64_t)r * t->vocab;
        for (int32_t b = 0; b < t->w; b++) {
            int32_t start, length;
            if (!nmt_lsh_tables_find(t, b, codes[(int64_t)r * t->w + b], &start, &length))
                continue;
            const int32_t *bucket = t->bucket_words + (int64_t)b * t->vocab + start;
            for (int32_t j = 0; j < length; j++)
                row_hits[bucket[j]] += 1;
        }
    }
}

void nmt_cpu_lsh_candidates(int32_t n_rows, int32_t vocab, int32_t *hits, int32_t threshold,
                            int32_t n_always, nmt_cand_lists lists)
{
    const int32_t rows_per_group = lists.rows_per_group;
    int32_t n_groups = n_rows > 0 ? (n_rows + rows_per_group - 1) / rows_per_group : 0;
    for (int32_t g = 0; g < n_groups; g++) {
        int32_t first = g * rows_per_group;
        int32_t last = first + rows_per_group < n_rows ? first + rows_per_group : n_rows;
        int32_t *list = lists.words + (int64_t)g * lists.ld;
        int32_t n = 0;
        for (int32_t w = 0; w < vocab; w++) {
            int keep = w < n_always;
            for (int32_t r = first; r < last && !keep; r++)
                keep = hits[(int64_t)r * vocab + w] >= threshold;
            if (keep)
                list[n++] = w;
        }
        lists.count[g] = n;
        /* Reset so the next step accumulates from zero without a memset. */
        for (int64_t i = (int64_t)first * vocab; i < (int64_t)last * vocab; i++)
            hits[i] = 0;
    }
}

void nmt_cpu_lsh_logits(const nmt_lsh_logits_args *a)
{
    const nmt_cand_lists *lists = &a->lists;
    for (int32_t r = 0; r < a->n_rows; r++) {
        int32_t g = r / lists->rows_per_group;
        const float *row = a->x + (int64_t)r * a->ldx;
        const int32_t *list = lists->words + (int64_t)g * lists->ld;
        for (int32_t j = a->first > 0 ? a->first : 0; j < lists->count[g]; j++) {
            const float *w_row = a->out_w + (int64_t)list[j] * a->dim;
            double sum = a->out_b ? (double)a->out_b[list[j]] : 0.0;
            for (int32_t p = 0; p < a->dim; p++)
                sum += (double)row[p] * (double)w_row[p];
            a->logits[(int64_t)r * a->ld + j] = (float)sum;
        }
    }
}

/* Binary search in an ascending list. */
static int list_contains(const int32_t *list, int32_t n, int32_t word)
{
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (list[mid] < word)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && list[lo] == word;
}

void nmt_cpu_lsh_recall(int32_t n_rows, const int32_t *row_live, const int32_t *full_top_ids,
                        int32_t b, nmt_cand_lists lists, int64_t *stats)
{
    for (int32_t r = 0; r < n_rows; r++) {
        if (row_live && !row_live[r])
            continue;
        int32_t g = r / lists.rows_per_group;
        const int32_t *list = lists.words + (int64_t)g * lists.ld;
        int all_in = 1;
        for (int32_t i = 0; i < b && all_in; i++)
            all_in = list_contains(list, lists.count[g], full_top_ids[(int64_t)r * b + i]);
        stats[0] += 1;
        stats[1] += all_in;
        stats[2] += lists.count[g];
    }
}
