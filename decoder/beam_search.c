/* beam_search.c: batched beam search, model-v1's rules or OpenNMT-py's.
 *
 * The v1 rules are fixed by docs/model-v1.md and documented in
 * docs/decoding.md: per sentence, each step ranks every (alive hypothesis k,
 * word w) by score_k + log p(w), keeps the 2B best (ties: lower hypothesis
 * index, then lower word id), lets the EOS candidates among the first B
 * finish and the first B others live on.
 *
 * The onmt rules (docs/decoding.md, "Search rules") are those of
 * OpenNMT-py 3.5.1's BeamSearch under onmt_translate's defaults (avg length
 * penalty, ratio 0, min_length 0, no n-gram blocking, no coverage penalty),
 * restated over alive rows only: OpenNMT-py keeps a finished row in its beam
 * with score -65504, and as long as one row lives its V candidates outrank
 * every candidate of such a row, so leaving it out changes no choice. Each
 * step ranks (score_k + log p(w)) / (t + 1)^alpha, t the step (the +1 is the
 * BOS), keeps the B best, and carries score x (t + 1)^alpha on, rounded as
 * OpenNMT-py rounds it; EOS candidates finish, the others live on; the
 * sentence is done when its best candidate is an EOS (and n_best have
 * finished) or at its max-length step, where all B finish, EOS or not.
 *
 * Sentences are batched: the model holds one row per alive hypothesis, the
 * rows of one sentence contiguous and in hypothesis order. A sentence that is
 * done contributes no rows to the next reorder, so it stops costing work.
 *
 * Selecting the K best (2B or B) of B * V candidates is beam_select.c's: a
 * bounded min-heap, O(B V log B) per sentence and step.
 *
 * Tokens are stored as back-pointers (token, attention argmax, parent slot,
 * the score accumulated with the token) in a per-sentence history of
 * max_len x B entries, and with config.attention the weights of the row
 * that produced each token beside them; finished hypotheses are rebuilt from
 * it once, after the last step (a token's log-probability is the difference
 * of its score and its parent's). All memory is allocated before the first
 * step. At a sentence's forced steps (config.forced: a target prefix, an
 * alternative) its one candidate comes from forced_search.c instead.
 *
 * Sampling, the logit rules and the coverage penalty (docs/decoding.md) are
 * logit_rules.h's rules, applied through logit_rules_cpu.h: the rules
 * rewrite a step's rows before any selection; a sampling sentence keeps
 * one row a sample, each continuing itself in its own history slot (its
 * sample index), and every sample that draws EOS finishes. */
#include "beam_search_impl.h"

#include "error.h"
#include "forced_search.h"
#include "search_rules.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int32_t nmt_search_max_length(const nmt_search_config *config, int32_t src_length)
{
    const nmt_search_params *p = &config->params;
    double v = floor((double)p->max_len_a * (double)src_length + (double)p->max_len_b);
    if (config->rules == NMT_SEARCH_RULES_ONMT && v > NMT_ONMT_MAX_LENGTH)
        v = NMT_ONMT_MAX_LENGTH; /* onmt_translate: min(-max_length, ...) */
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
        free(result->hypotheses[i].token_scores);
        free(result->hypotheses[i].attention);
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
    if (nmt_search_params_check(&config->params, NMT_SEARCH_MAX_BEAM, err) != NMT_STATUS_OK ||
        nmt_search_params_check_rules(&config->params, config->rules, err) != NMT_STATUS_OK)
        return bad;
    if (config->params.coverage_penalty != NMT_COVERAGE_NONE && !model->attention)
        return nmt_error_set(err, bad, "beam search: the coverage penalty needs the model's "
                             "attention weights");
    const int32_t ids[3] = {config->pad_id, config->bos_id, config->eos_id};
    const char *names[3] = {"pad_id", "bos_id", "eos_id"};
    for (int i = 0; i < 3; i++)
        if (ids[i] < 0 || ids[i] >= v)
            return nmt_error_set(err, bad, "beam search: %s = %d is outside the vocabulary [0, %d)",
                                 names[i], ids[i], v);
    if (config->rules != NMT_SEARCH_RULES_V1 && config->rules != NMT_SEARCH_RULES_ONMT)
        return nmt_error_set(err, bad, "beam search: rules = %d is unknown", (int)config->rules);
    if (config->eos_id == config->pad_id || config->eos_id == config->bos_id)
        return nmt_error_set(err, bad, "beam search: eos_id = %d equals pad_id or bos_id, so it "
                             "could never be generated", config->eos_id);
    for (int32_t i = 0; i < n_sentences; i++)
        if (src_lengths[i] < 1)
            return nmt_error_set(err, bad, "beam search: src_lengths[%d] = %d, need >= 1", i,
                                 src_lengths[i]);
    if (nmt_forced_tokens_check(config, n_sentences, v, 0, err) != NMT_STATUS_OK)
        return bad;
    /* Sizes: rows must fit int32 (the step interface) and log-probs size_t. */
    const int32_t width = nmt_search_width(&config->params);
    size_t max_rows = (size_t)n_sentences * (size_t)width;
    if (max_rows > INT32_MAX || max_rows > SIZE_MAX / sizeof(float) / (size_t)v)
        return nmt_error_set(err, bad, "beam search: %d sentences x beam %d x vocabulary %d "
                             "is too large", n_sentences, width, v);
    return NMT_STATUS_OK;
}

