/* cuda_backend.c: the CUDA backend (engine/backend.h), the twin of
 * engine/cpu_backend.c: it creates the network (model/cuda/cuda_model.h),
 * builds the shrink index it needs, wires the network into the GPU search's
 * step interface (decoder/cuda/cuda_search.h) and hands each batch to that
 * search, which keeps the whole beam search on the device. The engine sees
 * neither the network's state nor a kernel. An ensemble has a network a
 * member, all on one context (one stream), and the search drives them
 * through decoder/cuda/cuda_step_ensemble.h. */
#include "backend.h"
#include "clock.h"
#include "cuda_ctx.h"
#include "cuda_model.h"
#include "cuda_search.h"
#include "cuda_step_ensemble.h"
#include "error.h"
#include "lsh_index.h"

#include <stdlib.h>
#include <string.h>

typedef struct cuda_backend {
    nmt_backend base;
    nmt_cuda_ctx *ctx;
    nmt_cuda_model *net;         /* the model's, or the ensemble's first member's */
    int32_t n_members;           /* 1, or an ensemble's; members[0] is net */
    nmt_cuda_model *members[NMT_MAX_ENSEMBLE_MODELS];
    nmt_cuda_step_ensemble *ensemble;
    nmt_cuda_search *search;
    int device;
    size_t fixed_bytes;          /* the contexts and the network (measured at create) */
    int64_t peak_bytes;          /* the most allocated at once: fixed + the search's */
    int64_t peak_used;           /* cudaMemGetInfo's bytes in use when the peak was reached */
    double context_seconds, upload_seconds, warmup_seconds; /* create's phases (nmt_stats) */
} cuda_backend;

/* The step interface (cuda_search.h) over the CUDA network. */
static nmt_status net_encode(void *net, int buf, const nmt_cuda_encoder_input *in,
                             nmt_error *err)
{
    return nmt_cuda_encode(net, buf, in, err);
}

static nmt_status net_step(void *net, int buf, int32_t n_rows, const nmt_cuda_rows *rows,
                           const int32_t *src_len, int32_t src_stride, int carried_in, int carry_out,
                           nmt_error *err)
{
    return nmt_cuda_decoder_step(net, buf, n_rows, rows, src_len, src_stride, carried_in, carry_out,
                                 err);
}

static nmt_status net_output(void *net, int buf, int32_t n_rows, int32_t beam,
                             const nmt_cuda_rows *rows, const int32_t *excluded,
                             int32_t n_excluded, int32_t logits_word, nmt_cuda_scores *scores,
                             nmt_error *err)
{
    return nmt_cuda_output_layer(net, buf, n_rows, beam, rows, excluded, n_excluded, logits_word,
                                 scores, err);
}

static nmt_status net_probe(void *net, int buf, int32_t n_rows, int32_t beam,
                            const nmt_cuda_rows *rows, const int32_t *excluded,
                            int32_t n_excluded, nmt_error *err)
{
    return nmt_cuda_output_probe(net, buf, n_rows, beam, rows, excluded, n_excluded, err);
}

static nmt_status net_stash(void *net, int buf, int32_t n_rows, int32_t at,
                            const int32_t **attn_argmax, nmt_error *err)
{
    return nmt_cuda_output_stash(net, buf, n_rows, at, attn_argmax, err);
}

static nmt_status net_pick(void *net, int32_t n_rows, const int32_t *words, float *log_probs,
                           nmt_error *err)
{
    return nmt_cuda_output_pick(net, n_rows, words, log_probs, err);
}

static nmt_status net_place(void *net, int buf, int32_t n, const int32_t *slots,
                           const int32_t *positions, int32_t beam, nmt_error *err)
{
    return nmt_cuda_encoder_place(net, buf, n, slots, positions, beam, err);
}

static nmt_cuda_step_model cuda_step_model(nmt_cuda_model *net)
{
    return (nmt_cuda_step_model){
        .self = net,
        .stream = nmt_cuda_model_stream(net),
        .vocab_size = nmt_cuda_model_vocab(net),
        .shrunk = nmt_cuda_model_shrunk(net),
        .encode = net_encode,
        .step = net_step,
        .output = net_output,
        .probe = nmt_cuda_output_probe_on(net) ? net_probe : NULL,
        .encoder_stream = nmt_cuda_encoder_side_stream(net),
        .place = net_place,
        .attn_weights = nmt_cuda_model_attention(net),
        .carry_rows = nmt_cuda_model_carry_rows(net),
        .stash = net_stash,
        .pick = net_pick,
        .stash_rows = nmt_cuda_output_stash_rows(net),
    };
}

