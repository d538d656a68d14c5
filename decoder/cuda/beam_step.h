/* beam_step.h: the bookkeeping of the batched beam search on the device,
 * model-v1's rules or OpenNMT-py's (rules) exactly as decoder/beam_search.c
 * implements them on the host: the step in decoder/cuda/beam_step.cu; init,
 * join, a step's rows and backtracking in decoder/cuda/beam_state.cu.
 *
 * Sentences are indexed by s in [0, n_sentences) (the backend's sorted
 * order); each has B slots. A slot's state (score, last token, parent slot)
 * is stored by sentence, [s * B + k]. Dead slots (fewer than B alive, or the
 * B - 1 empty slots at step 1) have score -inf and so never give a candidate.
 * Model rows follow the active list `act`: row p * B + k is slot k of
 * sentence act[p]. Plain C; every pointer is a device pointer. */
#ifndef NMT_BEAM_STEP_H
#define NMT_BEAM_STEP_H

#include "forced_tokens.h"
#include "nmt_status.h"
#include "search_params.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest beam the device kernels take. */
#define NMT_CUDA_BEAM_MAX NMT_SEARCH_MAX_BEAM

typedef struct nmt_beam_device {
    int32_t beam;     /* B, 1..256 */
    int32_t eos_id;
    float alpha;      /* length penalty: score = log_prob / length^alpha */
    int32_t hist_len; /* history steps per sentence: v1 max length - 1 (at least 1), onmt
                         max length (a hypothesis cut there keeps its last word) */
    int32_t rules;    /* an nmt_search_rules (search.h); 0 (memset): model-v1 */
    int32_t n_best;   /* onmt: finished hypotheses kept, and ended before it may stop */
    const int32_t *max_len;          /* [n]: floor(a S + b) of each sentence */
    float *scores;                   /* [n, B]: accumulated log-probability */
    int32_t *tokens;                 /* [n, B]: last token */
    int32_t *parents;                /* [n, B]: slot it continued at the last step */
    int32_t *done;                   /* [n]: 1 once the sentence takes no more steps */
    int32_t *done_at;                /* [n] or NULL: (*tag << 16) | the step number (*step,
                                        low 16 bits) at which the sentence became done; a
                                        mapped host buffer, so the host reads it without a
                                        copy in the stream (nmt_done_at_step reads it).
                                        Only the beam step writes it: the host zeroes a
                                        batch's entries before the batch
                                        (decoder/cuda/beam_search.c) */
    int32_t *n_finished;             /* [n] */
    int32_t *n_ended;                /* [n]: onmt: hypotheses finished so far, kept or not
                                        (may be NULL with v1) */
    float *fin_log_prob, *fin_score; /* [n, 2B]: finished hypotheses, v1 in finishing order,
                                        onmt the best n_best by score (ties: finishing
                                        order) */
    int32_t *fin_length;             /* [n, 2B]: tokens including EOS (= its step; onmt cut
                                        at the max length: step + 1, as if it had one) */
    int32_t *fin_parent;             /* [n, 2B]: history slot of its last token, -1 if none */
    int32_t *hist_token, *hist_attn, *hist_parent; /* [n, hist_len, B] */
    float *hist_score;               /* [n, hist_len, B]: the score accumulated with the entry's
                                        token (what the slot carries on; onmt: rank x penalty) */
    float *hist_weights;             /* [n, hist_len, B, weights_stride]: the attention weights
                                        of row (s, slot k) at each of s's steps, before the
                                        selection (nmt_cuda_beam_record_attention); NULL: none */
    int32_t weights_stride;          /* floats a weights row (the step's source stride) */
    int32_t *step; /* [1]: the step being taken, 1-based: beam_init sets 0, prepare_rows
                      adds 1, beam_step reads it (so a captured step replays as is) */
    int32_t *start; /* [n]: *step when the sentence began (beam_init: 0; beam_join: the
                       steps taken so far); sentence s is at its own step *step - start[s],
                       so sentences can join a running search */
    int32_t *ticket; /* [1]: beam_init sets 0; the blocks of a beam step that writes the
                        next step's rows count themselves here, and the last moves *step
                        on (nmt_beam_next_rows) */
    int32_t *tag;    /* [1] or NULL: beam_init's tag, which marks done_at's entries as this
                        batch's (1..32767; a value left by another batch never matches) */
    nmt_forced_tokens forced; /* by sentence s (offset [n + 1], alternative [n]), device;
                                 offset NULL: none (forced_tokens.h) */
    int32_t sampling; /* 1: every slot is a sample of its own (decoder/cuda/sample_step.cu):
                         all alive at step 1, each continues itself in its slot */
    /* The coverage penalty (onmt rules; coverage NULL: none), logit_rules.h: */
    float *coverage;            /* [n, 2, B, coverage_stride]: each slot's attention summed
                                   over its hypothesis; the half of the sentence's step
                                   parity is read, the other written */
    int32_t coverage_stride;
    int32_t coverage_kind;      /* an nmt_coverage_penalty */
    float coverage_beta;
    const float *step_weights;  /* the step's attention weights, [rows, weights_stride] */
    const int32_t *src_len;     /* [n]: each sentence's source length */
} nmt_beam_device;

