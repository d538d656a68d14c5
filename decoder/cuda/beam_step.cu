/* beam_step.cu: beam search bookkeeping on the device (beam_step.h), the
 * rules of decoder/beam_search.c (model-v1's, or OpenNMT-py's: b.rules) with
 * one thread block per sentence.
 *
 * Selection: each of the sentence's B rows arrives with its 2B best words
 * sorted best first (nmt_cuda_softmax_topk), so its candidates score_k +
 * log p are a sorted list too (adding a constant keeps the order), and the
 * 2B best of the B x 2B candidates are a B-way merge: 2B rounds, each taking
 * the best list head under the order (score desc, slot asc, word asc) and
 * popping it. Exact ties, no sort of B x 2B. -inf and NaN candidates (and
 * ids < 0) are never taken (as on the host); such a head stops its list.
 * Two variants of the merge, picked by B in nmt_cuda_beam_step:
 *  - B <= 32 (the usual beams), one warp, because a round of the block
 *    variant is all latency (a global read and 7 barriers). The B x 2B
 *    lists are copied to shared memory first, in one pass with every copy
 *    in flight (cp.async), issued before the sentence index is known: they
 *    are read at every step, also the last and for done sentences, within
 *    the [rows, 2B] the caller provides. Lane k then holds slot k's head and
 *    base score in registers, and a round is one redux.sync max over the
 *    heads' scores (as ordered ints) and a ballot for the lowest slot
 *    holding it: no barrier, and no chain of shuffles.
 *  - B > 32, 128 threads: a round is a block reduction over the heads read
 *    from global memory. O(B log B) per round.
 * Split (one thread, at most 2B entries, shared by both): among the first
 * B, EOS candidates finish with log_prob / step^alpha; the first B non-EOS
 * of the 2B live on. The sentence is done with B finished, at its
 * max-length step, or with no survivor. Every token that stays in the
 * history records the score its hypothesis carries on (hist_score), from
 * which backtracking derives each token's log-probability. The state's
 * bookkeeping outside a step (init, join, the rows of a step, recording the
 * attention weights, backtracking) is beam_state.cu. At a sentence's forced
 * step (a target prefix, an alternative: forced_step.cuh) slot 0 offers its
 * one candidate instead, as the EOS of v1's last step is offered.
 * The onmt rules (docs/decoding.md, "Search rules") change three things:
 * a candidate ranks by (score + log p) / (t + 1)^alpha in float32 (the
 * lists stay sorted: adding and dividing keep the order, but rounding can
 * make distinct sums one rank, and the CPU breaks such a tie by the lower
 * word, so a slot's head is the lowest untaken word of the run of equal
 * ranks at its list position: list_head); B rounds, not 2B, and no EOS-only
 * last step; the split of split_onmt. A row's B best ranks are within its
 * 2B best log p, except when more than B of its 2B words round to one rank
 * with a lower word beyond the list (never seen: rank ties need sums within
 * an ulp). */
#include "beam_rows.cuh"
#include "beam_step.h"
#include "forced_step.cuh"

#include "cuda_check.h"
#include "logit_rules.h"
#include "search.h"
#include "search_rules.h"
#include "device.cuh"

#include <cuda_pipeline.h>
#include <limits.h>
#include <math.h>

#define BEAM_THREADS 128
#define BEAM_MAX NMT_CUDA_BEAM_MAX
#define WARP_BEAM_MAX 32 /* beams up to this take the one-warp kernel: a lane a slot */
static_assert((BEAM_THREADS & (BEAM_THREADS - 1)) == 0, "BEAM_THREADS: a power of two");
static_assert(WARP_BEAM_MAX <= kWarpSize, "WARP_BEAM_MAX: one lane per slot");

typedef struct beam_candidate {
    float score;
    int32_t slot; /* INT32_MAX: no candidate */
    int32_t word;
} beam_candidate;