/* After create and each batch: a new peak of the bytes allocated also
 * reads the device's use (rarely: the search's buffers only grow). */
static void track_memory(cuda_backend *self)
{
    const int64_t now = (int64_t)(self->fixed_bytes +
                                  (self->search ? nmt_cuda_search_device_bytes_now(self->search)
                                                : 0));
    if (now <= self->peak_bytes)
        return;
    long long used = 0, total = 0;
    nmt_cuda_memory_info(self->device, &used, &total);
    self->peak_bytes = now;
    self->peak_used = used;
}

/* A batch searched (score 0) or scored (1: the teacher-forced pass,
 * nmt_cuda_search_score), after the test hook; the memory peak after. */
static nmt_status cuda_backend_run(nmt_backend *backend, const nmt_source_batch *batch,
                                   const nmt_search_config *config, nmt_search_result *results,
                                   int score, nmt_error *err)
{
    cuda_backend *self = (cuda_backend *)backend;
    nmt_status status = nmt_backend_oom_injected(backend, batch, err);
    if (status != NMT_STATUS_OK)
        return status;
    status = score ? nmt_cuda_search_score(self->search, batch, config, results, err)
                   : nmt_cuda_search_run(self->search, batch, config, results, err);
    track_memory(self);
    return status;
}

static nmt_status cuda_backend_decode(nmt_backend *backend, const nmt_source_batch *batch,
                                      const nmt_search_config *config,
                                      nmt_search_result *results, nmt_error *err)
{
    return cuda_backend_run(backend, batch, config, results, 0, err);
}

static nmt_status cuda_backend_score(nmt_backend *backend, const nmt_source_batch *batch,
                                     const nmt_search_config *config,
                                     nmt_search_result *results, nmt_error *err)
{
    return cuda_backend_run(backend, batch, config, results, 1, err);
}

static void cuda_backend_add_stats(const nmt_backend *backend, nmt_stats *stats)
{
    const cuda_backend *self = (const cuda_backend *)backend;
    const nmt_cuda_search_counts c = nmt_cuda_search_get_counts(self->search);
    stats->steps += c.steps;
    stats->graph_runs += c.graph_runs;
    stats->eager_runs += c.eager_runs;
    stats->output_layer_ms = c.output_layer_ms;
    stats->device_memory_bytes = self->peak_bytes;
    stats->device_memory_used = self->peak_used;
    stats->sparse_matrices = nmt_cuda_model_sparse_count(self->net);
    stats->startup_context_seconds = self->context_seconds;
    stats->startup_upload_seconds = self->upload_seconds;
    stats->startup_warmup_seconds = self->warmup_seconds;
    int64_t recall[3];
    nmt_error ignored;
    if (nmt_cuda_output_probe_counts(self->net, recall, 0, &ignored) == NMT_STATUS_OK) {
        stats->row_steps += recall[0];
        stats->recall_hits += recall[1];
        stats->candidate_words += recall[2];
    }
}

static void cuda_backend_free(nmt_backend *backend)
{
    cuda_backend *self = (cuda_backend *)backend;
    if (!self)
        return;
    nmt_cuda_search_free(self->search);
    nmt_cuda_step_ensemble_free(self->ensemble);
    for (int32_t i = 1; i < self->n_members; i++)
        nmt_cuda_model_free(self->members[i]);
    nmt_cuda_model_free(self->net);
    nmt_cuda_ctx_free(self->ctx);
    free(self);
}

static nmt_status cuda_backend_stream(nmt_backend *backend, const nmt_search_config *config,
                                      const nmt_sentence_stream *source, nmt_error *err)
{
    cuda_backend *self = (cuda_backend *)backend;
    const nmt_status status = nmt_cuda_search_stream(self->search, config, source, err);
    track_memory(self);
    return status;
}

static const nmt_backend_vtable cuda_backend_vtable = {
    .decode = cuda_backend_decode,
    .add_stats = cuda_backend_add_stats,
    .free = cuda_backend_free,
    .stream = cuda_backend_stream,
    .score = cuda_backend_score,
};
/* An ensemble's networks have no common encoder stream: no continuous batching. */
static const nmt_backend_vtable cuda_ensemble_vtable = {
    .decode = cuda_backend_decode,
    .add_stats = cuda_backend_add_stats,
    .free = cuda_backend_free,
    .stream = NULL,
    .score = cuda_backend_score,
};

