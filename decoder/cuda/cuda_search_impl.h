/* cuda_search_impl.h: private to decoder/cuda/: the GPU search's state,
 * shared by search_buffers.c (create, buffers, free), beam_search.c (one
 * batch), search_step.c (a step and an encoder pass through the graph
 * cache) and search_warmup.c. */
#ifndef NMT_CUDA_SEARCH_IMPL_H
#define NMT_CUDA_SEARCH_IMPL_H

#include "beam_step.h"
#include "cuda_check.h"
#include "cuda_rules.h"
#include "cuda_search.h"
#include "error.h"
#include "graph_cache.h"

/* A device buffer and its pinned host twin, grown between batches (a failed
 * growth leaves neither, so the next, smaller batch allocates afresh). */
typedef struct nmt_cuda_staged {
    void *dev, *host;
    size_t bytes;
} nmt_cuda_staged;
nmt_status nmt_cuda_staged_ensure(nmt_cuda_staged *b, size_t bytes, nmt_error *err);
void nmt_cuda_staged_free(nmt_cuda_staged *b);

struct nmt_cuda_search {
    nmt_cuda_step_model model;
    nmt_cuda_search_config config;
    cudaStream_t stream;
    /* The results of a batch whose sentences were all done at a check:
     * backtracked and copied here, beside the step launched after that
     * check, which still runs on `stream` (beam_search.c). */
    cudaStream_t finish_stream;
    int cur; /* the model's live row buffer */

    /* Per batch input: [excluded 2][src_len N][max_len N][row_ptr S*N + 1][cols][values]
     * (the stream's layout: stream_search.c). */
    int64_t nnz_cap;
    void *input_dev, *input_host; /* host: pinned */
    size_t input_bytes;
    /* Beam state, fixed size (N, B), and the step's rows. */
    void *state_dev;
    nmt_beam_device beam_dev; /* pointers into state_dev and hist_dev */
    int32_t *act_dev;         /* [2N]: active list, then old positions after a compaction
                                 (the stream: at act_dev + N) */
    int32_t *ident_dev;       /* [N]: 0, 1, ...: the stream's old positions when none moved */
    int32_t *row_tokens, *row_sentence, *row_parent, *row_live; /* [N * B] */
    /* History and results: depend on the longest max length. */
    int32_t hist_cap;         /* history steps held */
    void *hist_dev, *results_dev, *results_host; /* host: pinned */
    float *weights_dev;       /* config.attention: the weights history [N, hist_cap, B,
                                 max_src] (nmt_beam_device.hist_weights) */
    /* A batch's forced tokens (forced_upload.c); forced_view points into
     * forced.dev for the batch being searched. */
    nmt_cuda_staged forced;
    nmt_forced_tokens forced_view;
    /* Scoring (score_search.c): a batch's rows and results for every step. */
    nmt_cuda_staged score;
    size_t results_bytes;
    /* Pinned small transfers and the check event. */
    int32_t *done_host; /* [N]: the stream search's copy of the done flags */
    int32_t *done_at_host; /* [N]: mapped; beam_dev.done_at on the device */
    int32_t done_tag;      /* the last batch's tag (beam_step.h), 1..32767 */
    int32_t *act_pinned; /* [2N]: pinned staging of act_dev (the active list, then old
                            positions) for the copy to the device */
    cudaEvent_t check_event;
    cudaEvent_t fork_event, encoded_event; /* the stream's encoder pass beside the steps */
    int event_created;
    /* Host scratch. */
    int32_t *order;    /* [N]: sorted position -> batch sentence */
    int32_t *counts;   /* [max_src + 2] */
    int32_t *active;   /* [max_src]: sentences longer than t */
    int32_t *active_list; /* [N]: the active list as the device holds it */
    int32_t *host_old; /* [N]: old positions of a compaction */
    /* timed: a pair of events around each step's output layer (created
     * between batches, read after a batch's final sync). */
    cudaEvent_t *layer_events; /* [2 * events_cap] */
    int32_t events_cap;
    nmt_cuda_search_counts counts_now;
    /* CUDA graphs of repeated steps and encoder passes (graph_cache.h);
     * NULL when off. key: host scratch for building a key. */
    nmt_graph_cache *graphs;
    unsigned char *key;
    /* Sampling, the logit rules and the coverage penalty (search_rules.c):
     * allocated at the first batch that asks for them, then only grown. */
    void *rules_dev;          /* top-K lists, lse, workspace, draws, keys, suppressed */
    size_t rules_bytes;
    nmt_cuda_rules rules_buf; /* rules_dev's pointers */
    uint64_t *rules_host;     /* pinned: [N] keys, then the suppressed sequences and where
                                 each starts ([2 NMT_SUPPRESS_MAX_WORDS] int32) */
    int32_t *rule_tokens;     /* [N B, rule_tokens_cap]: the rows' hypotheses */
    int32_t rule_tokens_cap;
    float *coverage_dev;      /* [N, 2, B, max_src] */
};

