/* cuda_backend.c: the CUDA backend (engine/backend.h): the whole batched beam
 * search stays on the GPU; the host only launches.
 *
 * Per batch: sentences are sorted longest first (results mapped back), so
 * at every encoder time step and in every active list the live sentences are
 * a prefix. The time-major feature CSR, lengths, max lengths and excluded
 * ids go up in one async copy of a packed pinned buffer; model/cuda/ encodes;
 * decoder/cuda/beam_step.cu keeps scores, back-pointers, history and finished
 * hypotheses on the device; backtracking runs there and one copy brings the
 * n-best token sequences back.
 *
 * Rows: row p * B + k is slot k of the sentence at position p of the active
 * list. Every check_every steps the host reads the done flags it asked
 * for at the previous check (an event recorded check_every steps earlier,
 * so it never waits on the step it just launched), stops if every sentence
 * is done, and otherwise compacts the list: the alive sentences move to a
 * prefix through the reorder gather that runs anyway (row_parent maps a new
 * row to the old layout), so done sentences stop costing work. A done
 * sentence still in the list (done since the last snapshot) costs its rows
 * for at most 2 * check_every steps; its beam block returns at once.
 * Launches: a step's launches are the same every other step between
 * compactions (the row buffers swap), and at batch 1 the same for every
 * sentence of a length; the encoder's are the same for every batch of the
 * same lengths. Both go through a graph cache (graph_cache.h) that replays a
 * captured CUDA graph once a key recurs, which removes the host's launch
 * work between the kernels (docs/performance.md measures it). The step number
 * lives on the device (beam_step.h) so a replayed step needs no new argument.
 * The step loop never allocates and only waits on the check event of
 * check_every steps back. */
#include "cuda_backend.h"

#include <stdlib.h>
#include <string.h>

/* Graphs kept: at batch 1 one step graph per (source length, row buffer) and
 * one encoder graph per length, for the lengths in use. */
enum { kGraphsKept = 96 };

static size_t input_bytes_for(int32_t n, int32_t max_src, int64_t nnz)
{
    return sizeof(int32_t) * (2 + 2 * (size_t)n + (size_t)max_src * n + 1 + 2 * (size_t)nnz);
}

/* (Re)allocates the input buffers for nnz features (outside the step loop). */
nmt_status nmt_cuda_backend_ensure_input(cuda_backend *self, int64_t nnz, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (self->input_dev && nnz <= self->nnz_cap)
        return NMT_STATUS_OK;
    if (self->input_dev)
        cudaFree(self->input_dev);
    if (self->input_host)
        cudaFreeHost(self->input_host);
    self->input_dev = self->input_host = NULL;
    self->nnz_cap = nnz > self->nnz_cap ? nnz : self->nnz_cap;
    self->input_bytes = input_bytes_for(self->max_sentences, self->max_src, self->nnz_cap);
    NMT_CUDA_TRY(cudaMalloc(&self->input_dev, self->input_bytes));
    NMT_CUDA_TRY(cudaHostAlloc(&self->input_host, self->input_bytes, cudaHostAllocDefault));
cleanup:
    return status;
}

/* (Re)allocates history and results for hist_len steps (outside the loop). */
nmt_status nmt_cuda_backend_ensure_history(cuda_backend *self, int32_t hist_len, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (self->hist_dev && hist_len <= self->hist_cap)
        return NMT_STATUS_OK;
    if (self->hist_dev)
        cudaFree(self->hist_dev);
    if (self->results_dev)
        cudaFree(self->results_dev);
    if (self->results_host)
        cudaFreeHost(self->results_host);
    self->hist_dev = self->results_dev = self->results_host = NULL;
    self->hist_cap = hist_len > self->hist_cap ? hist_len : self->hist_cap;
    const size_t entries = (size_t)self->max_sentences * self->hist_cap * self->beam;
    nmt_beam_results probe;
    self->results_bytes = nmt_beam_results_carve(NULL, self->max_sentences, self->beam,
                                                 self->hist_cap, &probe);
    NMT_CUDA_TRY(cudaMalloc(&self->hist_dev, 3 * entries * sizeof(int32_t)));
    NMT_CUDA_TRY(cudaMalloc(&self->results_dev, self->results_bytes));
    NMT_CUDA_TRY(cudaHostAlloc(&self->results_host, self->results_bytes, cudaHostAllocDefault));
    self->beam_dev.hist_token = (int32_t *)self->hist_dev;
    self->beam_dev.hist_attn = self->beam_dev.hist_token + entries;
    self->beam_dev.hist_parent = self->beam_dev.hist_attn + entries;
cleanup:
    return status;
}

