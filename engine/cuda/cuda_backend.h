/* cuda_backend.h: private to engine/cuda/: the CUDA backend's state, shared
 * by cuda_backend.c (create, buffers, free) and cuda_decode.c (the search
 * loop). See cuda_backend.c for the design. */
#ifndef NMT_CUDA_BACKEND_H
#define NMT_CUDA_BACKEND_H

#include "backend.h"
#include "cuda_ctx.h"
#include "error.h"
#include "beam_step.h"
#include "cuda_check.h"
#include "cuda_model.h"
#include "graph_cache.h"


typedef struct cuda_backend {
    nmt_backend base;
    const nmt_model *model;
    int device;
    nmt_cuda_ctx *ctx;
    nmt_cuda_model *net;
    int32_t max_sentences, beam, max_src;
    int32_t check_every; /* steps between done-flag checks (nmt_options.check_every) */

    /* Per batch input: [excluded 2][src_len N][max_len N][row_ptr S*N + 1][cols][values]. */
    int64_t nnz_cap;
    void *input_dev, *input_host; /* host: pinned */
    size_t input_bytes;
    /* Beam state, fixed size (N, B). */
    void *state_dev;
    nmt_beam_device beam_dev; /* pointers into state_dev and hist_dev */
    int32_t *act_dev;         /* [2N]: active list, then old positions after a compaction */
    /* History and results: depend on the longest max length. */
    int32_t hist_cap;         /* history steps held */
    void *hist_dev, *results_dev, *results_host; /* host: pinned */
    size_t results_bytes;
    /* Pinned small transfers and the check event. */
    int32_t *done_host; /* [N] */
    int32_t *act_host;  /* [2N] */
    cudaEvent_t check_event;
    int event_created;
    /* Host scratch. */
    int32_t *order;    /* [N]: sorted position -> batch sentence */
    int32_t *counts;   /* [max_src + 2] */
    int32_t *active;   /* [max_src]: sentences longer than t */
    int32_t *host_act; /* [N]: the active list as the device holds it */
    int32_t *host_old; /* [N]: old positions of a compaction */
    /* collect_stats: a pair of timing events around each step's output layer
     * (created between batches, read after a batch's final sync). */
    int collect_stats;
    cudaEvent_t *layer_events; /* [2 * events_cap] */
    int32_t events_cap;
    int64_t steps;
    int64_t graph_runs, eager_runs; /* steps and encoder passes, by how they ran */
    double output_layer_ms;
    /* CUDA graphs of repeated steps and encoder passes (graph_cache.h);
     * NULL when off. key: host scratch for building a key. */
    nmt_graph_cache *graphs;
    unsigned char *key;
} cuda_backend;

/* Bytes of cuda_backend.key: a step key or an encoder key with max_src entries. */
size_t nmt_cuda_backend_key_bytes(int32_t max_src);

/* Decodes small synthetic batches (every power-of-two batch size up to the
 * backend's, a few source lengths, a few steps each) and clears the counters,
 * so that one-time costs (cuBLAS's set-up, kernels loaded on first use, the
 * first captures) are paid at create, not by the first real batches. */
nmt_status nmt_cuda_backend_warm_up(cuda_backend *self, nmt_error *err);

/* (Re)allocate the per-batch input buffers for nnz features, and the history
 * and results for hist_len steps: only grow, only between batches. */
nmt_status nmt_cuda_backend_ensure_input(cuda_backend *self, int64_t nnz, nmt_error *err);
nmt_status nmt_cuda_backend_ensure_history(cuda_backend *self, int32_t hist_len, nmt_error *err);
/* collect_stats: timing events for `steps` steps (only grow, between batches). */
nmt_status nmt_cuda_backend_ensure_events(cuda_backend *self, int32_t steps, nmt_error *err);

nmt_status nmt_cuda_backend_decode(nmt_backend *backend, const nmt_source_batch *batch,
                                   const nmt_search_config *config, nmt_search_result *results,
                                   nmt_error *err);

#endif /* NMT_CUDA_BACKEND_H */
