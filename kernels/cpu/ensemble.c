/* ensemble.c: the CPU oracle of kernels/ensemble.h: an ensemble step's
 * weighted sum of log-softmaxes, accumulated in double in member order, and
 * the top-K's values read back from the scores. */
#include "ensemble.h"

#include <math.h>

void nmt_cpu_ensemble_log_probs(int32_t n_rows, int32_t vocab, const nmt_ensemble_members *m,
                                float *out, int32_t ld_out)
{
    for (int32_t r = 0; r < n_rows; r++) {
        float *o = out + (int64_t)r * ld_out;
        for (int32_t w = 0; w < vocab; w++) {
            double sum = 0.0;
            for (int32_t i = 0; i < m->n; i++) {
                const nmt_ensemble_member *e = &m->member[i];
                if (e->weight == 0.0f)
                    continue;
                const double lse = e->lse ? (double)e->lse[r] : 0.0;
                sum += (double)e->weight * ((double)e->logits[(int64_t)r * e->ld + w] - lse);
            }
            o[w] = (float)sum;
        }
    }
}

void nmt_cpu_gather_top_values(int32_t n_rows, int32_t k, const float *scores, int32_t ld,
                               const int32_t *ids, float *values)
{
    for (int64_t i = 0; i < (int64_t)n_rows * k; i++) {
        const int32_t id = ids[i];
        values[i] = id >= 0 ? scores[(i / k) * ld + id] : -INFINITY;
    }
}
