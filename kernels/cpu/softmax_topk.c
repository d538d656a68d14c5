/* softmax_topk.c: CPU log-softmax and softmax + top-K (kernels/softmax_topk.h),
 * over the whole vocabulary or over each row's LSH candidate list.
 * lse = max + log(sum exp(z - max)) in double. Top-K keeps a sorted list by
 * insertion: candidates are ranked by their logit z (the order of z - lse),
 * larger first, ties to the lower word id (words are visited in increasing
 * id, so an equal value never displaces an earlier word). Every word counts
 * in lse; `excluded` only keeps words out of the list, checked lazily when a
 * word would enter it (so excluding almost the whole vocabulary stays cheap). */
#include "softmax_topk.h"

#include <math.h>

static double row_lse(int32_t vocab, const float *z)
{
    double max_z = -INFINITY;
    for (int32_t w = 0; w < vocab; w++)
        if ((double)z[w] > max_z)
            max_z = (double)z[w];
    if (isinf(max_z))
        return max_z; /* all -inf (or +inf present): nothing finite to normalize */
    double sum = 0.0;
    for (int32_t w = 0; w < vocab; w++)
        sum += exp((double)z[w] - max_z);
    return max_z + log(sum);
}

void nmt_cpu_log_softmax(int32_t n_rows, int32_t vocab, const float *logits, int32_t ld,
                         float *log_probs)
{
    for (int32_t r = 0; r < n_rows; r++) {
        const float *z = logits + (int64_t)r * ld;
        double lse = row_lse(vocab, z);
        for (int32_t w = 0; w < vocab; w++)
            log_probs[(int64_t)r * vocab + w] = (float)((double)z[w] - lse);
    }
}

static int is_excluded(int32_t w, const int32_t *excluded, int32_t n_excluded)
{
    for (int32_t e = 0; e < n_excluded; e++)
        if (excluded[e] == w)
            return 1;
    return 0;
}

/* Softmax + top-K of one row of n logits z. words: the word of each logit
 * (NULL: logit j is word j); `excluded` and the output ids are words. Visiting
 * j in increasing order and ranking by z with strict '>' gives ties to the
 * lower index, which is the lower word id since candidate lists ascend. */
static void row_softmax_topk(int32_t n, const float *z, const int32_t *words, int32_t k,
                             const int32_t *excluded, int32_t n_excluded, float *values,
                             int32_t *ids, float *lse)
{
    double row_lse_value = row_lse(n, z);

    /* ids[0..count) sorted by z descending; values hold z until the end. */
    int32_t count = 0;
    for (int32_t j = 0; j < n && k > 0; j++) {
        if (count == k && !(z[j] > values[k - 1]))
            continue;
        int32_t word = words ? words[j] : j;
        if (is_excluded(word, excluded, n_excluded))
            continue;
        int32_t pos = count < k ? count : k - 1;
        while (pos > 0 && z[j] > values[pos - 1]) {
            values[pos] = values[pos - 1];
            ids[pos] = ids[pos - 1];
            pos--;
        }
        values[pos] = z[j];
        ids[pos] = word;
        if (count < k)
            count++;
    }
    for (int32_t i = 0; i < count; i++)
        values[i] = (float)((double)values[i] - row_lse_value);
    for (int32_t i = count; i < k; i++) {
        values[i] = -INFINITY;
        ids[i] = -1;
    }
    if (lse)
        *lse = (float)row_lse_value;
}

void nmt_cpu_softmax_topk(int32_t n_rows, int32_t vocab, const float *logits, int32_t ld,
                          int32_t k, const int32_t *excluded, int32_t n_excluded,
                          float *top_values, int32_t *top_ids, float *lse)
{
    for (int32_t r = 0; r < n_rows; r++)
        row_softmax_topk(vocab, logits + (int64_t)r * ld, NULL, k, excluded, n_excluded,
                         top_values + (int64_t)r * k, top_ids + (int64_t)r * k,
                         lse ? lse + r : NULL);
}

void nmt_cpu_softmax_topk_candidates(int32_t n_rows, const float *logits, int64_t ld,
                                     nmt_cand_lists lists, int32_t k, const int32_t *excluded,
                                     int32_t n_excluded, float *top_values, int32_t *top_ids,
                                     float *lse)
{
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t g = r / lists.rows_per_group;
        row_softmax_topk(lists.count[g], logits + r * ld, lists.words + g * lists.ld, k, excluded,
                         n_excluded, top_values + (int64_t)r * k, top_ids + (int64_t)r * k,
                         lse ? lse + r : NULL);
    }
}