static __device__ beam_candidate no_candidate(void)
{
    beam_candidate c;
    c.score = -INFINITY;
    c.slot = INT32_MAX;
    c.word = INT32_MAX;
    return c;
}

/* a before b: the candidates' order (search_rules.h). */
static __device__ bool candidate_before(const beam_candidate &a, const beam_candidate &b)
{
    return nmt_rule_candidate_before(a.score, a.slot, a.word, b.score, b.slot, b.word);
}

/* Slot `slot`'s candidate of log p `value` for `word`, or none when it may
 * not be taken (the block kernel's test, written once for the warp kernel). */
static __device__ beam_candidate offered(float base, float value, int32_t word, int32_t slot)
{
    beam_candidate c;
    c.score = nmt_rule_rank(base, value, 1.0f);
    c.slot = slot;
    c.word = word;
    return word >= 0 && nmt_rule_selectable(c.score) ? c : no_candidate();
}

/* Slot 0's one candidate at a forced step (forced_step.cuh). */
static __device__ beam_candidate forced_head(float base, float value, int32_t word,
                                             float penalty)
{
    beam_candidate c;
    c.score = nmt_rule_rank(base, value, penalty);
    c.slot = 0;
    c.word = word;
    return word >= 0 && nmt_rule_selectable(c.score) ? c : no_candidate();
}

/* The head of slot `slot`'s list (values, words: n entries sorted by log p
 * desc) at position *j as a candidate, or none when it may not be taken.
 * v1: entry *j (taking it: *j + 1). onmt: the run of equal ranks from *j on
 * may hold its words out of order (the header comment), so the head is the
 * run's lowest word above *taken (taking it: *taken = its word); a run used
 * up moves *j past it, *taken to -1. */
static __device__ beam_candidate list_head(const float *values, const int32_t *words,
                                           int32_t n, float base, float penalty, int onmt,
                                           int32_t slot, int32_t *j, int32_t *taken)
{
    for (;;) {
        if (*j >= n)
            return no_candidate();
        const float rank = nmt_rule_rank(base, values[*j], penalty);
        beam_candidate c;
        c.score = rank;
        c.slot = slot;
        c.word = words[*j];
        if (c.word < 0 || !nmt_rule_selectable(rank))
            return no_candidate(); /* -1 / -inf tails and NaN stop the list */
        if (!onmt)
            return c;
        int32_t end = *j;
        c.word = INT32_MAX;
        for (; end < n; end++) {
            const int32_t w = words[end];
            if (w < 0 || nmt_rule_rank(base, values[end], penalty) != rank)
                break;
            if (w > *taken && w < c.word)
                c.word = w;
        }
        if (c.word != INT32_MAX)
            return c;
        *j = end;
        *taken = -1;
    }
}

/* The split of the n_chosen selected candidates (best first), in rank
 * order, exactly as decoder/beam_search.c; one thread. n_fin: the
 * sentence's finished hypotheses before this step. slot_attn[k]: the
 * attention argmax of slot k's row. */
