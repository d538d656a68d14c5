/* search_buffers.c: the GPU search's buffers (decoder/cuda/cuda_search_impl.h):
 * created once for (max_sentences, beam, max_src), the per-batch input, the
 * history and the timing events grown between batches when a batch needs
 * more (never inside the step loop), and freed together. */
#include "cuda_search_impl.h"

#include <stdlib.h>
#include <string.h>

/* Graphs kept: at batch 1 one encoder graph a source length (the warm-up
 * captures lengths 1 .. 64) and a step graph per (length octave, history
 * octave, row buffer); larger batches' keys beside them. */
enum { kGraphsKept = 160 };

/* The whole-batch layout (beam_search.c) or the stream's (stream_search.c),
 * which has five more arrays of n. */
static size_t input_bytes_for(int32_t n, int32_t max_src, int64_t nnz)
{
    return sizeof(int32_t) * (2 + 7 * (size_t)n + (size_t)max_src * n + 1 + 2 * (size_t)nnz);
}

static void free_input(nmt_cuda_search *s)
{
    cudaFree(s->input_dev);
    cudaFree(s->ident_dev);
    if (s->input_host)
        cudaFreeHost(s->input_host);
    s->input_dev = s->input_host = NULL;
    s->ident_dev = NULL; /* the stream makes it again */
}

/* (Re)allocates the input buffers for nnz features (outside the step loop).
 * A growth that fails (device or pinned memory) leaves no buffer and no
 * capacity, so the next, smaller batch allocates what it needs afresh. */
nmt_status nmt_cuda_search_ensure_input(nmt_cuda_search *s, int64_t nnz, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (s->input_dev && nnz <= s->nnz_cap)
        return NMT_STATUS_OK;
    free_input(s);
    s->nnz_cap = nnz > s->nnz_cap ? nnz : s->nnz_cap;
    s->input_bytes = input_bytes_for(s->config.max_sentences, s->config.max_src, s->nnz_cap);
    NMT_CUDA_TRY(cudaMalloc(&s->input_dev, s->input_bytes));
    NMT_CUDA_TRY(cudaHostAlloc(&s->input_host, s->input_bytes, cudaHostAllocDefault));
    return NMT_STATUS_OK;
cleanup:
    free_input(s);
    s->nnz_cap = 0;
    s->input_bytes = 0;
    return status;
}

void nmt_cuda_staged_free(nmt_cuda_staged *b)
{
    cudaFree(b->dev);
    if (b->host)
        cudaFreeHost(b->host);
    b->dev = b->host = NULL;
    b->bytes = 0;
}

nmt_status nmt_cuda_staged_ensure(nmt_cuda_staged *b, size_t bytes, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (b->dev && bytes <= b->bytes)
        return NMT_STATUS_OK;
    nmt_cuda_staged_free(b);
    NMT_CUDA_TRY(cudaMalloc(&b->dev, bytes));
    NMT_CUDA_TRY(cudaHostAlloc(&b->host, bytes, cudaHostAllocDefault));
    b->bytes = bytes;
    return NMT_STATUS_OK;
cleanup:
    nmt_cuda_staged_free(b);
    return status;
}

static size_t history_entries(const nmt_cuda_search_config *c, int32_t hist_cap)
{
    return (size_t)c->max_sentences * (size_t)hist_cap * (size_t)c->beam;
}

/* Token, argmax, parent and score per entry, and with attention the
 * weights history (a row of max_src floats per entry). */
static size_t history_bytes(const nmt_cuda_search_config *c, int32_t hist_cap)
{
    const size_t entries = history_entries(c, hist_cap);
    return 4 * entries * sizeof(int32_t) +
           (c->attention ? entries * (size_t)c->max_src * sizeof(float) : 0);
}

static size_t results_bytes(const nmt_cuda_search_config *c, int32_t hist_cap)
{
    nmt_beam_results probe;
    return nmt_beam_results_carve(NULL, c->max_sentences, c->beam, hist_cap,
                                  c->attention ? c->max_src : 0, &probe);
}

static void free_history(nmt_cuda_search *s)
{
    cudaFree(s->hist_dev);
    cudaFree(s->weights_dev);
    cudaFree(s->results_dev);
    if (s->results_host)
        cudaFreeHost(s->results_host);
    s->hist_dev = s->results_dev = s->results_host = NULL;
    s->weights_dev = NULL;
}

/* (Re)allocates history and results for hist_len steps (outside the loop);
 * a failed growth leaves none, as nmt_cuda_search_ensure_input. */
