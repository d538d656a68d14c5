/* search_step.c: one step and one encoder pass of the GPU search
 * (cuda_search_impl.h: nmt_cuda_search_step, nmt_cuda_search_encode), the
 * launches both the batch and the stream search make, each through the
 * graph cache under a key of everything its launches depend on.
 *
 * A step's launches are the same every other step between compactions (the
 * row buffers swap), and at batch 1 the same for every sentence of a length
 * octave; the encoder's are the same for every batch of the same lengths.
 * The graph cache (graph_cache.h) replays a captured CUDA graph once a key
 * recurs, which removes the host's launch work between the kernels
 * (docs/perf/steps.md measures it). The step number lives on the device
 * (beam_step.h) so a replayed step needs no new argument. */
#include "cuda_search_impl.h"

#include <string.h>

/* The encoder pass as a graph body (graph_cache.h): no host effects. */
typedef struct encode_work {
    const nmt_cuda_step_model *model;
    int buf;
    const nmt_cuda_encoder_input *in;
} encode_work;

static nmt_status encode_body(void *arg, nmt_error *err)
{
    const encode_work *w = (const encode_work *)arg;
    return w->model->encode(w->model->self, w->buf, w->in, err);
}

/* What the encoder's launches depend on besides device data: sizes, the
 * live row buffer, the input pointers and (after it) the active counts. */
typedef struct encode_key {
    int32_t n, stride, beam, cur, mem_stride, side;
    const void *src_len, *row_ptr, *cols, *values, *slot, *dec_pos;
} encode_key;
/* Compared bytewise: no padding, so an initializer sets every byte. */
_Static_assert(sizeof(encode_key) == 6 * sizeof(int32_t) + 6 * sizeof(void *),
               "encode_key has padding");

static nmt_status step_body(void *arg, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const nmt_cuda_step_args *w = (const nmt_cuda_step_args *)arg;
    nmt_cuda_search *self = w->self;
    const nmt_cuda_step_model *model = &self->model;
    cudaStream_t stream = self->stream;
    const int32_t n_rows = w->n_active * w->beam;
    const nmt_cuda_rows rows = {self->row_tokens, self->row_sentence, self->row_parent,
                                self->row_live};
    const int next = 1 - w->cur;
    nmt_cuda_scores scores;
    if (!w->rows_from_beam || w->old_pos)
        NMT_TRY(nmt_cuda_beam_prepare_rows(w->b, w->n_active, self->act_dev, w->old_pos,
                                           self->row_tokens, self->row_sentence,
                                           self->row_parent, self->row_live,
                                           !w->rows_from_beam, stream, err));
    NMT_TRY(model->step(model->self, w->cur, n_rows, &rows, w->src_len, w->stride, w->carried_in,
                        w->carry_out, err));
    if (w->timed_step >= 0)
        NMT_CUDA_TRY(cudaEventRecord(self->layer_events[2 * w->timed_step], stream));
    /* The beam step reads EOS's logit alone; the rules and forced words read every one. */
    const int32_t logits_word = w->rules || w->b->forced.offset ? NMT_LOGITS_ALL : w->b->eos_id;
    NMT_TRY(model->output(model->self, next, n_rows, w->beam, &rows, w->excluded, 2, logits_word,
                          &scores, err));
    if (w->timed_step >= 0) {
        NMT_CUDA_TRY(cudaEventRecord(self->layer_events[2 * w->timed_step + 1], stream));
        if (model->probe)
            NMT_TRY(model->probe(model->self, next, n_rows, w->beam, &rows, w->excluded, 2,
                                 err));
    }
    if (w->b->hist_weights) /* before the beam step: it reads the done flags it starts with */
        NMT_TRY(nmt_cuda_beam_record_attention(w->b, w->n_active, self->act_dev,
                                               model->attn_weights, stream, err));
    const nmt_beam_next_rows next_rows = {self->row_tokens, self->row_sentence,
                                          self->row_parent, self->row_live};
    const nmt_beam_next_rows *rows_out = w->rows_from_beam ? &next_rows : NULL;
    if (w->rules) { /* sampling's step, or the logit rules' edit of the scores */
        int done = 0;
        NMT_TRY(nmt_cuda_search_rules_step(self, w, &scores, rows_out, &done, err));
        if (done)
            return NMT_STATUS_OK;
    }
    NMT_TRY(nmt_cuda_beam_step(w->b, w->n_active, self->act_dev, scores.top_values,
                               scores.top_ids, scores.logits, scores.ld_logits, scores.lse,
                               scores.attn_argmax, rows_out, stream, err));
cleanup:
    return status;
}

