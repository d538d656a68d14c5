/* beam_rows.cuh: the one device rule for a decoder step's rows, shared by
 * prepare_rows (beam_state.cu) and the beam step that writes the next
 * step's rows itself (beam_step.cu, nmt_beam_next_rows). */
#ifndef NMT_DECODER_CUDA_BEAM_ROWS_CUH
#define NMT_DECODER_CUDA_BEAM_ROWS_CUH

#include "beam_step.h"

#include <math.h>

/* Row r of a step, slot k of sentence s: the slot's last token, the
 * sentence, the row of the previous step's layout it continues (its
 * sentence at position `from` there) and, where live is given, whether the
 * slot still searches. */
static __device__ __forceinline__ void write_step_row(const nmt_beam_device &b, int64_t r,
                                                      int32_t s, int32_t k, int32_t from,
                                                      int32_t *tokens, int32_t *sentence,
                                                      int32_t *parent, int32_t *live)
{
    const int64_t q = (int64_t)s * b.beam + k;
    tokens[r] = b.tokens[q];
    sentence[r] = s;
    parent[r] = from * b.beam + b.parents[q];
    if (live)
        live[r] = !b.done[s] && b.scores[q] > -INFINITY;
}

#endif /* NMT_DECODER_CUDA_BEAM_ROWS_CUH */
