/* search_params.c: the one validator of nmt_search_params (search_params.h). */
#include "search_params.h"

#include "error.h"

#define REQUIRE(cond, ...)                                                    \
    if (!(cond))                                                              \
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, __VA_ARGS__)

nmt_status nmt_search_params_check(const nmt_search_params *p, int32_t max_beam, nmt_error *err)
{
    REQUIRE(p, "search params: NULL");
    /* NaN fails every comparison below, so a non-finite alpha or a is refused. */
    REQUIRE(p->beam_size >= 1 && p->beam_size <= max_beam, "beam_size %d: must be in 1..%d",
            p->beam_size, max_beam);
    REQUIRE(p->n_best >= 1 && p->n_best <= p->beam_size,
            "n_best %d: must be in 1..beam_size (%d)", p->n_best, p->beam_size);
    REQUIRE(p->alpha >= 0.0f && p->alpha <= 10.0f, "alpha %g: must be in 0..10", p->alpha);
    REQUIRE(p->max_len_a >= 0.0f && p->max_len_a <= 100.0f, "max_len_a %g: must be in 0..100",
            p->max_len_a);
    REQUIRE(p->max_len_b >= 0 && p->max_len_b <= 10000, "max_len_b %d: must be in 0..10000",
            p->max_len_b);
    REQUIRE(p->max_len_a > 0.0f || p->max_len_b > 0, "max_len_a and max_len_b are both 0");
    REQUIRE(p->return_alternatives == 0 || p->return_alternatives == 1,
            "return_alternatives %d: must be 0 or 1", p->return_alternatives);
    return NMT_STATUS_OK;
}

int nmt_search_params_equal(const nmt_search_params *a, const nmt_search_params *b)
{
    return a->beam_size == b->beam_size && a->n_best == b->n_best && a->alpha == b->alpha &&
           a->max_len_a == b->max_len_a && a->max_len_b == b->max_len_b &&
           a->return_alternatives == b->return_alternatives;
}
