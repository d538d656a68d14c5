/* forced_fixture.h: what the engine's forced-token tests share
 * (test_forced.c, test_gpu_forced.c; included once by each): their lines,
 * their options (lines as tokens: a hypothesis's text reads back as its
 * tokens, so it can be scored and used as a prefix) and a checked create. */
#ifndef FORCED_FIXTURE_H
#define FORCED_FIXTURE_H

#include "nmt.h"
#include "test_util.h"

#include <stdio.h>

static const char *const forced_words[] = {"der", "die", "das", "und", "ist", "ein",
                                           "eine", "haus", "katze", "hund", "mann", "frau",
                                           "kind", "sieht", ".", ","};

/* n random lines of 1..most-1 words into text (rows of 512 bytes). */
static void forced_lines(char (*text)[512], const char **lines, int n, int most)
{
    for (int i = 0; i < n; i++) {
        test_random_words(text[i], forced_words,
                          (int)(sizeof forced_words / sizeof forced_words[0]),
                          test_rand_int(1, most));
        lines[i] = text[i];
    }
}

/* The tests' options: lines as tokens, UNK kept, attention weights, the
 * CPU's reference kernels (a row's log-probabilities independent of the
 * other rows), no warm-up. */
static nmt_options forced_options(nmt_device device, int beam, int n_best, int batch)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = device;
    o.cpu_kernels = NMT_CPU_KERNELS_REFERENCE;
    o.warmup = 0;
    o.beam_size = beam;
    o.n_best = n_best;
    o.batch_size = batch;
    o.max_src_tokens = 24;
    o.max_len_b = 12;
    o.input_tokens = 1;
    o.output_tokens = 1;
    o.unk_replace = 0;
    o.attention_weights = 1;
    return o;
}

/* A translator on o->device (a failed CHECK and NULL otherwise); inline:
 * test_pipeline_targets.c makes its own (pipeline_fixture.h). */
static inline nmt_translator *forced_create(const nmt_model *model, const nmt_options *o)
{
    nmt_translator *t = NULL;
    nmt_error err = {0};
    CHECK(nmt_translator_create(model, o, &t, &err) == NMT_STATUS_OK, "create (device %d): %s",
          (int)o->device, err.message);
    CHECK(!t || nmt_translator_device(t) == o->device, "runs on device %d, asked %d",
          t ? (int)nmt_translator_device(t) : -1, (int)o->device);
    return t;
}

#endif /* FORCED_FIXTURE_H */
