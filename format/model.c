/* model.c: nmt_model_read: a validated model file (model_file.c) becomes the
 * in-memory model v1 (model.h, docs/model-v1.md).
 *
 * The hyper-parameters fix the complete list of tensors and their shapes
 * (docs/model-format.md, "Tensors"); the file must hold exactly those, every
 * value finite. All weights live in one 64-byte aligned fp32 arena. When the
 * file stores fp32 without compression, the arena is the file buffer itself
 * (the file mapped, model_file.c: no copy, and processes that load the same
 * file share its pages); otherwise tensors are converted (fp16 widened
 * exactly, on a few threads) into a fresh arena. Matrices stored sparse (section
 * SPRS) keep their CSR in a second arena and are also expanded into the dense
 * one, so code that reads dense weights needs no sparse path. */
#include "model_file.h"

#include "error.h"

#include <math.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t nmt_align_up_u64(uint64_t x) { return (x + 63) & ~(uint64_t)63; }
static uint32_t nmt_rd32_le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define MAX_SPECS (4 + 4 * 3 * NMT_MAX_LAYERS + 4)

typedef struct tensor_spec {
    char name[48];
    int32_t ndim;
    int64_t dims[2];
    float **slot; /* where the model keeps the pointer */
} tensor_spec;

static void add_spec(tensor_spec *s, int32_t *n, float **slot, int64_t rows, int64_t cols,
                     const char *fmt, int layer, const char *dir)
{
    tensor_spec *t = &s[(*n)++];
    snprintf(t->name, sizeof t->name, fmt, layer, dir);
    t->ndim = cols ? 2 : 1;
    t->dims[0] = rows;
    t->dims[1] = cols;
    t->slot = slot;
}

static void add_lstm(tensor_spec *s, int32_t *n, nmt_lstm_weights *w, const char *prefix, int layer,
                     const char *dir)
{
    char fmt[48];
    int64_t g = 4 * (int64_t)w->hidden_size;
    static const char *const parts[4] = {"w_ih", "w_hh", "b_ih", "b_hh"};
    float **slots[4] = {&w->w_ih, &w->w_hh, &w->b_ih, &w->b_hh};
    int64_t cols[4] = {w->input_size, w->hidden_size, 0, 0};
    for (int p = 0; p < 4; p++) {
        snprintf(fmt, sizeof fmt, "%s.%%d%%s.%s", prefix, parts[p]);
        add_spec(s, n, slots[p], g, cols[p], fmt, layer, dir);
    }
}

/* The tensors the hyper-parameters call for, in canonical (file) order. Also
 * sets the LSTM shape fields of `m`. */
static int32_t list_specs(nmt_model *m, tensor_spec *s)
{
    const nmt_hparams *hp = &m->hp;
    int32_t n = 0, H = hp->hidden_size, E = hp->emb_size;
    add_spec(s, &n, &m->src_embedding, hp->src_rows, E, "src_embedding", 0, "");
    add_spec(s, &n, &m->tgt_embedding, hp->tgt_vocab, E, "tgt_embedding", 0, "");
    for (int l = 0; l < hp->enc_layers; l++) {
        nmt_lstm_weights *dirs[2] = {&m->enc_fwd[l], &m->enc_bwd[l]};
        for (int d = 0; d < 2; d++) {
            dirs[d]->input_size = l == 0 ? E : H;
            dirs[d]->hidden_size = H / 2;
            add_lstm(s, &n, dirs[d], "encoder", l, d == 0 ? ".fwd" : ".bwd");
        }
    }
    for (int l = 0; l < hp->dec_layers; l++) {
        m->dec[l].input_size = l == 0 ? E + H : H;
        m->dec[l].hidden_size = H;
        add_lstm(s, &n, &m->dec[l], "decoder", l, "");
    }
    add_spec(s, &n, &m->attn_w_a, H, H, "attention.w_a", 0, "");
    add_spec(s, &n, &m->attn_w_c, H, 2 * (int64_t)H, "attention.w_c", 0, "");
    add_spec(s, &n, &m->out_w, hp->tgt_vocab, H, "output.w", 0, "");
    add_spec(s, &n, &m->out_b, hp->tgt_vocab, 0, "output.b", 0, "");
    return n;
}