/* Copies a sentence's n_best finished hypotheses, best first, into result.
 * order is scratch of at least n_finished entries. */
static nmt_status emit_result(const sentence_state *s, const finished_hyp *finished,
                              const search_buffers *b, int32_t *order,
                              nmt_search_result *result, nmt_error *err)
{
    const nmt_search_config *config = b->config;
    nmt_status status = NMT_STATUS_OK;
    const size_t beam = (size_t)b->beam;
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
    int32_t n = s->n_finished < config->params.n_best ? s->n_finished : config->params.n_best;
    NMT_ALLOC(result->hypotheses, n);
    for (int32_t h = 0; h < n; h++) {
        const finished_hyp *f = &finished[order[h]];
        nmt_search_hypothesis *hyp = &result->hypotheses[h];
        int32_t length = f->n_tokens;
        result->n_hypotheses = h + 1; /* from here on, clear frees it (calloc'd: NULLs) */
        NMT_ALLOC(hyp->tokens, length);
        NMT_ALLOC(hyp->attn_argmax, length);
        NMT_ALLOC(hyp->token_scores, (size_t)length + 1);
        const size_t n_src = (size_t)s->src_len;
        if (b->hist_weights)
            NMT_ALLOC(hyp->attention, length > 0 ? (size_t)length * n_src : 1);
        hyp->length = length;
        hyp->n_src = s->src_len;
        hyp->log_prob = f->log_prob;
        hyp->score = f->score;
        int32_t slot = f->last_slot;
        float after = f->log_prob; /* the score accumulated after token t */
        for (int32_t t = length - 1; t >= 0; t--) {
            size_t e = s->history + (size_t)t * beam + (size_t)slot;
            hyp->tokens[t] = b->hist_token[e];
            hyp->attn_argmax[t] = b->hist_attn[e];
            hyp->token_scores[t + 1] = after - b->hist_score[e];
            after = b->hist_score[e];
            if (b->hist_weights)
                memcpy(hyp->attention + (size_t)t * n_src,
                       b->hist_weights + s->weights + ((size_t)t * beam + (size_t)slot) * n_src,
                       sizeof(float) * n_src);
            slot = b->hist_parent[e];
        }
        hyp->token_scores[0] = after;
    }
cleanup:
    return status;
}

/* Writes history entry (step, slot) of sentence s: cand's word continues
 * history slot parent_slot, its hypothesis now at accumulated score
 * `score`. */
static void record(const search_buffers *b, const sentence_state *s, int32_t step, int32_t slot,
                   const candidate *cand, int32_t parent_slot, float score)
{
    const size_t at = (size_t)(step - 1) * (size_t)b->beam + (size_t)slot;
    const size_t e = s->history + at;
    const int32_t row = s->first_row + cand->hyp;
    b->hist_token[e] = cand->word;
    b->hist_attn[e] = b->attn[row];
    b->hist_parent[e] = parent_slot;
    b->hist_score[e] = score;
    if (b->hist_weights)
        memcpy(b->hist_weights + s->weights + at * (size_t)s->src_len,
               b->weights + (size_t)row * (size_t)b->weights_stride,
               sizeof(float) * (size_t)s->src_len);
}

