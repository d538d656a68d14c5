/* beam_rows.cuh: the one device rule for a decoder step's rows, shared by
 * prepare_rows (beam_state.cu) and the steps that write the next step's
 * rows themselves (beam_step.cu, sample_step.cu: nmt_beam_next_rows), and
 * how such a step ends a sentence's block. */
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

/* Sentence s takes no more steps after its own step `step`; done_at gets the
 * batch's tag and the search's step number, which the host compares with
 * its tag and the step of the check it reads (beam_step.h). */
static __device__ __forceinline__ void mark_done(const nmt_beam_device &b, int32_t s,
                                                 int32_t step)
{
    b.done[s] = 1;
    if (b.done_at)
        b.done_at[s] = (b.tag ? *b.tag << 16 : 0) | ((step + b.start[s]) & 0xFFFF);
}

/* The end of sentence s's block (every thread, after a barrier that makes
 * the split's writes visible; a done sentence's at once, rows false): the
 * next step's rows at position p, as prepare_rows writes them without a
 * compaction, then the block's ticket; the last block to take one moves
 * *b.step on and resets the count. Every block read *b.step before taking
 * its ticket, so none sees the new number. */
static __device__ __forceinline__ void finish_block(const nmt_beam_device &b,
                                                    const nmt_beam_next_rows &next, int32_t p,
                                                    int32_t s, bool rows, int tid, int threads)
{
    if (!next.tokens)
        return;
    for (int32_t k = tid; rows && k < b.beam; k += threads)
        write_step_row(b, (int64_t)p * b.beam + k, s, k, p, next.tokens, next.sentence,
                       next.parent, next.live);
    if (tid != 0)
        return;
    __threadfence(); /* the block's reads of *b.step are done before its ticket */
    if (atomicAdd(b.ticket, 1) == (int)gridDim.x - 1) {
        *b.step += 1;
        *b.ticket = 0;
    }
}

#endif /* NMT_DECODER_CUDA_BEAM_ROWS_CUH */