static nmt_status check_specials(const nmt_vocab *v, const char *const *specials, int n,
                                 const char *path, const char *tag, nmt_error *err)
{
    for (int i = 0; i < n; i++) {
        const char *tok = nmt_vocab_token(v, i);
        if (!tok || strcmp(tok, specials[i]) != 0)
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                 "%s: section %s: entry %d is '%.40s', expected the special token "
                                 "'%s'", path, tag, i, tok ? tok : "", specials[i]);
    }
    return NMT_STATUS_OK;
}

static void describe(nmt_model *m, int64_t params)
{
    const nmt_hparams *hp = &m->hp;
    char features[64] = "word";
    for (int32_t i = 1; i < hp->n_features; i++)
        if (hp->features[i].kind == NMT_FEATURE_CASE)
            strcat(features, "+case");
    char tokenizer[64] = "";
    if (m->spm)
        snprintf(tokenizer, sizeof tokenizer, ", tokenizer sentencepiece (%d pieces)",
                 nmt_spm_piece_count(m->spm));
    snprintf(m->description, sizeof m->description,
             "lstm-attn-v1: emb %d, hidden %d, encoder %d bi-LSTM layers, decoder %d layers "
             "(initial state: %s), source vocabulary %d words, features %s (%d embedding rows), "
             "target vocabulary %d, %lld parameters%s",
             hp->emb_size, hp->hidden_size, hp->enc_layers, hp->dec_layers,
             hp->dec_init_from_encoder ? "encoder" : "zeros", hp->src_words, features, hp->src_rows,
             hp->tgt_vocab, (long long)params, tokenizer);
}

/* Copies (or points at) one tensor and checks every value is finite. */
static nmt_status place_tensor(const nmt_file_tensor *t, const uint8_t *data, float *dst,
                               const char *path, nmt_error *err)
{
    uint64_t n = t->size / (t->dtype == NMT_DTYPE_F32 ? 4 : 2);
    const uint8_t *src = data + t->offset;
    if (t->dtype == NMT_DTYPE_F16) {
        for (uint64_t i = 0; i < n; i++)
            dst[i] = nmt_f16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
    } else if ((const uint8_t *)dst != src) {
        memcpy(dst, src, (size_t)t->size); /* little-endian host assumed (x86, ARM) */
    }
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(dst[i]))
            return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT,
                                 "%s: tensor '%s': element %llu is %s", path, t->name,
                                 (unsigned long long)i, isnan(dst[i]) ? "NaN" : "infinite");
    return NMT_STATUS_OK;
}

/* place_tensor for tensors[0 .. n) over a few threads: widening fp16 and
 * checking every value is most of a load (the shipped model: 14 M values),
 * and the tensors are independent. */
typedef struct place_job {
    const nmt_file_tensor *const *tensors;
    float *const *slots;
    int32_t n, step, first;
    const uint8_t *data;
    const char *path;
    nmt_status status;
    int32_t failed_at; /* the tensor whose check failed */
    nmt_error err;
    pthread_t thread;
} place_job;

static void *place_some(void *arg)
{
    place_job *job = arg;
    for (int32_t i = job->first; i < job->n && job->status == NMT_STATUS_OK; i += job->step) {
        if (job->tensors[i])
            job->status = place_tensor(job->tensors[i], job->data, job->slots[i], job->path,
                                       &job->err);
        job->failed_at = i;
    }
    return NULL;
}

enum { PLACE_THREADS = 4 };

