/* attention.c: CPU global "general" attention (kernels/attention.h).
 * Per row: scores over the row's sentence positions (double dot products),
 * a max-shifted softmax in double, the context as a double-accumulated
 * weighted sum of memory rows. Positions >= src_len get weight 0. */
#include "attention.h"

#include <math.h>

void nmt_cpu_attention(int32_t n_rows, int32_t hidden, int32_t max_src, const int32_t *row_sentence,
                       const int32_t *src_len, const float *keys, const float *memory,
                       const float *query, int32_t ld_query, float *context, int32_t ld_context,
                       const nmt_half_out *context16, float *weights, int32_t *argmax)
{
    /* The probabilities of one row, kept in double for the context sum
     * (a VLA: max_src is a few hundred, the oracle allocates nothing). */
    double prob[max_src > 0 ? max_src : 1];
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t s = row_sentence[r];
        int32_t len = src_len[s];
        if (len > max_src)
            len = max_src;
        const float *sent_keys = keys + (int64_t)s * max_src * hidden;
        const float *sent_memory = memory + (int64_t)s * max_src * hidden;
        const float *q = query + (int64_t)r * ld_query;

        double max_score = -INFINITY;
        for (int32_t j = 0; j < len; j++) {
            double score = 0.0;
            for (int32_t d = 0; d < hidden; d++)
                score += (double)q[d] * (double)sent_keys[(int64_t)j * hidden + d];
            prob[j] = score;
            if (score > max_score)
                max_score = score;
        }
        double denom = 0.0;
        for (int32_t j = 0; j < len; j++) {
            prob[j] = exp(prob[j] - max_score);
            denom += prob[j];
        }
        int32_t best = len > 0 ? 0 : -1;
        for (int32_t j = 0; j < len; j++) {
            prob[j] /= denom;
            if (prob[j] > prob[best])
                best = j;
        }
        for (int32_t d = 0; d < hidden; d++) {
            double sum = 0.0;
            for (int32_t j = 0; j < len; j++)
                sum += prob[j] * (double)sent_memory[(int64_t)j * hidden + d];
            context[(int64_t)r * ld_context + d] = (float)sum;
            nmt_half_out_put(context16, r, d, (float)sum);
        }
        if (weights) {
            for (int32_t j = 0; j < max_src; j++)
                weights[(int64_t)r * max_src + j] = j < len ? (float)prob[j] : 0.0f;
        }
        if (argmax)
            argmax[r] = best;
    }
}
