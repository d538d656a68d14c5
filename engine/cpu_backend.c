/* cpu_backend.c: the CPU reference backend: encode with model/cpu/, then run
 * decoder/beam_search.c over its step interface, which this file wires to
 * the CPU network's decoder step, output layer and reorder (the output
 * vocabulary shrunk by model/cpu/output_layer.c when the config asks). */
#include "backend.h"
#include "nmt.h"
#include "error.h"
#include "forced_search.h"
#include "linear_blas.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct cpu_backend {
    nmt_backend base;
    nmt_cpu_state *state;
    nmt_lsh_index *lsh_index; /* LSH shrinking: the index the state's output layer reads */
} cpu_backend;

void nmt_backend_read_oom_hook(nmt_backend *backend)
{
    backend->oom = (nmt_oom_hook){.above = -1, .length = -1};
    const char *hook = getenv("NMT_TEST_DECODE_OOM");
    int above = -1, length = -1;
    if (hook && sscanf(hook, "%d,%d", &above, &length) >= 1)
        backend->oom = (nmt_oom_hook){.above = above, .length = length};
}

nmt_status nmt_backend_oom_injected(const nmt_backend *backend, const nmt_source_batch *batch,
                                    nmt_error *err)
{
    const nmt_oom_hook *h = &backend->oom;
    int fires = h->above >= 0 && batch->n_sentences > h->above;
    for (int32_t i = 0; !fires && h->length >= 0 && i < batch->n_sentences; i++)
        fires = batch->src_len[i] == h->length;
    if (!fires)
        return NMT_STATUS_OK;
    return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                         "injected out of memory (NMT_TEST_DECODE_OOM) at %d sentences",
                         batch->n_sentences);
}

int nmt_cpu_default_threads(int workers)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const long each = cores / (workers > 0 ? workers : 1);
    return each > 0 ? (int)each : 1;
}

/* The step interface (decoder/search.h) over the CPU network: steps 1-4,
 * then step 5. */
static nmt_status cpu_step(void *state, int32_t n_rows, const int32_t *prev_tokens,
                           float *log_probs, int32_t *attn_argmax, nmt_error *err)
{
    nmt_status status = nmt_cpu_decoder_step(state, n_rows, prev_tokens, attn_argmax, err);
    if (status != NMT_STATUS_OK)
        return status;
    return nmt_cpu_output_layer(state, n_rows, log_probs, err);
}

static nmt_status cpu_reorder(void *state, int32_t n_rows, const int32_t *parent, nmt_error *err)
{
    return nmt_cpu_decoder_reorder(state, n_rows, parent, err);
}

static const float *cpu_attention(void *state, int32_t *stride)
{
    return nmt_cpu_state_attention(state, stride);
}

static const float *cpu_logits(void *state, int32_t *ld)
{
    return nmt_cpu_state_logits(state, ld);
}

nmt_step_model nmt_cpu_step_model(nmt_cpu_state *state)
{
    const nmt_step_model step = {state, nmt_cpu_state_vocab(state), cpu_step, cpu_reorder,
                                 cpu_attention, cpu_logits};
    return step;
}

/* A batch searched (score 0) or scored (1; decoder/forced_search.h): the
 * test hook, the encoder pass, then the search or the teacher-forced pass
 * over the step interface, the latter with the full softmax whatever the
 * shrinking (nmt_score_batch). */
static nmt_status cpu_backend_run(nmt_backend *backend, const nmt_source_batch *batch,
                                  const nmt_search_config *config, nmt_search_result *results,
                                  int score, nmt_error *err)
{
    cpu_backend *self = (cpu_backend *)backend;
    nmt_status status = nmt_backend_oom_injected(backend, batch, err);
    if (status != NMT_STATUS_OK)
        return status;
    status = nmt_cpu_encode(self->state, batch, err);
    if (status != NMT_STATUS_OK)
        return status;
    nmt_cpu_state_full_softmax(self->state, score);
    const nmt_step_model step = nmt_cpu_step_model(self->state);
    nmt_search_config keyed = *config;
    keyed.line_keys = batch->line_key;
    status = score ? nmt_score_forced(&step, batch->n_sentences, batch->src_len, &keyed,
                                      results, err)
                   : nmt_beam_search(&step, batch->n_sentences, batch->src_len, &keyed, results,
                                     err);
    nmt_cpu_state_full_softmax(self->state, 0);
    return status;
}

static nmt_status cpu_backend_decode(nmt_backend *backend, const nmt_source_batch *batch,
                                     const nmt_search_config *config,
                                     nmt_search_result *results, nmt_error *err)
{
    return cpu_backend_run(backend, batch, config, results, 0, err);
}

static nmt_status cpu_backend_score(nmt_backend *backend, const nmt_source_batch *batch,
                                    const nmt_search_config *config,
                                    nmt_search_result *results, nmt_error *err)
{
    return cpu_backend_run(backend, batch, config, results, 1, err);
}

