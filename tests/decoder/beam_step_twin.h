/* beam_step_twin.h: the plain C twin of the device beam step
 * (decoder/cuda/beam_step.cu) that test_gpu_beam_step.cu checks it against,
 * both rule sets of decoder/beam_search.c straight from the rules; included
 * once by the test after its token ids (host C++).
 *
 * v1: all B x 2B candidates fully sorted by (score desc, slot asc, word
 * asc), the 2B best split into finished (EOS among the first B) and alive
 * (the first B others), history and finished entries appended. onmt: the
 * same sort of the ranks (score + log p) / (t + 1)^alpha in float32, the B
 * best split into finished (EOS: kept as the best n_best), alive (score
 * rank x penalty) and, at the max-length step, cut; done when the best is
 * an EOS and n_best have ended. Forced tokens (decoder/forced_tokens.h): at
 * a forced step the twin offers slot 0's forced word alone, its log p
 * logits - lse (an EOS forced last finishes), or at the first free step the
 * rank's non-EOS word of slot 0's list. */
#ifndef BEAM_STEP_TWIN_H
#define BEAM_STEP_TWIN_H

#include <math.h>
#include <stdint.h>
#include <vector>

/* Host copy of the whole bookkeeping state. */
struct host_state {
    int32_t n, B, K, hist_len;
    int onmt, n_best;
    std::vector<int32_t> max_len, tokens, parents, done, n_finished, n_ended, fin_length,
        fin_parent;
    std::vector<int32_t> hist_token, hist_attn, hist_parent;
    std::vector<float> hist_score;
    std::vector<float> scores, fin_log_prob, fin_score;
};

struct cand {
    float score;
    int32_t slot, word;
};

static int cand_before(const cand &a, const cand &b)
{
    if (a.score != b.score)
        return a.score > b.score;
    if (a.slot != b.slot)
        return a.slot < b.slot;
    return a.word < b.word;
}

/* The onmt twin's keep_finished (decoder/beam_search.c): the best n_best by
 * score, ties in finishing order. */
static void twin_keep(host_state &h, int32_t s, float log_prob, float score, int32_t length,
                      int32_t parent)
{
    const size_t f0 = (size_t)s * h.K;
    int32_t n = h.n_finished[s], at = n;
    while (at > 0 && h.fin_score[f0 + at - 1] < score)
        at--;
    if (at >= h.n_best)
        return;
    for (int32_t j = n < h.n_best ? n : h.n_best - 1; j > at; j--) {
        h.fin_log_prob[f0 + j] = h.fin_log_prob[f0 + j - 1];
        h.fin_score[f0 + j] = h.fin_score[f0 + j - 1];
        h.fin_length[f0 + j] = h.fin_length[f0 + j - 1];
        h.fin_parent[f0 + j] = h.fin_parent[f0 + j - 1];
    }
    h.fin_log_prob[f0 + at] = log_prob, h.fin_score[f0 + at] = score;
    h.fin_length[f0 + at] = length, h.fin_parent[f0 + at] = parent;
    if (n < h.n_best)
        h.n_finished[s] = n + 1;
}

/* History entry e (sentence, step, slot) of a hypothesis that lives on. */
static void twin_record(host_state &h, size_t e, int32_t word, int32_t attn, int32_t parent,
                        float score)
{
    h.hist_token[e] = word;
    h.hist_attn[e] = attn;
    h.hist_parent[e] = parent;
    h.hist_score[e] = score;
}

/* Sentence s's beam after the step: its B slots' scores, tokens, parents. */
static void twin_store_beam(host_state &h, int32_t s, const std::vector<float> &scores,
                            const std::vector<int32_t> &tokens,
                            const std::vector<int32_t> &parents)
{
    for (int32_t k = 0; k < h.B; k++) {
        h.scores[(size_t)s * h.B + k] = scores[k];
        h.tokens[(size_t)s * h.B + k] = tokens[k];
        h.parents[(size_t)s * h.B + k] = parents[k];
    }
}

/* The onmt split of sentence s's sorted candidates `all` (ranks). */
static void twin_split_onmt(host_state &h, size_t p, int32_t s, int32_t step, int last,
                            float penalty, const std::vector<cand> &all,
                            const std::vector<int32_t> &attn)
{
    const int32_t B = h.B;
    const int32_t n_sel = (int32_t)all.size() < B ? (int32_t)all.size() : B;
    int32_t n_alive = 0;
    std::vector<float> new_scores(B, -INFINITY);
    std::vector<int32_t> new_tokens(B, EOS), new_parents(B, 0);
    for (int32_t c = 0; c < n_sel; c++) {
        const cand &x = all[c];
        const int32_t parent_slot = step > 1 ? x.slot : -1;
        const float score = penalty != 1.0f ? x.score * penalty : x.score;
        const size_t e = ((size_t)s * h.hist_len + (step - 1)) * B;
        if (x.word == EOS) {
            twin_keep(h, s, score, x.score, step, parent_slot);
            h.n_ended[s]++;
        } else if (last) {
            twin_record(h, e + c, x.word, attn[p * B + x.slot], parent_slot, score);
            twin_keep(h, s, score, x.score, step + 1, c);
            h.n_ended[s]++;
        } else {
            twin_record(h, e + n_alive, x.word, attn[p * B + x.slot], parent_slot, score);
            new_scores[n_alive] = score;
            new_tokens[n_alive] = x.word;
            new_parents[n_alive] = x.slot;
            n_alive++;
        }
    }
    twin_store_beam(h, s, new_scores, new_tokens, new_parents);
    if (last || n_alive == 0 || (n_sel > 0 && all[0].word == EOS && h.n_ended[s] >= h.n_best))
        h.done[s] = 1;
}

