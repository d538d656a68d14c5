/* test_gpu_beam_step.cu: the device beam bookkeeping (decoder/cuda/beam_step.cu)
 * against a plain C twin of both rule sets of decoder/beam_search.c. v1: all
 * B x 2B candidates fully sorted by (score desc, slot asc, word asc), the 2B
 * best split into finished (EOS among the first B) and alive (the first B
 * others), history and finished entries appended. onmt: the same sort of
 * the ranks (score + log p) / (t + 1)^alpha in float32, the B best split
 * into finished (EOS: kept as the best n_best), alive (score rank x
 * penalty) and, at the max-length step, cut; done when the best is an EOS
 * and n_best have ended. onmt cases also draw log p values a few ulps apart
 * (ranks that round together with their words out of order), PAD and BOS
 * in the lists, and kept finished lists to insert into.
 *
 * Random cases: beams 1..17, active lists that are a shuffled subset of the
 * sentences (so the row -> sentence map is exercised), dead slots (-inf),
 * done sentences (must stay untouched), max-length steps (EOS only, from
 * logits - lse), -inf/-1 tails of short top lists, and values on a 0.25 grid
 * so ties are frequent and every sum is exact. Then the beams at the edges
 * of the one-warp kernel (1, 2, 31, 32 | 33, 64: the block kernel), alone
 * and as several sentences with some done. Sentences are at different steps
 * of their own (start[s]: they joined a running search at different times).
 * Every step's history scores (the score each kept token carries on) are
 * checked with the rest; in odd cases the step also writes the next step's
 * rows (a done sentence's left as they were) and moves the step number on,
 * its ticket back to 0. A sentence that becomes done gets the batch's tag
 * and the global step number in done_at (NULL in every third case); the
 * others' entries stay as they were, and beam_join leaves them all (the
 * host clears them). Then prepare_rows, beam_join, record_attention
 * (active, done and out-of-history sentences), and a backtrack of hand-made
 * history (all sentences, and a slot list; tokens, token scores and the
 * attention rows of each token's parent slot) are checked too. In every
 * fourth case some sentences have forced tokens (decoder/forced_tokens.h):
 * at a forced step the twin offers slot 0's forced word alone, its log p
 * logits - lse (an EOS forced last finishes), or at the first free step
 * the rank's non-EOS word of slot 0's list. Exit 77 without a GPU. */
#include "beam_step.h"
#include "cuda_ctx.h"
#include "forced_tokens.h"
#include "search.h"
#include "../kernels/gpu_test_util.h"

extern "C" {
#include "test_util.h"
}

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

enum { PAD = 0, UNK = 1, BOS = 2, EOS = 3 };


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
            h.hist_token[e + c] = x.word;
            h.hist_attn[e + c] = attn[p * B + x.slot];
            h.hist_parent[e + c] = parent_slot;
            h.hist_score[e + c] = score;
            twin_keep(h, s, score, x.score, step + 1, c);
            h.n_ended[s]++;
        } else {
            h.hist_token[e + n_alive] = x.word;
            h.hist_attn[e + n_alive] = attn[p * B + x.slot];
            h.hist_parent[e + n_alive] = parent_slot;
            h.hist_score[e + n_alive] = score;
            new_scores[n_alive] = score;
            new_tokens[n_alive] = x.word;
            new_parents[n_alive] = x.slot;
            n_alive++;
        }
    }
    for (int32_t k = 0; k < B; k++) {
        h.scores[(size_t)s * B + k] = new_scores[k];
        h.tokens[(size_t)s * B + k] = new_tokens[k];
        h.parents[(size_t)s * B + k] = new_parents[k];
    }
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
                size_t e = ((size_t)s * h.hist_len + (step - 1)) * B + n_alive;
                h.hist_token[e] = x.word;
                h.hist_attn[e] = attn[p * B + x.slot];
                h.hist_parent[e] = parent_slot;
                h.hist_score[e] = x.score;
                new_scores[n_alive] = x.score;
                new_tokens[n_alive] = x.word;
                new_parents[n_alive] = x.slot;
                n_alive++;
            }
        }
        for (int32_t k = 0; k < B; k++) {
            h.scores[(size_t)s * B + k] = new_scores[k];
            h.tokens[(size_t)s * B + k] = new_tokens[k];
            h.parents[(size_t)s * B + k] = new_parents[k];
        }
        if (h.n_finished[s] >= B || last || n_alive == 0)
            h.done[s] = 1;
    }
}

static float grid(float lo, float hi) /* a multiple of 0.25 in [lo, hi] */
{
    int32_t steps = (int32_t)((hi - lo) * 4);
    return lo + 0.25f * (float)test_rand_int(0, steps + 1);
}