static __device__ void split_chosen(const nmt_beam_device &b, int32_t s, int32_t step,
                                    int last_step, const beam_candidate *chosen,
                                    int32_t n_chosen, int32_t n_fin, const int32_t *slot_attn)
{
    const int32_t B = b.beam, K = 2 * B;
    int32_t n_alive = 0;
    const int64_t fin0 = (int64_t)s * K;
    const int64_t hist0 = ((int64_t)s * b.hist_len + (step - 1)) * B;
    for (int32_t c = 0; c < n_chosen; c++) {
        const beam_candidate cand = chosen[c];
        const int32_t parent_slot = step > 1 ? cand.slot : -1;
        if (cand.word == b.eos_id) {
            if (c >= B || n_fin >= K)
                continue; /* n_fin < K always holds: at most B - 1 + B finish */
            b.fin_log_prob[fin0 + n_fin] = cand.score;
            b.fin_score[fin0 + n_fin] = nmt_rule_v1_score(cand.score, step, b.alpha);
            b.fin_length[fin0 + n_fin] = step;
            b.fin_parent[fin0 + n_fin] = parent_slot;
            n_fin++;
        } else if (n_alive < B && step - 1 < b.hist_len) {
            b.hist_token[hist0 + n_alive] = cand.word;
            b.hist_attn[hist0 + n_alive] = slot_attn[cand.slot];
            b.hist_parent[hist0 + n_alive] = parent_slot;
            b.hist_score[hist0 + n_alive] = cand.score;
            b.scores[(int64_t)s * B + n_alive] = cand.score;
            b.tokens[(int64_t)s * B + n_alive] = cand.word;
            b.parents[(int64_t)s * B + n_alive] = cand.slot;
            n_alive++;
        }
    }
    for (int32_t k = n_alive; k < B; k++) {
        b.scores[(int64_t)s * B + k] = -INFINITY;
        b.tokens[(int64_t)s * B + k] = b.eos_id; /* any valid id: the row is dead */
        b.parents[(int64_t)s * B + k] = 0;
    }
    b.n_finished[s] = n_fin;
    if (nmt_rule_v1_done(n_fin, B, last_step, n_alive))
        mark_done(b, s, step);
}

/* Adds a finished hypothesis to sentence s's list, kept as the best n_best
 * by score with equal scores in finishing order (decoder/beam_search.c's
 * keep_finished: what OpenNMT-py's stable sort of all of them keeps). */
static __device__ void keep_finished(const nmt_beam_device &b, int64_t fin0, int32_t *n,
                                     float log_prob, float score, int32_t length,
                                     int32_t parent_slot)
{
    int32_t at = *n;
    while (at > 0 && nmt_rule_finished_moves_up(b.fin_score[fin0 + at - 1], score))
        at--;
    if (at >= b.n_best)
        return;
    for (int32_t j = *n < b.n_best ? *n : b.n_best - 1; j > at; j--) {
        b.fin_log_prob[fin0 + j] = b.fin_log_prob[fin0 + j - 1];
        b.fin_score[fin0 + j] = b.fin_score[fin0 + j - 1];
        b.fin_length[fin0 + j] = b.fin_length[fin0 + j - 1];
        b.fin_parent[fin0 + j] = b.fin_parent[fin0 + j - 1];
    }
    b.fin_log_prob[fin0 + at] = log_prob;
    b.fin_score[fin0 + at] = score;
    b.fin_length[fin0 + at] = length;
    b.fin_parent[fin0 + at] = parent_slot;
    if (*n < b.n_best)
        (*n)++;
}

/* Slot `slot` of sentence s's coverage at its step `step` (the half of the
 * step's parity; beam_step.h), position j. */
static __device__ float *coverage_at(const nmt_beam_device &b, int32_t s, int32_t step,
                                     int32_t slot)
{
    return b.coverage + (((int64_t)s * 2 + (step & 1)) * b.beam + slot) * b.coverage_stride;
}

/* The coverage penalty (logit_rules.h) of a hypothesis of slot `slot`
 * finishing at this step: its coverage with the attention of its row,
 * row0 + slot, added; one thread, positions in order as the CPU sums. */
static __device__ float coverage_penalty(const nmt_beam_device &b, int32_t s, int32_t step,
                                         int64_t row0, int32_t slot)
{
    const float *cov = coverage_at(b, s, step, slot);
    const float *w = b.step_weights + (row0 + slot) * b.weights_stride;
    float sum = 0.0f;
    for (int32_t j = 0; j < b.src_len[s]; j++)
        sum = __fadd_rn(sum, nmt_rule_coverage_term(b.coverage_kind, __fadd_rn(cov[j], w[j])));
    return __fmul_rn(b.coverage_beta, sum);
}

/* Every thread, after the split: the coverage each alive slot carries into
 * the next step, its parent's with the parent row's attention added. */
