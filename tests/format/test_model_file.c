/* test_model_file.c: model file format v1, the good side and the model-level
 * refusals (docs/model-format.md):
 * - fp16 conversion: all 65536 halves widen and narrow back exactly; random
 *   floats narrow like a double-precision reference (round to nearest even);
 * - files written fp32, fp16, compressed or not, load (from a path and from
 *   memory) with every tensor, hyper-parameter and vocabulary entry as written;
 *   from a path, an fp32 uncompressed file's weights are its mapping (read
 *   after the file is unlinked), the other forms' a converted copy;
 * - the shipped test model loads and its description is not empty;
 * - files whose tensors do not match the hyper-parameters (missing, extra,
 *   mis-shaped, duplicated, non-finite) or whose vocabularies are bad are
 *   refused with a message naming the tensor, dimension or entry;
 * - I/O failures are NMT_STATUS_ERROR_IO.
 * The byte-level corruption corpus is test_model_corrupt.c. */
#include "nmt.h"
#include "model_fixture.h"

#include <math.h>

static void test_fp16(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = nmt_f16_to_f32((uint16_t)h);
        uint16_t back = nmt_f32_to_f16(f);
        int is_nan = ((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF);
        if (is_nan ? !isnan(f) || ((back >> 10) & 0x1F) != 0x1F || !(back & 0x3FF) : back != h)
            if (bad++ < 5)
                fprintf(stderr, "fp16 %04x -> %g -> %04x\n", h, f, back);
    }
    CHECK(bad == 0, "%d halves do not round-trip", bad);
    /* Narrowing: the nearest half, ties to even mantissa, from a search over
     * the (sorted) positive halves in double precision. */
    bad = 0;
    for (int i = 0; i < 200000; i++) {
        float f;
        uint32_t bits = (uint32_t)test_rand_u64();
        if (i % 2) /* concentrate on the half range, subnormals included */
            bits = (bits & 0x8FFFFFFFu) | ((uint32_t)(100 + test_rand_int(0, 45)) << 23);
        memcpy(&f, &bits, 4);
        if (isnan(f))
            continue;
        double a = fabs((double)f);
        uint16_t best = 0x7C00; /* infinity unless a finite half is at least as close */
        if (a < 65520.0) {
            double best_err = INFINITY;
            for (uint32_t h = 0; h < 0x7C00; h++) {
                double e = fabs((double)nmt_f16_to_f32((uint16_t)h) - a);
                if (e < best_err || (e == best_err && !(h & 1))) {
                    best_err = e;
                    best = (uint16_t)h;
                }
                if ((double)nmt_f16_to_f32((uint16_t)h) > a)
                    break;
            }
        }
        uint16_t want = (uint16_t)(best | (signbit(f) ? 0x8000 : 0));
        uint16_t got = nmt_f32_to_f16(f);
        if (got != want && bad++ < 5)
            fprintf(stderr, "fp16 narrowing of %.9g: got %04x want %04x\n", f, got, want);
        if (i > 2000)
            i += 98; /* the linear search is slow: a few thousand cases suffice */
    }
    CHECK(bad == 0, "%d floats narrowed wrongly", bad);
}

/* Checks a loaded model against the fixture it was written from. */
static void check_model(const nmt_model *m, const fixture *f, nmt_dtype dtype, const char *what)
{
    CHECK(memcmp(&m->hp, &f->hp, sizeof m->hp) == 0, "%s: hparams differ", what);
    /* what NMT_PRECISION_AUTO follows */
    CHECK(m->weights_fp16 == (dtype == NMT_DTYPE_F16), "%s: weights_fp16 %d", what,
          m->weights_fp16);
    CHECK(nmt_vocab_size(m->src_vocab) == f->hp.src_words, "%s: source vocab size", what);
    for (int32_t i = 0; i < f->hp.src_words; i++)
        CHECK(strcmp(nmt_vocab_token(m->src_vocab, i), fixture_src[i]) == 0, "%s: src %d", what, i);
    for (int32_t i = 0; i < f->hp.tgt_vocab; i++)
        CHECK(strcmp(nmt_vocab_token(m->tgt_vocab, i), fixture_tgt[i]) == 0, "%s: tgt %d", what, i);
    CHECK(nmt_model_tensor_count(m) == f->n, "%s: %d tensors", what, nmt_model_tensor_count(m));
    for (int32_t i = 0; i < f->n; i++) {
        nmt_model_tensor t;
        if (!nmt_model_tensor_find(m, f->tensors[i].name, &t)) {
            CHECK(0, "%s: tensor %s not found", what, f->tensors[i].name);
            continue;
        }
        CHECK(((uintptr_t)t.data & 63) == 0, "%s: %s not 64-byte aligned", what, t.name);
        size_t n = fixture_elems(f, i);
        int same = 1;
        for (size_t k = 0; k < n && same; k++) {
            float want = f->values[i][k];
            if (dtype == NMT_DTYPE_F16)
                want = nmt_f16_to_f32(nmt_f32_to_f16(want));
            same = memcmp(&t.data[k], &want, 4) == 0;
        }
        CHECK(same, "%s: tensor %s values differ", what, t.name);
    }
    /* The struct's fields are the same tensors. */
    CHECK(m->enc_fwd[0].hidden_size == f->hp.hidden_size / 2, "%s: encoder hidden", what);
    CHECK(m->dec[0].input_size == f->hp.emb_size + f->hp.hidden_size, "%s: decoder input", what);
    CHECK(m->out_b && m->src_embedding && m->attn_w_c, "%s: null weight pointers", what);
    CHECK(strlen(nmt_model_describe(m)) > 20, "%s: description", what);
}