template <typename T> static T *upload(const std::vector<T> &v)
{
    T *d = NULL;
    CUDA_OK(cudaMalloc(&d, sizeof(T) * (v.size() ? v.size() : 1)));
    if (v.size())
        CUDA_OK(cudaMemcpy(d, v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice));
    return d;
}

template <typename T> static std::vector<T> download(const T *d, size_t n)
{
    std::vector<T> v(n);
    if (n)
        CUDA_OK(cudaMemcpy(v.data(), d, sizeof(T) * n, cudaMemcpyDeviceToHost));
    return v;
}

template <typename T>
static void expect_equal(const char *what, int case_id, const std::vector<T> &got,
                         const std::vector<T> &want)
{
    for (size_t i = 0; i < want.size(); i++) {
        int same = got[i] == want[i] || (got[i] != got[i] && want[i] != want[i]);
        if (!same) {
            CHECK(0, "case %d: %s[%zu] = %g, want %g", case_id, what, i, (double)got[i],
                  (double)want[i]);
            return;
        }
    }
}

/* A log p for the lists: v1 on the 0.25 grid; onmt, half the time, a grid
 * value a few ulps off, so that sums divided by the penalty round together
 * with their order by word not their order by value. */
static float list_value(int onmt)
{
    float v = grid(-4, 0);
    if (onmt && test_rand_int(0, 2))
        for (int32_t u = test_rand_int(0, 4); u > 0; u--)
            v = nextafterf(v, -INFINITY);
    return v;
}

/* n sentences of beam B under rules onmt (0: v1); force_done: the first
 * active sentence is not done and the second (if any) is. */