static nmt_status place_tensors(const nmt_file_tensor *const *tensors, float *const *slots,
                                int32_t n, const uint8_t *data, const char *path, nmt_error *err)
{
    place_job jobs[PLACE_THREADS];
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const int n_jobs = cores >= PLACE_THREADS ? PLACE_THREADS : cores > 1 ? (int)cores : 1;
    int started[PLACE_THREADS] = {0};
    for (int j = 0; j < n_jobs; j++) {
        jobs[j] = (place_job){.tensors = tensors, .slots = slots, .n = n, .step = n_jobs,
                              .first = j, .data = data, .path = path};
        if (j > 0)
            started[j] = pthread_create(&jobs[j].thread, NULL, place_some, &jobs[j]) == 0;
    }
    for (int j = 0; j < n_jobs; j++)
        if (j == 0 || !started[j])
            place_some(&jobs[j]); /* this thread's share, or one that could not start */
    for (int j = 1; j < n_jobs; j++)
        if (started[j])
            pthread_join(jobs[j].thread, NULL);
    const place_job *failed = NULL; /* the first tensor in table order that failed */
    for (int j = 0; j < n_jobs; j++)
        if (jobs[j].status != NMT_STATUS_OK && (!failed || jobs[j].failed_at < failed->failed_at))
            failed = &jobs[j];
    if (!failed)
        return NMT_STATUS_OK;
    if (err)
        *err = failed->err;
    return failed->status;
}

/* Only the matrices the decoder multiplies every step may be stored sparse:
 * decoder LSTM weights, attention and output matrices (docs/model-format.md). */
static int sparse_allowed(const char *name)
{
    size_t len = strlen(name);
    if (strncmp(name, "decoder.", 8) == 0 && len > 5 &&
        (strcmp(name + len - 5, ".w_ih") == 0 || strcmp(name + len - 5, ".w_hh") == 0))
        return 1;
    return strcmp(name, "attention.w_a") == 0 || strcmp(name, "attention.w_c") == 0 ||
           strcmp(name, "output.w") == 0;
}

static nmt_status check_sparse_spec(const tensor_spec *s, const nmt_file_sparse *sp, int also_dense,
                                    const char *path, nmt_error *err)
{
    if (also_dense)
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: tensor '%s' is stored both dense "
                             "(section TENS) and sparse (section SPRS)", path, s->name);
    if (s->ndim != 2 || !sparse_allowed(s->name))
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: section SPRS: tensor '%s' cannot "
                             "be stored sparse (only the decoder LSTM, attention and output "
                             "matrices)", path, s->name);
    if (sp->rows != (uint64_t)s->dims[0] || sp->cols != (uint64_t)s->dims[1])
        return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: section SPRS: tensor '%s': shape "
                             "[%llu, %llu], expected [%lld, %lld]", path, s->name,
                             (unsigned long long)sp->rows, (unsigned long long)sp->cols,
                             (long long)s->dims[0], (long long)s->dims[1]);
    return NMT_STATUS_OK;
}

/* Copies each SPRS matrix into the sparse arena (int32 offsets and columns,
 * fp32 values; everything validated by model_file_sparse.c) and expands it
 * into its dense slot, checking every value is finite. */