static void cpu_backend_free(nmt_backend *backend)
{
    cpu_backend *self = (cpu_backend *)backend;
    if (!self)
        return;
    nmt_cpu_state_free(self->state);
    nmt_lsh_index_free(self->lsh_index);
    free(self);
}

/* The CPU oracle measures no GPU time; it counts steps and, with shrinking
 * and collect_stats 2, recall as nmt_cuda_output_probe does. */
static void cpu_backend_add_stats(const nmt_backend *backend, nmt_stats *stats)
{
    const cpu_backend *self = (const cpu_backend *)backend;
    int64_t steps = 0, recall[3] = {0, 0, 0};
    nmt_cpu_state_counters(self->state, &steps, recall);
    stats->steps += steps;
    stats->row_steps += recall[0];
    stats->recall_hits += recall[1];
    stats->candidate_words += recall[2];
    stats->output_layer_ms = -1.0;
    stats->sparse_matrices = nmt_cpu_state_sparse_count(self->state);
}

static const nmt_backend_vtable cpu_backend_vtable = {
    .decode = cpu_backend_decode,
    .add_stats = cpu_backend_add_stats,
    .free = cpu_backend_free,
    .stream = NULL,
    .score = cpu_backend_score,
};

nmt_status nmt_cpu_backend_create(const nmt_model *model, const nmt_backend_config *config,
                                  nmt_backend **backend, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    cpu_backend *self = NULL;
    *backend = NULL;
    NMT_ALLOC(self, 1);
    self->base.vtable = &cpu_backend_vtable;
    self->base.device = NMT_DEVICE_CPU;
    nmt_backend_read_oom_hook(&self->base);
    NMT_TRY(nmt_cpu_state_create(model, config->max_sentences, config->beam, config->max_src,
                                 &self->state, err));
    /* The CSR products are the reference's (the same bits as its dense
     * loop), so sparse on runs the reference; sparse auto on the fast
     * kernels multiplies dense: their products outrun the scalar SpMM. */
    const int int8 = config->precision == NMT_PRECISION_INT8;
    nmt_cpu_kernels kernels = config->cpu_kernels;
    if (int8 && kernels != NMT_CPU_KERNELS_AUTO && kernels != NMT_CPU_KERNELS_FAST) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                               "precision int8 runs on the CPU's fast kernels, not %s",
                               kernels == NMT_CPU_KERNELS_BLAS ? "blas" : "reference");
        goto cleanup;
    }
    if (kernels == NMT_CPU_KERNELS_AUTO)
        kernels = config->sparse == NMT_SPARSE_ON && !int8 ? NMT_CPU_KERNELS_REFERENCE
                                                           : NMT_CPU_KERNELS_FAST;
    if (kernels != NMT_CPU_KERNELS_REFERENCE && config->sparse == NMT_SPARSE_ON) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                               "sparse on runs the CPU's reference kernels (CSR), not the "
                               "%s kernels: use cpu kernels auto or reference",
                               kernels == NMT_CPU_KERNELS_BLAS ? "blas" : "fast");
        goto cleanup;
    }
    const int threads = config->threads > 0 ? config->threads : nmt_cpu_default_threads(1);
    if (kernels == NMT_CPU_KERNELS_BLAS) {
        nmt_cpu_blas_set_threads(threads);
        /* A BLAS whose row results move with the row count (OpenBLAS's
         * Haswell/Zen kernels) would break batch invariance. */
        if (config->batch_invariant && nmt_cpu_blas_available() &&
            !nmt_cpu_blas_row_invariant()) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                                   "cpu kernels blas: this BLAS (%s) gives a row other bits at "
                                   "other row counts, which breaks batch invariance: use cpu "
                                   "kernels fast (the default) or reference, or batch "
                                   "invariance off", nmt_cpu_blas_name());
            goto cleanup;
        }
    }
    if (kernels != NMT_CPU_KERNELS_REFERENCE) {
        const nmt_cpu_fast fast = {.blas = kernels == NMT_CPU_KERNELS_BLAS,
                                   .isa = config->cpu_isa,
                                   .threads = threads,
                                   .int8 = int8};
        NMT_TRY(nmt_cpu_state_set_fast(self->state, &fast, err));
    } else if (config->sparse != NMT_SPARSE_OFF) {
        NMT_TRY(nmt_cpu_state_set_sparse(self->state, err));
    }
    if (config->shrink) {
        nmt_shrink shrink = *config->shrink;
        NMT_TRY(nmt_shrink_index_build(&shrink, model->out_w, model->hp.tgt_vocab,
                                       model->hp.hidden_size, &self->lsh_index, err));
        shrink.tables = self->lsh_index ? nmt_lsh_index_tables(self->lsh_index) : NULL;
        NMT_TRY(nmt_cpu_state_set_shrink(self->state, &shrink, config->collect_stats >= 2, err));
    }
    *backend = &self->base;
    return NMT_STATUS_OK;
cleanup:
    cpu_backend_free(self ? &self->base : NULL);
    return status;
}