void nmt_beam_live_on(const search_buffers *b, const sentence_state *s, int32_t step,
                      int32_t slot, int32_t row, const candidate *cand, float score)
{
    const int32_t from = s->first_row + cand->hyp;
    record(b, s, step, slot, cand, step > 1 ? b->row_slot[from] : -1, score);
    b->next_scores[row] = score;
    b->next_tokens[row] = cand->word;
    b->parent[row] = from;
    b->next_slot[row] = slot;
    if (b->next_coverage) /* the coverage the new row carries on */
        for (int32_t j = 0; j < s->src_len; j++)
            b->next_coverage[(size_t)row * b->coverage_ld + j] =
                b->coverage[(size_t)from * b->coverage_ld + j] +
                b->weights[(size_t)from * b->weights_stride + j];
}

/* One v1 step of sentence i (docs/model-v1.md); returns its alive count. */
static nmt_status step_v1(const search_buffers *b, int32_t i, sentence_state *s, int32_t step,
                          int32_t first_next_row, int32_t *n_alive_out, nmt_error *err)
{
    const nmt_search_config *config = b->config;
    const int32_t beam = b->beam, k = 2 * beam;
    const int last_step = step == s->max_len;
    int32_t n_best = nmt_beam_choose_candidates(b, s, i, step, k, last_step, 1, 1.0f);
    finished_hyp *fin = b->finished + (size_t)i * (size_t)k;
    int32_t n_alive = 0;
    for (int32_t c = 0; c < n_best; c++) {
        const candidate *cand = &b->best[c];
        if (cand->word == config->eos_id) {
            if (c >= beam)
                continue;
            if (s->n_finished >= k)
                return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                                     "beam search: sentence %d finished too many", i);
            /* Its slot in the history is its hypothesis index (none at step 1). */
            fin[s->n_finished++] = (finished_hyp){
                cand->score, nmt_rule_v1_score(cand->score, step, config->params.alpha), step - 1,
                step > 1 ? cand->hyp : -1};
        } else if (n_alive < beam) {
            /* Only reachable before the last step (which allows EOS only). */
            nmt_beam_live_on(b, s, step, n_alive, first_next_row + n_alive, cand, cand->score);
            n_alive++;
        }
    }
    if (nmt_rule_v1_done(s->n_finished, beam, last_step, n_alive))
        s->done = 1;
    *n_alive_out = n_alive;
    return NMT_STATUS_OK;
}

/* Adds h to the sentence's finished list, kept as the best `capacity` by
 * score, equal scores in finishing order (what OpenNMT-py's stable sort of
 * all of them, cut to n_best, keeps). */
static void keep_finished(finished_hyp *list, int32_t *n, int32_t capacity, finished_hyp h)
{
    int32_t at = *n;
    while (at > 0 && nmt_rule_finished_moves_up(list[at - 1].score, h.score))
        at--;
    if (at >= capacity)
        return;
    int32_t end = *n < capacity ? *n : capacity - 1;
    for (int32_t j = end; j > at; j--)
        list[j] = list[j - 1];
    list[at] = h;
    if (*n < capacity)
        (*n)++;
}