/* Shared by the whole-batch search (beam_search.c) and the stream
 * (stream_search.c). */
nmt_status nmt_cuda_search_check_config(const nmt_cuda_search *s,
                                        const nmt_search_config *config, nmt_error *err);
/* Sizes and the feature CSR of every sentence (the device lookup trusts it). */
nmt_status nmt_cuda_search_check_sentences(const nmt_cuda_search *s,
                                           const nmt_source_batch *batch, nmt_error *err);
/* s->order: the batch longest first, ties in batch order (a stable counting
 * sort); s->active[t]: how many sentences are longer than t. Returns the
 * longest length. */
int32_t nmt_cuda_search_sort(nmt_cuda_search *s, const nmt_source_batch *batch);
/* The encoder pass through the graph cache (search_step.c), on `stream`
 * (the search's, or the model's encoder stream for in->side). */
nmt_status nmt_cuda_search_encode(nmt_cuda_search *s, const nmt_cuda_encoder_input *in,
                                  void *stream, nmt_error *err);

/* The start of a whole-batch search (beam_search.c) alone: the checks, the
 * packed input on the device and the encoder pass, from row buffer 0; no
 * steps. The warm-up's way to capture encoder graphs (search_warmup.c),
 * and scoring's start (score_search.c), which steps on from *encoded (may
 * be NULL): the steps' source stride and the sources' lengths (device, in
 * s->order's order). */
typedef struct nmt_cuda_encoded {
    int32_t mem_stride;
    const int32_t *src_len;
} nmt_cuda_encoded;
nmt_status nmt_cuda_search_encode_only(nmt_cuda_search *s, const nmt_source_batch *batch,
                                       const nmt_search_config *config,
                                       nmt_cuda_encoded *encoded, nmt_error *err);

/* One decoder step: prepare_rows, the model's step and output layer, the
 * beam step; then the live row buffer swaps. With rows_from_beam the beam
 * step writes the next step's rows and moves the step number on
 * (nmt_beam_next_rows), so the step prepares rows only after a compaction
 * (old_pos), without moving the number; the first step's rows must have
 * been prepared (with advance) after beam_init. */
typedef struct nmt_cuda_step_args {
    nmt_cuda_search *self;  /* set by nmt_cuda_search_step */
    const nmt_beam_device *b;
    int32_t n_active, beam, stride;
    const int32_t *src_len, *excluded, *old_pos; /* device */
    int cur;                /* set by nmt_cuda_search_step: the live buffer */
    int timed_step;         /* >= 0: record the output layer's events at this index */
    int cacheable;          /* the launches are a function of the key: may replay */
    int rows_from_beam;     /* the whole-batch search's steps (beam_search.c) */
    int carried_in, carry_out;     /* nmt_cuda_step_model.step's (0 in the stream search) */
    const nmt_cuda_rules *rules;   /* sampling and the logit rules, or NULL (none) */
} nmt_cuda_step_args;
nmt_status nmt_cuda_search_step(nmt_cuda_search *s, const nmt_cuda_step_args *args,
                                nmt_error *err);
/* search_rules.c: within a step, after the output layer: the logit rules
 * edit scores's logits, and then a sampling step draws and splits the
 * samples (*done: the step is complete) or the search's own top-K replaces
 * scores's lists for the beam step. */
nmt_status nmt_cuda_search_rules_step(nmt_cuda_search *s, const nmt_cuda_step_args *args,
                                      nmt_cuda_scores *scores, const nmt_beam_next_rows *next,
                                      int *done, nmt_error *err);

