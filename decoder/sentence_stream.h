/* sentence_stream.h: sentences that arrive while a search runs (continuous
 * batching). The search pulls source sentences whenever it has free rows
 * and hands each one's result back as soon as that sentence is done, so a
 * sentence never waits for a batch to drain, nor a batch for a sentence.
 * Device independent: the GPU search runs it (decoder/cuda/stream_search.c);
 * the engine adapts text lines to it (engine/translator_stream.c). */
#ifndef NMT_SENTENCE_STREAM_H
#define NMT_SENTENCE_STREAM_H

#include "search.h"
#include "source_batch.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_sentence_stream {
    void *self;
    /* Up to `room` (>= 1) sentences: *batch (valid until the next pull) and
     * tags[i] for its sentence i; *n_pulled their number. wait != 0: blocks
     * until at least one sentence comes or the stream ends, and *n_pulled 0
     * then means the end. wait == 0: returns at once, *n_pulled may be 0.
     * An error ends the stream (the sentences it returned are not taken). */
    nmt_status (*pull)(void *self, int32_t room, int wait, nmt_source_batch *batch,
                       void **tags, int32_t *n_pulled, nmt_error *err);
    /* Called once for every pulled sentence: its result (moved in: the
     * callee owns and clears it), or result NULL with the status and message
     * of what failed. */
    void (*deliver)(void *self, void *tag, nmt_search_result *result, nmt_status status,
                    const char *message);
    /* Steps between check points, where done sentences leave and new ones
     * join (0: the search's check_every). Each check point costs a host
     * wait, an encoder pass and an eager step; sentences wait for the next
     * one to join, and up to two more to leave. */
    int32_t check_every;
} nmt_sentence_stream;

#ifdef __cplusplus
}
#endif

#endif /* NMT_SENTENCE_STREAM_H */
