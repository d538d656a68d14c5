/* model_fixture.h: small models for the model file tests, built through
 * nmt_model_file_write with random values (test_util's seeded generator):
 * "tiny" (E 4, H 4, one layer each side: a file of about 2 KB, cheap enough
 * to corrupt byte by byte) and "small" (E 8, H 10 so H/2 = 5 is odd, two
 * layers each side). Static functions: included by the tests of this folder. */
#ifndef NMT_TEST_MODEL_FIXTURE_H
#define NMT_TEST_MODEL_FIXTURE_H

#define _POSIX_C_SOURCE 200809L /* mkstemp, unlink */

#include "nmt.h"
#include "model_file.h"
#include "test_util.h"
#include "tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIXTURE_MAX_TENSORS 128

static const char *const fixture_src[] = {"<pad>", "<unk>", "haus", "katze", "ist",
                                          "\xc3\xa4pfel", NMT_JOINER "."};
static const char *const fixture_tgt[] = {"<pad>", "<unk>", "<s>", "</s>", "house",
                                          "cat", "is", "apples", NMT_JOINER "."};

typedef struct fixture {
    nmt_hparams hp;
    int32_t n;
    nmt_write_tensor tensors[FIXTURE_MAX_TENSORS];
    nmt_model_tensor info[FIXTURE_MAX_TENSORS];
    float *values[FIXTURE_MAX_TENSORS];
} fixture;

static inline void fixture_init(fixture *f, int small, int case_feature, int dec_init_encoder)
{
    memset(f, 0, sizeof *f);
    nmt_model shape;
    memset(&shape, 0, sizeof shape);
    nmt_hparams *hp = &shape.hp;
    hp->emb_size = small ? 8 : 4;
    hp->hidden_size = small ? 10 : 4;
    hp->enc_layers = small ? 2 : 1;
    hp->dec_layers = small && dec_init_encoder ? 2 : 1;
    hp->src_words = (int32_t)(sizeof fixture_src / sizeof fixture_src[0]);
    hp->tgt_vocab = (int32_t)(sizeof fixture_tgt / sizeof fixture_tgt[0]);
    hp->dec_init_from_encoder = dec_init_encoder;
    nmt_feature_kind kinds[2] = {NMT_FEATURE_WORD, NMT_FEATURE_CASE};
    nmt_hparams_set_features(hp, kinds, case_feature ? 2 : 1, NULL);
    f->hp = *hp;
    f->n = nmt_model_tensor_count(&shape);
    for (int32_t i = 0; i < f->n; i++) {
        nmt_model_tensor_at(&shape, i, &f->info[i]);
        size_t elems = 1;
        f->tensors[i].name = f->info[i].name;
        f->tensors[i].ndim = f->info[i].ndim;
        for (int d = 0; d < f->info[i].ndim; d++) {
            f->tensors[i].dims[d] = (uint64_t)f->info[i].dims[d];
            elems *= (size_t)f->info[i].dims[d];
        }
        f->values[i] = malloc(elems * sizeof(float));
        test_fill_uniform(f->values[i], elems, -2.0f, 2.0f);
        f->tensors[i].values = f->values[i];
    }
}

static inline void fixture_free(fixture *f)
{
    for (int32_t i = 0; i < f->n; i++)
        free(f->values[i]);
}

static inline size_t fixture_elems(const fixture *f, int32_t i)
{
    size_t e = 1;
    for (int d = 0; d < f->tensors[i].ndim; d++)
        e *= (size_t)f->tensors[i].dims[d];
    return e;
}

/* Magnitude pruning for the sparse tests: in each matrix that may be stored
 * sparse (decoder LSTM, attention, output), values with |v| < threshold
 * become 0 and the tensor is marked sparse (section SPRS). With the
 * fixture's uniform [-2, 2) values, threshold 1.6 keeps about 20%. */
