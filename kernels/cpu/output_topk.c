/* output_topk.c: the CPU oracle of output_topk.h. */
#include "output_topk.h"

#include "half.h"
#include "softmax_topk.h"

void nmt_cpu_output_topk(const nmt_output_topk_args *a, float *z_row)
{
    for (int32_t r = 0; r < a->n_rows; r++) {
        const uint16_t *x = a->x + (int64_t)r * a->ldx;
        for (int32_t j = 0; j < a->vocab; j++) {
            const uint16_t *w = a->w + (int64_t)j * a->ldw;
            double sum = 0.0;
            for (int32_t p = 0; p < a->k; p++)
                sum += (double)nmt_half_widen(a->kind, x[p]) *
                       (double)nmt_half_widen(a->kind, w[p]);
            z_row[j] = (float)sum + a->bias[j];
        }
        if (a->keep)
            a->keep[(int64_t)r * a->ld_keep + a->keep_word] = z_row[a->keep_word];
        nmt_cpu_softmax_topk(1, a->vocab, z_row, a->vocab, a->top_k, a->excluded, a->n_excluded,
                             a->top_values + (int64_t)r * a->top_k,
                             a->top_ids + (int64_t)r * a->top_k, a->lse + r);
    }
}
