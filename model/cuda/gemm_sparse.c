/* gemm_sparse.c: the network's GEMMs over the matrices the model file stores
 * sparse (section SPRS), as Gale et al.'s SpMM (kernels/spmm.h) in place of
 * the dense GEMM (cuda_model_impl.h, nmt_cuda_sparse_part).
 *
 * Which matrices: the decoder layers' fused [W_ih W_hh] (sparse when either
 * half is stored sparse), W_c and the full output layer W_out: the GEMMs of
 * the decoder step and the output layer, all on the model's stream. W_a
 * stays dense: its product is the encoder's key projection, hundreds of rows
 * a batch on the encoder's streams, where the SpMM never pays (below). A
 * GEMM over part of a matrix (the LSH wing's dense prefix of W_out) uses the
 * dense form. Each CSR is built once from the host model's dense expansion
 * (exact zeros dropped: the same nonzeros as the file's CSR, fused where the
 * GEMM is), with fp16 values when every value is exact in fp16 (as in fp16
 * model files: half the bytes, the same numbers), else fp32.
 *
 * When: --sparse on multiplies every row count sparse. --sparse auto only
 * where the SpMM was measured faster than the dense GEMM it replaces:
 * bench_spmm on the H100 (docs/sparse.md, "Results") puts the crossing
 * against fp32 sgemm near 1,280 rows at 90% zeros and near a few rows at
 * 70%, and against the 16-bit tensor cores at a few rows at 95% only.
 * SPARSE_AUTO below holds those crossings; a matrix sparser than a row's
 * `zeros` runs sparse up to that row's row count. Host code. */
#include "cuda_model_impl.h"

#include "cuda_check.h"
#include "half.h"

#include <stdlib.h>
#include <string.h>

/* --sparse auto's policy: up to how many rows of x (after the GEMMs' row
 * buckets) a matrix with at least `zeros` of its entries zero runs as SpMM,
 * against the dense GEMM of each precision (tf32x2 computes in plain fp32
 * below NMT_TF32X2_MIN_ROWS rows, so its crossing is fp32's, capped there).
 * Sparsest first. */
typedef struct sparse_break_even {
    float zeros;
    int32_t fp32_rows, half_rows;
} sparse_break_even;

static const sparse_break_even SPARSE_AUTO[] = {
    {0.95f, 2048, 8}, /* 1.7-1.8x sgemm at 1,280 rows; 0.9-1.6x bf16 at 5 */
    {0.90f, 640, 0},  /* 1.3-1.5x sgemm at 320 rows, 1.0x at 1,280; bf16 0.8-1.0x at 5 */
    {0.80f, 16, 0},   /* between the 70% and 90% rows */
    {0.70f, 0, 0},    /* 0.96-1.1x sgemm at 5 rows: no gain worth the risk */
};

static int32_t auto_rows(const nmt_cuda_model *m, float zeros)
{
    for (size_t i = 0; i < sizeof SPARSE_AUTO / sizeof SPARSE_AUTO[0]; i++)
        if (zeros + 1e-6f >= SPARSE_AUTO[i].zeros) { /* pruned to exactly 80%: counts as 80% */
            if (m->half16.on)
                return SPARSE_AUTO[i].half_rows;
            const int32_t r = SPARSE_AUTO[i].fp32_rows;
            return m->tf32x2.on && r >= NMT_TF32X2_MIN_ROWS ? NMT_TF32X2_MIN_ROWS - 1 : r;
        }
    return 0;
}

/* A host CSR [rows, cols] of the nonzeros of up to two dense parts side by
 * side (a: [rows, ka], b: [rows, kb] or NULL). */
typedef struct host_csr {
    int32_t rows, cols, nnz;
    int32_t *offsets, *cols_idx;
    float *values;
} host_csr;

static void host_csr_free(host_csr *c)
{
    free(c->offsets);
    free(c->cols_idx);
    free(c->values);
    memset(c, 0, sizeof *c);
}

static nmt_status host_csr_build(int32_t rows, const float *a, int32_t ka, const float *b,
                                 int32_t kb, host_csr *c, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    memset(c, 0, sizeof *c);
    int64_t nnz = 0;
    for (int64_t i = 0; i < (int64_t)rows * ka; i++)
        nnz += a[i] != 0.0f;
    for (int64_t i = 0; b && i < (int64_t)rows * kb; i++)
        nnz += b[i] != 0.0f;
    if (nnz > INT32_MAX / 2)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda sparse: %lld nonzeros in one matrix", (long long)nnz);
    c->rows = rows;
    c->cols = ka + (b ? kb : 0);
    c->nnz = (int32_t)nnz;
    NMT_ALLOC(c->offsets, (size_t)rows + 1);
    NMT_ALLOC(c->cols_idx, nnz > 0 ? (size_t)nnz : 1);
    NMT_ALLOC(c->values, nnz > 0 ? (size_t)nnz : 1);
    int32_t at = 0;
    for (int32_t r = 0; r < rows; r++) {
        c->offsets[r] = at;
        for (int32_t j = 0; j < ka; j++)
            if (a[(size_t)r * ka + j] != 0.0f)
                c->cols_idx[at] = j, c->values[at++] = a[(size_t)r * ka + j];
        for (int32_t j = 0; b && j < kb; j++)
            if (b[(size_t)r * kb + j] != 0.0f)
                c->cols_idx[at] = ka + j, c->values[at++] = b[(size_t)r * kb + j];
    }
    c->offsets[rows] = at;
    return NMT_STATUS_OK;
cleanup:
    host_csr_free(c);
    return status;
}

