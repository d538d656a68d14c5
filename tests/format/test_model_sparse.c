/* test_model_sparse.c: section SPRS, the good side (docs/model-format.md,
 * "SPRS: sparse matrices"): pruned fixtures written with their matrices
 * sparse (fp32, fp16, compressed DATA) load with
 * - every dense expansion equal to the pruned values (fp16: to the rounded
 *   value) and every other tensor as written;
 * - a CSR per sparse matrix whose rows hold exactly the nonzeros, columns
 *   strictly increasing, found by nmt_model_sparse_of from the dense pointer;
 * - the same tensors (and CRCs) as the pruned matrices written dense;
 * and the writer refuses a sparse tensor that is not a matrix. The refusals
 * of damaged SPRS sections are in test_model_corrupt_sparse.h. */
#include "nmt.h"
#include "model_fixture.h"

static void check_model(const fixture *f, const nmt_model *m, nmt_dtype dtype, const char *what)
{
    int sparse_seen = 0;
    for (int32_t i = 0; i < f->n; i++) {
        nmt_model_tensor t;
        if (!nmt_model_tensor_find(m, f->tensors[i].name, &t)) {
            CHECK(0, "%s: tensor %s missing", what, f->tensors[i].name);
            continue;
        }
        size_t elems = fixture_elems(f, i), bad = 0;
        for (size_t k = 0; k < elems; k++) {
            float want = f->values[i][k];
            if (dtype == NMT_DTYPE_F16)
                want = nmt_f16_to_f32(nmt_f32_to_f16(want));
            bad += t.data[k] != want;
        }
        CHECK(bad == 0, "%s: tensor %s: %zu values differ", what, t.name, bad);
        const nmt_sparse_matrix *sp = nmt_model_sparse_of(m, t.data);
        CHECK(!sp == !f->tensors[i].sparse, "%s: tensor %s: sparse %d, written %d", what, t.name,
              sp != NULL, f->tensors[i].sparse);
        if (!sp)
            continue;
        sparse_seen++;
        CHECK(sp->rows == t.dims[0] && sp->cols == t.dims[1] && !strcmp(sp->name, t.name),
              "%s: %s: CSR shape [%d, %d]", what, t.name, sp->rows, sp->cols);
        CHECK(sp->row_offsets[0] == 0 && sp->row_offsets[sp->rows] == sp->nnz,
              "%s: %s: offsets", what, t.name);
        int32_t nnz = 0;
        for (int32_t r = 0; r < sp->rows; r++) {
            for (int32_t c = 0; c < sp->cols; c++)
                nnz += t.data[(size_t)r * sp->cols + c] != 0.0f;
            for (int32_t k = sp->row_offsets[r]; k < sp->row_offsets[r + 1]; k++) {
                int32_t c = sp->col_indices[k];
                CHECK(c >= 0 && c < sp->cols && (k == sp->row_offsets[r] ||
                      c > sp->col_indices[k - 1]), "%s: %s: row %d column %d", what, t.name, r,
                      c);
                CHECK(sp->values[k] == t.data[(size_t)r * sp->cols + c] && sp->values[k] != 0.0f,
                      "%s: %s: value at (%d, %d)", what, t.name, r, c);
            }
        }
        CHECK(nnz == sp->nnz, "%s: %s: %d nonzeros in the expansion, CSR holds %d", what, t.name,
              nnz, sp->nnz);
    }
    CHECK(sparse_seen == m->n_sparse && sparse_seen > 0, "%s: %d sparse matrices, model has %d",
          what, sparse_seen, m->n_sparse);
    CHECK(strstr(nmt_model_summary(m), "sparse") != NULL, "%s: description '%s'", what,
          nmt_model_summary(m));
}

static void test_round_trip(fixture *f, nmt_dtype dtype, int compress, const char *what)
{
    size_t len = 0;
    uint8_t *b = fixture_bytes(f, dtype, compress, &len);
    CHECK(b != NULL, "%s: write failed", what);
    if (!b)
        return;
    nmt_model *m = NULL;
    nmt_error err = {0};
    nmt_status st = nmt_model_load_memory(b, len, what, &m, &err);
    CHECK(st == NMT_STATUS_OK, "%s: load: %s", what, err.message);
    if (st == NMT_STATUS_OK)
        check_model(f, m, dtype, what);
    nmt_model_free(m);
    free(b);
}