/* One onmt step of sentence i (the header comment); returns its alive count. */
static void step_onmt(const search_buffers *b, int32_t i, sentence_state *s, int32_t step,
                      int32_t first_next_row, int32_t *n_alive_out)
{
    const nmt_search_config *config = b->config;
    const int32_t beam = b->beam;
    const int last_step = step == s->max_len;
    const float penalty = nmt_rule_onmt_penalty(step, config->params.alpha);
    int32_t n_best = nmt_beam_choose_candidates(b, s, i, step, beam, 0, 0, penalty);
    finished_hyp *fin = b->finished + (size_t)i * (size_t)(2 * beam);
    int32_t n_alive = 0;
    for (int32_t c = 0; c < n_best; c++) {
        const candidate *cand = &b->best[c];
        const float score = nmt_rule_carried_score(cand->score, penalty);
        /* A finished hypothesis ranks by its rank less its coverage penalty. */
        const size_t row = (size_t)(s->first_row + cand->hyp);
        const float ranked =
            b->coverage ? cand->score - nmt_cpu_coverage_penalty(
                                            &config->params, b->coverage + row * b->coverage_ld,
                                            b->weights + row * b->weights_stride, s->src_len)
                        : cand->score;
        if (cand->word == config->eos_id) {
            keep_finished(fin, &s->n_finished, config->params.n_best, (finished_hyp){
                score, ranked, step - 1, step > 1 ? cand->hyp : -1});
            s->n_ended++;
        } else if (last_step) {
            /* Cut at the max length: the last word stays, in history slot c
             * (no hypothesis lives on, so the row's slots are free). */
            record(b, s, step, c, cand, step > 1 ? cand->hyp : -1, score);
            keep_finished(fin, &s->n_finished, config->params.n_best,
                          (finished_hyp){score, ranked, step, c});
            s->n_ended++;
        } else {
            nmt_beam_live_on(b, s, step, n_alive, first_next_row + n_alive, cand, score);
            n_alive++;
        }
    }
    const int best_ended = n_best > 0 && b->best[0].word == config->eos_id;
    if (nmt_rule_onmt_done(last_step, n_alive, best_ended, s->n_ended, config->params.n_best))
        s->done = 1;
    *n_alive_out = n_alive;
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

    const nmt_search_params *params = &config->params;
    const int32_t beam = nmt_search_width(params), vocab = model->vocab_size;
    const int32_t k = 2 * beam; /* candidates kept per sentence and step (v1) */
    const size_t max_rows = (size_t)n_sentences * (size_t)beam;
    const int coverage = params->coverage_penalty != NMT_COVERAGE_NONE;
    sentence_state *sentences = NULL;
    float *log_probs = NULL, *row_scores = NULL, *next_scores = NULL;
    int32_t *attn = NULL, *tokens = NULL, *next_tokens = NULL, *parent = NULL, *order = NULL;
    int32_t *hist_token = NULL, *hist_attn = NULL, *hist_parent = NULL;
    int32_t *row_slot = NULL, *next_slot = NULL;
    float *hist_score = NULL, *hist_weights = NULL, *cov = NULL, *next_cov = NULL;
    candidate *best = NULL;
    finished_hyp *finished = NULL;
    nmt_cpu_rules rules = {0};
    const int use_rules = nmt_search_has_logit_rules(params) || nmt_search_sampling(params);

    if (config->attention && !model->attention) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "beam search: attention weights "
                               "asked for, but the model gives none");
        goto cleanup;
    }
    NMT_ALLOC(sentences, n_sentences);
    size_t history_size = 0, weights_size = 0;
    int32_t longest = 1, widest = 1;
    for (int32_t i = 0; i < n_sentences; i++) {
        sentence_state *s = &sentences[i];
        s->max_len = nmt_forced_max_length(config, i, src_lengths[i]);
        s->first_row = i;
        s->n_alive = 1;
        s->src_len = src_lengths[i];
        s->history = history_size;
        s->weights = weights_size;
        longest = s->max_len > longest ? s->max_len : longest;
        widest = s->src_len > widest ? s->src_len : widest;
        /* v1 uses max_len - 1 rows (its last token is always the EOS), onmt
         * all max_len (a hypothesis cut at the max length keeps its last word). */
        size_t entries = (size_t)s->max_len * (size_t)beam;
        const size_t per_entry = config->attention ? (size_t)s->src_len : 0; /* src_len >= 1 */
        if (entries > SIZE_MAX / sizeof(int32_t) - history_size ||
            (per_entry && entries > (SIZE_MAX / sizeof(float) - weights_size) / per_entry)) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "beam search: max length %d "
                                   "(src_lengths[%d] = %d) is too large", s->max_len, i,
                                   src_lengths[i]);
            goto cleanup;
        }
        history_size += entries;
        weights_size += entries * per_entry;
    }
    NMT_ALLOC(log_probs, max_rows * (size_t)vocab);
    NMT_ALLOC(attn, max_rows);
    NMT_ALLOC(row_scores, max_rows);
    NMT_ALLOC(next_scores, max_rows);
    NMT_ALLOC(tokens, max_rows);
    NMT_ALLOC(next_tokens, max_rows);
    NMT_ALLOC(parent, max_rows);
    NMT_ALLOC(row_slot, max_rows);
    NMT_ALLOC(next_slot, max_rows);
    NMT_ALLOC(best, k);
    NMT_ALLOC(order, k);
    /* v1: at most B - 1 finished before a sentence's last step and B in it;
     * onmt: the best n_best <= B are kept. */
    NMT_ALLOC(finished, (size_t)n_sentences * (size_t)k);
    NMT_ALLOC(hist_token, history_size);
    NMT_ALLOC(hist_attn, history_size);
    NMT_ALLOC(hist_parent, history_size);
    NMT_ALLOC(hist_score, history_size);
    if (config->attention)
        NMT_ALLOC(hist_weights, weights_size);
    if (coverage) { /* zeros: no attention before step 1 */
        NMT_ALLOC(cov, max_rows * (size_t)widest);
        NMT_ALLOC(next_cov, max_rows * (size_t)widest);
    }
    if (use_rules) {
        NMT_TRY(nmt_cpu_rules_init(&rules, config, vocab, longest, err));
        rules.every_row = model->unnormalized;
    }

    int32_t n_rows = n_sentences;
    for (int32_t r = 0; r < n_rows; r++) {
        tokens[r] = config->bos_id;
        row_scores[r] = 0.0f;
    }
    for (int32_t step = 1; n_rows > 0; step++) {
        NMT_TRY(model->step(model->self, n_rows, tokens, log_probs, attn, err));
        int32_t weights_stride = 0, logits_ld = 0;
        const float *weights = config->attention || coverage
                                   ? model->attention(model->self, &weights_stride)
                                   : NULL;
        const search_buffers b = {
            .config = config, .beam = beam, .vocab = vocab,
            .log_probs = log_probs, .row_scores = row_scores, .attn = attn,
            .weights = weights, .weights_stride = weights_stride,
            .next_scores = next_scores, .next_tokens = next_tokens, .parent = parent,
            .hist_token = hist_token, .hist_attn = hist_attn, .hist_parent = hist_parent,
            .hist_score = hist_score, .hist_weights = hist_weights,
            .best = best, .finished = finished,
            .row_slot = row_slot, .next_slot = next_slot, .rules = use_rules ? &rules : NULL,
            .coverage = cov, .next_coverage = next_cov, .coverage_ld = widest,
        };
        if (nmt_search_has_logit_rules(params)) {
            const float *logits = model->logits ? model->logits(model->self, &logits_ld) : NULL;
            nmt_beam_apply_logit_rules(&b, sentences, n_sentences, step, logits, logits_ld);
        }
        int32_t n_next_rows = 0;
        for (int32_t i = 0; i < n_sentences; i++) {
            sentence_state *s = &sentences[i];
            if (s->done)
                continue;
            int32_t n_alive = 0;
            if (nmt_search_sampling(params))
                nmt_beam_step_sample(&b, i, s, step, n_next_rows, &n_alive);
            else if (config->rules == NMT_SEARCH_RULES_ONMT)
                step_onmt(&b, i, s, step, n_next_rows, &n_alive);
            else
                NMT_TRY(step_v1(&b, i, s, step, n_next_rows, &n_alive, err));
            if (s->done)
                continue;
            s->first_row = n_next_rows;
            s->n_alive = n_alive;
            n_next_rows += n_alive;
        }
        if (n_next_rows == 0)
            break;
        NMT_TRY(model->reorder(model->self, n_next_rows, parent, err));
        /* The next step's rows become the current ones. */
#define SWAP(type, a, b) do { type *swap_ = a; a = b; b = swap_; } while (0)
        SWAP(float, row_scores, next_scores);
        SWAP(int32_t, tokens, next_tokens);
        SWAP(int32_t, row_slot, next_slot);
        SWAP(float, cov, next_cov);
#undef SWAP
        n_rows = n_next_rows;
    }

    const search_buffers done = {.config = config, .beam = beam, .vocab = vocab,
                                 .hist_token = hist_token, .hist_attn = hist_attn,
                                 .hist_parent = hist_parent, .hist_score = hist_score,
                                 .hist_weights = hist_weights};
    for (int32_t i = 0; i < n_sentences; i++)
        NMT_TRY(emit_result(&sentences[i], finished + (size_t)i * (size_t)k, &done, order,
                            &results[i], err));

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
    free(hist_score);
    free(hist_weights);
    free(row_slot);
    free(next_slot);
    free(cov);
    free(next_cov);
    nmt_cpu_rules_free(&rules);
    return status;
}