static int exact_in_fp16(const host_csr *c)
{
    for (int32_t i = 0; i < c->nnz; i++)
        if (nmt_f16_to_f32(nmt_f32_to_f16(c->values[i])) != c->values[i])
            return 0;
    return 1;
}

/* Prepares `weight` sparse from the host parts, when the file stores one of
 * them sparse. */
static nmt_status prepare_weight(nmt_cuda_model *m, nmt_cuda_weight *weight, int32_t rows,
                                 const float *a, int32_t ka, const float *b, int32_t kb,
                                 int always, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_sparse_part *p = &m->sparse;
    host_csr c;
    memset(&c, 0, sizeof c);
    if (!nmt_model_sparse_of(m->model, a) && !(b && nmt_model_sparse_of(m->model, b)))
        return NMT_STATUS_OK;
    if (p->n_matrices >= NMT_CUDA_SPARSE_MAX)
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "cuda sparse: too many matrices");
    NMT_TRY(host_csr_build(rows, a, ka, b, kb, &c, err));
    const float zeros = 1.0f - (float)((double)c.nnz / ((double)rows * c.cols));
    const int32_t max_rows = always ? m->max_rows : auto_rows(m, zeros);
    if (max_rows < 1) {
        host_csr_free(&c);
        return NMT_STATUS_OK; /* auto: never pays at this sparsity */
    }
    nmt_cuda_spmm_matrix *matrix = NULL;
    NMT_TRY(nmt_cuda_spmm_prepare(rows, c.cols, c.offsets, c.cols_idx, c.values,
                                  exact_in_fp16(&c) ? NMT_SPMM_VALUES_FP16 : NMT_SPMM_VALUES_FP32,
                                  0, m->stream, &matrix, err));
    p->matrices[p->n_matrices++] = matrix;
    weight->sparse = matrix;
    weight->sparse_rows = rows;
    weight->sparse_cols = c.cols;
    weight->sparse_max_rows = max_rows < m->max_rows ? max_rows : m->max_rows;
    {
        const size_t ws = nmt_cuda_spmm_workspace_size(matrix, weight->sparse_max_rows, NULL);
        p->workspace_bytes = ws > p->workspace_bytes ? ws : p->workspace_bytes;
    }
cleanup:
    host_csr_free(&c);
    return status;
}

nmt_status nmt_cuda_model_set_sparse(nmt_cuda_model *m, int always, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const nmt_model *model = m->model;
    nmt_cuda_gemm_weights *g = &m->gw;
    const int32_t H = m->hidden;
    if (m->sparse.n_matrices > 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda sparse: already set");
    /* The SpMM's sums (row or tile kernel, chosen by the rows) are not the
     * dense chain: batch-invariant decoding multiplies dense. */
    if (nmt_cuda_ctx_batch_invariant(m->ctx)) {
        if (always)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "sparse on: the CUDA SpMM is not batch-invariant (its sums "
                                 "depend on the batch's rows); turn batch invariance off to use "
                                 "it");
        return NMT_STATUS_OK;
    }
    for (int32_t l = 0; l < m->dec_layers; l++) {
        const nmt_lstm_weights *d = &model->dec[l];
        NMT_TRY(prepare_weight(m, &g->dec[l], 4 * H, d->w_ih, d->input_size, d->w_hh,
                               d->hidden_size, always, err));
    }
    NMT_TRY(prepare_weight(m, &g->attn_c, H, model->attn_w_c, 2 * H, NULL, 0, always, err));
    NMT_TRY(prepare_weight(m, &g->out, m->vocab, model->out_w, H, NULL, 0, always, err));
    if (m->sparse.workspace_bytes > 0)
        NMT_CUDA_TRY(cudaMalloc(&m->sparse.workspace, m->sparse.workspace_bytes));
    return NMT_STATUS_OK;
cleanup:
    nmt_cuda_sparse_part_free(m);
    return status;
}

int32_t nmt_cuda_model_sparse_count(const nmt_cuda_model *m)
{
    return m ? m->sparse.n_matrices : 0;
}

void nmt_cuda_sparse_part_free(nmt_cuda_model *m)
{
    nmt_cuda_sparse_part *p = &m->sparse;
    for (int i = 0; i < p->n_matrices; i++)
        nmt_cuda_spmm_free(p->matrices[i]);
    cudaFree(p->workspace);
    memset(p, 0, sizeof *p);
    nmt_cuda_gemm_weights *g = &m->gw;
    for (int32_t l = 0; l < NMT_MAX_LAYERS; l++)
        g->dec[l].sparse = NULL;
    g->attn_c.sparse = NULL;
    g->out.sparse = NULL;
}

int nmt_cuda_model_gemm_sparse(const nmt_cuda_model *m, const nmt_cuda_ctx *ctx,
                               nmt_gemm_site site, int32_t rows, int32_t n, int32_t k,
                               const nmt_cuda_weight *w)
{
    return w->sparse && ctx == m->ctx &&
           (site == NMT_GEMM_SITE_DECODER || site == NMT_GEMM_SITE_OUTPUT) &&
           rows <= w->sparse_max_rows && n == w->sparse_rows && k == w->sparse_cols;
}