static nmt_status place_sparse(nmt_model *m, const nmt_model_file *f, const tensor_spec *specs,
                               const nmt_file_sparse *const *found_sparse, int32_t n,
                               nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    uint64_t size = 0;
    for (int32_t i = 0; i < n; i++) {
        const nmt_file_sparse *sp = found_sparse[i];
        if (sp)
            size += nmt_align_up_u64(4 * (sp->rows + 1)) + 2 * nmt_align_up_u64(4 * sp->nnz);
    }
    NMT_ALLOC(m->sparse, f->n_sparse);
    m->sparse_arena = aligned_alloc(64, (size_t)(size ? size : 64));
    if (!m->sparse_arena)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "%s: out of memory for %llu bytes of "
                             "sparse weights", f->path, (unsigned long long)size);
    uint8_t *pos = m->sparse_arena;
    for (int32_t i = 0; i < n; i++) {
        const nmt_file_sparse *sp = found_sparse[i];
        if (!sp)
            continue;
        nmt_sparse_matrix *w = &m->sparse[m->n_sparse++];
        snprintf(w->name, sizeof w->name, "%s", specs[i].name);
        w->rows = (int32_t)sp->rows;
        w->cols = (int32_t)sp->cols;
        w->nnz = (int32_t)sp->nnz;
        int32_t *offsets = (int32_t *)(void *)pos;
        pos += nmt_align_up_u64(4 * (sp->rows + 1));
        int32_t *cols = (int32_t *)(void *)pos;
        pos += nmt_align_up_u64(4 * sp->nnz);
        float *values = (float *)(void *)pos;
        pos += nmt_align_up_u64(4 * sp->nnz);
        for (uint64_t r = 0; r <= sp->rows; r++)
            offsets[r] = (int32_t)nmt_rd32_le(sp->row_offsets + 4 * r);
        float *dense = *specs[i].slot;
        memset(dense, 0, (size_t)(sp->rows * sp->cols) * sizeof *dense);
        for (int32_t r = 0; r < w->rows; r++)
            for (int32_t k = offsets[r]; k < offsets[r + 1]; k++) {
                const uint8_t *v = sp->values + (uint64_t)k * (sp->dtype == NMT_DTYPE_F32 ? 4 : 2);
                float x;
                if (sp->dtype == NMT_DTYPE_F16) {
                    x = nmt_f16_to_f32((uint16_t)(v[0] | v[1] << 8));
                } else {
                    uint32_t bits = nmt_rd32_le(v);
                    memcpy(&x, &bits, sizeof x);
                }
                cols[k] = (int32_t)nmt_rd32_le(sp->col_indices + 4 * (uint64_t)k);
                if (!isfinite(x))
                    return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: section SPRS: tensor "
                                         "'%s': nonzero %d (row %d, column %d) is %s", f->path,
                                         w->name, k, r, cols[k], isnan(x) ? "NaN" : "infinite");
                values[k] = x;
                dense[(int64_t)r * w->cols + cols[k]] = x;
            }
        w->row_offsets = offsets;
        w->col_indices = cols;
        w->values = values;
        w->dense = dense;
    }
cleanup:
    return status;
}

