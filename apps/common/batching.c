/* batching.c: how the programs batch (options.h). --batch-type sentences
 * (the default) keeps --batch-size as the engine's batch_size, at most 4096
 * sentences. --batch-type tokens makes --batch-size a budget of source
 * tokens a batch, as Marian's --mini-batch-words and CTranslate2's
 * batch_type="tokens": it becomes nmt_options.max_batch_tokens (the engine
 * sorts a call's lines longest first and fills each batch up to the budget;
 * a longer line goes alone), and batch_size, which then only sizes the
 * translator, is raised to the most sentences a budget can hold (a line has
 * at least one token) within the engine's limit of 4096. nmt-server takes
 * both fields as its service's, so it batches by tokens the same way.
 * --maxi-batch is translate's read-ahead window (the library's nmt_pipeline). */
#include "options.h"

#include <stdio.h>
#include <string.h>

enum { kMaxSentences = 4096 };

int app_resolve_batching(translate_args *a, char *message, size_t message_size)
{
    nmt_options *o = &a->engine;
    if (!a->batch_tokens) {
        if (o->batch_size > kMaxSentences) {
            snprintf(message, message_size,
                     "--batch-size %d: at most %d sentences (--batch-type tokens counts "
                     "source tokens)", o->batch_size, kMaxSentences);
            return EXIT_USAGE;
        }
        return EXIT_OK;
    }
    if (o->max_batch_tokens > 0) {
        snprintf(message, message_size, "--max-batch-tokens and --batch-type tokens exclude "
                                        "each other (with tokens, --batch-size is the budget)");
        return EXIT_USAGE;
    }
    o->max_batch_tokens = o->batch_size;
    o->batch_size = o->batch_size < kMaxSentences ? o->batch_size : kMaxSentences;
    return EXIT_OK;
}