nmt_status nmt_cuda_backend_ensure_events(cuda_backend *self, int32_t steps, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (steps <= self->events_cap)
        return NMT_STATUS_OK;
    cudaEvent_t *grown = (cudaEvent_t *)realloc(self->layer_events,
                                                sizeof(cudaEvent_t) * 2 * (size_t)steps);
    if (!grown)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "cuda backend: out of memory");
    self->layer_events = grown;
    for (int32_t i = 2 * self->events_cap; i < 2 * steps; i++) {
        NMT_CUDA_TRY(cudaEventCreate(&self->layer_events[i]));
        self->events_cap = (i + 1) / 2; /* whole pairs created so far */
    }
cleanup:
    return status;
}

static void destroy_events(cuda_backend *self)
{
    for (int32_t i = 0; i < 2 * self->events_cap; i++)
        cudaEventDestroy(self->layer_events[i]);
    free(self->layer_events);
}

static void cuda_backend_add_stats(const nmt_backend *backend, nmt_stats *stats)
{
    const cuda_backend *self = (const cuda_backend *)backend;
    stats->steps += self->steps;
    stats->graph_runs += self->graph_runs;
    stats->eager_runs += self->eager_runs;
    stats->output_layer_ms = self->collect_stats >= 2 ? self->output_layer_ms : -1.0;
    const nmt_cuda_model *net = self->net;
    unsigned long long counts[3] = {0, 0, 0};
    if (net->has_shrink && net->full_logits && cudaSetDevice(self->device) == cudaSuccess &&
        cudaMemcpy(counts, net->lsh_stats, sizeof counts, cudaMemcpyDeviceToHost) == cudaSuccess) {
        stats->row_steps += (int64_t)counts[0];
        stats->recall_hits += (int64_t)counts[1];
        stats->candidate_words += (int64_t)counts[2];
    }
}

static void cuda_backend_free(nmt_backend *backend)
{
    cuda_backend *self = (cuda_backend *)backend;
    if (!self)
        return;
    if (self->ctx)
        cudaSetDevice(self->device);
    if (self->event_created)
        cudaEventDestroy(self->check_event);
    destroy_events(self);
    nmt_cuda_model_free(self->net);
    cudaFree(self->input_dev);
    cudaFreeHost(self->input_host);
    cudaFree(self->state_dev);
    cudaFree(self->hist_dev);
    cudaFree(self->results_dev);
    cudaFreeHost(self->results_host);
    cudaFreeHost(self->done_host);
    cudaFreeHost(self->act_host);
    nmt_graph_cache_free(self->graphs);
    free(self->key);
    nmt_cuda_ctx_free(self->ctx);
    free(self->order);
    free(self->counts);
    free(self->active);
    free(self->host_act);
    free(self->host_old);
    free(self);
}

static const nmt_backend_vtable cuda_backend_vtable = {
    nmt_cuda_backend_decode, cuda_backend_add_stats, cuda_backend_free};