nmt_status nmt_cuda_search_ensure_history(nmt_cuda_search *s, int32_t hist_len, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (s->hist_dev && hist_len <= s->hist_cap)
        return NMT_STATUS_OK;
    free_history(s);
    s->hist_cap = hist_len > s->hist_cap ? hist_len : s->hist_cap;
    const size_t entries = history_entries(&s->config, s->hist_cap);
    s->results_bytes = results_bytes(&s->config, s->hist_cap);
    NMT_CUDA_TRY(cudaMalloc(&s->hist_dev, 4 * entries * sizeof(int32_t)));
    if (s->config.attention)
        NMT_CUDA_TRY(cudaMalloc((void **)&s->weights_dev,
                                entries * (size_t)s->config.max_src * sizeof(float)));
    NMT_CUDA_TRY(cudaMalloc(&s->results_dev, s->results_bytes));
    NMT_CUDA_TRY(cudaHostAlloc(&s->results_host, s->results_bytes, cudaHostAllocDefault));
    s->beam_dev.hist_token = (int32_t *)s->hist_dev;
    s->beam_dev.hist_attn = s->beam_dev.hist_token + entries;
    s->beam_dev.hist_parent = s->beam_dev.hist_attn + entries;
    s->beam_dev.hist_score = (float *)(s->beam_dev.hist_parent + entries);
    s->beam_dev.hist_weights = s->weights_dev;
    return NMT_STATUS_OK;
cleanup:
    free_history(s);
    s->hist_cap = 0;
    s->results_bytes = 0;
    return status;
}

nmt_status nmt_cuda_search_ensure_events(nmt_cuda_search *s, int32_t steps, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (steps <= s->events_cap)
        return NMT_STATUS_OK;
    cudaEvent_t *grown = (cudaEvent_t *)realloc(s->layer_events,
                                                sizeof(cudaEvent_t) * 2 * (size_t)steps);
    if (!grown)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "cuda search: out of memory");
    s->layer_events = grown;
    for (int32_t i = 2 * s->events_cap; i < 2 * steps; i++) {
        NMT_CUDA_TRY(cudaEventCreate(&s->layer_events[i]));
        s->events_cap = (i + 1) / 2; /* whole pairs created so far */
    }
cleanup:
    return status;
}

static void destroy_events(nmt_cuda_search *s)
{
    for (int32_t i = 0; i < 2 * s->events_cap; i++)
        cudaEventDestroy(s->layer_events[i]);
    free(s->layer_events);
}

void nmt_cuda_search_free(nmt_cuda_search *s)
{
    if (!s)
        return;
    cudaSetDevice(s->config.device);
    if (s->finish_stream) {
        cudaStreamSynchronize(s->stream); /* a last step may still run there */
        cudaStreamDestroy(s->finish_stream);
    }
    if (s->event_created) {
        cudaEventDestroy(s->check_event);
        cudaEventDestroy(s->fork_event);
        cudaEventDestroy(s->encoded_event);
    }
    destroy_events(s);
    cudaFree(s->input_dev);
    cudaFreeHost(s->input_host);
    cudaFree(s->state_dev);
    cudaFree(s->hist_dev);
    cudaFree(s->weights_dev);
    cudaFree(s->results_dev);
    cudaFreeHost(s->results_host);
    cudaFreeHost(s->done_host);
    cudaFreeHost(s->done_at_host);
    cudaFreeHost(s->act_pinned);
    nmt_cuda_staged_free(&s->forced);
    nmt_cuda_staged_free(&s->score);
    nmt_cuda_search_free_rules(s);
    nmt_graph_cache_free(s->graphs);
    free(s->key);
    free(s->order);
    free(s->counts);
    free(s->active);
    free(s->active_list);
    free(s->host_old);
    free(s);
}

static size_t state_bytes(const nmt_cuda_search_config *c)
{
    const size_t N = (size_t)c->max_sentences, NB = N * (size_t)c->beam, NK = 2 * NB;
    return sizeof(int32_t) * (3 * NB + 2 * N + 4 * NK + 2 * N + 1 + 4 * NB + 2 * N + 2);
}

/* Beam state: scores, tokens, parents [N, B]; done, n_finished [N];
 * finished [N, 2B] x 4; active list [2N]; the step number [1]; the step's
 * rows [N * B] x 4; each sentence's start [N]; n_ended [N] (onmt rules); the
 * beam step's ticket [1]; the batch's tag [1]. */
static nmt_status create_state(nmt_cuda_search *s, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const size_t N = (size_t)s->config.max_sentences, NB = N * (size_t)s->config.beam;
    const size_t NK = 2 * NB;
    NMT_CUDA_TRY(cudaMalloc(&s->state_dev, state_bytes(&s->config)));
    int32_t *words = (int32_t *)s->state_dev;
    nmt_beam_device *b = &s->beam_dev;
    b->scores = (float *)words;
    b->tokens = words + NB;
    b->parents = words + 2 * NB;
    b->done = words + 3 * NB;
    b->n_finished = b->done + N;
    b->fin_log_prob = (float *)(b->n_finished + N);
    b->fin_score = b->fin_log_prob + NK;
    b->fin_length = (int32_t *)(b->fin_score + NK);
    b->fin_parent = b->fin_length + NK;
    s->act_dev = b->fin_parent + NK;
    b->step = s->act_dev + 2 * N;
    s->row_tokens = b->step + 1;
    s->row_sentence = s->row_tokens + NB;
    s->row_parent = s->row_sentence + NB;
    s->row_live = s->row_parent + NB;
    b->start = s->row_live + NB;
    b->n_ended = b->start + N;
    b->ticket = b->n_ended + N;
    b->tag = b->ticket + 1;
cleanup:
    return status;
}

