/* backend.h: what the translator needs from a device: decode one batch of
 * already-featurized source sentences into search results. The CPU backend
 * (engine/cpu_backend.c) wraps the reference model and decoder/beam_search.c;
 * the CUDA backend (engine/cuda/) keeps the whole search on the GPU. Both are
 * sized once for (max_sentences, beam, max_src) at create time. */
#ifndef NMT_BACKEND_H
#define NMT_BACKEND_H

#include "nmt.h"

#include "cpu_model.h"
#include "search.h"
#include "sentence_stream.h"
#include "step_ensemble.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_backend nmt_backend;

/* NMT_PRECISION_AUTO resolved for a model: fp16 for a file of fp16 weights,
 * else fp32; any other precision as it is. */
static inline nmt_precision nmt_precision_for_model(const nmt_model *model, nmt_precision p)
{
    if (p != NMT_PRECISION_AUTO)
        return p;
    return model->weights_fp16 ? NMT_PRECISION_FP16 : NMT_PRECISION_FP32;
}

/* The models a translator decodes with (engine/ensemble.c): one, or an
 * ensemble whose members' log-probabilities are summed with these weights
 * at each step (decoder/step_ensemble.h). */
typedef struct nmt_ensemble {
    int32_t n;
    const nmt_model *models[NMT_MAX_ENSEMBLE_MODELS];
    float weights[NMT_MAX_ENSEMBLE_MODELS];
} nmt_ensemble;

/* *ensemble = models[0 .. n) with weights (NULL: 1/n each, OpenNMT-py's
 * average), once they are checked to decode together: weights as
 * nmt_ensemble_check_weights; one target vocabulary (the search's words)
 * and one source side (vocabulary, feature rows, tokenizer: the batch the
 * translator builds from the first model is every member's input). The
 * message names the first difference. */
nmt_status nmt_ensemble_make(const nmt_model *const *models, const float *weights, int n,
                             nmt_ensemble *ensemble, nmt_error *err);
/* *wrapped = what the backends step as one (nmt_backend_config.ensemble):
 * NULL for a model alone, e for several or one whose weight scales its
 * scores; shrinking (shrink not NMT_SHRINK_NONE) is refused with it. */
nmt_status nmt_ensemble_wrapped(const nmt_ensemble *e, nmt_shrink_mode shrink,
                                const nmt_ensemble **wrapped, nmt_error *err);
/* 1 when a member stores a matrix sparse (the others multiply dense). */
int nmt_ensemble_any_sparse(const nmt_ensemble *e);

/* What a backend is sized and set up for, once. */
typedef struct nmt_backend_config {
    int32_t max_sentences, beam, max_src;
    const nmt_shrink *shrink; /* NULL: full softmax; else read at create (the backend builds
                                 and owns the index it needs) */
    int collect_stats;        /* count into nmt_stats (slower) */
    int cuda_graphs;          /* CUDA: replay repeated steps as graphs */
    int warmup;               /* CUDA: warm up at create */
    int check_every;          /* CUDA: steps between done-flag checks */
    nmt_precision precision; /* CUDA: the GEMMs' arithmetic */
    nmt_sparse sparse;        /* the matrices the model stores sparse: OFF (or a dense
                                 model) their dense expansion; CPU: in CSR form unless OFF;
                                 CUDA: SpMM always (ON) or where it pays (AUTO) */
    int attention;            /* keep the attention weights for the search's
                                 nmt_search_config.attention (CUDA: a weights buffer and
                                 history, allocated only then) */
    int attention_model;      /* CUDA: the network keeps each step's attention weights
                                 (attention, or the coverage penalty reads them) */
    int batch_invariant;      /* kernels whose per-row arithmetic is fixed: CUDA's
                                 (nmt_cuda_ctx_set_batch_invariant); the CPU's blas
                                 kernels only where its BLAS is (nmt_cpu_blas_row_invariant) */
    int fused_output;         /* CUDA, 16-bit: the fused output layer where it runs
                                 (nmt_cuda_model_set_fused_output) */
    nmt_cpu_kernels cpu_kernels; /* CPU: fast, blas or the reference */
    int threads;              /* CPU, fast and blas: a product's threads (0: the cores) */
    nmt_cpu_isa cpu_isa;      /* CPU, fast: its product's instructions */
    const nmt_ensemble *ensemble; /* NULL: the model alone; else the members the backend
                                     steps as one (decoder/step_ensemble.h), models[0] the
                                     model it is created with; no shrink */
} nmt_backend_config;