nmt_status nmt_cuda_backend_create(const nmt_model *model, int device_index,
                                   const nmt_backend_config *config, nmt_backend **backend,
                                   nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    cuda_backend *self = NULL;
    if (!backend || !model || !config)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda backend: NULL argument");
    const int32_t max_sentences = config->max_sentences, beam_size = config->beam;
    const int32_t max_src = config->max_src;
    *backend = NULL;
    const int n_devices = nmt_cuda_device_count();
    if (n_devices == 0)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "cuda backend: no CUDA device");
    if (device_index < 0 || device_index >= n_devices)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda backend: device %d, only %d visible", device_index, n_devices);
    if (max_sentences < 1 || beam_size < 1 || beam_size > 256 || max_src < 1 ||
        config->check_every < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda backend: max_sentences %d, beam %d (1..256), max_src %d, "
                             "check_every %d", max_sentences, beam_size, max_src,
                             config->check_every);
    NMT_ALLOC(self, 1);
    self->base.vtable = &cuda_backend_vtable;
    self->base.device = NMT_DEVICE_CUDA;
    self->model = model;
    self->device = device_index;
    self->max_sentences = max_sentences;
    self->beam = beam_size;
    self->max_src = max_src;
    self->check_every = config->check_every;
    NMT_ALLOC(self->order, max_sentences);
    NMT_ALLOC(self->counts, max_src + 2);
    NMT_ALLOC(self->active, max_src);
    NMT_ALLOC(self->host_act, max_sentences);
    NMT_ALLOC(self->host_old, max_sentences);
    NMT_CUDA_TRY(cudaSetDevice(device_index));
    NMT_TRY(nmt_cuda_ctx_create(device_index, &self->ctx, err));
    NMT_TRY(nmt_cuda_model_create(model, self->ctx, max_sentences, beam_size, max_src, &self->net,
                                  err));
    self->collect_stats = config->collect_stats;
    if (config->gemm == NMT_GEMM_TF32X2)
        NMT_TRY(nmt_cuda_model_set_tf32x2(self->net, err));
    if (config->shrink)
        NMT_TRY(nmt_cuda_model_set_shrink(self->net, config->shrink, config->collect_stats >= 2,
                                          err));

    /* Beam state: scores, tokens, parents [N, B]; done, n_finished [N];
     * finished [N, 2B] x 4; active list [2N]; the step number [1]. */
    {
        const size_t N = (size_t)max_sentences, NB = N * (size_t)beam_size, NK = 2 * NB;
        NMT_CUDA_TRY(cudaMalloc(&self->state_dev,
                                sizeof(int32_t) * (3 * NB + 2 * N + 4 * NK + 2 * N + 1)));
        int32_t *words = (int32_t *)self->state_dev;
        nmt_beam_device *b = &self->beam_dev;
        b->scores = (float *)words;
        b->tokens = words + NB;
        b->parents = words + 2 * NB;
        b->done = words + 3 * NB;
        b->n_finished = b->done + N;
        b->fin_log_prob = (float *)(b->n_finished + N);
        b->fin_score = b->fin_log_prob + NK;
        b->fin_length = (int32_t *)(b->fin_score + NK);
        b->fin_parent = b->fin_length + NK;
        self->act_dev = b->fin_parent + NK;
        b->step = self->act_dev + 2 * N;
    }
    NMT_CUDA_TRY(cudaHostAlloc((void **)&self->done_host, sizeof(int32_t) * max_sentences,
                               cudaHostAllocDefault));
    NMT_CUDA_TRY(cudaHostAlloc((void **)&self->act_host, sizeof(int32_t) * 2 * max_sentences,
                               cudaHostAllocDefault));
    NMT_CUDA_TRY(cudaEventCreateWithFlags(&self->check_event, cudaEventDisableTiming));
    self->event_created = 1;
    /* Sized for the defaults (one feature row per kind and token, max length
     * 2 S + 10); a batch that needs more grows them before its first step. */
    {
        const int32_t kinds = model->hp.n_features > 0 ? model->hp.n_features : 1;
        NMT_TRY(nmt_cuda_backend_ensure_input(self, (int64_t)max_sentences * max_src * kinds, err));
        NMT_TRY(nmt_cuda_backend_ensure_history(self, 2 * max_src + 10 - 1, err));
    }
    NMT_ALLOC(self->key, nmt_cuda_backend_key_bytes(max_src));
    if (config->cuda_graphs)
        NMT_TRY(nmt_graph_cache_create(kGraphsKept, &self->graphs, err));
    if (config->warmup)
        NMT_TRY(nmt_cuda_backend_warm_up(self, err));
    *backend = &self->base;
    return NMT_STATUS_OK;
cleanup:
    cuda_backend_free(self ? &self->base : NULL);
    return status;
}