static void random_case(int case_id, int32_t B, int32_t n, int force_done, int onmt)
{
    const int32_t K = 2 * B;
    /* The search is at global step G; sentence s joined at start[s] and is at
     * its own step G - start[s] in 1..6. */
    const int32_t V = test_rand_int(5, 4 * B + 12), G = test_rand_int(6, 12);
    const int32_t hist_len = 6 + test_rand_int(0, 3);
    std::vector<int32_t> steps(n), start(n);
    for (int32_t s = 0; s < n; s++) {
        steps[s] = test_rand_int(1, 7);
        start[s] = G - steps[s];
    }
    const float alphas[3] = {1.0f, 0.6f, 0.0f};
    const float alpha = alphas[test_rand_int(0, 3)];
    host_state h;
    h.n = n, h.B = B, h.K = K, h.hist_len = hist_len;
    h.onmt = onmt, h.n_best = test_rand_int(1, B + 1);
    h.max_len.resize(n), h.done.resize(n), h.n_finished.resize(n), h.n_ended.resize(n);
    h.scores.resize((size_t)n * B), h.tokens.resize((size_t)n * B), h.parents.resize((size_t)n * B);
    h.fin_log_prob.assign((size_t)n * K, -99.f), h.fin_score.assign((size_t)n * K, -99.f);
    h.fin_length.assign((size_t)n * K, -7), h.fin_parent.assign((size_t)n * K, -7);
    const size_t entries = (size_t)n * hist_len * B;
    h.hist_token.assign(entries, -5), h.hist_attn.assign(entries, -5), h.hist_parent.assign(entries, -5);
    h.hist_score.assign(entries, -5.5f);
    for (int32_t s = 0; s < n; s++) {
        const int32_t step = steps[s];
        h.max_len[s] = test_rand_int(0, 3) == 0 ? step : step + test_rand_int(1, 4);
        h.done[s] = test_rand_int(0, 6) == 0;
        h.n_finished[s] = step == 1 ? 0 : test_rand_int(0, onmt ? h.n_best + 1 : B);
        h.n_ended[s] = h.n_finished[s] + (onmt && step > 1 ? test_rand_int(0, 4) : 0);
        if (onmt) /* the kept list: best first, as keep_finished leaves it */
            for (int32_t f = 0; f < h.n_finished[s]; f++) {
                const size_t e = (size_t)s * K + f;
                h.fin_score[e] = f == 0 ? grid(-6, 0) : h.fin_score[e - 1] - grid(0, 1);
                h.fin_log_prob[e] = grid(-9, 0);
                h.fin_length[e] = test_rand_int(1, step + 1);
                h.fin_parent[e] = test_rand_int(-1, B);
            }
        int32_t n_alive = step == 1 ? 1 : test_rand_int(1, B + 1);
        for (int32_t k = 0; k < B; k++) {
            size_t e = (size_t)s * B + k;
            h.scores[e] = k < n_alive ? (step == 1 ? 0.0f : list_value(onmt) - grid(0, 2))
                                      : -INFINITY;
            h.tokens[e] = test_rand_int(4, V);
            h.parents[e] = test_rand_int(0, B);
        }
    }
    /* Every fourth case: forced tokens for about half the sentences, slot 0
     * alone alive (as a forced search leaves them), the max length past
     * them. A forced step's word (an EOS last, at times), or a rank at the
     * first free step. */
    host_forced forced;
    if (case_id % 4 == 3) {
        forced.offset.assign(n + 1, 0);
        forced.alternative.assign(n, -1);
        for (int32_t s = 0; s < n; s++) {
            forced.offset[s + 1] = forced.offset[s];
            if (test_rand_int(0, 2))
                continue;
            const int alternative = test_rand_int(0, 3) == 0;
            const int32_t step = steps[s], n_forced = alternative ? step - 1
                                                                  : step + test_rand_int(0, 3);
            for (int32_t j = 0; j < n_forced; j++) {
                const int eos = j == n_forced - 1 && j == step - 1 && test_rand_int(0, 4) == 0;
                forced.ids.push_back(eos ? EOS : test_rand_int(4, V));
            }
            forced.offset[s + 1] += n_forced;
            if (alternative)
                forced.alternative[s] = test_rand_int(0, B);
            h.max_len[s] = nmt_rule_forced_max_len(h.max_len[s], n_forced,
                                                   forced.alternative[s]);
            for (int32_t k = 1; k < B; k++)
                h.scores[(size_t)s * B + k] = -INFINITY;
        }
    }

    /* Active list: a shuffled subset of the sentences. */
    std::vector<int32_t> act;
    for (int32_t s = 0; s < n; s++)
        if (test_rand_int(0, 4) != 0 || s == 0)
            act.push_back(s);
    for (size_t i = act.size(); i > 1; i--)
        std::swap(act[i - 1], act[(size_t)test_rand_int(0, (int32_t)i)]);
    if (force_done) {
        h.done[act[0]] = 0;
        if (act.size() > 1)
            h.done[act[1]] = 1;
    }
    const size_t rows = act.size() * B;
    std::vector<float> top_v(rows * K), logits(rows * V), lse(rows);
    std::vector<int32_t> top_i(rows * K), attn(rows);
    for (size_t r = 0; r < rows; r++) {
        /* Distinct words (v1: PAD and BOS never), sorted by (value desc, id asc). */
        std::vector<int32_t> words;
        for (int32_t w = 0; w < V; w++)
            if ((onmt || (w != PAD && w != BOS)) && test_rand_int(0, 3) != 0)
                words.push_back(w);
        for (size_t i = words.size(); i > 1; i--)
            std::swap(words[i - 1], words[(size_t)test_rand_int(0, (int32_t)i)]);
        std::vector<cand> list;
        for (size_t i = 0; i < words.size() && (int32_t)i < K; i++)
            list.push_back({list_value(onmt), 0, words[i]});
        for (size_t i = 1; i < list.size(); i++)
            for (size_t j = i; j > 0 && (list[j].score > list[j - 1].score ||
                                         (list[j].score == list[j - 1].score &&
                                          list[j].word < list[j - 1].word)); j--)
                std::swap(list[j], list[j - 1]);
        for (int32_t j = 0; j < K; j++) {
            top_v[r * K + j] = j < (int32_t)list.size() ? list[j].score : -INFINITY;
            top_i[r * K + j] = j < (int32_t)list.size() ? list[j].word : -1;
        }
        for (int32_t w = 0; w < V; w++)
            logits[r * V + w] = grid(-3, 3);
        lse[r] = grid(2, 5);
        attn[r] = test_rand_int(0, 50);
    }

    /* Device copy of the state. */
    nmt_beam_device b;
    memset(&b, 0, sizeof b);
    b.beam = B, b.eos_id = EOS, b.alpha = alpha, b.hist_len = hist_len;
    b.rules = onmt ? NMT_SEARCH_RULES_ONMT : NMT_SEARCH_RULES_V1, b.n_best = h.n_best;
    b.n_ended = upload(h.n_ended);
    b.max_len = upload(h.max_len);
    b.scores = upload(h.scores), b.tokens = upload(h.tokens), b.parents = upload(h.parents);
    b.done = upload(h.done), b.n_finished = upload(h.n_finished);
    b.fin_log_prob = upload(h.fin_log_prob), b.fin_score = upload(h.fin_score);
    b.fin_length = upload(h.fin_length), b.fin_parent = upload(h.fin_parent);
    b.hist_token = upload(h.hist_token), b.hist_attn = upload(h.hist_attn);
    b.hist_parent = upload(h.hist_parent);
    b.hist_score = upload(h.hist_score);
    b.step = upload(std::vector<int32_t>{G}); /* the step number lives on the device */
    b.start = upload(start);
    if (!forced.offset.empty())
        b.forced = {upload(forced.offset), upload(forced.ids), upload(forced.alternative)};
    int32_t *d_act = upload(act), *d_top_i = upload(top_i), *d_attn = upload(attn);
    float *d_top_v = upload(top_v), *d_logits = upload(logits), *d_lse = upload(lse);

    /* Odd cases: the beam step also writes the next step's rows (poisoned
     * first) and moves the step on (nmt_beam_next_rows). */
    const bool with_next = case_id % 2 == 1;
    b.ticket = upload(std::vector<int32_t>{0});
    int32_t *d_next = upload(std::vector<int32_t>(4 * rows, -77));
    const nmt_beam_next_rows next = {d_next, d_next + rows, d_next + 2 * rows, d_next + 3 * rows};
    const std::vector<int32_t> done_before = h.done;
    const int32_t kDoneAtPoison = -5;
    b.done_at = case_id % 3 == 2 ? NULL : upload(std::vector<int32_t>(n, kDoneAtPoison));
    const int32_t tag = test_rand_int(1, 32768);
    b.tag = upload(std::vector<int32_t>{tag});

    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_cuda_beam_step(&b, (int32_t)act.size(), d_act, d_top_v, d_top_i,
                                       d_logits, V, d_lse, d_attn, with_next ? &next : NULL,
                                       NULL, &err);
    CHECK(st == NMT_STATUS_OK, "case %d: beam step: %s", case_id, err.message);
    CUDA_OK(cudaDeviceSynchronize());
    twin_step(h, act, steps, alpha, top_v, top_i, logits, V, lse, attn, forced);
    CHECK(download(b.step, 1)[0] == G + (with_next ? 1 : 0) && download(b.ticket, 1)[0] == 0,
          "case %d: the beam step left step %d (from %d) and ticket %d", case_id,
          download(b.step, 1)[0], G, download(b.ticket, 1)[0]);
    if (with_next) {
        /* Rows of sentences done before the step stay as they were. */
        const std::vector<int32_t> got = download(d_next, 4 * rows);
        for (size_t r = 0; r < rows; r++) {
            const size_t p = r / B, k = r % B;
            const int32_t s = act[p];
            const int live = !h.done[s] && h.scores[(size_t)s * B + k] > -INFINITY;
            const int32_t want[4] = {h.tokens[(size_t)s * B + k], s,
                                     (int32_t)p * B + h.parents[(size_t)s * B + k], live};
            for (int f = 0; f < 4; f++) {
                const int32_t expect = done_before[s] ? -77 : want[f];
                CHECK(got[f * rows + r] == expect, "case %d: next row %zu field %d: %d, want %d",
                      case_id, r, f, got[f * rows + r], expect);
            }
        }
    }

    expect_equal("scores", case_id, download(b.scores, h.scores.size()), h.scores);
    expect_equal("tokens", case_id, download(b.tokens, h.tokens.size()), h.tokens);
    expect_equal("parents", case_id, download(b.parents, h.parents.size()), h.parents);
    expect_equal("done", case_id, download(b.done, h.done.size()), h.done);
    if (b.done_at) {
        std::vector<int32_t> want(n, kDoneAtPoison);
        for (int32_t s = 0; s < n; s++)
            if (h.done[s] && !done_before[s])
                want[s] = tag << 16 | G;
        expect_equal("done_at", case_id, download(b.done_at, want.size()), want);
    }
    expect_equal("n_finished", case_id, download(b.n_finished, h.n_finished.size()), h.n_finished);
    expect_equal("n_ended", case_id, download(b.n_ended, h.n_ended.size()), h.n_ended);
    expect_equal("fin_log_prob", case_id, download(b.fin_log_prob, h.fin_log_prob.size()),
                 h.fin_log_prob);
    expect_equal("fin_length", case_id, download(b.fin_length, h.fin_length.size()), h.fin_length);
    expect_equal("fin_parent", case_id, download(b.fin_parent, h.fin_parent.size()), h.fin_parent);
    expect_equal("hist_token", case_id, download(b.hist_token, entries), h.hist_token);
    expect_equal("hist_attn", case_id, download(b.hist_attn, entries), h.hist_attn);
    expect_equal("hist_parent", case_id, download(b.hist_parent, entries), h.hist_parent);
    expect_equal("hist_score", case_id, download(b.hist_score, entries), h.hist_score);
    std::vector<float> fin_score = download(b.fin_score, h.fin_score.size());
    if (onmt) /* ranks: the same float32 operations on both sides */
        expect_equal("fin_score", case_id, fin_score, h.fin_score);
    else
        CHECK(test_close_f32("fin_score", fin_score.data(), h.fin_score.data(), fin_score.size(),
                             1e-6, 1e-6),
              "case %d (B %d, global step %d, alpha %g)", case_id, B, G, alpha);

    /* prepare_rows after a compaction that reverses the list. */
    std::vector<int32_t> old_pos(act.size()), new_act(act.size());
    for (size_t p = 0; p < act.size(); p++) {
        new_act[p] = act[act.size() - 1 - p];
        old_pos[p] = (int32_t)(act.size() - 1 - p);
    }
    int32_t *d_new_act = upload(new_act), *d_old = upload(old_pos);
    int32_t *d_rows = NULL;
    CUDA_OK(cudaMalloc(&d_rows, sizeof(int32_t) * 4 * rows));
    /* With the next rows written the step has moved on: prepare_rows must
     * not move it again (advance 0). */
    st = nmt_cuda_beam_prepare_rows(&b, (int32_t)act.size(), d_new_act, d_old, d_rows,
                                    d_rows + rows, d_rows + 2 * rows, d_rows + 3 * rows,
                                    !with_next, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "case %d: prepare rows: %s", case_id, err.message);
    std::vector<int32_t> got = download(d_rows, 4 * rows);
    CHECK(download(b.step, 1)[0] == G + 1, "case %d: the step is %d after prepare_rows, want %d",
          case_id, download(b.step, 1)[0], G + 1);
    for (size_t r = 0; r < rows; r++) {
        size_t p = r / B, k = r % B;
        int32_t s = new_act[p];
        CHECK(got[r] == h.tokens[(size_t)s * B + k], "case %d: row_tokens[%zu]", case_id, r);
        CHECK(got[rows + r] == s, "case %d: row_sentence[%zu]", case_id, r);
        CHECK(got[2 * rows + r] == old_pos[p] * B + h.parents[(size_t)s * B + k],
              "case %d: row_parent[%zu]", case_id, r);
        const int live = !h.done[s] && h.scores[(size_t)s * B + k] > -INFINITY;
        CHECK(got[3 * rows + r] == live, "case %d: row_live[%zu] = %d, want %d", case_id, r,
              got[3 * rows + r], live);
    }

    void *ptrs[] = {(void *)b.max_len, b.scores, b.tokens, b.parents, b.done, b.n_finished,
                    b.fin_log_prob, b.fin_score, b.fin_length, b.fin_parent, b.hist_token,
                    b.hist_attn, b.hist_parent, d_act, d_top_i, d_attn, d_top_v, d_logits,
                    d_lse, d_new_act, d_old, d_rows, b.step, b.start, b.n_ended, b.hist_score,
                    b.ticket, d_next, b.done_at, b.tag};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        CUDA_OK(cudaFree(ptrs[i]));
    void *forced_ptrs[] = {(void *)b.forced.offset, (void *)b.forced.ids,
                           (void *)b.forced.alternative};
    for (size_t i = 0; i < 3; i++)
        CUDA_OK(cudaFree(forced_ptrs[i])); /* cudaFree(NULL) is a no-op */
}