/* Everything a step's launches depend on besides device data. */
typedef struct step_key {
    int32_t n_active, beam, stride, cur, rows_from_beam, carried_in, carry_out;
    nmt_beam_device b; /* sizes, alpha, EOS and the state's pointers */
    const void *src_len, *excluded, *old_pos;
    nmt_cuda_rules rules; /* zeros: none */
} step_key;

/* Runs body through the graph cache (eagerly when graphs are off) and counts
 * how it ran, for nmt_stats. */
static nmt_status run_cached(nmt_cuda_search *self, void *stream, const void *key,
                             size_t key_bytes, nmt_graph_body body, void *arg, nmt_error *err)
{
    nmt_graph_run how = NMT_GRAPH_EAGER;
    nmt_status status = nmt_graph_cache_run(self->graphs, key, key_bytes, stream, body, arg,
                                            &how, err);
    if (how == NMT_GRAPH_EAGER)
        self->counts_now.eager_runs++;
    else
        self->counts_now.graph_runs++;
    return status;
}

nmt_status nmt_cuda_search_encode(nmt_cuda_search *self, const nmt_cuda_encoder_input *in,
                                  void *stream, nmt_error *err)
{
    /* Keyed by the active counts too: at batch 1 the key is the length. */
    encode_key key;
    memset(&key, 0, sizeof key);
    key.n = in->n_sentences, key.stride = in->src_stride, key.beam = in->beam;
    key.cur = self->cur, key.mem_stride = in->mem_stride, key.side = in->side;
    key.src_len = in->src_len, key.row_ptr = in->row_ptr, key.cols = in->cols;
    key.values = in->values, key.slot = in->slot, key.dec_pos = in->dec_pos;
    memcpy(self->key, &key, sizeof key);
    memcpy(self->key + sizeof key, in->active, sizeof(int32_t) * (size_t)in->src_stride);
    encode_work work = {&self->model, self->cur, in};
    return run_cached(self, stream, self->key,
                      sizeof key + sizeof(int32_t) * (size_t)in->src_stride, encode_body, &work,
                      err);
}

nmt_status nmt_cuda_search_step(nmt_cuda_search *self, const nmt_cuda_step_args *args,
                                nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_step_args work = *args;
    work.self = self;
    work.cur = self->cur;
    if (!args->cacheable || args->timed_step >= 0) {
        NMT_TRY(step_body(&work, err));
        self->counts_now.eager_runs++;
    } else {
        step_key key;
        memset(&key, 0, sizeof key);
        key.n_active = args->n_active, key.beam = args->beam, key.stride = args->stride;
        key.cur = work.cur;
        key.rows_from_beam = args->rows_from_beam;
        key.carried_in = args->carried_in, key.carry_out = args->carry_out;
        memcpy(&key.b, args->b, sizeof key.b);
        key.src_len = args->src_len, key.excluded = args->excluded, key.old_pos = args->old_pos;
        if (args->rules)
            memcpy(&key.rules, args->rules, sizeof key.rules);
        NMT_TRY(run_cached(self, self->stream, &key, sizeof key, step_body, &work, err));
    }
    self->cur = 1 - work.cur;
    self->counts_now.steps++;
cleanup:
    return status;
}

size_t nmt_cuda_search_key_bytes(int32_t max_src)
{
    const size_t enc = sizeof(encode_key) + sizeof(int32_t) * (size_t)max_src;
    return enc > sizeof(step_key) ? enc : sizeof(step_key);
}