static __device__ void carry_coverage(const nmt_beam_device &b, int32_t s, int32_t step,
                                      int64_t row0, int tid, int threads)
{
    const int32_t L = b.src_len[s];
    for (int32_t e = tid; e < b.beam * L; e += threads) {
        const int32_t k = e / L, j = e % L;
        if (!(b.scores[(int64_t)s * b.beam + k] > -INFINITY))
            continue;
        const int32_t parent = b.parents[(int64_t)s * b.beam + k];
        coverage_at(b, s, step + 1, k)[j] =
            __fadd_rn(coverage_at(b, s, step, parent)[j],
                      b.step_weights[(row0 + parent) * b.weights_stride + j]);
    }
}

/* The onmt split (decoder/beam_search.c's step_onmt) of the n_chosen <= B
 * selected candidates, best first; one thread. A candidate carries its rank
 * times the penalty on (what OpenNMT-py recovers, not the sum); EOS ones
 * finish, the others live on, or at the max-length step finish cut, their
 * last word in history slot c (no slot lives on, so all are free). A
 * finished one ranks by its rank less its coverage penalty (b.coverage).
 * Done when the best candidate is an EOS and n_best have ended, at the max
 * length, or with no survivor. row0: the sentence's first row. */
static __device__ void split_onmt(const nmt_beam_device &b, int32_t s, int32_t step,
                                  int last_step, float penalty, const beam_candidate *chosen,
                                  int32_t n_chosen, const int32_t *slot_attn, int64_t row0)
{
    const int32_t B = b.beam;
    const int64_t fin0 = (int64_t)s * 2 * B;
    const int64_t hist0 = ((int64_t)s * b.hist_len + (step - 1)) * B;
    const int has_row = step - 1 < b.hist_len; /* always: hist_len >= max length */
    int32_t n_fin = b.n_finished[s], n_ended = b.n_ended[s], n_alive = 0;
    for (int32_t c = 0; c < n_chosen; c++) {
        const beam_candidate cand = chosen[c];
        const float score = nmt_rule_carried_score(cand.score, penalty);
        const int32_t parent_slot = step > 1 ? cand.slot : -1;
        const float ranked =
            b.coverage ? __fsub_rn(cand.score, coverage_penalty(b, s, step, row0, cand.slot))
                       : cand.score;
        if (cand.word == b.eos_id) {
            keep_finished(b, fin0, &n_fin, score, ranked, step, parent_slot);
            n_ended++;
        } else if (last_step) {
            if (has_row) {
                b.hist_token[hist0 + c] = cand.word;
                b.hist_attn[hist0 + c] = slot_attn[cand.slot];
                b.hist_parent[hist0 + c] = parent_slot;
                b.hist_score[hist0 + c] = score;
            }
            keep_finished(b, fin0, &n_fin, score, ranked, step + 1, has_row ? c : -1);
            n_ended++;
        } else if (has_row) {
            b.hist_token[hist0 + n_alive] = cand.word;
            b.hist_attn[hist0 + n_alive] = slot_attn[cand.slot];
            b.hist_parent[hist0 + n_alive] = parent_slot;
            b.hist_score[hist0 + n_alive] = score;
            b.scores[(int64_t)s * B + n_alive] = score;
            b.tokens[(int64_t)s * B + n_alive] = cand.word;
            b.parents[(int64_t)s * B + n_alive] = cand.slot;
            n_alive++;
        }
    }
    for (int32_t k = n_alive; k < B; k++) {
        b.scores[(int64_t)s * B + k] = -INFINITY;
        b.tokens[(int64_t)s * B + k] = b.eos_id; /* any valid id: the row is dead */
        b.parents[(int64_t)s * B + k] = 0;
    }
    b.n_finished[s] = n_fin;
    b.n_ended[s] = n_ended;
    const int best_ended = n_chosen > 0 && chosen[0].word == b.eos_id;
    if (nmt_rule_onmt_done(last_step, n_alive, best_ended, n_ended, b.n_best))
        mark_done(b, s, step);
}