/* beam_join: the listed sentences get the step-1 state with start = the
 * current step; the others keep every field. */
static void join_case(int32_t B, int32_t n)
{
    const int32_t G = test_rand_int(0, 40);
    std::vector<float> scores((size_t)n * B);
    std::vector<int32_t> tokens((size_t)n * B), parents((size_t)n * B), done(n), n_fin(n), start(n);
    for (size_t e = 0; e < scores.size(); e++) {
        scores[e] = grid(-6, 0);
        tokens[e] = test_rand_int(4, 50);
        parents[e] = test_rand_int(0, B);
    }
    for (int32_t s = 0; s < n; s++) {
        done[s] = test_rand_int(0, 2);
        n_fin[s] = test_rand_int(0, B);
        start[s] = test_rand_int(0, G + 1);
    }
    std::vector<int32_t> slots;
    for (int32_t s = 0; s < n; s++)
        if (test_rand_int(0, 2) || slots.empty())
            slots.push_back(s);
    for (size_t i = slots.size(); i > 1; i--)
        std::swap(slots[i - 1], slots[(size_t)test_rand_int(0, (int32_t)i)]);
    nmt_beam_device b;
    memset(&b, 0, sizeof b);
    b.beam = B;
    b.scores = upload(scores), b.tokens = upload(tokens), b.parents = upload(parents);
    b.done = upload(done), b.n_finished = upload(n_fin), b.start = upload(start);
    b.step = upload(std::vector<int32_t>{G});
    std::vector<int32_t> done_at(n);
    for (int32_t s = 0; s < n; s++)
        done_at[s] = done[s] ? test_rand_int(1, G + 2) : 0;
    b.done_at = upload(done_at);
    int32_t *d_slots = upload(slots);
    nmt_error err = {NMT_STATUS_OK, ""};
    CHECK(nmt_cuda_beam_join(&b, d_slots, (int32_t)slots.size(), BOS, NULL, &err) ==
              NMT_STATUS_OK, "join: %s", err.message);
    CUDA_OK(cudaDeviceSynchronize());
    for (int32_t s : slots) {
        done[s] = 0, n_fin[s] = 0, start[s] = G; /* done_at: untouched */
        for (int32_t k = 0; k < B; k++) {
            scores[(size_t)s * B + k] = k == 0 ? 0.0f : -INFINITY;
            tokens[(size_t)s * B + k] = BOS;
            parents[(size_t)s * B + k] = 0;
        }
    }
    expect_equal("join scores", B, download(b.scores, scores.size()), scores);
    expect_equal("join tokens", B, download(b.tokens, tokens.size()), tokens);
    expect_equal("join parents", B, download(b.parents, parents.size()), parents);
    expect_equal("join done", B, download(b.done, done.size()), done);
    expect_equal("join n_finished", B, download(b.n_finished, n_fin.size()), n_fin);
    expect_equal("join start", B, download(b.start, start.size()), start);
    expect_equal("join done_at", B, download(b.done_at, done_at.size()), done_at);
    CHECK(download(b.step, 1)[0] == G, "join changed the step");
    void *ptrs[] = {b.scores, b.tokens, b.parents, b.done, b.n_finished, b.start, b.step, d_slots,
                    b.done_at};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        CUDA_OK(cudaFree(ptrs[i]));
}