/* A case's forced tokens, by sentence (offset [n + 1], alternative [n]);
 * empty offset: none. */
struct host_forced {
    std::vector<int32_t> offset, ids, alternative;
};

/* Sentence s's one candidate at a forced step (forced_tokens.h), or 0 when
 * the step is free: its forced word, or its alternative's entry of slot
 * 0's list; none when that has no selectable entry. */
static int twin_forced(const host_forced &f, int32_t s, int32_t step, size_t row0, float base,
                       float penalty, const std::vector<float> &top_v,
                       const std::vector<int32_t> &top_i, int32_t K,
                       const std::vector<float> &logits, int32_t V,
                       const std::vector<float> &lse, std::vector<cand> &all)
{
    if (f.offset.empty())
        return 0;
    const int32_t first = f.offset[s], n_forced = f.offset[s + 1] - first;
    int32_t word = -1;
    float value = -INFINITY;
    if (step <= n_forced) {
        word = f.ids[first + step - 1];
        value = logits[row0 * V + word] - lse[row0];
    } else if (f.alternative[s] >= 0 && step == n_forced + 1) {
        for (int32_t j = 0, k = f.alternative[s]; j < K && top_i[row0 * K + j] >= 0; j++)
            if (top_i[row0 * K + j] != EOS && k-- == 0) {
                word = top_i[row0 * K + j];
                value = top_v[row0 * K + j];
                break;
            }
    } else {
        return 0;
    }
    const float sum = base + value, rank = penalty != 1.0f ? sum / penalty : sum;
    if (word >= 0 && rank > -INFINITY)
        all.push_back({rank, 0, word});
    return 1;
}

/* The C twin: one step for the active list, straight from the rules. */
static void twin_step(host_state &h, const std::vector<int32_t> &act,
                      const std::vector<int32_t> &steps, float alpha,
                      const std::vector<float> &top_v, const std::vector<int32_t> &top_i,
                      const std::vector<float> &logits, int32_t V, const std::vector<float> &lse,
                      const std::vector<int32_t> &attn, const host_forced &forced)
{
    const int32_t B = h.B, K = h.K;
    for (size_t p = 0; p < act.size(); p++) {
        const int32_t s = act[p], step = steps[s];
        if (h.done[s])
            continue;
        const int last = step >= h.max_len[s];
        const float penalty = h.onmt ? (float)pow((double)step + 1.0, (double)alpha) : 1.0f;
        std::vector<cand> all;
        const int one = twin_forced(forced, s, step, p * B, h.scores[(size_t)s * B], penalty,
                                    top_v, top_i, K, logits, V, lse, all);
        for (int32_t k = 0; k < B && !one; k++) {
            const size_t row = p * B + k;
            const float base = h.scores[(size_t)s * B + k];
            if (h.onmt) {
                for (int32_t j = 0; j < K; j++) {
                    const float sum = base + top_v[row * K + j];
                    const float rank = penalty != 1.0f ? sum / penalty : sum;
                    if (top_i[row * K + j] >= 0 && rank > -INFINITY)
                        all.push_back({rank, k, top_i[row * K + j]});
                }
                continue;
            }
            if (last) {
                float v = logits[row * V + EOS] - lse[row];
                float sc = base + v;
                if (sc > -INFINITY)
                    all.push_back({sc, k, EOS});
                continue;
            }
            for (int32_t j = 0; j < K; j++) {
                float sc = base + top_v[row * K + j];
                if (top_i[row * K + j] >= 0 && sc > -INFINITY)
                    all.push_back({sc, k, top_i[row * K + j]});
            }
        }
        /* Insertion sort: small and obviously right. */
        for (size_t i = 1; i < all.size(); i++)
            for (size_t j = i; j > 0 && cand_before(all[j], all[j - 1]); j--)
                std::swap(all[j], all[j - 1]);
        if (h.onmt) {
            twin_split_onmt(h, p, s, step, last, penalty, all, attn);
            continue;
        }
        const int32_t n_sel = (int32_t)all.size() < K ? (int32_t)all.size() : K;
        int32_t n_alive = 0;
        std::vector<float> new_scores(B, -INFINITY);
        std::vector<int32_t> new_tokens(B, EOS), new_parents(B, 0);
        for (int32_t c = 0; c < n_sel; c++) {
            const cand &x = all[c];
            const int32_t parent_slot = step > 1 ? x.slot : -1;
            if (x.word == EOS) {
                if (c >= B)
                    continue;
                size_t f = (size_t)s * K + h.n_finished[s]++;
                h.fin_log_prob[f] = x.score;
                h.fin_score[f] = x.score / powf((float)step, alpha);
                h.fin_length[f] = step;
                h.fin_parent[f] = parent_slot;
            } else if (n_alive < B) {
                const size_t e = ((size_t)s * h.hist_len + (step - 1)) * B + n_alive;
                twin_record(h, e, x.word, attn[p * B + x.slot], parent_slot, x.score);
                new_scores[n_alive] = x.score;
                new_tokens[n_alive] = x.word;
                new_parents[n_alive] = x.slot;
                n_alive++;
            }
        }
        twin_store_beam(h, s, new_scores, new_tokens, new_parents);
        if (h.n_finished[s] >= B || last || n_alive == 0)
            h.done[s] = 1;
    }
}

#endif