/* The next step's rows, written by the beam step (nmt_cuda_beam_step) for the
 * active list as it stands: what prepare_rows with old_pos NULL writes at the
 * start of the next step, *step moved on too, one launch less a step. A done
 * sentence's block leaves its rows as they are (they were written when it
 * finished, or by the prepare_rows of a compaction since). */
typedef struct nmt_beam_next_rows {
    int32_t *tokens, *sentence, *parent; /* [n_active * B] */
    int32_t *live;                       /* [n_active * B], or NULL */
} nmt_beam_next_rows;

/* Finished results of a batch, carved from one buffer (nmt_beam_results_carve)
 * so that a single copy brings them all to the host. */
typedef struct nmt_beam_results {
    int32_t n_best, max_tokens;
    int32_t src_stride;         /* floats an attention row; 0: no attention */
    int32_t *n_hypotheses;      /* [n] */
    int32_t *length;            /* [n, n_best]: tokens, EOS excluded */
    float *score, *log_prob;    /* [n, n_best] */
    int32_t *tokens, *attn;     /* [n, n_best, max_tokens] */
    float *token_scores;        /* [n, n_best, max_tokens + 1]: each token's log p, then the
                                   EOS's (differences of the accumulated scores) */
    float *attention;           /* [n, n_best, max_tokens, src_stride]: each token's attention
                                   weights; NULL when src_stride is 0 */
} nmt_beam_results;

/* Points `r` into `base` (device or host, 4-byte words) and returns the
 * bytes used; base NULL only measures. src_stride 0: no attention. */
static inline size_t nmt_beam_results_carve(void *base, int32_t n_sentences, int32_t n_best,
                                            int32_t max_tokens, int32_t src_stride,
                                            nmt_beam_results *r)
{
    const size_t n = (size_t)n_sentences, hyps = n * (size_t)n_best;
    const size_t toks = hyps * (size_t)max_tokens;
    const size_t scores = hyps * ((size_t)max_tokens + 1);
    const size_t weights = toks * (size_t)src_stride;
    int32_t *words = (int32_t *)base;
    r->n_best = n_best;
    r->max_tokens = max_tokens;
    r->src_stride = src_stride;
    r->n_hypotheses = words;
    r->length = words ? words + n : NULL;
    r->score = words ? (float *)(words + n + hyps) : NULL;
    r->log_prob = words ? (float *)(words + n + 2 * hyps) : NULL;
    r->tokens = words ? words + n + 3 * hyps : NULL;
    r->attn = words ? words + n + 3 * hyps + toks : NULL;
    r->token_scores = words ? (float *)(words + n + 3 * hyps + 2 * toks) : NULL;
    r->attention = words && src_stride > 0
                       ? (float *)(words + n + 3 * hyps + 2 * toks + scores) : NULL;
    return sizeof(int32_t) * (n + 3 * hyps + 2 * toks + scores + weights);
}

/* The host's reading of a done_at entry (decoder/cuda/beam_search.c): the
 * step at which the sentence became done when the entry carries `tag`, else
 * 0. The entry keeps the step's low 16 bits. The host reads it having
 * launched steps up to `launched`, for a sentence still on its list, so not
 * done by its previous check (it saw and removed those): the step lies a few
 * check intervals (at most 64 steps each) back at most, and the low bits
 * place it even past step 65,535 (a source of 4,096 tokens may run 419,600). */
