/* beam_search_impl.h: private to decoder/: the CPU search's state
 * (decoder/beam_search.c), shared with its candidate selection
 * (decoder/beam_select.c) and its sampling and logit-rules steps
 * (decoder/beam_sample.c). */
#ifndef NMT_BEAM_SEARCH_IMPL_H
#define NMT_BEAM_SEARCH_IMPL_H

#include "logit_rules_cpu.h"
#include "search.h"

#include <stddef.h>
#include <stdint.h>

typedef struct candidate {
    float score;  /* the ranking score: v1 the accumulated log-probability including
                     this word; onmt that divided by the step's length penalty */
    int32_t hyp;  /* index of the alive hypothesis (row within the sentence) */
    int32_t word;
} candidate;

typedef struct finished_hyp {
    float log_prob;
    float score;          /* normalized: log_prob / its length penalty */
    int32_t n_tokens;     /* output tokens, EOS excluded */
    int32_t last_slot;    /* history slot of its last output token, -1 if none */
} finished_hyp;

typedef struct sentence_state {
    int32_t max_len;
    int32_t first_row;  /* its first row in the current batch */
    int32_t n_alive;    /* its rows in the current batch */
    int32_t n_finished; /* finished hypotheses kept (onmt: the best n_best) */
    int32_t n_ended;    /* onmt: hypotheses finished so far, kept or not */
    int32_t done;
    int32_t src_len;
    size_t history;     /* offset of its max_len x B history entries */
    size_t weights;     /* config.attention: offset of its max_len x B x src_len weights */
} sentence_state;

/* The buffers of one search, shared by the per-sentence steps below. */
typedef struct search_buffers {
    const nmt_search_config *config;
    int32_t beam;           /* rows a sentence keeps (nmt_search_width) */
    int32_t vocab;
    float *log_probs; /* the step's rows; the logit rules rewrite some */
    const float *row_scores;
    const int32_t *attn;
    const float *weights;   /* config.attention: the step's rows, weights_stride apart */
    int32_t weights_stride;
    float *next_scores;
    int32_t *next_tokens, *parent;
    int32_t *hist_token, *hist_attn, *hist_parent;
    float *hist_score;      /* the score accumulated with each history entry's token */
    float *hist_weights;    /* config.attention: the producing row's weights per entry */
    candidate *best;
    finished_hyp *finished; /* [n_sentences, 2B] */
    int32_t *row_slot, *next_slot; /* each row's history slot at the step before */
    nmt_cpu_rules *rules;   /* logit rules and sampling, or NULL */
    float *coverage, *next_coverage; /* coverage penalty: [rows, coverage_ld] */
    int32_t coverage_ld;
} search_buffers;

/* Fills b->best[0..return) with the (up to) k best candidates of sentence i
 * (index i, state s) at `step`, best first, ranked by (score + log p) /
 * penalty (v1: penalty 1, PAD and BOS masked; onmt: nothing masked);
 * only_eos: EOS alone (v1's last step). At a forced step its one candidate,
 * of slot 0 (decoder/beam_select.c). */
int32_t nmt_beam_choose_candidates(const search_buffers *b, const sentence_state *s, int32_t i,
                                   int32_t step, int32_t k, int only_eos, int mask_specials,
                                   float penalty);

/* Makes cand (with accumulated score `score`) a hypothesis of s in history
 * slot `slot` (the beam's: its rank among the alive; a sample's: its index),
 * as model row `row` of the next step. */
void nmt_beam_live_on(const search_buffers *b, const sentence_state *s, int32_t step,
                      int32_t slot, int32_t row, const candidate *cand, float score);

/* One sampling step of sentence i (decoder/beam_sample.c); *n_alive_out:
 * its rows for the next step. */
void nmt_beam_step_sample(const search_buffers *b, int32_t i, sentence_state *s, int32_t step,
                          int32_t first_next_row, int32_t *n_alive_out);

/* The logit rules on every row of the step (logits: the model's, or NULL). */
void nmt_beam_apply_logit_rules(const search_buffers *b, const sentence_state *sentences,
                                int32_t n_sentences, int32_t step, const float *logits,
                                int32_t ld);

#endif /* NMT_BEAM_SEARCH_IMPL_H */
