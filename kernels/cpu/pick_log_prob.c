/* pick_log_prob.c: the CPU oracle of pick_log_prob.h. */
#include "pick_log_prob.h"

#include <math.h>

void nmt_cpu_pick_log_prob(int32_t rows, int32_t cols, const float *logits, int32_t ld,
                           const int32_t *words, float *out)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *x = logits + (int64_t)r * ld;
        double max = -INFINITY, sum = 0.0;
        for (int32_t j = 0; j < cols; j++)
            max = x[j] > max ? x[j] : max;
        for (int32_t j = 0; j < cols; j++)
            sum += exp((double)x[j] - max);
        const int32_t w = words[r];
        out[r] = w >= 0 && w < cols ? (float)((double)x[w] - (max + log(sum))) : NAN;
    }
}