static __global__ void __launch_bounds__(BEAM_THREADS)
beam_step_kernel(nmt_beam_device b, const int32_t *act, const float *top_values,
                 const int32_t *top_ids, const float *logits, int32_t ld_logits,
                 const float *lse, const int32_t *attn_argmax, nmt_beam_next_rows next)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    __shared__ float base[BEAM_MAX];
    __shared__ int32_t head[BEAM_MAX], taken[BEAM_MAX];
    __shared__ beam_candidate chosen[2 * BEAM_MAX];
    __shared__ beam_candidate reduce[BEAM_THREADS];
    __shared__ int32_t n_chosen;

    const int32_t B = b.beam, K = 2 * B, tid = threadIdx.x;
    const int32_t p = blockIdx.x, s = act[p];
    if (b.done[s]) { /* uniform across the block */
        finish_block(b, next, p, s, false, tid, BEAM_THREADS);
        return;
    }
    const int64_t row0 = (int64_t)p * B;
    const int32_t step = *b.step - b.start[s];
    const int last_step = step >= b.max_len[s];
    const int onmt = b.rules == NMT_SEARCH_RULES_ONMT;
    const int eos_only = last_step && !onmt;
    const float penalty = onmt ? nmt_rule_onmt_penalty(step, b.alpha) : 1.0f;
    const int32_t n_select = onmt ? B : K;
    int32_t forced_word = -1;
    float forced_value = 0.0f;
    const int forced = forced_choice(b, s, step, logits + row0 * ld_logits, lse + row0,
                                     top_values + row0 * K, top_ids + row0 * K, K, &forced_word,
                                     &forced_value);
    for (int32_t k = tid; k < B; k += BEAM_THREADS) {
        base[k] = b.scores[(int64_t)s * B + k];
        head[k] = 0;
        taken[k] = -1;
    }
    if (tid == 0)
        n_chosen = 0;
    __syncthreads();

    for (int32_t round = 0; round < n_select; round++) {
        beam_candidate best = no_candidate();
        for (int32_t k = tid; k < B; k += BEAM_THREADS) {
            const int64_t row = row0 + k;
            beam_candidate c = no_candidate();
            if (forced) {
                if (k == 0 && head[0] == 0)
                    c = forced_head(base[0], forced_value, forced_word, penalty);
            } else if (eos_only) {
                if (head[k] == 0)
                    c = offered(base[k], logits[row * ld_logits + b.eos_id] - lse[row],
                                b.eos_id, k);
            } else {
                /* Only this thread writes head[k] and taken[k] here; tid 0
                 * pops below, after the reduction's barriers. */
                c = list_head(top_values + row * K, top_ids + row * K, K, base[k], penalty,
                              onmt, k, &head[k], &taken[k]);
            }
            if (candidate_before(c, best))
                best = c;
        }
        reduce[tid] = best;
        __syncthreads();
        for (int32_t half = BEAM_THREADS / 2; half > 0; half /= 2) {
            if (tid < half && candidate_before(reduce[tid + half], reduce[tid]))
                reduce[tid] = reduce[tid + half];
            __syncthreads();
        }
        const beam_candidate winner = reduce[0];
        if (winner.slot == INT32_MAX)
            break; /* uniform: every thread read the same reduce[0] */
        if (tid == 0) {
            chosen[round] = winner;
            if (onmt && !forced)
                taken[winner.slot] = winner.word;
            else
                head[winner.slot]++;
            n_chosen = round + 1;
        }
        __syncthreads();
    }
    __syncthreads();
    if (tid == 0 && onmt)
        split_onmt(b, s, step, last_step, penalty, chosen, n_chosen, attn_argmax + row0, row0);
    else if (tid == 0)
        split_chosen(b, s, step, last_step, chosen, n_chosen, b.n_finished[s],
                     attn_argmax + row0);
    __syncthreads();
    if (b.coverage)
        carry_coverage(b, s, step, row0, tid, BEAM_THREADS);
    finish_block(b, next, p, s, true, tid, BEAM_THREADS);
}