nmt_status nmt_model_from_file(nmt_model_file *f, nmt_model **out, nmt_error *err)
{
    static const char *const src_specials[] = {"<pad>", "<unk>"};
    static const char *const tgt_specials[] = {"<pad>", "<unk>", "<s>", "</s>"};
    nmt_status status = NMT_STATUS_OK;
    nmt_model *m = NULL;
    tensor_spec specs[MAX_SPECS];
    const nmt_file_tensor *found[MAX_SPECS];
    const nmt_file_sparse *found_sparse[MAX_SPECS];
    char what[300];
    *out = NULL;
    NMT_ALLOC(m, 1);
    m->hp = f->hp;
    snprintf(what, sizeof what, "%s: section VSRC", f->path);
    NMT_TRY(nmt_vocab_create(f->src_tokens, f->src_lengths, f->n_src_tokens, what, &m->src_vocab,
                             err));
    snprintf(what, sizeof what, "%s: section VTGT", f->path);
    NMT_TRY(nmt_vocab_create(f->tgt_tokens, f->tgt_lengths, f->n_tgt_tokens, what, &m->tgt_vocab,
                             err));
    NMT_TRY(check_specials(m->src_vocab, src_specials, 2, f->path, "VSRC", err));
    NMT_TRY(check_specials(m->tgt_vocab, tgt_specials, 4, f->path, "VTGT", err));
    if (f->hp.sentencepiece) {
        /* Parsed now, while the file buffer (which holds the bytes) is ours. */
        snprintf(what, sizeof what, "%s: section SPMP", f->path);
        NMT_TRY(nmt_spm_load(f->spm_model, (size_t)f->spm_size, what, &m->spm, err));
    }

    int32_t n = list_specs(m, specs);
    int all_f32 = f->n_sparse == 0; /* sparse matrices need a fresh arena for their expansion */
    int all_f16 = 1;
    uint64_t arena_size = 0;
    int64_t params = 0;
    for (int32_t i = 0; i < n; i++) {
        const tensor_spec *s = &specs[i];
        const nmt_file_tensor *t = found[i] = nmt_model_file_find(f, s->name);
        const nmt_file_sparse *sp = found_sparse[i] = nmt_model_file_find_sparse(f, s->name);
        if (sp) {
            NMT_TRY(check_sparse_spec(s, sp, t != NULL, f->path, err));
            all_f16 &= sp->dtype == NMT_DTYPE_F16;
            params += s->dims[0] * s->dims[1];
            arena_size += ((uint64_t)(s->dims[0] * s->dims[1]) * 4 + 63) & ~(uint64_t)63;
            continue;
        }
        if (!t) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: section TENS: missing tensor "
                                   "'%s'", f->path, s->name);
            goto cleanup;
        }
        if (t->ndim != s->ndim) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: section TENS: tensor '%s': "
                                   "%d dimensions, expected %d", f->path, s->name, t->ndim, s->ndim);
            goto cleanup;
        }
        for (int d = 0; d < s->ndim; d++)
            if (t->dims[d] != (uint64_t)s->dims[d]) {
                status = nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: section TENS: tensor "
                                       "'%s': dims[%d] = %llu, expected %lld", f->path, s->name, d,
                                       (unsigned long long)t->dims[d], (long long)s->dims[d]);
                goto cleanup;
            }
        all_f32 &= t->dtype == NMT_DTYPE_F32;
        all_f16 &= t->dtype == NMT_DTYPE_F16;
        int64_t elems = s->dims[0] * (s->ndim == 2 ? s->dims[1] : 1);
        params += elems;
        arena_size += ((uint64_t)elems * 4 + 63) & ~(uint64_t)63;
    }
    if (f->n_tensors + f->n_sparse != n) {
        for (int32_t i = 0; i < f->n_tensors; i++) {
            int known = 0;
            for (int32_t j = 0; j < n && !known; j++)
                known = found[j] == &f->tensors[i];
            if (!known) {
                status = nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: section TENS: unexpected "
                                       "tensor '%s' (not part of this model's architecture)",
                                       f->path, f->tensors[i].name);
                goto cleanup;
            }
        }
        for (int32_t i = 0; i < f->n_sparse; i++) {
            int known = 0;
            for (int32_t j = 0; j < n && !known; j++)
                known = found_sparse[j] == &f->sparse[i];
            if (!known) {
                status = nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: section SPRS: unexpected "
                                       "tensor '%s' (not part of this model's architecture)",
                                       f->path, f->sparse[i].name);
                goto cleanup;
            }
        }
    }

    if (all_f32) {
        /* The data is aligned fp32 already (model_file.c): adopt its buffer. */
        m->arena = f->data_owner;
        for (int32_t i = 0; i < n; i++)
            *specs[i].slot = (float *)(void *)(f->data + found[i]->offset);
    } else {
        m->arena = aligned_alloc(64, (size_t)arena_size);
        if (!m->arena) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "%s: out of memory for %llu bytes "
                                   "of weights", f->path, (unsigned long long)arena_size);
            goto cleanup;
        }
        uint64_t pos = 0;
        for (int32_t i = 0; i < n; i++) {
            *specs[i].slot = (float *)(void *)((uint8_t *)m->arena + pos);
            uint64_t elems = (uint64_t)specs[i].dims[0] * (specs[i].ndim == 2 ? specs[i].dims[1] : 1);
            pos += (elems * 4 + 63) & ~(uint64_t)63;
        }
    }
    {
        float *slots[MAX_SPECS];
        for (int32_t i = 0; i < n; i++)
            slots[i] = *specs[i].slot;
        NMT_TRY(place_tensors(found, slots, n, f->data, f->path, err));
    }
    if (f->n_sparse > 0)
        NMT_TRY(place_sparse(m, f, specs, found_sparse, n, err));
    if (all_f32) {
        /* Detach the buffer from the file; its token lists pointed into it and
         * were only needed for the vocabularies, which hold copies. */
        if (f->data_owner == f->buffer) {
            m->arena_mapped = f->mapped ? (size_t)f->buffer_size : 0;
            f->buffer = NULL;
        }
        f->data_owner = NULL;
        f->data = NULL;
    }
    m->weights_fp16 = all_f16;
    describe(m, params);
    if (m->n_sparse > 0) {
        int64_t nnz = 0;
        for (int32_t i = 0; i < m->n_sparse; i++)
            nnz += m->sparse[i].nnz;
        size_t used = strlen(m->description);
        snprintf(m->description + used, sizeof m->description - used,
                 ", %d matrices sparse (%lld nonzeros)", m->n_sparse, (long long)nnz);
    }
    *out = m;
    return NMT_STATUS_OK;
