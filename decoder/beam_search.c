/* beam_search.c: batched beam search with model-v1 semantics.
 *
 * The algorithm is the OpenNMT-py beam search as fixed by
 * shared/design/model-v1.md and documented in docs/decoding.md: per sentence,
 * each step ranks every (alive hypothesis k, word w) by score_k + log p(w),
 * keeps the 2B best (ties: lower hypothesis index, then lower word id), lets
 * the EOS candidates among the first B finish and the first B others live on.
 *
 * Sentences are batched: the model holds one row per alive hypothesis, the
 * rows of one sentence contiguous and in hypothesis order. A sentence that is
 * done contributes no rows to the next reorder, so it stops costing work.
 *
 * Selecting the 2B best of B * V candidates uses a bounded min-heap of 2B
 * entries (the root is the worst kept candidate), O(B V log B) per sentence and
 * step rather than a sort of B * V. Candidates are visited in (row, word)
 * order, so a candidate whose score merely equals the root's is worse than it
 * under the tie rule and is skipped: the heap keeps exactly the right set.
 *
 * Tokens are stored as back-pointers (token, attention argmax, parent slot) in
 * a per-sentence history of (max_len - 1) x B entries; finished hypotheses
 * are rebuilt from it once, after the last step. All memory is allocated
 * before the first step. */
#include "search.h"

#include "error.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct candidate {
    float score;  /* accumulated log-probability including this word */
    int32_t hyp;  /* index of the alive hypothesis (row within the sentence) */
    int32_t word;
} candidate;

typedef struct finished_hyp {
    float log_prob;
    float score;          /* log_prob / length^alpha, length counting the EOS */
    int32_t length;       /* tokens including the EOS: the step it finished at */
    int32_t parent_slot;  /* history slot of its last non-EOS token, -1 if none */
} finished_hyp;

typedef struct sentence_state {
    int32_t max_len;
    int32_t first_row;  /* its first row in the current batch */
    int32_t n_alive;    /* its rows in the current batch */
    int32_t n_finished;
    int32_t done;
    size_t history;     /* offset of its (max_len - 1) x B history entries */
} sentence_state;

/* a is worse than b: lower score, or equal score and later (hypothesis, word). */
static int candidate_worse(const candidate *a, const candidate *b)
{
    if (a->score != b->score)
        return a->score < b->score;
    if (a->hyp != b->hyp)
        return a->hyp > b->hyp;
    return a->word > b->word;
}

/* Restores the min-heap (worst at the root) below position i. */
static void heap_sift_down(candidate *heap, int32_t n, int32_t i)
{
    for (;;) {
        int32_t worst = i, left = 2 * i + 1, right = 2 * i + 2;
        if (left < n && candidate_worse(&heap[left], &heap[worst]))
            worst = left;
        if (right < n && candidate_worse(&heap[right], &heap[worst]))
            worst = right;
        if (worst == i)
            return;
        candidate tmp = heap[i];
        heap[i] = heap[worst];
        heap[worst] = tmp;
        i = worst;
    }
}

static void heap_sift_up(candidate *heap, int32_t i)
{
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!candidate_worse(&heap[i], &heap[parent]))
            return;
        candidate tmp = heap[i];
        heap[i] = heap[parent];
        heap[parent] = tmp;
        i = parent;
    }
}

/* Offers one candidate to a heap of capacity k holding *n entries. */
static void heap_offer(candidate *heap, int32_t *n, int32_t k, float score, int32_t hyp,
                       int32_t word)
{
    /* -inf (excluded) and NaN (a broken model) candidates are never selected. */
    if (!(score > -INFINITY))
        return;
    if (*n < k) {
        heap[*n] = (candidate){score, hyp, word};
        heap_sift_up(heap, (*n)++);
    } else if (score > heap[0].score) {
        /* Visiting order is (hyp, word) ascending, so an equal score loses the tie. */
        heap[0] = (candidate){score, hyp, word};
        heap_sift_down(heap, k, 0);
    }
}

/* Fills best[0..return) with the (up to) 2B best candidates of a sentence,
 * best first. row_scores and log_probs point at the sentence's first row. */
