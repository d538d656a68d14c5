/* beam_sample.c: the CPU search's sampling step and its logit-rules pass
 * (beam_search_impl.h), over the rules of logit_rules.h as
 * logit_rules_cpu.h applies them. A sampling sentence keeps one row a live
 * sample; each continues itself in the history slot of its sample index
 * and draws from its own random stream (seed, line, sample, step), except
 * at the sentence's forced steps (nmt_rule_sample_forced), where it takes
 * the forced word. */
#include "beam_search_impl.h"

#include "forced_tokens.h"
#include "search_rules.h"

/* One sampling step of sentence i: every sample (at step 1 all of them
 * from the BOS row) takes its word (a forced word, with the model's log p;
 * at the max-length step EOS; else its draw) and finishes with EOS or
 * lives on in its own slot. */
void nmt_beam_step_sample(const search_buffers *b, int32_t i, sentence_state *s, int32_t step,
                          int32_t first_next_row, int32_t *n_alive_out)
{
    const nmt_search_config *config = b->config;
    const int last_step = step == s->max_len;
    const uint64_t line_key = config->line_keys ? config->line_keys[i] : (uint64_t)i;
    finished_hyp *fin = b->finished + (size_t)i * (size_t)(2 * b->beam);
    int32_t n_alive = 0;
    const int32_t samples = step == 1 ? b->beam : s->n_alive;
    const int32_t forced = nmt_rule_sample_forced(config->forced, i, step);
    for (int32_t q = 0; q < samples; q++) {
        const int32_t hyp = step == 1 ? 0 : q, row = s->first_row + hyp;
        const int32_t slot = step == 1 ? q : b->row_slot[row];
        const float *lp = b->log_probs + (size_t)row * (size_t)b->vocab;
        const int32_t word = forced >= 0 ? forced
                             : last_step ? config->eos_id
                                         : nmt_cpu_rules_sample(b->rules, lp, line_key, slot, step);
        if (word < 0)
            continue; /* nothing it may draw: the sample ends without a hypothesis */
        const candidate cand = {nmt_rule_rank(b->row_scores[row], lp[word], 1.0f), hyp, word};
        if (!nmt_rule_selectable(cand.score))
            continue;
        if (word == config->eos_id) {
            fin[s->n_finished++] = (finished_hyp){
                cand.score, nmt_rule_v1_score(cand.score, step, config->params.alpha), step - 1,
                step > 1 ? slot : -1};
        } else {
            nmt_beam_live_on(b, s, step, slot, first_next_row + n_alive, &cand, cand.score);
            n_alive++;
        }
    }
    if (nmt_rule_v1_done(s->n_finished, b->beam, last_step, n_alive))
        s->done = 1;
    *n_alive_out = n_alive;
}

/* The logit rules on every row of the step (logit_rules_cpu.h): each row's
 * hypothesis read back from the history, its row rewritten; a sentence's
 * forced steps excepted (nmt_rule_forced_step). */
void nmt_beam_apply_logit_rules(const search_buffers *b, const sentence_state *sentences,
                                int32_t n_sentences, int32_t step, const float *logits,
                                int32_t ld)
{
    nmt_cpu_rules *rules = b->rules;
    for (int32_t i = 0; i < n_sentences; i++) {
        const sentence_state *s = &sentences[i];
        if (s->done || nmt_rule_forced_step(b->config->forced, i, step))
            continue;
        for (int32_t hyp = 0; hyp < s->n_alive; hyp++) {
            const size_t row = (size_t)(s->first_row + hyp);
            int32_t slot = b->row_slot[row];
            for (int32_t t = step - 2; t >= 0; t--) {
                const size_t e = s->history + (size_t)t * (size_t)b->beam + (size_t)slot;
                rules->tokens[t] = b->hist_token[e];
                slot = b->hist_parent[e];
            }
            nmt_cpu_rules_apply(rules, step, s->max_len, step - 1,
                                logits ? logits + row * (size_t)ld : NULL,
                                b->log_probs + row * (size_t)b->vocab);
        }
    }
}