cleanup:
    if (m && m->arena == f->data_owner)
        m->arena = NULL; /* still the file's */
    nmt_model_destroy(m);
    return status;
}

nmt_status nmt_model_read(const char *path, nmt_model **model, nmt_error *err)
{
    if (!model)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "nmt_model_load: model is NULL");
    *model = NULL;
    nmt_model_file f;
    nmt_status status = nmt_model_file_read(path, &f, err);
    if (status == NMT_STATUS_OK)
        status = nmt_model_from_file(&f, model, err);
    nmt_model_file_clear(&f);
    return status;
}

nmt_status nmt_model_load_memory(const void *bytes, size_t size, const char *name,
                                 nmt_model **model, nmt_error *err)
{
    if (!model || (!bytes && size))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "nmt_model_load_memory: NULL argument");
    *model = NULL;
    nmt_model_file f;
    nmt_status status = nmt_model_file_read_memory(bytes, size, name, &f, err);
    if (status == NMT_STATUS_OK)
        status = nmt_model_from_file(&f, model, err);
    nmt_model_file_clear(&f);
    return status;
}

void nmt_model_destroy(nmt_model *model)
{
    if (!model)
        return;
    nmt_vocab_free(model->src_vocab);
    nmt_vocab_free(model->tgt_vocab);
    nmt_spm_free(model->spm);
    if (model->arena_mapped)
        munmap(model->arena, model->arena_mapped);
    else
        free(model->arena);
    free(model->sparse);
    free(model->sparse_arena);
    free(model);
}

const nmt_sparse_matrix *nmt_model_sparse_of(const nmt_model *model, const float *dense)
{
    for (int32_t i = 0; model && dense && i < model->n_sparse; i++)
        if (model->sparse[i].dense == dense)
            return &model->sparse[i];
    return NULL;
}

const char *nmt_model_summary(const nmt_model *model)
{
    return model ? model->description : "(no model)";
}

int32_t nmt_model_tensor_count(const nmt_model *model)
{
    tensor_spec specs[MAX_SPECS];
    nmt_model copy = *model; /* list_specs writes shape fields */
    return list_specs(&copy, specs);
}

int nmt_model_tensor_at(const nmt_model *model, int32_t index, nmt_model_tensor *tensor)
{
    tensor_spec specs[MAX_SPECS];
    nmt_model copy = *model;
    int32_t n = list_specs(&copy, specs);
    if (index < 0 || index >= n)
        return 0;
    const tensor_spec *s = &specs[index];
    memset(tensor, 0, sizeof *tensor);
    memcpy(tensor->name, s->name, sizeof tensor->name);
    tensor->ndim = s->ndim;
    tensor->dims[0] = s->dims[0];
    tensor->dims[1] = s->ndim == 2 ? s->dims[1] : 0;
    tensor->data = *s->slot; /* `copy` holds the same pointers as `model` */
    return 1;
}

int nmt_model_tensor_find(const nmt_model *model, const char *name, nmt_model_tensor *tensor)
{
    int32_t n = nmt_model_tensor_count(model);
    for (int32_t i = 0; i < n; i++)
        if (nmt_model_tensor_at(model, i, tensor) && strcmp(tensor->name, name) == 0)
            return 1;
    return 0;
}
