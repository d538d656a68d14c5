/* shrink.c: what both backends do with a shrink (shrink/shrink.h): check it
 * before the network takes it (model/cpu/output_layer.c,
 * model/cuda/output_layer.c) and build the index it needs. */
#include "shrink.h"

#include "error.h"

nmt_status nmt_shrink_check(const nmt_shrink *shrink, int32_t hidden, int32_t vocab,
                            const char *who, nmt_error *err)
{
    if (!shrink || (shrink->mode != NMT_SHRINK_LSH && shrink->mode != NMT_SHRINK_TOP))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s shrink: nothing to set", who);
    const nmt_lsh_tables *t = shrink->tables;
    if (shrink->mode == NMT_SHRINK_LSH && (!t || t->dim != hidden || t->vocab != vocab))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "%s shrink: LSH tables for dim %d, vocab %d; the model has %d, %d",
                             who, t ? t->dim : -1, t ? t->vocab : -1, hidden, vocab);
    if (shrink->n_always < 4 || shrink->n_always > vocab || shrink->threshold < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "%s shrink: n_always %d outside [4, %d] or threshold %d < 1", who,
                             shrink->n_always, vocab, shrink->threshold);
    return NMT_STATUS_OK;
}

nmt_status nmt_shrink_index_build(const nmt_shrink *shrink, const float *out_w, int32_t vocab,
                                  int32_t dim, nmt_lsh_index **index, nmt_error *err)
{
    *index = NULL;
    if (!shrink || shrink->mode != NMT_SHRINK_LSH)
        return NMT_STATUS_OK;
    return nmt_lsh_index_build(out_w, vocab, dim, &shrink->index, index, err);
}