/* record_attention: 4 sentences of beam 2 at their own steps 4 (the last
 * the history holds), 1, 5 (past it) and 2 (done); the active list is
 * {3, 0, 2, 1}. Only sentences 3 and 0 get their rows' weights, at their
 * step's entries; everything else keeps its poison. */
static void record_case(void)
{
    const int32_t B = 2, n = 4, hist_len = 4, W = 3, G = 9;
    const std::vector<int32_t> act = {3, 0, 2, 1}, start = {G - 4, G - 2, G - 5, G - 1};
    const std::vector<int32_t> done = {0, 1, 0, 0};
    std::vector<float> rows(act.size() * B * W);
    for (size_t p = 0; p < act.size(); p++)
        for (int32_t k = 0; k < B; k++)
            for (int32_t j = 0; j < W; j++)
                rows[(p * B + k) * W + j] = 1000.0f * (float)p + 100.0f * (float)k + (float)j;
    std::vector<float> want((size_t)n * hist_len * B * W, -7.0f);
    nmt_beam_device b;
    memset(&b, 0, sizeof b);
    b.beam = B, b.hist_len = hist_len, b.weights_stride = W;
    b.done = upload(done), b.start = upload(start), b.step = upload(std::vector<int32_t>{G});
    b.hist_weights = upload(want);
    int32_t *d_act = upload(act);
    float *d_rows = upload(rows);
    nmt_error err = {NMT_STATUS_OK, ""};
    CHECK(nmt_cuda_beam_record_attention(&b, (int32_t)act.size(), d_act, d_rows, NULL, &err) ==
              NMT_STATUS_OK, "record attention: %s", err.message);
    CUDA_OK(cudaDeviceSynchronize());
    for (size_t p = 0; p < act.size(); p++) {
        const int32_t s = act[p], t = G - start[s];
        if (done[s] || t > hist_len)
            continue;
        for (int32_t k = 0; k < B; k++)
            for (int32_t j = 0; j < W; j++)
                want[(((size_t)s * hist_len + (t - 1)) * B + k) * W + j] =
                    rows[(p * B + k) * W + j];
    }
    expect_equal("hist_weights", 0, download(b.hist_weights, want.size()), want);
    float *d_hist = b.hist_weights;
    b.hist_weights = NULL; /* refused without a history */
    CHECK(nmt_cuda_beam_record_attention(&b, (int32_t)act.size(), d_act, d_rows, NULL, &err) ==
              NMT_STATUS_ERROR_ARGUMENT, "record attention without a history not refused");
    void *ptrs[] = {b.done, b.start, b.step, d_act, d_rows, d_hist};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        CUDA_OK(cudaFree(ptrs[i]));
}

