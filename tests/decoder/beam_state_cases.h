/* beam_state_cases.h: the device beam state's bookkeeping besides the step
 * (decoder/cuda/beam_state.cu), on hand-made states: beam_join,
 * record_attention (active, done and out-of-history sentences) and a
 * backtrack of a hand-made history (all sentences, and a slot list; tokens,
 * token scores and the attention rows of each token's parent slot).
 * Included once by test_gpu_beam_step.cu after its token ids and device
 * helpers (grid, upload, download, expect_equal). */
#ifndef BEAM_STATE_CASES_H
#define BEAM_STATE_CASES_H

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

#endif