nmt_status nmt_cuda_search_create(const nmt_cuda_step_model *model,
                                  const nmt_cuda_search_config *config,
                                  nmt_cuda_search **search, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_search *s = NULL;
    if (!search || !model || !config)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda search: NULL argument");
    *search = NULL;
    const int32_t N = config->max_sentences, B = config->beam, S = config->max_src;
    if (config->attention && !model->attn_weights)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda search: attention asked for, the network keeps no weights");
    if (N < 1 || B < 1 || B > 256 || S < 1 || config->check_every < 1 ||
        (int64_t)N * B > INT32_MAX / 4 || config->src_rows < 1 || config->feature_kinds < 1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda search: max_sentences %d, beam %d (1..256), max_src %d, "
                             "check_every %d, src_rows %d, feature kinds %d", N, B, S,
                             config->check_every, config->src_rows, config->feature_kinds);
    NMT_ALLOC(s, 1);
    s->model = *model;
    s->config = *config;
    s->stream = (cudaStream_t)model->stream;
    s->counts_now.output_layer_ms = config->timed ? 0.0 : -1.0;
    NMT_ALLOC(s->order, N);
    NMT_ALLOC(s->counts, S + 2);
    NMT_ALLOC(s->active, S);
    NMT_ALLOC(s->active_list, N);
    NMT_ALLOC(s->host_old, N);
    NMT_CUDA_TRY(cudaSetDevice(config->device));
    NMT_TRY(create_state(s, err));
    NMT_CUDA_TRY(cudaHostAlloc((void **)&s->done_host, sizeof(int32_t) * N, cudaHostAllocDefault));
    /* The beam step writes each sentence's done step here itself, so a
     * check needs no copy between the steps (beam_search.c). */
    NMT_CUDA_TRY(cudaHostAlloc((void **)&s->done_at_host, sizeof(int32_t) * N,
                               cudaHostAllocMapped));
    NMT_CUDA_TRY(cudaHostGetDevicePointer((void **)&s->beam_dev.done_at, s->done_at_host, 0));
    memset(s->done_at_host, 0, sizeof(int32_t) * N);
    NMT_CUDA_TRY(cudaHostAlloc((void **)&s->act_pinned, sizeof(int32_t) * 2 * N,
                               cudaHostAllocDefault));
    NMT_CUDA_TRY(cudaStreamCreateWithFlags(&s->finish_stream, cudaStreamNonBlocking));
    NMT_CUDA_TRY(cudaEventCreateWithFlags(&s->check_event, cudaEventDisableTiming));
    NMT_CUDA_TRY(cudaEventCreateWithFlags(&s->fork_event, cudaEventDisableTiming));
    NMT_CUDA_TRY(cudaEventCreateWithFlags(&s->encoded_event, cudaEventDisableTiming));
    s->event_created = 1;
    /* Sized for the defaults (feature_kinds rows a token, max length
     * 2 S + 10); a batch that needs more grows them before its first step. */
    NMT_TRY(nmt_cuda_search_ensure_input(s, (int64_t)N * S * config->feature_kinds, err));
    NMT_TRY(nmt_cuda_search_ensure_history(s, 2 * S + 10 - 1, err));
    NMT_ALLOC(s->key, nmt_cuda_search_key_bytes(S));
    if (config->cuda_graphs)
        NMT_TRY(nmt_graph_cache_create(kGraphsKept, &s->graphs, err));
    *search = s;
    return NMT_STATUS_OK;
cleanup:
    nmt_cuda_search_free(s);
    return status;
}

nmt_cuda_search_counts nmt_cuda_search_get_counts(const nmt_cuda_search *s)
{
    return s->counts_now;
}

/* What nmt_cuda_search_create allocates on the device, measured as it does
 * (the state, the input for the default features, the history for the
 * default max length), plus the stream's identity list. */
size_t nmt_cuda_search_device_bytes(const nmt_cuda_search_config *c)
{
    const int32_t N = c->max_sentences, S = c->max_src;
    const int32_t hist = 2 * S + 10 - 1;
    return state_bytes(c) + input_bytes_for(N, S, (int64_t)N * S * c->feature_kinds) +
           history_bytes(c, hist) + results_bytes(c, hist) + sizeof(int32_t) * (size_t)N;
}

size_t nmt_cuda_search_device_bytes_now(const nmt_cuda_search *s)
{
    const size_t history = s->hist_dev ? history_bytes(&s->config, s->hist_cap) +
                                             s->results_bytes : 0;
    return state_bytes(&s->config) + (s->input_dev ? s->input_bytes : 0) + history +
           (s->ident_dev ? sizeof(int32_t) * (size_t)s->config.max_sentences : 0) +
           s->forced.bytes + s->score.bytes + nmt_cuda_search_rules_bytes(s);
}
