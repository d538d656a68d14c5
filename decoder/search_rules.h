/* search_rules.h: the rules both searches follow, the CPU's
 * (decoder/beam_search.c) and the GPU's (decoder/cuda/beam_step.cu), as
 * inline functions compiled for host and device, so the two agree by
 * construction: the candidates' order, the ranking score and the score a
 * hypothesis carries on, the length penalties, the finished list's order and
 * when a sentence is done (docs/decoding.md, "Search rules"). On the device
 * the arithmetic uses the _rn intrinsics, which the compiler never fuses,
 * so it rounds as the host does. Plain C. */
#ifndef NMT_SEARCH_RULES_H
#define NMT_SEARCH_RULES_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define NMT_HOST_DEVICE __host__ __device__
#else
#define NMT_HOST_DEVICE
#endif

/* Candidate a comes before b: higher score, then lower slot (hypothesis),
 * then lower word. NaN scores compare as different and neither before. */
NMT_HOST_DEVICE static inline int nmt_rule_candidate_before(float a_score, int32_t a_slot,
                                                            int32_t a_word, float b_score,
                                                            int32_t b_slot, int32_t b_word)
{
    if (a_score != b_score)
        return a_score > b_score;
    if (a_slot != b_slot)
        return a_slot < b_slot;
    return a_word < b_word;
}

/* -inf (excluded) and NaN (a broken model) candidates are never selected. */
NMT_HOST_DEVICE static inline int nmt_rule_selectable(float rank)
{
    return rank > -INFINITY;
}

/* The rank of a candidate, score + log p: v1 the sum (penalty 1); onmt the
 * sum over the step's length penalty in float32, as OpenNMT-py divides. */
NMT_HOST_DEVICE static inline float nmt_rule_rank(float score, float log_prob, float penalty)
{
#ifdef __CUDA_ARCH__
    const float sum = __fadd_rn(score, log_prob);
    return penalty != 1.0f ? __fdiv_rn(sum, penalty) : sum;
#else
    const float sum = score + log_prob;
    return penalty != 1.0f ? sum / penalty : sum;
#endif
}

/* The score a candidate of rank `rank` carries on (onmt: the rank times the
 * penalty, what OpenNMT-py recovers, not the sum). */
NMT_HOST_DEVICE static inline float nmt_rule_carried_score(float rank, float penalty)
{
#ifdef __CUDA_ARCH__
    return penalty != 1.0f ? __fmul_rn(rank, penalty) : rank;
#else
    return penalty != 1.0f ? rank * penalty : rank;
#endif
}

/* v1's length penalty of a hypothesis finished at step t (t tokens, EOS
 * included): t^alpha; its score is log_prob / that. */
NMT_HOST_DEVICE static inline float nmt_rule_v1_score(float log_prob, int32_t step, float alpha)
{
    return log_prob / powf((float)step, alpha);
}

/* OpenNMT-py's avg length penalty at step t: (t + 1)^alpha, the + 1 the BOS;
 * a Python float, made float32 when it divides a float32 tensor. */
NMT_HOST_DEVICE static inline float nmt_rule_onmt_penalty(int32_t step, float alpha)
{
    return (float)pow((double)step + 1.0, (double)alpha);
}

/* Where a finished hypothesis of `score` goes among the kept ones, best
 * first: after every kept one of a higher or equal score (equal scores in
 * finishing order, what OpenNMT-py's stable sort keeps). Called with the
 * score of the kept one before position `at`. */
NMT_HOST_DEVICE static inline int nmt_rule_finished_moves_up(float kept_score, float score)
{
    return kept_score < score;
}

/* A v1 sentence is done with B finished, at its max-length step, or with no
 * survivor. */
NMT_HOST_DEVICE static inline int nmt_rule_v1_done(int32_t n_finished, int32_t beam,
                                                   int last_step, int32_t n_alive)
{
    return n_finished >= beam || last_step || n_alive == 0;
}

/* An onmt sentence is done at its max-length step, with no survivor, or when
 * its best candidate is an EOS and n_best hypotheses have ended. */
NMT_HOST_DEVICE static inline int nmt_rule_onmt_done(int last_step, int32_t n_alive,
                                                     int best_ended, int32_t n_ended,
                                                     int32_t n_best)
{
    return last_step || n_alive == 0 || (best_ended && n_ended >= n_best);
}

#endif /* NMT_SEARCH_RULES_H */