static __global__ void __launch_bounds__(kWarpSize)
beam_step_warp_kernel(nmt_beam_device b, const int32_t *act, const float *top_values,
                      const int32_t *top_ids, const float *logits, int32_t ld_logits,
                      const float *lse, const int32_t *attn_argmax, nmt_beam_next_rows next)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    extern __shared__ float top_lists[]; /* values [B, 2B], then ids [B, 2B] */
    __shared__ beam_candidate chosen[2 * WARP_BEAM_MAX];
    __shared__ int32_t slot_attn[WARP_BEAM_MAX];

    const int32_t B = b.beam, K = 2 * B, n_top = B * K, lane = threadIdx.x;
    const int32_t p = blockIdx.x;
    const int64_t row0 = (int64_t)p * B;
    const bool has_slot = lane < B;
    float *top_value = top_lists;
    int32_t *top_word = (int32_t *)(top_lists + n_top);

    /* Every read that does not need the sentence goes out at once. */
    const int32_t s = act[p];
    const int32_t attn = has_slot ? attn_argmax[row0 + lane] : 0;
    for (int32_t i = lane; i < n_top; i += kWarpSize) {
        __pipeline_memcpy_async(top_value + i, top_values + row0 * K + i, sizeof(float));
        __pipeline_memcpy_async(top_word + i, top_ids + row0 * K + i, sizeof(int32_t));
    }
    __pipeline_commit();
    const int32_t done = b.done[s], max_len = b.max_len[s], n_fin = b.n_finished[s];
    const int32_t step = *b.step - b.start[s];
    const float base = has_slot ? b.scores[(int64_t)s * B + lane] : -INFINITY;
    if (done) {
        __pipeline_wait_prior(0); /* no copy may land after the block's memory is freed */
        finish_block(b, next, p, s, false, lane, kWarpSize);
        return; /* uniform across the warp */
    }
    const int last_step = step >= max_len;
    const int onmt = b.rules == NMT_SEARCH_RULES_ONMT;
    const int eos_only = last_step && !onmt;
    const float penalty = onmt ? nmt_rule_onmt_penalty(step, b.alpha) : 1.0f;
    const int32_t n_select = onmt ? B : K;
    if (has_slot)
        slot_attn[lane] = attn;

    /* Lane k: slot k's list head (position j; onmt: above word taken) as a
     * candidate. */
    int32_t j = 0, taken = -1;
    beam_candidate head = no_candidate();
    if (has_slot && eos_only) {
        const int64_t row = row0 + lane;
        head = offered(base, logits[row * ld_logits + b.eos_id] - lse[row], b.eos_id, lane);
    }
    __pipeline_wait_prior(0);
    __syncwarp(); /* the other lanes' copies are visible from here */
    int32_t forced_word = -1;
    float forced_value = 0.0f;
    const int forced = forced_choice(b, s, step, logits + row0 * ld_logits, lse + row0, top_value,
                                     top_word, K, &forced_word, &forced_value);
    const int single = forced || eos_only; /* a slot offers one candidate at most */
    if (forced)
        head = lane == 0 ? forced_head(base, forced_value, forced_word, penalty)
                         : no_candidate();
    else if (has_slot && !eos_only)
        head = list_head(top_value + lane * K, top_word + lane * K, K, base, penalty, onmt,
                         lane, &j, &taken);

    int32_t n_chosen = 0;
    for (int32_t round = 0; round < n_select; round++) {
        /* The best head under (score desc, slot asc): lane k holds slot k,
         * so it is the lowest lane holding the highest score, one redux and
         * one ballot (+ 0.0f: -0 and +0 are one score, as the comparison
         * has them). No candidate: INT_MIN, below every score's key. */
        const int key = head.slot != INT32_MAX ? ordered_int(head.score + 0.0f) : INT_MIN;
        const int best_key = __reduce_max_sync(kFullMask, key);
        if (best_key == INT_MIN)
            break; /* uniform */
        if (lane == __ffs(__ballot_sync(kFullMask, key == best_key)) - 1) {
            const beam_candidate best = head;
            chosen[round] = best;
            head = no_candidate(); /* v1's last step offers EOS only, once; so does a forced one */
            if (!single) {
                if (onmt)
                    taken = best.word;
                else
                    j++;
                head = list_head(top_value + lane * K, top_word + lane * K, K, base, penalty,
                                 onmt, lane, &j, &taken);
            }
        }
        n_chosen = round + 1;
    }
    __syncwarp();
    if (lane == 0 && onmt)
        split_onmt(b, s, step, last_step, penalty, chosen, n_chosen, slot_attn, row0);
    else if (lane == 0)
        split_chosen(b, s, step, last_step, chosen, n_chosen, n_fin, slot_attn);
    __syncwarp();
    if (b.coverage)
        carry_coverage(b, s, step, row0, lane, kWarpSize);
    finish_block(b, next, p, s, true, lane, kWarpSize);
}