/* The same pruned values written dense give the same tensors. */
static void test_same_as_dense(fixture *f)
{
    nmt_write_tensor dense[FIXTURE_MAX_TENSORS];
    memcpy(dense, f->tensors, sizeof(nmt_write_tensor) * (size_t)f->n);
    for (int32_t i = 0; i < f->n; i++)
        dense[i].sparse = 0;
    size_t a_len = 0, b_len = 0;
    nmt_error err = {0};
    uint8_t *a = fixture_bytes(f, NMT_DTYPE_F32, 0, &a_len);
    uint8_t *b = fixture_bytes_n(f, &f->hp, dense, f->n, NMT_DTYPE_F32, 0, &b_len, &err);
    nmt_model *ma = NULL, *mb = NULL;
    CHECK(a && b && nmt_model_load_memory(a, a_len, "sparse", &ma, &err) == NMT_STATUS_OK &&
          nmt_model_load_memory(b, b_len, "dense", &mb, &err) == NMT_STATUS_OK,
          "same as dense: %s", err.message);
    CHECK(b_len > a_len, "the sparse file (%zu bytes) is not smaller than the dense one (%zu)",
          a_len, b_len);
    for (int32_t i = 0; ma && mb && i < nmt_model_tensor_count(ma); i++) {
        nmt_model_tensor ta, tb;
        nmt_model_tensor_at(ma, i, &ta);
        nmt_model_tensor_at(mb, i, &tb);
        size_t elems = (size_t)ta.dims[0] * (size_t)(ta.ndim == 2 ? ta.dims[1] : 1);
        CHECK(!strcmp(ta.name, tb.name) && !memcmp(ta.data, tb.data, elems * sizeof(float)),
              "same as dense: tensor %s differs", ta.name);
    }
    nmt_model_free(ma);
    nmt_model_free(mb);
    free(a);
    free(b);
}

static void test_writer_refusals(fixture *f)
{
    nmt_write_tensor t[FIXTURE_MAX_TENSORS];
    memcpy(t, f->tensors, sizeof(nmt_write_tensor) * (size_t)f->n);
    int32_t bias = -1;
    for (int32_t i = 0; i < f->n; i++)
        if (!strcmp(t[i].name, "output.b"))
            bias = i;
    t[bias].sparse = 1;
    size_t len = 0;
    nmt_error err = {0};
    uint8_t *b = fixture_bytes_n(f, &f->hp, t, f->n, NMT_DTYPE_F32, 0, &len, &err);
    CHECK(!b && strstr(err.message, "only matrices"), "a sparse vector: '%s'", err.message);
    free(b);
}

int main(void)
{
    test_seed();
    fixture tiny, small;
    fixture_init(&tiny, 0, 1, 1);
    fixture_init(&small, 1, 0, 1);
    fixture_prune(&tiny, 1.6f);
    fixture_prune(&small, 1.2f);
    const nmt_dtype dtypes[2] = {NMT_DTYPE_F32, NMT_DTYPE_F16};
    for (int d = 0; d < 2; d++)
        for (int z = 0; z < 2; z++) {
            char what[64];
            snprintf(what, sizeof what, "tiny %s%s", d ? "fp16" : "fp32", z ? " compressed" : "");
            test_round_trip(&tiny, dtypes[d], z, what);
            snprintf(what, sizeof what, "small %s%s", d ? "fp16" : "fp32", z ? " compressed" : "");
            test_round_trip(&small, dtypes[d], z, what);
        }
    /* Edge rows: one matrix with an empty row and a full row. */
    for (int32_t i = 0; i < small.n; i++)
        if (!strcmp(small.tensors[i].name, "output.w")) {
            size_t cols = (size_t)small.tensors[i].dims[1];
            memset(small.values[i], 0, cols * sizeof(float));
            for (size_t c = 0; c < cols; c++)
                small.values[i][cols + c] = 0.5f + (float)c;
        }
    test_round_trip(&small, NMT_DTYPE_F32, 0, "small, empty and full rows");
    test_same_as_dense(&small);
    test_writer_refusals(&tiny);
    fixture_free(&tiny);
    fixture_free(&small);
    return test_finish("test_model_sparse");
}
