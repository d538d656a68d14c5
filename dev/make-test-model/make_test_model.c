/* make-test-model: writes the small deterministic random-weight model every
 * test uses (no trained model is needed in CI). Model v1 with E = 16,
 * H = 32, 2 encoder and 2 decoder layers, features word+case, decoder state
 * initialized from the encoder, a few German source words and English target
 * words. Weights come from a fixed-seed splitmix64 generator, so the same
 * seed gives the same file on every machine. Their scales were picked by
 * trying a grid and translating a few sentences: embeddings and input
 * weights +-1 and recurrent weights +-0.3 keep the LSTMs responsive to their
 * input (larger recurrent weights lock them into one state whatever the
 * input), LSTM biases +-0.1, attention and output weights +-0.5, output bias
 * +-0.5 with EOS raised by 1, so that greedy and beam search give different,
 * input-dependent output, some lines ending early and some at the maximum length. */
#include "model_file.h"
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const src_words[] = {
    "<pad>", "<unk>", "der", "die", "das", "und", "ist", "ein", "eine", "haus",
    "katze", "hund", "mann", "frau", "kind", "sieht", "hat", "nicht", "sehr", "gro\xc3\x9f",
    "klein", "sch\xc3\xb6n", "heute", "wir", "ich", "du", "sie", "es", "mit", "auf",
    "gut", "buch", "liest", "m\xc3\xbc" "de", "\xc3\xa4pfel", "?", NMT_JOINER ".", NMT_JOINER ",",
    NMT_JOINER "!", "\"",
};

static const char *const tgt_words[] = {
    "<pad>", "<unk>", "<s>", "</s>", "the", "The", "a", "house", "cat", "dog",
    "man", "woman", "child", "sees", "has", "not", "very", "big", "small", "beautiful",
    "today", "We", "I", "you", "it", "with", "good", "book", "reads", NMT_JOINER ".",
    NMT_JOINER ",", "?",
};

#define N_SRC ((int32_t)(sizeof src_words / sizeof src_words[0]))
#define N_TGT ((int32_t)(sizeof tgt_words / sizeof tgt_words[0]))

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi), from the top 24 bits so the value is exact in fp32. */
static float uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)(next_u64() >> 40) * (1.0f / 16777216.0f);
}

static float tensor_scale(const char *name)
{
    if (strstr(name, "embedding") || strstr(name, ".w_ih"))
        return 1.0f;
    if (strstr(name, ".w_hh"))
        return 0.3f;
    if (strstr(name, ".b_ih") || strstr(name, ".b_hh"))
        return 0.1f;
    return 0.5f; /* attention, output weights and bias */
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: make-test-model -o PATH [--fp16] [--compress] [--seed N]\n"
            "Writes a small deterministic random-weight model v1 (docs/model-format.md).\n"
            "  -o PATH      output file (required)\n"
            "  --fp16       store tensors as fp16 (default fp32)\n"
            "  --compress   deflate the DATA section\n"
            "  --seed N     weight generator seed (default 1)\n"
            "  --help       this text\n");
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    nmt_write_options opt = {.dtype = NMT_DTYPE_F32, .compress = 0};
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--fp16") == 0) {
            opt.dtype = NMT_DTYPE_F16;
        } else if (strcmp(argv[i], "--compress") == 0) {
            opt.compress = 1;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            char *end;
            seed = strtoull(argv[++i], &end, 10);
            if (*end) {
                fprintf(stderr, "make-test-model: --seed needs a number\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "make-test-model: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "make-test-model: -o PATH is required\n");
        usage(stderr);
        return 2;
    }

    nmt_error err = {0};
    nmt_model shape; /* only hp is set: used to list tensor names and shapes */
    memset(&shape, 0, sizeof shape);
    nmt_hparams *hp = &shape.hp;
    hp->emb_size = 16;
    hp->hidden_size = 32;
    hp->enc_layers = 2;
    hp->dec_layers = 2;
    hp->src_words = N_SRC;
    hp->tgt_vocab = N_TGT;
    hp->dec_init_from_encoder = 1;
    const nmt_feature_kind kinds[2] = {NMT_FEATURE_WORD, NMT_FEATURE_CASE};
    if (nmt_hparams_set_features(hp, kinds, 2, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "make-test-model: %s\n", err.message);
        return 1;
    }

    rng_state = seed;
    int32_t n = nmt_model_tensor_count(&shape);
    nmt_write_tensor *tensors = calloc((size_t)n, sizeof *tensors);
    nmt_model_tensor *info = calloc((size_t)n, sizeof *info);
    int rc = 1;
    if (!tensors || !info)
        goto done;
    for (int32_t i = 0; i < n; i++) {
        nmt_model_tensor_at(&shape, i, &info[i]);
        size_t elems = 1;
        tensors[i].name = info[i].name;
        tensors[i].ndim = info[i].ndim;
        for (int d = 0; d < info[i].ndim; d++) {
            tensors[i].dims[d] = (uint64_t)info[i].dims[d];
            elems *= (size_t)info[i].dims[d];
        }
        float *v = malloc(elems * sizeof *v);
        if (!v)
            goto done;
        float scale = tensor_scale(info[i].name);
        for (size_t k = 0; k < elems; k++)
            v[k] = uniform(-scale, scale);
        if (strcmp(info[i].name, "output.b") == 0)
            v[NMT_EOS_ID] += 1.0f;
        tensors[i].values = v;
    }
    if (nmt_model_file_write(out, hp, src_words, N_SRC, tgt_words, N_TGT, tensors, n, &opt, &err) !=
        NMT_STATUS_OK) {
        fprintf(stderr, "make-test-model: %s\n", err.message);
        goto done;
    }
    rc = 0;
done:
    if (rc && !err.message[0])
        fprintf(stderr, "make-test-model: out of memory\n");
    if (tensors)
        for (int32_t i = 0; i < n; i++)
            free((void *)tensors[i].values);
    free(tensors);
    free(info);
    return rc;
}