typedef struct nmt_backend_vtable {
    nmt_status (*decode)(nmt_backend *backend, const nmt_source_batch *batch,
                         const nmt_search_config *config, nmt_search_result *results,
                         nmt_error *err);
    /* Adds the backend's counters (steps, output layer time, recall) to stats. */
    void (*add_stats)(const nmt_backend *backend, nmt_stats *stats);
    void (*free)(nmt_backend *backend);
    /* Continuous batching (decoder/sentence_stream.h): decodes the source's
     * sentences as they come until it ends; NULL where the backend has none
     * (the CPU's: its translator batches instead). */
    nmt_status (*stream)(nmt_backend *backend, const nmt_search_config *config,
                         const nmt_sentence_stream *source, nmt_error *err);
    /* Scoring: each sentence's config->forced tokens and an EOS, teacher-forced
     * (decoder/forced_search.h, nmt_score_forced: one hypothesis a sentence). */
    nmt_status (*score)(nmt_backend *backend, const nmt_source_batch *batch,
                        const nmt_search_config *config, nmt_search_result *results,
                        nmt_error *err);
} nmt_backend_vtable;

/* Tests only (NMT_TEST_DECODE_OOM="K[,L]", read at create): a backend's
 * decode fails with NMT_STATUS_ERROR_MEMORY for a batch of more than K
 * sentences, or one holding a sentence of L source tokens, as a device out
 * of memory would (test_batch_split, test_invariance). -1: off. */
typedef struct nmt_oom_hook {
    int32_t above, length;
} nmt_oom_hook;

struct nmt_backend {
    const nmt_backend_vtable *vtable;
    nmt_device device;
    nmt_oom_hook oom;
};

/* backend->oom from the environment (both backends, at create). */
void nmt_backend_read_oom_hook(nmt_backend *backend);
/* NMT_STATUS_ERROR_MEMORY, set in err, when the hook fires for batch;
 * NMT_STATUS_OK otherwise. */
nmt_status nmt_backend_oom_injected(const nmt_backend *backend, const nmt_source_batch *batch,
                                    nmt_error *err);

/* The search's step interface over a CPU network state (cpu_backend.c):
 * steps 1-4 then the output layer, and reorder. */
nmt_step_model nmt_cpu_step_model(nmt_cpu_state *state);

nmt_status nmt_cpu_backend_create(const nmt_model *model, const nmt_backend_config *config,
                                  nmt_backend **backend, nmt_error *err);

/* NMT_STATUS_ERROR_UNSUPPORTED when built without CUDA (engine/nocuda/). */
nmt_status nmt_cuda_backend_create(const nmt_model *model, int device_index,
                                   const nmt_backend_config *config, nmt_backend **backend,
                                   nmt_error *err);

/* *bytes = the device memory nmt_cuda_backend_create allocates for config
 * (host arithmetic, no device): the contexts' cuBLAS workspaces, the
 * network's weights and workspaces (nmt_cuda_model_device_bytes) and the
 * search's buffers (nmt_cuda_search_device_bytes), and with config->shrink
 * the shrink wing (its LSH index at the first table size); not the CUDA
 * context, cuBLAS's handles or graphs. NMT_STATUS_ERROR_UNSUPPORTED when
 * built without CUDA. */
nmt_status nmt_cuda_backend_device_bytes(const nmt_model *model, const nmt_backend_config *config,
                                         size_t *bytes, nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_BACKEND_H */
