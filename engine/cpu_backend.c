/* cpu_backend.c: the CPU reference backend: encode with model/cpu/, then run
 * decoder/beam_search.c over its step interface, which this file wires to
 * the CPU network's decoder step, output layer and reorder (the output
 * vocabulary shrunk by model/cpu/output_layer.c when the config asks). */
#include "backend.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct cpu_backend {
    nmt_backend base;
    nmt_cpu_state *state;
    nmt_lsh_index *lsh_index; /* LSH shrinking: the index the state's output layer reads */
    /* Tests only (NMT_TEST_DECODE_OOM="K[,L]", read at create): decode fails
     * with NMT_STATUS_ERROR_MEMORY for a batch of more than K sentences, or
     * one holding a sentence of L source tokens, as a GPU out of memory
     * would (tests/engine/test_batch_split.c). -1: off. */
    int32_t oom_above, oom_length;
} cpu_backend;

static void read_oom_hook(cpu_backend *self)
{
    self->oom_above = self->oom_length = -1;
    const char *hook = getenv("NMT_TEST_DECODE_OOM");
    int above = -1, length = -1;
    if (hook && sscanf(hook, "%d,%d", &above, &length) >= 1) {
        self->oom_above = above;
        self->oom_length = length;
    }
}

static int oom_injected(const cpu_backend *self, const nmt_source_batch *batch)
{
    if (self->oom_above >= 0 && batch->n_sentences > self->oom_above)
        return 1;
    for (int32_t i = 0; self->oom_length >= 0 && i < batch->n_sentences; i++)
        if (batch->src_len[i] == self->oom_length)
            return 1;
    return 0;
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

nmt_step_model nmt_cpu_step_model(nmt_cpu_state *state)
{
    const nmt_step_model step = {state, nmt_cpu_state_vocab(state), cpu_step, cpu_reorder,
                                 cpu_attention};
    return step;
}

static nmt_status cpu_backend_decode(nmt_backend *backend, const nmt_source_batch *batch,
                                     const nmt_search_config *config,
                                     nmt_search_result *results, nmt_error *err)
{
    cpu_backend *self = (cpu_backend *)backend;
    if (oom_injected(self, batch))
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                             "injected out of memory (NMT_TEST_DECODE_OOM) at %d sentences",
                             batch->n_sentences);
    nmt_status status = nmt_cpu_encode(self->state, batch, err);
    if (status != NMT_STATUS_OK)
        return status;
    const nmt_step_model step = nmt_cpu_step_model(self->state);
    return nmt_beam_search(&step, batch->n_sentences, batch->src_len, config, results, err);
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

static const nmt_backend_vtable cpu_backend_vtable = {cpu_backend_decode, cpu_backend_add_stats,
                                                      cpu_backend_free, NULL};

nmt_status nmt_cpu_backend_create(const nmt_model *model, const nmt_backend_config *config,
                                  nmt_backend **backend, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    cpu_backend *self = NULL;
    *backend = NULL;
    NMT_ALLOC(self, 1);
    self->base.vtable = &cpu_backend_vtable;
    self->base.device = NMT_DEVICE_CPU;
    read_oom_hook(self);
    NMT_TRY(nmt_cpu_state_create(model, config->max_sentences, config->beam, config->max_src,
                                 &self->state, err));
    if (config->sparse != NMT_SPARSE_OFF)
        NMT_TRY(nmt_cpu_state_set_sparse(self->state, err));
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
