/* logit_rules.cu: the logit rules on the device (cuda_rules.h), the twin of
 * decoder/logit_rules.c: CTranslate2's logits processors (repetition
 * penalty, no-repeat n-grams, suppressed sequences and tokens, the minimum
 * length), whose rules are decoder/logit_rules.h's.
 *
 * One block a row, its logits edited in place before the search's top-K
 * renormalizes them: thread 0 reads the row's hypothesis back from the
 * history (walking the parent slots) into the row's scratch; then the
 * repetition penalty rescales each word the hypothesis holds once (the
 * thread of its first occurrence: no two threads write one logit), and the
 * bans write -inf (threads over the n-gram starts and the suppressed
 * sequences). A done sentence's rows, dead slots and a sentence's forced
 * steps (forced_tokens.h) are left as they are. */
#include "cuda_rules.h"

#include "cuda_check.h"
#include "forced_tokens.h"
#include "logit_rules.h"
#include "search_params.h"

#include <math.h>

static constexpr int kRuleThreads = 128;

static __global__ void __launch_bounds__(kRuleThreads)
    logit_rules_kernel(nmt_beam_device b, nmt_cuda_rules r, const int32_t *act, float *logits,
                       int32_t ld, int32_t vocab)
{
    const int32_t row = blockIdx.x, p = row / b.beam, k = row % b.beam, s = act[p];
    const int32_t step = *b.step - b.start[s], len = step - 1;
    if (b.done[s] || !(b.scores[(int64_t)s * b.beam + k] > -INFINITY) ||
        nmt_rule_forced_step(&b.forced, s, step))
        return; /* uniform across the block */
    int32_t *tokens = r.tokens + (int64_t)row * r.tokens_ld;
    float *z = logits + (int64_t)row * ld;
    if (threadIdx.x == 0) {
        int32_t slot = k;
        for (int32_t t = len - 1; t >= 0; t--) {
            const int64_t e = ((int64_t)s * b.hist_len + t) * b.beam + slot;
            tokens[t] = b.hist_token[e];
            slot = b.hist_parent[e];
        }
    }
    __syncthreads();
    if (r.repetition_penalty != 0.0f) {
        for (int32_t i = threadIdx.x; i < len; i += blockDim.x) {
            const int32_t w = tokens[i];
            bool first = w >= 0 && w < vocab;
            for (int32_t j = 0; first && j < i; j++)
                first = tokens[j] != w;
            if (first)
                z[w] = nmt_rule_repetition(z[w], r.repetition_penalty);
        }
        __syncthreads(); /* the bans below win over a rescaled logit */
    }
    for (int32_t i = threadIdx.x; r.no_repeat_ngram_size > 0 && i < len; i += blockDim.x) {
        const int32_t w = nmt_rule_ngram_ban(tokens, len, r.no_repeat_ngram_size, i);
        if (w >= 0 && w < vocab)
            z[w] = -INFINITY;
    }
    for (int32_t q = threadIdx.x; q < r.n_suppress; q += blockDim.x) {
        const int32_t at = r.suppress_at[q];
        const int32_t w = nmt_rule_suppressed(tokens, len, r.suppress + at + 1, r.suppress[at]);
        if (w >= 0 && w < vocab)
            z[w] = -INFINITY;
    }
    if (threadIdx.x == 0) {
        if (r.ban_id >= 0 && r.ban_id < vocab)
            z[r.ban_id] = -INFINITY;
        if (nmt_rule_eos_banned(step, r.min_length, b.max_len[s]))
            z[r.eos_id] = -INFINITY;
    }
}

extern "C" nmt_status nmt_cuda_logit_rules(const nmt_beam_device *b, const nmt_cuda_rules *r,
                                           int32_t n_active, const int32_t *act, float *logits,
                                           int32_t ld, int32_t vocab, void *stream,
                                           nmt_error *err)
{
    NMT_ARG_CHECK(b && r && act && logits && n_active >= 1 && b->beam >= 1 && vocab >= 1 &&
                  ld >= vocab);
    NMT_ARG_CHECK(r->tokens && r->tokens_ld >= b->hist_len && r->eos_id >= 0 &&
                  r->eos_id < vocab);
    NMT_ARG_CHECK(r->n_suppress == 0 || (r->suppress && r->suppress_at));
    const int64_t rows = (int64_t)n_active * b->beam;
    logit_rules_kernel<<<(unsigned)rows, kRuleThreads, 0, (cudaStream_t)stream>>>(
        *b, *r, act, logits, ld, vocab);
    NMT_LAUNCH_RETURN("logit_rules_kernel");
    return NMT_STATUS_OK;
}
