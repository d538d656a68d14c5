/* test_gpu_beam_step.cu: the device beam bookkeeping (decoder/cuda/beam_step.cu)
 * against a plain C twin of both rule sets of decoder/beam_search.c
 * (beam_step_twin.h). onmt cases also draw log p values a few ulps apart
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
 * host clears them). Then prepare_rows is checked, and beam_join,
 * record_attention and backtracking on hand-made states
 * (beam_state_cases.h). In every fourth case some sentences have forced
 * tokens (decoder/forced_tokens.h). Exit 77 without a GPU. */
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

#include "beam_step_twin.h"

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
    /* a pageable copy may be in flight when cudaMemcpy returns; the kernels
     * under test run on a non-blocking stream that would not wait for it */
    CUDA_OK(cudaDeviceSynchronize());
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

#include "beam_state_cases.h"

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