/* The network's shrunk output layer: the index built here, uploaded, freed. */
static nmt_status set_shrink(cuda_backend *self, const nmt_model *model,
                             const nmt_backend_config *config, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_lsh_index *index = NULL;
    nmt_shrink shrink = *config->shrink;
    NMT_TRY(nmt_shrink_index_build(&shrink, model->out_w, model->hp.tgt_vocab,
                                   model->hp.hidden_size, &index, err));
    shrink.tables = index ? nmt_lsh_index_tables(index) : NULL;
    NMT_TRY(nmt_cuda_model_set_shrink(self->net, &shrink, config->collect_stats >= 2, err));
cleanup:
    nmt_lsh_index_free(index);
    return status;
}

static nmt_cuda_search_config search_config(const nmt_model *model, int device_index,
                                            const nmt_backend_config *config)
{
    return (nmt_cuda_search_config){
        .device = device_index,
        .max_sentences = config->max_sentences,
        .beam = config->beam,
        .max_src = config->max_src,
        .src_rows = model->hp.src_rows,
        .feature_kinds = model->hp.n_features > 0 ? model->hp.n_features : 1,
        .check_every = config->check_every,
        .cuda_graphs = config->cuda_graphs,
        .timed = config->collect_stats >= 2,
        .attention = config->attention,
        .batch_invariant = config->batch_invariant,
    };
}

static nmt_cuda_step_ensemble_config ensemble_config(int device_index,
                                                     const nmt_backend_config *config)
{
    return (nmt_cuda_step_ensemble_config){
        .device = device_index,
        .max_rows = config->max_sentences * config->beam,
        .beam = config->beam,
        .batch_invariant = config->batch_invariant,
    };
}

/* The contexts' workspaces and the networks (fixed at create); with shrink,
 * the shrink wing's estimate (create counts what it allocated instead). */
static nmt_status fixed_device_bytes(const nmt_model *model, const nmt_backend_config *config,
                                     const nmt_shrink *shrink, size_t *bytes, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const nmt_ensemble *e = config->ensemble;
    *bytes = nmt_cuda_ctx_device_bytes() +
             (config->attention || config->attention_model
                  ? nmt_cuda_model_attention_bytes(config->max_sentences, config->beam,
                                                   config->max_src)
                  : 0);
    for (int32_t i = 0; i < (e ? e->n : 1); i++) {
        const nmt_model *member = e ? e->models[i] : model;
        size_t net = 0;
        NMT_TRY(nmt_cuda_model_device_bytes(member, config->max_sentences, config->beam,
                                            config->max_src,
                                            nmt_precision_for_model(member, config->precision),
                                            shrink, config->fused_output, &net, err));
        *bytes += net;
    }
    if (e) {
        const nmt_cuda_step_ensemble_config ec = ensemble_config(0, config);
        const size_t wrapper = nmt_cuda_step_ensemble_device_bytes(&ec, e->n,
                                                                   model->hp.tgt_vocab);
        if (wrapper == SIZE_MAX)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                                 "cuda backend: cannot size the ensemble's buffers");
        *bytes += wrapper;
    }
cleanup:
    return status;
}

nmt_status nmt_cuda_backend_device_bytes(const nmt_model *model, const nmt_backend_config *config,
                                         size_t *bytes, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!model || !config || !bytes)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda backend: NULL argument");
    NMT_TRY(fixed_device_bytes(model, config, config->shrink, bytes, err));
    const nmt_cuda_search_config search = search_config(model, 0, config);
    *bytes += nmt_cuda_search_device_bytes(&search);
cleanup:
    return status;
}

/* A network for model on ctx at the config's precision and sparsity
 * (attention: it keeps each step's attention weights). */