/* Every form loads from memory and from a file, with the same model. */
static void test_good_files(void)
{
    for (int variant = 0; variant < 3; variant++) {
        fixture f;
        fixture_init(&f, variant > 0, variant != 2, variant != 2);
        for (int form = 0; form < 4; form++) {
            nmt_dtype dtype = form & 1 ? NMT_DTYPE_F16 : NMT_DTYPE_F32;
            int compress = form >> 1;
            char what[96];
            snprintf(what, sizeof what, "variant %d %s%s", variant, form & 1 ? "fp16" : "fp32",
                     compress ? " compressed" : "");
            size_t len = 0;
            uint8_t *b = fixture_bytes(&f, dtype, compress, &len);
            CHECK(b != NULL, "%s: write", what);
            if (!b)
                continue;
            nmt_model *m = NULL;
            nmt_error err = {0};
            nmt_status st = nmt_model_load_memory(b, len, "mem", &m, &err);
            CHECK(st == NMT_STATUS_OK, "%s: load_memory: %s", what, err.message);
            if (m)
                check_model(m, &f, dtype, what);
            nmt_model_free(m);
            m = NULL;
            char path[64];
            temp_path(path, sizeof path);
            write_all(path, b, len);
            st = nmt_model_load(path, &m, &err);
            CHECK(st == NMT_STATUS_OK, "%s: load: %s", what, err.message);
            /* fp32 uncompressed: the weights are the file's pages, mapped,
             * and stay valid once the name is gone (a writer renames a new
             * file over it); otherwise they were converted into memory. */
            const int in_place = dtype == NMT_DTYPE_F32 && !compress;
            CHECK(!m || (in_place ? m->arena_mapped == len : m->arena_mapped == 0),
                  "%s: arena_mapped %zu, file %zu bytes", what, m ? m->arena_mapped : 0, len);
            unlink(path);
            if (m)
                check_model(m, &f, dtype, what);
            nmt_model_free(m);
            free(b);
        }
        fixture_free(&f);
    }
    nmt_model *m = NULL;
    nmt_error err = {0};
    CHECK(nmt_model_load(NMT_TEST_MODEL, &m, &err) == NMT_STATUS_OK, "test model: %s", err.message);
    if (m)
        fprintf(stderr, "test model: %s\n", nmt_model_describe(m));
    nmt_model_free(m);
    nmt_model_free(NULL);
}

/* Writes the fixture with an edited tensor list and expects a refusal. */
static void expect_tensors_refused(const fixture *f, const nmt_write_tensor *t, int32_t n,
                                   const char *needle, const char *what)
{
    size_t len = 0;
    nmt_error err = {0};
    uint8_t *b = fixture_bytes_n(f, &f->hp, t, n, NMT_DTYPE_F32, 0, &len, &err);
    CHECK(b != NULL, "%s: writer refused: %s", what, err.message);
    if (b)
        expect_refused(b, len, needle, what);
    free(b);
}

