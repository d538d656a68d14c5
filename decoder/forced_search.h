/* forced_search.h: forced tokens on the host (forced_tokens.h has the
 * rules): their one validator and max length, shared by both searches; the
 * CPU search's choice at a forced step (forced_search.c); and scoring, a
 * teacher-forced pass over the step interface (forced_score.c), the CPU's
 * nmt_score_batch. Plain C. */
#ifndef NMT_FORCED_SEARCH_H
#define NMT_FORCED_SEARCH_H

#include "search.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Refuses forced tokens a search cannot take, naming the sentence and
 * token: offsets that do not start at 0 or decrease, ids outside [0, vocab)
 * or PAD or BOS, an EOS anywhere but last (nowhere with for_score), an
 * alternative outside [-1, beam) (any with for_score or sampling), and the
 * params nmt_forced_params_check refuses. */
nmt_status nmt_forced_tokens_check(const nmt_search_config *config, int32_t n_sentences,
                                   int32_t vocab, int for_score, nmt_error *err);

/* Refuses search params forced tokens cannot go with, naming them: for
 * scoring (for_score) sampling, the logit rules and the coverage penalty (a
 * score is the model's log-probability of the target). A prefix goes with
 * all of them (a sampling sentence's samples each take it). */
nmt_status nmt_forced_params_check(const nmt_search_params *params, int for_score,
                                   nmt_error *err);

/* Sentence i's max length: nmt_search_max_length, with room for its forced
 * tokens (nmt_rule_forced_max_len). */
int32_t nmt_forced_max_length(const nmt_search_config *config, int32_t i, int32_t src_length);

/* The CPU search at sentence i's step `step`: 0 when the step is free; 1
 * when it is forced, with *word its one candidate (of slot 0) and *rank its
 * rank (nmt_rule_rank with penalty), or *word -1 when there is none (the
 * word's log p is -inf or NaN, or the row has too few words). base: slot
 * 0's score; log_probs: its row; mask_specials: PAD and BOS never
 * alternatives (model-v1's rules). */
int nmt_forced_choice(const nmt_search_config *config, int32_t i, int32_t step, float base,
                      const float *log_probs, int32_t vocab, float penalty, int mask_specials,
                      float *rank, int32_t *word);

/* Scoring: the log-probability of each sentence's forced tokens followed by
 * EOS (config->forced: no EOS among them, no alternative), every row taking
 * its own next token: no beam, no selection. results[i] gets one hypothesis:
 * the tokens, token_scores (each token's log p then the EOS's, as
 * differences of the float sums a beam search accumulates, so they equal a
 * model-v1 search's forced to the same tokens bit for bit), log_prob (the
 * sum), score (normalized as the rules normalize a finished hypothesis),
 * attn_argmax and, with config->attention, the attention rows. Allocation
 * happens before the first step. */
nmt_status nmt_score_forced(const nmt_step_model *model, int32_t n_sentences,
                            const int32_t *src_lengths, const nmt_search_config *config,
                            nmt_search_result *results, nmt_error *err);

/* The normalized score of a scored target of `length` tokens (EOS
 * excluded) with log-probability log_prob, under config's rules: v1
 * log_prob / (length + 1)^alpha, onmt log_prob / (length + 2)^alpha. Both
 * devices' scoring. */
float nmt_forced_score_normalized(const nmt_search_config *config, float log_prob,
                                  int32_t length);

#ifdef __cplusplus
}
#endif

#endif /* NMT_FORCED_SEARCH_H */