static int32_t select_candidates(const float *row_scores, const float *log_probs, int32_t n_alive,
                                 int32_t vocab_size, int32_t k, int only_eos,
                                 const nmt_search_config *config, candidate *best)
{
    int32_t n = 0;
    for (int32_t hyp = 0; hyp < n_alive; hyp++) {
        const float *lp = log_probs + (size_t)hyp * (size_t)vocab_size;
        float base = row_scores[hyp];
        if (only_eos) {
            heap_offer(best, &n, k, base + lp[config->eos_id], hyp, config->eos_id);
            continue;
        }
        for (int32_t w = 0; w < vocab_size; w++) {
            if (w == config->pad_id || w == config->bos_id)
                continue;
            heap_offer(best, &n, k, base + lp[w], hyp, w);
        }
    }
    /* Heap sort: moving the worst to the end leaves the array best first. */
    for (int32_t m = n; m > 1; m--) {
        candidate tmp = best[0];
        best[0] = best[m - 1];
        best[m - 1] = tmp;
        heap_sift_down(best, m - 1, 0);
    }
    return n;
}

int32_t nmt_search_max_length(const nmt_search_config *config, int32_t src_length)
{
    double v = floor((double)config->max_len_a * (double)src_length + (double)config->max_len_b);
    if (!(v >= 1.0)) /* also catches NaN */
        return 1;
    if (v >= (double)INT32_MAX)
        return INT32_MAX;
    return (int32_t)v;
}

void nmt_search_result_clear(nmt_search_result *result)
{
    if (!result)
        return;
    for (int32_t i = 0; i < result->n_hypotheses; i++) {
        free(result->hypotheses[i].tokens);
        free(result->hypotheses[i].attn_argmax);
    }
    free(result->hypotheses);
    result->n_hypotheses = 0;
    result->hypotheses = NULL;
}

static nmt_status check_arguments(const nmt_step_model *model, int32_t n_sentences,
                                  const int32_t *src_lengths, const nmt_search_config *config,
                                  const nmt_search_result *results, nmt_error *err)
{
    const nmt_status bad = NMT_STATUS_ERROR_ARGUMENT;
    if (!model || !model->step || !model->reorder)
        return nmt_error_set(err, bad, "beam search: model (with step and reorder) is required");
    if (!config)
        return nmt_error_set(err, bad, "beam search: config is required");
    if (n_sentences < 0)
        return nmt_error_set(err, bad, "beam search: n_sentences = %d is negative", n_sentences);
    if (n_sentences > 0 && (!src_lengths || !results))
        return nmt_error_set(err, bad, "beam search: src_lengths and results are required");
    int32_t v = model->vocab_size;
    if (v < 4)
        return nmt_error_set(err, bad, "beam search: vocab_size = %d, need >= 4", v);
    if (config->beam_size < 1)
        return nmt_error_set(err, bad, "beam search: beam_size = %d, need >= 1", config->beam_size);
    if (config->n_best < 1 || config->n_best > config->beam_size)
        return nmt_error_set(err, bad, "beam search: n_best = %d, need 1 <= n_best <= beam_size (%d)",
                             config->n_best, config->beam_size);
    if (!isfinite(config->alpha))
        return nmt_error_set(err, bad, "beam search: alpha is not finite");
    if (!isfinite(config->max_len_a))
        return nmt_error_set(err, bad, "beam search: max_len_a is not finite");
    const int32_t ids[3] = {config->pad_id, config->bos_id, config->eos_id};
    const char *names[3] = {"pad_id", "bos_id", "eos_id"};
    for (int i = 0; i < 3; i++)
        if (ids[i] < 0 || ids[i] >= v)
            return nmt_error_set(err, bad, "beam search: %s = %d is outside the vocabulary [0, %d)",
                                 names[i], ids[i], v);
    if (config->eos_id == config->pad_id || config->eos_id == config->bos_id)
        return nmt_error_set(err, bad, "beam search: eos_id = %d equals pad_id or bos_id, so it "
                             "could never be generated", config->eos_id);
    for (int32_t i = 0; i < n_sentences; i++)
        if (src_lengths[i] < 1)
            return nmt_error_set(err, bad, "beam search: src_lengths[%d] = %d, need >= 1", i,
                                 src_lengths[i]);
    /* Sizes: rows must fit int32 (the step interface) and log-probs size_t. */
    size_t max_rows = (size_t)n_sentences * (size_t)config->beam_size;
    if (max_rows > INT32_MAX || max_rows > SIZE_MAX / sizeof(float) / (size_t)v)
        return nmt_error_set(err, bad, "beam search: %d sentences x beam %d x vocabulary %d "
                             "is too large", n_sentences, config->beam_size, v);
    return NMT_STATUS_OK;
}

