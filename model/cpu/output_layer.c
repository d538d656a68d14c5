/* output_layer.c: the CPU reference output layer (model-v1 "Decoder", step
 * 5): log_softmax(W_out f_t + b_out) over the whole vocabulary, or with a
 * shrunk vocabulary (shrink/shrink.h) over each row's candidate list: the
 * oracle of the CUDA output layer with LSH or TOP.
 *
 * Rows arrive sentence by sentence (decoder/beam_search.c keeps a sentence's
 * rows contiguous), so a group is a run of rows: all of them (share batch),
 * a run of equal row_sentence (share sentence), or one row (share row). Every
 * row here is live: the search passes only alive hypotheses. */
#include "cpu_state.h"

#include "error.h"
#include "fp32_ops.h"
#include "linear.h"
#include "softmax_topk.h"

#include <math.h>
#include <stdlib.h>

nmt_status nmt_cpu_state_set_shrink(nmt_cpu_state *state, const nmt_shrink *shrink,
                                    int measure_recall, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!state)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu shrink: state is NULL");
    NMT_TRY(nmt_shrink_check(shrink, state->hidden, state->vocab, "cpu", err));
    const size_t rows = (size_t)state->max_rows, V = (size_t)state->vocab;
    const size_t W = shrink->mode == NMT_SHRINK_LSH ? (size_t)shrink->tables->w : 1;
    NMT_ALLOC(state->lsh_codes, rows * W);
    NMT_ALLOC(state->lsh_hits, rows * V); /* zeroed: candidates leave it zero again */
    NMT_ALLOC(state->cand, rows * V);
    NMT_ALLOC(state->cand_count, rows);
    NMT_ALLOC(state->group_first, rows + 1);
    NMT_ALLOC(state->cand_log_probs, V);
    if (measure_recall) {
        NMT_ALLOC(state->recall_values, rows * (size_t)state->beam_size);
        NMT_ALLOC(state->recall_ids, rows * (size_t)state->beam_size);
        state->measure_recall = 1;
    }
    state->shrink = *shrink;
    state->has_shrink = 1;
cleanup:
    return status;
}

void nmt_cpu_state_full_softmax(nmt_cpu_state *state, int full)
{
    state->full_softmax = full;
}

void nmt_cpu_state_counters(const nmt_cpu_state *state, int64_t *steps, int64_t recall[3])
{
    *steps = state->steps;
    for (int i = 0; i < 3; i++)
        recall[i] = state->recall_stats[i];
}

/* The full softmax's top-B words of every row (PAD and BOS excluded, as the
 * search excludes them) against each group's list: the oracle of
 * nmt_cuda_output_probe. The candidate logits are no longer needed, so the
 * full logits reuse their buffer. */
static void count_recall(nmt_cpu_state *state, int32_t n_rows, const float *feed,
                         const int32_t *group_first, int32_t n_groups)
{
    const nmt_model *model = state->model;
    const int32_t V = state->vocab, H = state->hidden, B = state->beam_size;
    const int32_t excluded[2] = {NMT_PAD_ID, NMT_BOS_ID};
    nmt_cpu_linear(n_rows, V, H, feed, H, model->out_w, H, model->out_b, 0, state->logits, V);
    nmt_cpu_softmax_topk(n_rows, V, state->logits, V, B, excluded, 2, state->recall_values,
                         state->recall_ids, NULL);
    for (int32_t g = 0; g < n_groups; g++) {
        const int32_t first = group_first[g], rows = group_first[g + 1] - first;
        const nmt_cand_lists lists = {
            .words = state->cand + (size_t)g * V,
            .ld = V,
            .count = &state->cand_count[g],
            .rows_per_group = rows,
        };
        nmt_cpu_lsh_recall(rows, NULL, state->recall_ids + (size_t)first * B, B, lists,
                           state->recall_stats);
    }
}

static nmt_status shrunk_log_probs(nmt_cpu_state *state, int32_t n_rows, const float *feed,
                                   float *log_probs, nmt_error *err)
{
    const nmt_shrink *sh = &state->shrink;
    const nmt_model *model = state->model;
    const int32_t V = state->vocab, H = state->hidden;
    const int32_t *row_sentence = state->row_sentence[state->cur];
    (void)err;
    if (sh->mode == NMT_SHRINK_LSH) {
        nmt_cpu_lsh_codes(n_rows, feed, H, sh->tables, state->lsh_codes);
        nmt_cpu_lsh_hits(n_rows, state->lsh_codes, NULL, sh->tables, state->lsh_hits);
    }
    int32_t group = 0;
    for (int32_t first = 0; first < n_rows; group++) {
        int32_t end = first + 1;
        if (sh->share == NMT_LSH_SHARE_BATCH)
            end = n_rows;
        else if (sh->share == NMT_LSH_SHARE_SENTENCE)
            while (end < n_rows && row_sentence[end] == row_sentence[first])
                end++;
        const int32_t rows = end - first;
        int32_t *cand = state->cand + (size_t)group * V, *count = &state->cand_count[group];
        const nmt_cand_lists lists = {
            .words = cand,
            .ld = V,
            .count = count,
            .rows_per_group = rows,
        };
        float *logits = state->logits + (size_t)first * V;
        nmt_cpu_lsh_candidates(rows, V, state->lsh_hits + (size_t)first * V, sh->threshold,
                               sh->n_always, lists);
        const nmt_lsh_logits_args logits_args = {
            .n_rows = rows,
            .dim = H,
            .x = feed + (size_t)first * H,
            .ldx = H,
            .out_w = model->out_w,
            .out_b = model->out_b,
            .lists = lists,
            .first = 0,
            .logits = logits,
            .ld = V,
        };
        nmt_cpu_lsh_logits(&logits_args);
        for (int32_t r = 0; r < rows; r++) {
            float *lp = log_probs + (size_t)(first + r) * V;
            for (int32_t w = 0; w < V; w++)
                lp[w] = -INFINITY;
            (state->fast ? nmt_cpu_fast_log_softmax : nmt_cpu_log_softmax)(
                1, *count, logits + (size_t)r * V, V, state->cand_log_probs);
            for (int32_t j = 0; j < *count; j++)
                lp[cand[j]] = state->cand_log_probs[j];
        }
        state->group_first[group] = first;
        first = end;
    }
    state->group_first[group] = n_rows;
    if (state->measure_recall)
        count_recall(state, n_rows, feed, state->group_first, group);
    return NMT_STATUS_OK;
}

nmt_status nmt_cpu_output_layer(nmt_cpu_state *state, int32_t n_rows, float *log_probs,
                                nmt_error *err)
{
    const nmt_model *model = state->model;
    const int32_t V = state->vocab, H = state->hidden;
    const float *feed = state->feed[state->cur];
    if (n_rows < 0 || n_rows > state->n_rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cpu output layer: %d rows but the state holds %d", n_rows,
                             state->n_rows);
    if (n_rows == 0)
        return NMT_STATUS_OK;
    if (!log_probs)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cpu output layer: NULL log_probs");
    if (state->has_shrink && !state->full_softmax)
        return shrunk_log_probs(state, n_rows, feed, log_probs, err);
    nmt_cpu_matmul(state, &state->sp_out, n_rows, V, H, feed, H, model->out_w, H, model->out_b, 0,
                   state->logits, V);
    if (state->fast)
        nmt_cpu_fast_log_softmax(n_rows, V, state->logits, V, log_probs);
    else
        nmt_cpu_log_softmax(n_rows, V, state->logits, V, log_probs);
    return NMT_STATUS_OK;
}