nmt_status nmt_cuda_beam_step(const nmt_beam_device *b, int32_t n_active, const int32_t *act,
                              const float *top_values, const int32_t *top_ids,
                              const float *logits, int32_t ld_logits, const float *lse,
                              const int32_t *attn_argmax, const nmt_beam_next_rows *next,
                              void *stream, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_beam_next_rows rows = {NULL, NULL, NULL, NULL};
    if (next) {
        if (!next->tokens || !next->sentence || !next->parent || !b->ticket)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "beam step: next rows without tokens, sentences, parents "
                                 "or the ticket");
        rows = *next;
    }
    if (n_active < 1 || b->beam < 1 || b->beam > BEAM_MAX || b->hist_len < 1 || !b->step ||
        !b->start)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "beam step: %d active, beam %d (max %d), hist_len %d, step %s, "
                             "start %s", n_active, b->beam, BEAM_MAX, b->hist_len,
                             b->step ? "set" : "NULL", b->start ? "set" : "NULL");
    if (b->rules != NMT_SEARCH_RULES_V1 &&
        (b->rules != NMT_SEARCH_RULES_ONMT || !b->n_ended || b->n_best < 1 || b->n_best > b->beam))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "beam step: rules %d (onmt needs n_ended and n_best %d in [1, %d])",
                             (int)b->rules, b->n_best, b->beam);
    if (b->coverage && (b->rules != NMT_SEARCH_RULES_ONMT || !b->step_weights || !b->src_len ||
                        b->weights_stride < 1 || b->coverage_stride < 1))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "beam step: the coverage penalty needs the onmt rules, the step's "
                             "weights, the source lengths and strides");
    if (b->beam <= WARP_BEAM_MAX) {
        const size_t list_bytes =
            (size_t)b->beam * 2 * b->beam * (sizeof(float) + sizeof(int32_t));
        nmt_launch_pdl(beam_step_warp_kernel, n_active, kWarpSize, list_bytes,
                       (cudaStream_t)stream, *b, act, top_values, top_ids, logits, ld_logits, lse,
                       attn_argmax, rows);
        NMT_LAUNCH_TRY("beam_step_warp_kernel");
    } else {
        nmt_launch_pdl(beam_step_kernel, n_active, BEAM_THREADS, 0, (cudaStream_t)stream, *b, act,
                       top_values, top_ids, logits, ld_logits, lse, attn_argmax, rows);
        NMT_LAUNCH_TRY("beam_step_kernel");
    }
cleanup:
    return status;
}