static void test_model_level_refusals(void)
{
    fixture f;
    fixture_init(&f, 1, 1, 1);
    nmt_write_tensor t[FIXTURE_MAX_TENSORS + 1];
    int32_t n = f.n;

    /* Missing: drop each tensor in turn. */
    for (int32_t drop = 0; drop < n; drop++) {
        int32_t k = 0;
        for (int32_t i = 0; i < n; i++)
            if (i != drop)
                t[k++] = f.tensors[i];
        char needle[96];
        snprintf(needle, sizeof needle, "missing tensor '%s'", f.tensors[drop].name);
        expect_tensors_refused(&f, t, n - 1, needle, needle);
    }
    /* Extra, and a third encoder layer the hparams do not have. */
    memcpy(t, f.tensors, sizeof f.tensors[0] * (size_t)n);
    t[n] = f.tensors[n - 1];
    t[n].name = "output.bias2";
    expect_tensors_refused(&f, t, n + 1, "unexpected tensor 'output.bias2'", "extra tensor");
    t[n].name = "encoder.2.fwd.b_ih";
    expect_tensors_refused(&f, t, n + 1, "unexpected tensor 'encoder.2.fwd.b_ih'", "extra layer");
    /* Duplicate name: the reader's table check. */
    t[n].name = "output.b";
    expect_tensors_refused(&f, t, n + 1, "'output.b' appears twice", "duplicate tensor");

    /* Mis-shaped: decoder.0.w_ih is [4H, E + H] = [40, 18]. */
    for (int32_t i = 0; i < n; i++) {
        if (strcmp(f.tensors[i].name, "decoder.0.w_ih") != 0)
            continue;
        memcpy(t, f.tensors, sizeof f.tensors[0] * (size_t)n);
        t[i].dims[1] = 10; /* E + H forgotten the input feed: E + H = 18 expected */
        expect_tensors_refused(&f, t, n, "tensor 'decoder.0.w_ih': dims[1] = 10, expected 18",
                               "dims[1]");
        t[i].dims[1] = 18;
        t[i].dims[0] = 20;
        expect_tensors_refused(&f, t, n, "tensor 'decoder.0.w_ih': dims[0] = 20, expected 40",
                               "dims[0]");
        t[i].dims[0] = 40 * 18;
        t[i].ndim = 1;
        expect_tensors_refused(&f, t, n, "'decoder.0.w_ih': 1 dimensions, expected 2", "ndim");
    }
    /* Non-finite weights. */
    memcpy(t, f.tensors, sizeof f.tensors[0] * (size_t)n);
    float *v = malloc(fixture_elems(&f, 3) * sizeof *v);
    memcpy(v, f.values[3], fixture_elems(&f, 3) * sizeof *v);
    v[5] = NAN;
    t[3].values = v;
    char needle[96];
    snprintf(needle, sizeof needle, "tensor '%s': element 5 is NaN", f.tensors[3].name);
    expect_tensors_refused(&f, t, n, needle, "NaN");
    v[5] = INFINITY;
    snprintf(needle, sizeof needle, "tensor '%s': element 5 is infinite", f.tensors[3].name);
    expect_tensors_refused(&f, t, n, needle, "inf");
    v[5] = 1e6f; /* finite in fp32, infinite in fp16 */
    size_t len;
    nmt_error err = {0};
    uint8_t *b = fixture_bytes_n(&f, &f.hp, t, n, NMT_DTYPE_F16, 0, &len, &err);
    if (b)
        expect_refused(b, len, "is infinite", "fp16 overflow");
    free(b);
    free(v);
    fixture_free(&f);
}

static void test_io(void)
{
    nmt_model *m = (nmt_model *)1;
    nmt_error err = {0};
    CHECK(nmt_model_load("/nonexistent/model.bin", &m, &err) == NMT_STATUS_ERROR_IO && !m &&
              strstr(err.message, "/nonexistent/model.bin"), "missing file: %s", err.message);
    CHECK(nmt_model_load("/tmp", &m, &err) == NMT_STATUS_ERROR_IO && !m, "directory: %s",
          err.message);
    char path[64];
    temp_path(path, sizeof path); /* empty file */
    CHECK(nmt_model_load(path, &m, &err) == NMT_STATUS_ERROR_FORMAT && strstr(err.message, path),
          "empty file: %s", err.message);
    unlink(path);
    CHECK(nmt_model_load(NULL, &m, &err) == NMT_STATUS_ERROR_ARGUMENT, "NULL path");
    /* The writer refuses what the reader would: invalid hparams, bad tokens. */
    fixture f;
    fixture_init(&f, 0, 1, 1);
    nmt_hparams hp = f.hp;
    hp.hidden_size = 5;
    size_t len;
    uint8_t *b = fixture_bytes_n(&f, &hp, f.tensors, f.n, NMT_DTYPE_F32, 0, &len, &err);
    CHECK(!b && err.status == NMT_STATUS_ERROR_ARGUMENT, "writer took an odd hidden size");
    free(b);
    temp_path(path, sizeof path);
    const char *src[7];
    memcpy(src, fixture_src, sizeof src);
    src[3] = "a\nb";
    CHECK(nmt_model_file_write(path, &f.hp, src, 7, fixture_tgt, 9, f.tensors, f.n, NULL, &err) ==
              NMT_STATUS_ERROR_ARGUMENT, "writer took a token with a newline");
    CHECK(nmt_model_file_write("/nonexistent/x.bin", &f.hp, fixture_src, 7, fixture_tgt, 9,
                               f.tensors, f.n, NULL, &err) == NMT_STATUS_ERROR_IO, "writer path");
    unlink(path);
    fixture_free(&f);
}

int main(void)
{
    test_seed();
    test_fp16();
    test_good_files();
    test_model_level_refusals();
    test_io();
    return test_finish("test_model_file");
}
