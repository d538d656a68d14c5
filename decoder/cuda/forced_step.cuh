/* forced_step.cuh: forced tokens in the GPU's beam step (beam_step.cu), the
 * rules of decoder/forced_tokens.h as decoder/forced_search.c applies them
 * on the host: at a sentence's forced step its one candidate is slot 0's
 * forced word, its log p the row's logit minus the row's log-sum-exp (what
 * the top-K's values are), or at its alternative's step the alternative's
 * entry of slot 0's 2B best words. The other slots offer nothing. */
#ifndef NMT_DECODER_CUDA_FORCED_STEP_CUH
#define NMT_DECODER_CUDA_FORCED_STEP_CUH

#include "beam_step.h"
#include "forced_tokens.h"

/* Sentence s at its own step `step`: 0 when the step is free; 1 when it is
 * forced, with *word slot 0's one word (-1: none) and *value its log p.
 * logits0 and lse0: slot 0's row of logits (columns are words: the full
 * softmax) and its log-sum-exp (read only at a forced word); values0 and
 * words0: its best words, n of them, best first. */
static __device__ __forceinline__ int forced_choice(const nmt_beam_device &b, int32_t s,
                                                    int32_t step, const float *logits0,
                                                    const float *lse0, const float *values0,
                                                    const int32_t *words0, int32_t n,
                                                    int32_t *word, float *value)
{
    const nmt_forced_tokens &f = b.forced;
    if (!f.offset)
        return 0;
    const int32_t first = f.offset[s], n_forced = f.offset[s + 1] - first;
    const int32_t w = nmt_rule_forced_word(f.ids + first, n_forced, step);
    if (w >= 0) {
        *word = w;
        *value = __fsub_rn(logits0[w], *lse0);
        return 1;
    }
    const int32_t k = nmt_rule_alternative_rank(f.alternative ? f.alternative[s] : -1, n_forced,
                                                step);
    if (k < 0)
        return 0;
    const int32_t at = nmt_rule_alternative_at(words0, n, b.eos_id, k);
    *word = at >= 0 ? words0[at] : -1;
    *value = at >= 0 ? values0[at] : -INFINITY;
    return 1;
}

#endif /* NMT_DECODER_CUDA_FORCED_STEP_CUH */