/* Backtracking of a hand-made history: sentence 0 with three finished
 * hypotheses (one tie, kept in finishing order), sentence 1 with none.
 * Scores and weights are exact: token scores are differences of grid
 * values, and a token's weights row names its step and parent slot. */
static void backtrack_case(void)
{
    const int32_t B = 2, K = 4, n = 2, hist_len = 3, W = 3, src_stride = 2;
    /* hist[t][slot] for sentence 0 (sentence 1 unused). */
    const int32_t tok[3][2] = {{10, 11}, {12, 13}, {14, 15}};
    const int32_t att[3][2] = {{0, 1}, {2, 3}, {4, 5}};
    const int32_t par[3][2] = {{-1, -1}, {1, 0}, {0, 1}};
    const float sco[3][2] = {{-0.5f, -0.75f}, {-1.25f, -2.0f}, {-3.5f, -2.25f}};
    std::vector<int32_t> hist_token((size_t)n * hist_len * B, 0), hist_attn(hist_token.size(), 0),
        hist_parent(hist_token.size(), 0);
    std::vector<float> hist_score(hist_token.size(), 0.0f);
    /* Row (t, k) of sentence 0: 100 t + 10 k + j. */
    std::vector<float> hist_weights(hist_token.size() * W, -9.0f);
    for (int32_t t = 0; t < hist_len; t++)
        for (int32_t k = 0; k < B; k++) {
            hist_token[(size_t)t * B + k] = tok[t][k];
            hist_attn[(size_t)t * B + k] = att[t][k];
            hist_parent[(size_t)t * B + k] = par[t][k];
            hist_score[(size_t)t * B + k] = sco[t][k];
            for (int32_t j = 0; j < W; j++)
                hist_weights[((size_t)t * B + k) * W + j] = 100.0f * t + 10.0f * k + j;
        }
    std::vector<float> fin_log_prob = {-2.0f, -3.0f, -4.0f, 0, 0, 0, 0, 0};
    std::vector<float> fin_score = {-2.0f, -1.0f, -1.0f, 0, 0, 0, 0, 0};
    std::vector<int32_t> fin_length = {1, 3, 4, 0, 0, 0, 0, 0};
    std::vector<int32_t> fin_parent = {-1, 1, 0, 0, 0, 0, 0, 0};
    std::vector<int32_t> n_finished = {3, 0};
    nmt_beam_device b;
    memset(&b, 0, sizeof b);
    b.beam = B, b.eos_id = EOS, b.alpha = 1.0f, b.hist_len = hist_len;
    b.n_finished = upload(n_finished);
    b.fin_log_prob = upload(fin_log_prob), b.fin_score = upload(fin_score);
    b.fin_length = upload(fin_length), b.fin_parent = upload(fin_parent);
    b.hist_token = upload(hist_token), b.hist_attn = upload(hist_attn);
    b.hist_parent = upload(hist_parent);
    b.hist_score = upload(hist_score);
    b.hist_weights = upload(hist_weights), b.weights_stride = W;
    (void)K;
    nmt_beam_results r_dev, r_host;
    const size_t bytes = nmt_beam_results_carve(NULL, n, 2, hist_len, src_stride, &r_dev);
    void *d_res = NULL;
    CUDA_OK(cudaMalloc(&d_res, bytes));
    CUDA_OK(cudaMemset(d_res, 0xff, bytes));
    CUDA_OK(cudaDeviceSynchronize()); /* the code under test runs on a non-blocking stream */
    nmt_beam_results_carve(d_res, n, 2, hist_len, src_stride, &r_dev);
    std::vector<int32_t> host(bytes / sizeof(int32_t));
    nmt_beam_results_carve(host.data(), n, 2, hist_len, src_stride, &r_host);
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_cuda_beam_backtrack(&b, n, &r_dev, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "backtrack: %s", err.message);
    CUDA_OK(cudaMemcpy(host.data(), d_res, bytes, cudaMemcpyDeviceToHost));
    CHECK(r_host.n_hypotheses[0] == 2 && r_host.n_hypotheses[1] == 0, "n_hypotheses %d %d",
          r_host.n_hypotheses[0], r_host.n_hypotheses[1]);
    CHECK(r_host.length[0] == 2 && r_host.length[1] == 3, "lengths %d %d", r_host.length[0],
          r_host.length[1]);
    CHECK(r_host.score[0] == -1.0f && r_host.log_prob[0] == -3.0f, "first: %g %g",
          r_host.score[0], r_host.log_prob[0]);
    CHECK(r_host.log_prob[1] == -4.0f, "second log_prob %g", r_host.log_prob[1]);
    const int32_t want0[2] = {10, 13}, want0_attn[2] = {0, 3};
    const int32_t want1[3] = {11, 12, 14}, want1_attn[3] = {1, 2, 4};
    for (int32_t t = 0; t < 2; t++)
        CHECK(r_host.tokens[t] == want0[t] && r_host.attn[t] == want0_attn[t],
              "hyp 0 token %d: %d (attn %d)", t, r_host.tokens[t], r_host.attn[t]);
    for (int32_t t = 0; t < 3; t++)
        CHECK(r_host.tokens[hist_len + t] == want1[t] && r_host.attn[hist_len + t] == want1_attn[t],
              "hyp 1 token %d: %d (attn %d)", t, r_host.tokens[hist_len + t],
              r_host.attn[hist_len + t]);
    /* Hyp 0: entries (0, 0), (1, 1), EOS; hyp 1: (0, 1), (1, 0), (2, 0), EOS.
     * Weights: the row of the parent slot (slot 0 at step 1). */
    const float want0_ts[3] = {-0.5f, -2.0f + 0.5f, -3.0f + 2.0f};
    const float want1_ts[4] = {-0.75f, -1.25f + 0.75f, -3.5f + 1.25f, -4.0f + 3.5f};
    const float want0_row[2] = {0.0f, 100.0f}, want1_row[3] = {0.0f, 110.0f, 200.0f};
    const int32_t ts_stride = hist_len + 1;
    for (int32_t t = 0; t < 3; t++)
        CHECK(r_host.token_scores[t] == want0_ts[t], "hyp 0 token score %d: %g, want %g", t,
              r_host.token_scores[t], want0_ts[t]);
    for (int32_t t = 0; t < 4; t++)
        CHECK(r_host.token_scores[ts_stride + t] == want1_ts[t],
              "hyp 1 token score %d: %g, want %g", t, r_host.token_scores[ts_stride + t],
              want1_ts[t]);
    for (int32_t j = 0; j < src_stride; j++) {
        for (int32_t t = 0; t < 2; t++)
            CHECK(r_host.attention[t * src_stride + j] == want0_row[t] + j,
                  "hyp 0 token %d weight %d: %g", t, j, r_host.attention[t * src_stride + j]);
        for (int32_t t = 0; t < 3; t++) {
            const float got = r_host.attention[(hist_len + t) * src_stride + j];
            CHECK(got == want1_row[t] + j, "hyp 1 token %d weight %d: %g", t, j, got);
        }
    }
    /* Rows wider than the history's are refused. */
    nmt_beam_results wide;
    nmt_beam_results_carve(d_res, n, 2, hist_len, W + 1, &wide);
    CHECK(nmt_cuda_beam_backtrack(&b, n, &wide, NULL, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "attention rows wider than the history not refused");
    /* By slots, reversed: result 0 is sentence 1 (none), result 1 sentence 0. */
    const std::vector<int32_t> slots = {1, 0};
    int32_t *d_slots = upload(slots);
    CUDA_OK(cudaMemset(d_res, 0xff, bytes));
    CUDA_OK(cudaDeviceSynchronize());
    st = nmt_cuda_beam_backtrack_slots(&b, d_slots, 2, &r_dev, NULL, &err);
    CHECK(st == NMT_STATUS_OK, "backtrack by slots: %s", err.message);
    CUDA_OK(cudaMemcpy(host.data(), d_res, bytes, cudaMemcpyDeviceToHost));
    CHECK(r_host.n_hypotheses[0] == 0 && r_host.n_hypotheses[1] == 2,
          "by slots: n_hypotheses %d %d", r_host.n_hypotheses[0], r_host.n_hypotheses[1]);
    const size_t o = 2; /* result 1, hypothesis 0 */
    CHECK(r_host.length[o] == 2 && r_host.score[o] == -1.0f && r_host.log_prob[o] == -3.0f,
          "by slots: first of sentence 0: length %d, %g %g", r_host.length[o], r_host.score[o],
          r_host.log_prob[o]);
    for (int32_t t = 0; t < 2; t++)
        CHECK(r_host.tokens[o * hist_len + t] == want0[t], "by slots: token %d: %d", t,
              r_host.tokens[o * hist_len + t]);
    CUDA_OK(cudaFree(d_slots));
    void *ptrs[] = {b.n_finished, b.fin_log_prob, b.fin_score, b.fin_length, b.fin_parent,
                    b.hist_token, b.hist_attn, b.hist_parent, b.hist_score, b.hist_weights,
                    d_res};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        CUDA_OK(cudaFree(ptrs[i]));
}

int main(void)
{
    if (nmt_cuda_device_count() == 0) {
        fprintf(stderr, "skipped: no GPU\n");
        return NMT_TEST_SKIP;
    }
    test_seed();
    /* Both rule sets: case ids 0.. v1, 10000.. onmt. */
    for (int onmt = 0; onmt < 2; onmt++) {
        const int id0 = 10000 * onmt;
        for (int c = 0; c < 400 && test_failures < 20; c++) {
            const int32_t B = test_rand_int(1, 18), n = test_rand_int(1, 10);
            random_case(id0 + c, B, n, 0, onmt);
        }
        /* Beams at the edges of the one-warp kernel (B <= 32) and past it. */
        const int32_t edge_beams[6] = {1, 2, 31, 32, 33, 64};
        for (int e = 0; e < 6; e++)
            for (int c = 0; c < 12 && test_failures < 20; c++) {
                const int32_t n = c < 3 ? 1 : test_rand_int(3, edge_beams[e] > 32 ? 6 : 9);
                random_case(id0 + 1000 + 100 * e + c, edge_beams[e], n, c >= 3, onmt);
            }
        fprintf(stderr, "%s: %d random and edge cases checked\n", onmt ? "onmt" : "v1",
                400 + 6 * 12);
    }
    for (int c = 0; c < 40 && test_failures < 20; c++)
        join_case(test_rand_int(1, 40), test_rand_int(1, 12));
    record_case();
    backtrack_case();
    return test_finish("test_gpu_beam_step");
}
