/* search_params.c: the one validator of nmt_search_params (search_params.h). */
#include "search_params.h"

#include "error.h"

#include <string.h>

#define REQUIRE(cond, ...)                                                    \
    if (!(cond))                                                              \
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, __VA_ARGS__)

/* The sampling and logit rules block. */
static nmt_status check_rules(const nmt_search_params *p, int32_t max_beam, nmt_error *err)
{
    if (nmt_search_sampling(p)) {
        REQUIRE(p->sampling_topk == NMT_SAMPLING_ALL ||
                    (p->sampling_topk >= 1 && p->sampling_topk <= NMT_SAMPLING_MAX_TOPK),
                "sampling_topk %d: must be 0 (the whole vocabulary), 1 (no sampling) or in "
                "2..%d", p->sampling_topk == NMT_SAMPLING_ALL ? 0 : p->sampling_topk,
                NMT_SAMPLING_MAX_TOPK);
        REQUIRE(p->beam_size == 1, "beam_size %d: sampling draws n_best samples with beam 1",
                p->beam_size);
        REQUIRE(p->n_best >= 1 && p->n_best <= max_beam,
                "n_best %d: sampling draws 1..%d samples a line", p->n_best, max_beam);
        REQUIRE(p->sampling_topp > 0.0f && p->sampling_topp <= 1.0f,
                "sampling_topp %g: must be in (0, 1]", p->sampling_topp);
        REQUIRE(p->sampling_topp == 1.0f || p->sampling_topk != NMT_SAMPLING_ALL,
                "sampling_topp %g needs sampling_topk in 2..%d (the top-K is sorted), not 0",
                p->sampling_topp, NMT_SAMPLING_MAX_TOPK);
        REQUIRE(p->sampling_temperature > 0.0f && p->sampling_temperature <= 100.0f,
                "sampling_temperature %g: must be in (0, 100]", p->sampling_temperature);
    }
    REQUIRE(p->min_length >= 0 && p->min_length <= 10000, "min_length %d: must be in 0..10000",
            p->min_length);
    REQUIRE(p->no_repeat_ngram_size >= 0 && p->no_repeat_ngram_size <= 64,
            "no_repeat_ngram_size %d: must be in 0..64", p->no_repeat_ngram_size);
    REQUIRE(p->repetition_penalty >= 0.0f && p->repetition_penalty <= 100.0f,
            "repetition_penalty %g: must be in (0, 100] (1: off)", p->repetition_penalty);
    REQUIRE(p->ban_unk == 0 || p->ban_unk == 1, "ban_unk %d: must be 0 or 1", p->ban_unk);
    REQUIRE(p->suppress_words >= 0 && p->suppress_words <= NMT_SUPPRESS_MAX_WORDS,
            "suppress: %d words, at most %d", p->suppress_words, NMT_SUPPRESS_MAX_WORDS);
    REQUIRE(p->suppress_words == 0 || p->suppress, "suppress: %d words but no array",
            p->suppress_words);
    for (int32_t at = 0, n = 0; at < p->suppress_words; at += 1 + p->suppress[at], n++) {
        const int32_t len = p->suppress[at];
        REQUIRE(len >= 1 && len <= NMT_SUPPRESS_MAX_LENGTH && len < p->suppress_words - at,
                "suppress: sequence %d has length %d (1..%d, within the %d words)", n, len,
                NMT_SUPPRESS_MAX_LENGTH, p->suppress_words);
        for (int32_t j = 1; j <= len; j++)
            REQUIRE(p->suppress[at + j] >= 0, "suppress: sequence %d has word id %d", n,
                    p->suppress[at + j]);
    }
    REQUIRE(p->coverage_penalty == NMT_COVERAGE_NONE || p->coverage_penalty == NMT_COVERAGE_WU ||
                p->coverage_penalty == NMT_COVERAGE_SUMMARY,
            "coverage_penalty %d: unknown", (int)p->coverage_penalty);
    REQUIRE(p->coverage_beta >= 0.0f && p->coverage_beta <= 100.0f,
            "coverage_beta %g: must be in 0..100", p->coverage_beta);
    return NMT_STATUS_OK;
}

nmt_status nmt_search_params_check(const nmt_search_params *p, int32_t max_beam, nmt_error *err)
{
    REQUIRE(p, "search params: NULL");
    /* NaN fails every comparison below, so a non-finite alpha or a is refused. */
    REQUIRE(p->beam_size >= 1 && p->beam_size <= max_beam, "beam_size %d: must be in 1..%d",
            p->beam_size, max_beam);
    REQUIRE(nmt_search_sampling(p) || (p->n_best >= 1 && p->n_best <= p->beam_size),
            "n_best %d: must be in 1..beam_size (%d)", p->n_best, p->beam_size);
    REQUIRE(p->alpha >= 0.0f && p->alpha <= 10.0f, "alpha %g: must be in 0..10", p->alpha);
    REQUIRE(p->max_len_a >= 0.0f && p->max_len_a <= 100.0f, "max_len_a %g: must be in 0..100",
            p->max_len_a);
    REQUIRE(p->max_len_b >= 0 && p->max_len_b <= 10000, "max_len_b %d: must be in 0..10000",
            p->max_len_b);
    REQUIRE(p->max_len_a > 0.0f || p->max_len_b > 0, "max_len_a and max_len_b are both 0");
    REQUIRE(p->return_alternatives == 0 || p->return_alternatives == 1,
            "return_alternatives %d: must be 0 or 1", p->return_alternatives);
    REQUIRE(!p->return_alternatives || !nmt_search_sampling(p),
            "return_alternatives ranks a beam's words: not with sampling (sampling_topk)");
    return check_rules(p, max_beam, err);
}

nmt_status nmt_search_params_check_rules(const nmt_search_params *p, nmt_search_rules rules,
                                         nmt_error *err)
{
    REQUIRE(!nmt_search_sampling(p) || rules == NMT_SEARCH_RULES_V1,
            "sampling follows the v1 rules (search_rules onmt is OpenNMT-py's beam search)");
    REQUIRE(p->coverage_penalty == NMT_COVERAGE_NONE || rules == NMT_SEARCH_RULES_ONMT,
            "coverage_penalty is OpenNMT-py's: it needs search_rules onmt");
    return NMT_STATUS_OK;
}

int nmt_search_params_equal(const nmt_search_params *a, const nmt_search_params *b)
{
    const int sampling = nmt_search_sampling(a);
    return a->beam_size == b->beam_size && a->n_best == b->n_best && a->alpha == b->alpha &&
           a->max_len_a == b->max_len_a && a->max_len_b == b->max_len_b &&
           a->return_alternatives == b->return_alternatives &&
           a->sampling_topk == b->sampling_topk &&
           (!sampling || (a->sampling_topp == b->sampling_topp &&
                          a->sampling_temperature == b->sampling_temperature &&
                          a->seed == b->seed)) &&
           a->min_length == b->min_length && a->no_repeat_ngram_size == b->no_repeat_ngram_size &&
           nmt_search_repetition(a) == nmt_search_repetition(b) &&
           (!nmt_search_repetition(a) || a->repetition_penalty == b->repetition_penalty) &&
           a->ban_unk == b->ban_unk && a->suppress_words == b->suppress_words &&
           (a->suppress_words == 0 ||
            !memcmp(a->suppress, b->suppress, sizeof(int32_t) * (size_t)a->suppress_words)) &&
           a->coverage_penalty == b->coverage_penalty && a->coverage_beta == b->coverage_beta;
}