static inline int32_t nmt_done_at_step(int32_t entry, int32_t tag, int32_t launched)
{
    if (entry >> 16 != tag)
        return 0;
    return launched - ((launched - (entry & 0xFFFF)) & 0xFFFF);
}

/* Step-1 state: slot 0 alive with score 0 and token bos_id, the others dead
 * (sampling: every slot alive); nothing done, finished or ended, no
 * coverage; *step = 0; *tag = tag (when b->tag). */
nmt_status nmt_cuda_beam_init(const nmt_beam_device *b, int32_t n_sentences, int32_t bos_id,
                              int32_t tag, void *stream, nmt_error *err);

/* Sentences joining a running search: each listed sentence (slots: device
 * [n_slots]) gets the step-1 state of beam_init and start = *step, so its
 * next step is its own step 1; the others are untouched. */
nmt_status nmt_cuda_beam_join(const nmt_beam_device *b, const int32_t *slots, int32_t n_slots,
                              int32_t bos_id, void *stream, nmt_error *err);

/* Begins a step: with advance, *b->step += 1 (without: the beam step before
 * did it, nmt_beam_next_rows); and for the n_active * B rows of the list
 * act: row_tokens (the slot's last
 * token), row_sentence, and row_parent = old_pos[p] * B + parent slot, the
 * row of the previous step's layout it continues (old_pos NULL: p itself,
 * i.e. the active list did not change); row_live (may be NULL): 1 when the
 * slot holds an alive hypothesis of a sentence not done (the rows the host
 * search would score: LSH candidate lists are built from those only). */
nmt_status nmt_cuda_beam_prepare_rows(const nmt_beam_device *b, int32_t n_active,
                                      const int32_t *act, const int32_t *old_pos,
                                      int32_t *row_tokens, int32_t *row_sentence,
                                      int32_t *row_parent, int32_t *row_live, int advance,
                                      void *stream, nmt_error *err);

/* One search step (number *b->step) for the sentences of the active list
 * (one block each; done ones are skipped); with next (may be NULL), the next
 * step's rows and *b->step + 1 (b->ticket must be 0). Row p * B + k's 2B best words are
 * top_values (log p) / top_ids [row, 2B], sorted best first; v1: at a
 * sentence's max-length step only EOS counts, with log p = logits[row, eos]
 * - lse[row] (onmt reads neither logits nor lse). attn_argmax[row] is
 * recorded for every token that stays alive (onmt: or is cut). At a
 * sentence's forced step (b->forced) its one candidate is slot 0's forced
 * word (log p = logits[row, word] - lse[row]: the full softmax) or
 * alternative (forced_step.cuh). */
nmt_status nmt_cuda_beam_step(const nmt_beam_device *b, int32_t n_active, const int32_t *act,
                              const float *top_values, const int32_t *top_ids,
                              const float *logits, int32_t ld_logits, const float *lse,
                              const int32_t *attn_argmax, const nmt_beam_next_rows *next,
                              void *stream, nmt_error *err);

/* With b->hist_weights: copies the attention weights of the step's rows
 * (weights: [n_active * B, b->weights_stride], row p * B + k) into the
 * history of sentence act[p], slot k, at the sentence's own step (*b->step
 * - start); done sentences and steps past hist_len are skipped. Run after
 * prepare_rows and before the beam step of the same step (it reads the
 * done flags the step starts with). */
nmt_status nmt_cuda_beam_record_attention(const nmt_beam_device *b, int32_t n_active,
                                          const int32_t *act, const float *weights,
                                          void *stream, nmt_error *err);

/* Each sentence's n_best best finished hypotheses (normalized score, ties in
 * finishing order), rebuilt from the history into r (r.max_tokens >=
 * hist_len): tokens, argmax, token scores and, when r.src_stride > 0 (then
 * b->hist_weights must be set, r.src_stride <= b->weights_stride), each
 * token's weights: those of the row it was chosen from (its parent slot; at
 * step 1 slot 0). */
nmt_status nmt_cuda_beam_backtrack(const nmt_beam_device *b, int32_t n_sentences,
                                   const nmt_beam_results *r, void *stream, nmt_error *err);
/* The same for the listed sentences only (slots: device [n_slots]): result i
 * is sentence slots[i]'s. */
nmt_status nmt_cuda_beam_backtrack_slots(const nmt_beam_device *b, const int32_t *slots,
                                         int32_t n_slots, const nmt_beam_results *r,
                                         void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_BEAM_STEP_H */
