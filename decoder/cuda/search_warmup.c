/* search_warmup.c: the GPU search's warm-up (decoder/cuda/cuda_search.h).
 *
 * Without it the first batch of a process, and at batch 1 the first
 * sentence of a new length, pay one-time work in the CUDA and cuBLAS
 * runtimes (set-up, kernels loaded on first use, per-shape heuristics),
 * which a service should pay when it loads the model, not on its first
 * requests (bench_passes ... warmup=0|1; docs/perf/steps.md, "Launch modes").
 *
 * The synthetic batches cover what the real ones vary: the number of rows a
 * step has (2^j and 3 * 2^(j-1) sentences up to the backend's maximum) and
 * the encoder's time-major row counts (source lengths of every power of two),
 * and at batch 1 the encoder's graph of every length up to kWarmLengths.
 * Sentences are runs of one feature row, capped at a few target steps. */
#include "cuda_search_impl.h"

#include <stdlib.h>
#include <string.h>

enum {
    kWarmSteps = 9,     /* a few steps, past the first done-flag checks */
    kWarmLengths = 64   /* batch-1 encoder graphs captured for lengths 1 .. this */
};

/* n synthetic sentences in buf and values; sentence i has max(1, longest *
 * (n - i) / n) tokens, each a run of one feature row a kind. */
static nmt_source_batch synthetic_batch(const nmt_cuda_search *self, int32_t n, int32_t longest,
                                        int32_t *buf, float *values)
{
    const int32_t kinds = self->config.feature_kinds;
    int32_t *src_len = buf, *token_offset = buf + n, *row_ptr = token_offset + n + 1;
    int32_t tokens = 0;
    token_offset[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t len = (int32_t)((int64_t)longest * (n - i) / n);
        src_len[i] = len < 1 ? 1 : len;
        tokens += src_len[i];
        token_offset[i + 1] = tokens;
    }
    int32_t *cols = row_ptr + tokens + 1;
    for (int32_t t = 0; t <= tokens; t++)
        row_ptr[t] = t * kinds;
    for (int32_t e = 0; e < tokens * kinds; e++) {
        /* Any valid feature row: the unknown word, then the extra rows. */
        cols[e] = e % kinds == 0 ? NMT_UNK_ID : self->config.src_rows - 1;
        values[e] = 1.0f;
    }
    return (nmt_source_batch){n, src_len, token_offset, row_ptr, cols, values, NULL};
}

/* The synthetic batches' search: the backend's beam, a few steps; with a
 * weights history, the steps that record into it. */
static nmt_search_config warm_config(const nmt_cuda_search *self)
{
    return (nmt_search_config){
        .params = {.beam_size = self->config.beam, .n_best = 1, .alpha = 1.0f,
                   .max_len_a = 0.0f, .max_len_b = kWarmSteps},
        .pad_id = NMT_PAD_ID,
        .bos_id = NMT_BOS_ID,
        .eos_id = NMT_EOS_ID,
        .rules = NMT_SEARCH_RULES_V1,
        .attention = self->config.attention,
    };
}

/* Decodes n synthetic sentences of up to `longest` tokens. */
static nmt_status warm_batch(nmt_cuda_search *self, int32_t n, int32_t longest, int32_t *buf,
                             float *values, nmt_search_result *results, nmt_error *err)
{
    const nmt_source_batch batch = synthetic_batch(self, n, longest, buf, values);
    const nmt_search_config config = warm_config(self);
    nmt_status status = nmt_cuda_search_run(self, &batch, &config, results, err);
    for (int32_t i = 0; i < n; i++)
        nmt_search_result_clear(&results[i]);
    return status;
}

/* Batch 1, every source length up to kWarmLengths: the encoder pass alone,
 * until the graph cache has captured it. The encoder's graph is keyed by the
 * exact length (its recurrence runs the sentence's own time steps), so
 * without this the first sentences of each length an interactive user or
 * a service sends run ~25 launches from the host (docs/performance.md,
 * "Batch-1 latency"). Steps need no such pass: their graphs are keyed by
 * the length's octave and the caller's search settings, and the first few
 * sentences of an octave capture them. */
static nmt_status warm_encoder_lengths(nmt_cuda_search *self, int32_t *buf, float *values,
                                       nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t S = self->config.max_src;
    const nmt_search_config config = warm_config(self);
    for (int32_t len = 1; len <= S && len <= kWarmLengths; len++) {
        const nmt_source_batch batch = synthetic_batch(self, 1, len, buf, values);
        for (int run = 0; run < NMT_GRAPH_CAPTURE_AT; run++) {
            NMT_TRY(nmt_cuda_search_encode_only(self, &batch, &config, NULL, err));
            /* The next pass packs its input into the same pinned buffer. */
            NMT_CUDA_TRY(cudaStreamSynchronize(self->stream));
        }
    }
cleanup:
    return status;
}

nmt_status nmt_cuda_search_warm_up(nmt_cuda_search *self, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t N = self->config.max_sentences, S = self->config.max_src;
    const int32_t kinds = self->config.feature_kinds;
    const size_t tokens = (size_t)N * (size_t)S, feats = tokens * (size_t)kinds;
    int32_t *buf = NULL;
    float *values = NULL;
    nmt_search_result *results = NULL;
    NMT_ALLOC(buf, 2 * (size_t)N + 1 + tokens + 1 + feats);
    NMT_ALLOC(values, feats);
    NMT_ALLOC(results, N);
    /* Batch 1: every power-of-two source length (the encoder's shapes). */
    for (int32_t len = 1;; len = 2 * len < S ? 2 * len : S) {
        NMT_TRY(warm_batch(self, 1, len, buf, values, results, err));
        if (len == S)
            break;
    }
    /* Larger batches: the step's row counts; lengths 1 .. 32. The sentence
     * counts 2^j and 3 * 2^(j-1) reach both row classes an octave that the
     * GEMM plans are cached by (kernels/cuda/linear_lt.cu), in the encoder
     * (32 n rows) and the steps, so a real batch rarely meets a shape whose
     * plan is still to be chosen (a heuristic costs the host milliseconds). */
    const int32_t longest = S < 32 ? S : 32;
    for (int32_t p = 2;; p = 2 * p < N ? 2 * p : N) {
        if (p > N)
            break;
        NMT_TRY(warm_batch(self, p, longest, buf, values, results, err));
        if (p == N)
            break;
        const int32_t q = p + p / 2;
        if (q < N)
            NMT_TRY(warm_batch(self, q, longest, buf, values, results, err));
    }
    if (self->graphs)
        NMT_TRY(warm_encoder_lengths(self, buf, values, err));
    NMT_CUDA_TRY(cudaStreamSynchronize(self->stream));
    /* Counters start at zero for the caller's work (the model's own, the
     * probe's, are the caller's to reset). */
    memset(&self->counts_now, 0, sizeof self->counts_now);
    self->counts_now.output_layer_ms = self->config.timed ? 0.0 : -1.0;
cleanup:
    free(buf);
    free(values);
    free(results);
    return status;
}