/* Copies a sentence's n_best finished hypotheses, best first, into result.
 * order is scratch of at least n_finished entries. */
static nmt_status emit_result(const sentence_state *s, const finished_hyp *finished,
                              const int32_t *hist_token, const int32_t *hist_attn,
                              const int32_t *hist_parent, const nmt_search_config *config,
                              int32_t *order, nmt_search_result *result, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const size_t beam = (size_t)config->beam_size;
    /* Stable insertion sort by normalized score: equal scores keep finishing
     * order (earlier step first, then better rank within the step). */
    for (int32_t i = 0; i < s->n_finished; i++) {
        int32_t j = i;
        while (j > 0 && finished[order[j - 1]].score < finished[i].score) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    int32_t n = s->n_finished < config->n_best ? s->n_finished : config->n_best;
    NMT_ALLOC(result->hypotheses, n);
    for (int32_t h = 0; h < n; h++) {
        const finished_hyp *f = &finished[order[h]];
        nmt_search_hypothesis *hyp = &result->hypotheses[h];
        int32_t length = f->length - 1; /* EOS excluded */
        result->n_hypotheses = h + 1; /* from here on, clear frees it (calloc'd: NULLs) */
        NMT_ALLOC(hyp->tokens, length);
        NMT_ALLOC(hyp->attn_argmax, length);
        hyp->length = length;
        hyp->log_prob = f->log_prob;
        hyp->score = f->score;
        int32_t slot = f->parent_slot;
        for (int32_t t = length - 1; t >= 0; t--) {
            size_t e = s->history + (size_t)t * beam + (size_t)slot;
            hyp->tokens[t] = hist_token[e];
            hyp->attn_argmax[t] = hist_attn[e];
            slot = hist_parent[e];
        }
    }
cleanup:
    return status;
}

nmt_status nmt_beam_search(const nmt_step_model *model, int32_t n_sentences,
                           const int32_t *src_lengths, const nmt_search_config *config,
                           nmt_search_result *results, nmt_error *err)
{
    /* Results start empty, and are left empty on any failure. */
    for (int32_t i = 0; results && i < n_sentences; i++)
        results[i] = (nmt_search_result){0, NULL};
    nmt_status status = check_arguments(model, n_sentences, src_lengths, config, results, err);
    if (status != NMT_STATUS_OK)
        return status;
    if (n_sentences == 0)
        return NMT_STATUS_OK;

    const int32_t beam = config->beam_size, vocab = model->vocab_size;
    const int32_t k = 2 * beam; /* candidates kept per sentence and step */
    const size_t max_rows = (size_t)n_sentences * (size_t)beam;
    sentence_state *sentences = NULL;
    float *log_probs = NULL, *row_scores = NULL, *next_scores = NULL;
    int32_t *attn = NULL, *tokens = NULL, *next_tokens = NULL, *parent = NULL, *order = NULL;
    int32_t *hist_token = NULL, *hist_attn = NULL, *hist_parent = NULL;
    candidate *best = NULL;
    finished_hyp *finished = NULL;

    NMT_ALLOC(sentences, n_sentences);
    size_t history_size = 0;
    for (int32_t i = 0; i < n_sentences; i++) {
        sentence_state *s = &sentences[i];
        s->max_len = nmt_search_max_length(config, src_lengths[i]);
        s->first_row = i;
        s->n_alive = 1;
        s->history = history_size;
        size_t entries = (size_t)(s->max_len - 1) * (size_t)beam;
        if (entries > SIZE_MAX / sizeof(int32_t) - history_size) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "beam search: max length %d "
                                   "(src_lengths[%d] = %d) is too large", s->max_len, i,
                                   src_lengths[i]);
            goto cleanup;
        }
        history_size += entries;
    }
    NMT_ALLOC(log_probs, max_rows * (size_t)vocab);
    NMT_ALLOC(attn, max_rows);
    NMT_ALLOC(row_scores, max_rows);
    NMT_ALLOC(next_scores, max_rows);
    NMT_ALLOC(tokens, max_rows);
    NMT_ALLOC(next_tokens, max_rows);
    NMT_ALLOC(parent, max_rows);
    NMT_ALLOC(best, k);
    NMT_ALLOC(order, k);
    /* At most B - 1 finished before a sentence's last step and B in it. */
    NMT_ALLOC(finished, (size_t)n_sentences * (size_t)k);
    NMT_ALLOC(hist_token, history_size);
    NMT_ALLOC(hist_attn, history_size);
    NMT_ALLOC(hist_parent, history_size);

    int32_t n_rows = n_sentences;
    for (int32_t r = 0; r < n_rows; r++) {
        tokens[r] = config->bos_id;
        row_scores[r] = 0.0f;
    }
    for (int32_t step = 1; n_rows > 0; step++) {
        NMT_TRY(model->step(model->self, n_rows, tokens, log_probs, attn, err));
        int32_t n_next_rows = 0;
        for (int32_t i = 0; i < n_sentences; i++) {
            sentence_state *s = &sentences[i];
            if (s->done)
                continue;
            const int last_step = step == s->max_len;
            int32_t n_best = select_candidates(row_scores + s->first_row,
                                               log_probs + (size_t)s->first_row * (size_t)vocab,
                                               s->n_alive, vocab, k, last_step, config, best);
            finished_hyp *fin = finished + (size_t)i * (size_t)k;
            int32_t n_alive = 0;
            for (int32_t c = 0; c < n_best; c++) {
                const candidate *cand = &best[c];
                /* The alive hypothesis this candidate extends: its slot in the
                 * history is its hypothesis index (none at the first step). */
                int32_t parent_slot = step > 1 ? cand->hyp : -1;
                if (cand->word == config->eos_id) {
                    if (c >= beam)
                        continue;
                    if (s->n_finished >= k) {
                        status = nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                                               "beam search: sentence %d finished too many", i);
                        goto cleanup;
                    }
                    fin[s->n_finished++] = (finished_hyp){
                        cand->score, cand->score / powf((float)step, config->alpha), step,
                        parent_slot};
                } else if (n_alive < beam) {
                    /* Only reachable before the last step (which allows EOS only). */
                    size_t e = s->history + (size_t)(step - 1) * (size_t)beam + (size_t)n_alive;
                    hist_token[e] = cand->word;
                    hist_attn[e] = attn[s->first_row + cand->hyp];
                    hist_parent[e] = parent_slot;
                    int32_t row = n_next_rows + n_alive;
                    next_scores[row] = cand->score;
                    next_tokens[row] = cand->word;
                    parent[row] = s->first_row + cand->hyp;
                    n_alive++;
                }
            }
            if (s->n_finished >= beam || last_step || n_alive == 0) {
                s->done = 1;
                continue;
            }
            s->first_row = n_next_rows;
            s->n_alive = n_alive;
            n_next_rows += n_alive;
        }
        if (n_next_rows == 0)
            break;
        NMT_TRY(model->reorder(model->self, n_next_rows, parent, err));
        float *swap_scores = row_scores;
        row_scores = next_scores;
        next_scores = swap_scores;
        int32_t *swap_tokens = tokens;
        tokens = next_tokens;
        next_tokens = swap_tokens;
        n_rows = n_next_rows;
    }

    for (int32_t i = 0; i < n_sentences; i++)
        NMT_TRY(emit_result(&sentences[i], finished + (size_t)i * (size_t)k, hist_token, hist_attn,
                            hist_parent, config, order, &results[i], err));

cleanup:
    if (status != NMT_STATUS_OK)
        for (int32_t i = 0; i < n_sentences; i++)
            nmt_search_result_clear(&results[i]);
    free(sentences);
    free(log_probs);
    free(attn);
    free(row_scores);
    free(next_scores);
    free(tokens);
    free(next_tokens);
    free(parent);
    free(best);
    free(order);
    free(finished);
    free(hist_token);
    free(hist_attn);
    free(hist_parent);
    return status;
}