/* forced_upload.c: checks config->forced for the batch's n sentences and
 * copies them up in s->order's order (after nmt_cuda_search_sort), *dev
 * their device view (zeros when config has none). */
nmt_status nmt_cuda_search_upload_forced(nmt_cuda_search *s, const nmt_search_config *config,
                                         int32_t n, nmt_forced_tokens *dev, nmt_error *err);

/* The history a search keeps for its longest max length (v1: one step
 * less, EOS is never stored; onmt: all, a cut hypothesis keeps its last
 * word). */
int32_t nmt_cuda_search_hist_len(const nmt_search_config *config, int32_t longest);
/* The least power of two >= v, at most cap (and never below v). */
int32_t nmt_cuda_search_octave(int32_t v, int32_t cap);
/* The two ids the output layer masks out: PAD and BOS (v1), none (onmt). */
void nmt_cuda_search_excluded(const nmt_search_config *config, int32_t excluded[2]);
/* The beam state's view of config, over s->beam_dev's buffers; with
 * config->attention the weights history in rows of src_stride; with
 * config->forced the batch's forced tokens (s->forced_view). */
nmt_beam_device nmt_cuda_search_beam(const nmt_cuda_search *s, const nmt_search_config *config,
                                     int32_t hist_len, const int32_t *max_len,
                                     int32_t src_stride);
/* The time-major feature CSR of n sentences in s->order (row t * n + i,
 * padding rows empty), as the encoder reads it. Returns its nonzeros. */
int64_t nmt_cuda_search_pack(const nmt_cuda_search *s, const nmt_source_batch *batch, int32_t n,
                             int32_t stride, int32_t *row_ptr, int32_t *cols, float *values);

/* Result i of a results buffer copied into *out (release with
 * nmt_search_result_clear, also after a failure); n_src: the sentence's
 * source tokens (the columns of its attention, when r has any). */
nmt_status nmt_cuda_search_copy_result(const nmt_beam_results *r, int32_t i, int32_t n_src,
                                       nmt_search_result *out, nmt_error *err);

/* search_rules.c: the buffers sampling, the logit rules and the coverage
 * penalty need for config (hist_len: the history's steps), grown between
 * batches; a batch's rules over them (suppressed sequences copied up on the
 * search's stream; all zero when none); the first n keys of rules_host
 * copied up; b's sampling and coverage fields (src_len: the sentences'
 * lengths on the device). */
nmt_status nmt_cuda_search_ensure_rules(nmt_cuda_search *s, const nmt_search_config *config,
                                        int32_t hist_len, nmt_error *err);
nmt_status nmt_cuda_search_rules(nmt_cuda_search *s, const nmt_search_config *config,
                                 nmt_cuda_rules *rules, nmt_error *err);
nmt_status nmt_cuda_search_upload_keys(nmt_cuda_search *s, int32_t n, nmt_error *err);
void nmt_cuda_search_beam_rules(const nmt_cuda_search *s, const nmt_search_config *config,
                                const int32_t *src_len, nmt_beam_device *b);
size_t nmt_cuda_search_rules_bytes(const nmt_cuda_search *s);
void nmt_cuda_search_free_rules(nmt_cuda_search *s);
/* What sampling, the logit rules and the coverage penalty of config need of
 * the search (the whole vocabulary's logits, their word ids, the network's
 * attention weights): NMT_STATUS_ERROR_ARGUMENT naming what is missing. */
nmt_status nmt_cuda_search_check_rules(const nmt_cuda_search *s,
                                       const nmt_search_config *config, nmt_error *err);

/* Bytes of the key scratch: a step key or an encoder key with max_src entries. */
size_t nmt_cuda_search_key_bytes(int32_t max_src);

/* (Re)allocate the per-batch input buffers for nnz features, the history
 * and results for hist_len steps, the timing events for `steps` steps: only
 * grow, only between batches. */
nmt_status nmt_cuda_search_ensure_input(nmt_cuda_search *s, int64_t nnz, nmt_error *err);
nmt_status nmt_cuda_search_ensure_history(nmt_cuda_search *s, int32_t hist_len, nmt_error *err);
nmt_status nmt_cuda_search_ensure_events(nmt_cuda_search *s, int32_t steps, nmt_error *err);

#endif /* NMT_CUDA_SEARCH_IMPL_H */
