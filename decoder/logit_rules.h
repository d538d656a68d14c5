/* logit_rules.h: the rules of random sampling, the logit rules and the
 * coverage penalty (docs/decoding.md) that both searches follow, the CPU's
 * (decoder/logit_rules.c, decoder/beam_search.c) and the GPU's
 * (decoder/cuda/logit_rules.cu, decoder/cuda/sample_step.cu,
 * decoder/cuda/beam_step.cu), as inline functions compiled for host and
 * device, as decoder/search_rules.h holds the beam search's. Plain C.
 *
 * A hypothesis's tokens are what it generated so far (no BOS); at step t it
 * holds t - 1. The logit rules act on a row's logits before its
 * log-softmax (CTranslate2's logits processors): the repetition penalty
 * rescales some, the bans set some to -inf. */
#ifndef NMT_LOGIT_RULES_H
#define NMT_LOGIT_RULES_H

#include "nmt_enums.h"
#include "philox.h"
#include "search_rules.h"

#include <math.h>
#include <stdint.h>

/* The uniform number in [0, 1) that sample `sample` of the line keyed
 * `line_key` draws at its step `step`: 53 bits of the Philox4x32-10 block
 * of counter (step, sample, line_key) under key `seed`. A pure function of
 * those four, so a line's samples do not depend on its batch. */
NMT_HOST_DEVICE static inline double nmt_rule_sample_uniform(uint64_t seed, uint64_t line_key,
                                                             int32_t sample, int32_t step)
{
    const uint32_t counter[4] = {(uint32_t)step, (uint32_t)sample, (uint32_t)line_key,
                                 (uint32_t)(line_key >> 32)};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t bits[4];
    nmt_philox(counter, key, bits);
    /* 27 + 26 bits, as integers: exact in a double on both sides. */
    const double high = (double)(bits[0] >> 5), low = (double)(bits[1] >> 6);
    return (high * 67108864.0 + low) * (1.0 / 9007199254740992.0);
}

/* A word's weight in the sampling distribution, relative to the best
 * word's log-probability `best`: exp((log p - best) / T), in double. */
NMT_HOST_DEVICE static inline double nmt_rule_sample_weight(float log_prob, float best,
                                                            float temperature)
{
    return exp(((double)log_prob - (double)best) / (double)temperature);
}

/* Top-K sampling (with top-p): the index drawn by u among n candidates
 * sorted best first (log-probabilities; a -inf or NaN entry ends the list):
 * the weights of nmt_rule_sample_weight, cut to the shortest prefix whose
 * weight is at least topp of the whole, then the first candidate whose
 * running sum exceeds u times the prefix's. -1 when there is none. */
NMT_HOST_DEVICE static inline int32_t nmt_rule_sample_pick(const float *log_probs, int32_t n,
                                                           float temperature, float topp,
                                                           double u)
{
    if (n < 1 || !(log_probs[0] > -INFINITY))
        return -1;
    const float best = log_probs[0];
    int32_t m = 0;
    double total = 0.0;
    while (m < n && log_probs[m] > -INFINITY)
        total += nmt_rule_sample_weight(log_probs[m++], best, temperature);
    if (topp < 1.0f) {
        const double enough = (double)topp * total;
        double kept = 0.0;
        int32_t keep = 0;
        while (keep < m) {
            kept += nmt_rule_sample_weight(log_probs[keep++], best, temperature);
            if (kept >= enough)
                break;
        }
        m = keep;
        total = kept;
    }
    const double target = u * total;
    double sum = 0.0;
    for (int32_t i = 0; i < m; i++) {
        sum += nmt_rule_sample_weight(log_probs[i], best, temperature);
        if (sum > target)
            return i;
    }
    return m - 1;
}

/* CTRL's repetition penalty (Keskar et al. 2019) as CTranslate2 applies it:
 * a logit of a word the hypothesis holds is divided by the penalty when
 * positive, multiplied when not. */
NMT_HOST_DEVICE static inline float nmt_rule_repetition(float logit, float penalty)
{
#ifdef __CUDA_ARCH__
    return logit > 0.0f ? __fdiv_rn(logit, penalty) : __fmul_rn(logit, penalty);
#else
    return logit > 0.0f ? logit / penalty : logit * penalty;
#endif
}

/* min_length: EOS is banned at step `step` (so step - 1 tokens before it)
 * while the hypothesis is shorter than min_length, except at the
 * sentence's max-length step, which always allows it. */
NMT_HOST_DEVICE static inline int nmt_rule_eos_banned(int32_t step, int32_t min_length,
                                                      int32_t max_len)
{
    return step - 1 < min_length && step < max_len;
}

/* no_repeat_ngram_size n: the word the n-gram of tokens[0..len) that
 * starts at i bans (its last, when its first n - 1 are the hypothesis's
 * last n - 1: generating it would repeat the n-gram), or -1. */
NMT_HOST_DEVICE static inline int32_t nmt_rule_ngram_ban(const int32_t *tokens, int32_t len,
                                                         int32_t n, int32_t i)
{
    if (i < 0 || i + n > len)
        return -1;
    for (int32_t j = 0; j < n - 1; j++)
        if (tokens[i + j] != tokens[len - n + 1 + j])
            return -1;
    return tokens[i + n - 1];
}

/* suppress: the word the suppressed sequence seq[0..m) bans after
 * tokens[0..len) (its last, when the hypothesis ends with its first
 * m - 1), or -1. */
NMT_HOST_DEVICE static inline int32_t nmt_rule_suppressed(const int32_t *tokens, int32_t len,
                                                          const int32_t *seq, int32_t m)
{
    if (m - 1 > len)
        return -1;
    for (int32_t j = 0; j < m - 1; j++)
        if (tokens[len - m + 1 + j] != seq[j])
            return -1;
    return seq[m - 1];
}

/* The coverage penalty's term of one source position of coverage c (the
 * attention the hypothesis gave it, summed over its steps), before beta
 * (OpenNMT-py's penalties): wu -log(min(c, 1)), where c 0 (nothing to
 * normalize; CTranslate2 skips it too) adds nothing; summary max(c, 1) - 1. */
NMT_HOST_DEVICE static inline float nmt_rule_coverage_term(int32_t kind, float c)
{
    if (kind == NMT_COVERAGE_WU)
        return c > 0.0f ? -logf(c < 1.0f ? c : 1.0f) : 0.0f;
    if (kind == NMT_COVERAGE_SUMMARY)
        return (c > 1.0f ? c : 1.0f) - 1.0f;
    return 0.0f;
}

#endif /* NMT_LOGIT_RULES_H */