static nmt_status create_net(const nmt_model *model, nmt_cuda_ctx *ctx,
                             const nmt_backend_config *config, int attention,
                             nmt_cuda_model **net, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_TRY(nmt_cuda_model_create(model, ctx, config->max_sentences, config->beam,
                                  config->max_src, net, err));
    NMT_TRY(nmt_cuda_model_set_precision(*net, nmt_precision_for_model(model, config->precision),
                                         err));
    if (config->sparse != NMT_SPARSE_OFF && model->n_sparse > 0)
        NMT_TRY(nmt_cuda_model_set_sparse(*net, config->sparse == NMT_SPARSE_ON, err));
    if (attention)
        NMT_TRY(nmt_cuda_model_set_attention(*net, err));
    if (config->fused_output)
        NMT_TRY(nmt_cuda_model_set_fused_output(*net, err));
    /* Tests and A/B timing only: the 16-bit GEMMs round their own inputs. */
    const char *no_shadows = getenv("NMT_TEST_NO_SHADOWS");
    if (no_shadows && strcmp(no_shadows, "1") == 0)
        nmt_cuda_model_set_shadows(*net, 0);
    return NMT_STATUS_OK;
cleanup:
    nmt_cuda_model_free(*net);
    *net = NULL;
    return status;
}

/* An ensemble's other members' networks, on the first's context (one
 * stream), and the step wrapper over all; the first keeps the attention. */
static nmt_status create_ensemble(cuda_backend *self, const nmt_ensemble *e, int device_index,
                                  const nmt_backend_config *config, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_step_model steps[NMT_MAX_ENSEMBLE_MODELS];
    for (; self->n_members < e->n; self->n_members++)
        NMT_TRY(create_net(e->models[self->n_members], self->ctx, config, 0,
                           &self->members[self->n_members], err));
    for (int32_t i = 0; i < e->n; i++)
        steps[i] = cuda_step_model(self->members[i]);
    const nmt_cuda_step_ensemble_config ec = ensemble_config(device_index, config);
    NMT_TRY(nmt_cuda_step_ensemble_create(steps, e->weights, e->n, &ec, &self->ensemble, err));
cleanup:
    return status;
}

nmt_status nmt_cuda_backend_create(const nmt_model *model, int device_index,
                                   const nmt_backend_config *config, nmt_backend **backend,
                                   nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    cuda_backend *self = NULL;
    if (!backend || !model || !config)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda backend: NULL argument");
    *backend = NULL;
    const nmt_ensemble *e = config->ensemble;
    if (e && (e->models[0] != model || config->shrink))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda backend: an ensemble starts with the backend's model and "
                             "has no shrinking");
    const int n_devices = nmt_cuda_device_count();
    if (n_devices == 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "cuda backend: no CUDA device");
    if (device_index < 0 || device_index >= n_devices)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda backend: device %d, only %d visible", device_index, n_devices);
    NMT_ALLOC(self, 1);
    self->base.vtable = &cuda_backend_vtable;
    self->base.device = NMT_DEVICE_CUDA;
    nmt_backend_read_oom_hook(&self->base);
    self->device = device_index;
    NMT_TRY(fixed_device_bytes(model, config, NULL, &self->fixed_bytes, err));
    double phase = nmt_clock_seconds();
    NMT_TRY(nmt_cuda_ctx_create(device_index, &self->ctx, err));
    nmt_cuda_ctx_set_batch_invariant(self->ctx, config->batch_invariant); /* before the side contexts */
    self->context_seconds = nmt_clock_seconds() - phase;
    phase = nmt_clock_seconds();
    NMT_TRY(create_net(model, self->ctx, config, config->attention || config->attention_model,
                       &self->net, err));
    self->members[0] = self->net;
    self->n_members = 1;
    if (config->shrink) {
        NMT_TRY(set_shrink(self, model, config, err));
        self->fixed_bytes += nmt_cuda_model_shrink_bytes(self->net);
    }
    const nmt_cuda_search_config search = search_config(model, device_index, config);
    if (e) {
        self->base.vtable = &cuda_ensemble_vtable;
        NMT_TRY(create_ensemble(self, e, device_index, config, err));
    }
    const nmt_cuda_step_model step = e ? nmt_cuda_step_ensemble_model(self->ensemble)
                                       : cuda_step_model(self->net);
    NMT_TRY(nmt_cuda_search_create(&step, &search, &self->search, err));
    self->upload_seconds = nmt_clock_seconds() - phase;
    if (config->warmup) {
        int64_t ignored[3];
        phase = nmt_clock_seconds();
        NMT_TRY(nmt_cuda_search_warm_up(self->search, err));
        NMT_TRY(nmt_cuda_output_probe_counts(self->net, ignored, 1, err)); /* reset */
        self->warmup_seconds = nmt_clock_seconds() - phase;
    }
    track_memory(self);
    *backend = &self->base;
    return NMT_STATUS_OK;
cleanup:
    cuda_backend_free(self ? &self->base : NULL);
    return status;
}