static inline void fixture_prune(fixture *f, float threshold)
{
    for (int32_t i = 0; i < f->n; i++) {
        const char *name = f->tensors[i].name;
        size_t len = strlen(name);
        int matrix = f->tensors[i].ndim == 2;
        int allowed = (!strncmp(name, "decoder.", 8) && len > 5 && name[len - 4] == 'w') ||
                      !strcmp(name, "attention.w_a") || !strcmp(name, "attention.w_c") ||
                      !strcmp(name, "output.w");
        if (!matrix || !allowed)
            continue;
        size_t elems = (size_t)(f->tensors[i].dims[0] * f->tensors[i].dims[1]);
        for (size_t k = 0; k < elems; k++)
            if (fabsf(f->values[i][k]) < threshold)
                f->values[i][k] = 0.0f;
        f->tensors[i].sparse = 1;
    }
}

/* A fresh temporary path (the file is created empty). */
static inline void temp_path(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/nmt_model_test_XXXXXX");
    int fd = mkstemp(buf);
    if (fd >= 0)
        close(fd);
}

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, fp);
    fclose(fp);
    return b;
}

static inline int write_all(const char *path, const uint8_t *b, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return 0;
    int ok = fwrite(b, 1, len, fp) == len;
    return fclose(fp) == 0 && ok;
}

/* Writes the fixture (with possibly edited tensors/hparams) and returns the
 * file's bytes, or NULL when the writer refused (message in err). */
static uint8_t *fixture_bytes_n(const fixture *f, const nmt_hparams *hp,
                                const nmt_write_tensor *tensors, int32_t n, nmt_dtype dtype,
                                int compress, size_t *len, nmt_error *err)
{
    char path[64];
    temp_path(path, sizeof path);
    nmt_write_options opt = {.dtype = dtype, .compress = compress};
    uint8_t *b = NULL;
    if (nmt_model_file_write(path, hp, fixture_src, f->hp.src_words, fixture_tgt, f->hp.tgt_vocab,
                             tensors, n, &opt, err) == NMT_STATUS_OK)
        b = read_all(path, len);
    unlink(path);
    return b;
}

/* The fixture (no case feature) with tokenizer=sentencepiece and `spm` as
 * its section SPMP (any bytes: the writer does not parse them). */
static inline uint8_t *fixture_bytes_spm(const fixture *f, const void *spm, size_t spm_len, size_t *len)
{
    char path[64];
    temp_path(path, sizeof path);
    nmt_hparams hp = f->hp;
    hp.sentencepiece = 1;
    nmt_write_options opt = {.dtype = NMT_DTYPE_F32, .sentencepiece = spm,
                             .sentencepiece_size = spm_len};
    nmt_error err = {0};
    uint8_t *b = NULL;
    if (nmt_model_file_write(path, &hp, fixture_src, f->hp.src_words, fixture_tgt,
                             f->hp.tgt_vocab, f->tensors, f->n, &opt, &err) == NMT_STATUS_OK)
        b = read_all(path, len);
    else
        fprintf(stderr, "fixture: write failed: %s\n", err.message);
    unlink(path);
    return b;
}

static uint8_t *fixture_bytes(const fixture *f, nmt_dtype dtype, int compress, size_t *len)
{
    nmt_error err = {0};
    uint8_t *b = fixture_bytes_n(f, &f->hp, f->tensors, f->n, dtype, compress, len, &err);
    if (!b)
        fprintf(stderr, "fixture: write failed: %s\n", err.message);
    return b;
}

/* Loads from memory and expects refusal with FORMAT (or IO) and a message
 * containing `needle` (when not NULL). Returns 1 when refused as expected. */
static inline int expect_refused(const uint8_t *b, size_t len, const char *needle, const char *what)
{
    nmt_model *model = NULL;
    nmt_error err = {0};
    nmt_status st = nmt_model_load_memory(b, len, "model.bin", &model, &err);
    int ok = 1;
    if (st == NMT_STATUS_OK) {
        fprintf(stderr, "%s: loaded, expected a refusal\n", what);
        nmt_model_free(model);
        ok = 0;
    } else if ((st != NMT_STATUS_ERROR_FORMAT && st != NMT_STATUS_ERROR_IO) || !err.message[0] ||
               model != NULL) {
        fprintf(stderr, "%s: status %d, message '%s'\n", what, (int)st, err.message);
        ok = 0;
    } else if (needle && !strstr(err.message, needle)) {
        fprintf(stderr, "%s: message '%s' lacks '%s'\n", what, err.message, needle);
        ok = 0;
    }
    if (!ok)
        test_failures++;
    return ok;
}

#endif
