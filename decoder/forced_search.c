/* forced_search.c: forced tokens on the host (forced_search.h): the
 * validator and max length both searches use, and the CPU search's choice
 * at a forced step. An alternative is chosen as the GPU's beam step chooses
 * it: among the row's 2B best words by log p (ties: the lower word; v1
 * without PAD and BOS), the k-th that is not EOS (nmt_rule_alternative_at). */
#include "forced_search.h"

#include "error.h"

#include <math.h>

nmt_status nmt_forced_params_check(const nmt_search_params *p, int for_score, nmt_error *err)
{
    if (for_score && nmt_search_sampling(p))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "scoring: not with sampling "
                             "(sampling_topk)");
    if (for_score && (nmt_search_has_logit_rules(p) || p->coverage_penalty != NMT_COVERAGE_NONE))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "scoring: not with the logit rules "
                             "or the coverage penalty (a score is the model's log-probability "
                             "of the target)");
    return NMT_STATUS_OK;
}

nmt_status nmt_forced_tokens_check(const nmt_search_config *config, int32_t n, int32_t vocab,
                                   int for_score, nmt_error *err)
{
    const nmt_status bad = NMT_STATUS_ERROR_ARGUMENT;
    const nmt_forced_tokens *f = config->forced;
    if (!f)
        return for_score ? nmt_error_set(err, bad, "scoring: no target tokens") : NMT_STATUS_OK;
    if (nmt_forced_params_check(&config->params, for_score, err) != NMT_STATUS_OK)
        return bad;
    if (n > 0 && (!f->offset || !f->ids))
        return nmt_error_set(err, bad, "forced tokens: NULL offsets or ids");
    if (for_score && f->alternative)
        return nmt_error_set(err, bad, "scoring: alternatives are a search's");
    if (f->alternative && nmt_search_sampling(&config->params))
        return nmt_error_set(err, bad, "forced tokens: alternatives rank a beam's words: not "
                             "with sampling (sampling_topk)");
    if (n > 0 && f->offset[0] != 0)
        return nmt_error_set(err, bad, "forced tokens: offset[0] = %d, not 0", f->offset[0]);
    for (int32_t i = 0; i < n; i++) {
        const int32_t first = f->offset[i], end = f->offset[i + 1];
        if (end < first)
            return nmt_error_set(err, bad, "forced tokens: sentence %d: offsets %d > %d", i,
                                 first, end);
        for (int32_t j = first; j < end; j++) {
            const int32_t id = f->ids[j];
            if (id < 0 || id >= vocab || id == config->pad_id || id == config->bos_id)
                return nmt_error_set(err, bad, "forced tokens: sentence %d, token %d: id %d is "
                                     "outside [0, %d) or PAD or BOS", i, j - first, id, vocab);
            if (id == config->eos_id && (for_score || j != end - 1))
                return nmt_error_set(err, bad, "forced tokens: sentence %d, token %d: EOS %s", i,
                                     j - first, for_score ? "in a target to score"
                                                          : "before the last token");
        }
        const int32_t k = f->alternative ? f->alternative[i] : -1;
        if (k < -1 || k >= config->params.beam_size ||
            (k >= 0 && end > first && f->ids[end - 1] == config->eos_id))
            return nmt_error_set(err, bad, "forced tokens: sentence %d: alternative %d outside "
                                 "[-1, %d), or after an EOS", i, k, config->params.beam_size);
    }
    return NMT_STATUS_OK;
}

int32_t nmt_forced_max_length(const nmt_search_config *config, int32_t i, int32_t src_length)
{
    const int32_t max_len = nmt_search_max_length(config, src_length);
    const nmt_forced_tokens *f = config->forced;
    if (!f)
        return max_len;
    return nmt_rule_forced_max_len(max_len, f->offset[i + 1] - f->offset[i],
                                   f->alternative ? f->alternative[i] : -1);
}

/* words[0 .. return): the row's best `want` words by log p, best first
 * (ties: the lower word), selectable ones only; v1 without PAD and BOS. */
static int32_t best_words(const float *log_probs, int32_t vocab, int32_t want, int mask_specials,
                          const nmt_search_config *config, int32_t *words)
{
    int32_t n = 0;
    for (int32_t w = 0; w < vocab; w++) {
        if ((mask_specials && (w == config->pad_id || w == config->bos_id)) ||
            !nmt_rule_selectable(log_probs[w]))
            continue;
        /* Visited in word order, so an equal log p stays behind the kept one. */
        int32_t at = n < want ? n : want;
        while (at > 0 && log_probs[words[at - 1]] < log_probs[w])
            at--;
        if (at >= want)
            continue;
        for (int32_t j = (n < want ? n : want - 1); j > at; j--)
            words[j] = words[j - 1];
        words[at] = w;
        if (n < want)
            n++;
    }
    return n;
}

int nmt_forced_choice(const nmt_search_config *config, int32_t i, int32_t step, float base,
                      const float *log_probs, int32_t vocab, float penalty, int mask_specials,
                      float *rank, int32_t *word)
{
    const nmt_forced_tokens *f = config->forced;
    if (!f)
        return 0;
    const int32_t first = f->offset[i], n_forced = f->offset[i + 1] - first;
    int32_t w = nmt_rule_forced_word(f->ids + first, n_forced, step);
    if (w < 0) {
        const int32_t k = nmt_rule_alternative_rank(f->alternative ? f->alternative[i] : -1,
                                                    n_forced, step);
        if (k < 0)
            return 0;
        int32_t words[2 * NMT_SEARCH_MAX_BEAM];
        const int32_t n = best_words(log_probs, vocab, 2 * config->params.beam_size,
                                     mask_specials, config, words);
        const int32_t at = nmt_rule_alternative_at(words, n, config->eos_id, k);
        w = at >= 0 ? words[at] : -1;
    }
    *word = -1;
    if (w >= 0) {
        *rank = nmt_rule_rank(base, log_probs[w], penalty);
        if (nmt_rule_selectable(*rank))
            *word = w;
    }
    return 1;
}
