/* stream_search.c: continuous batching on the GPU (cuda_search.h,
 * nmt_cuda_search_stream): one beam search that never drains. Sentences
 * join free rows at a check point, encoder and all, and leave as soon as
 * they are done, while the others go on stepping.
 *
 * What makes it possible: a hypothesis's state has a fixed size, and every
 * per-sentence quantity is indexed by a slot that outlives the batch.
 *  - Slots s in [0, N): the beam state and history ([s * B + k]), the
 *    memory bank (slot s at s * max_src positions, the bank's stride), the
 *    source length and max length (header arrays of the input buffer). The
 *    sentence's own step is the device step minus its start (beam_step.h),
 *    so a sentence that joins at any step begins at its step 1.
 *  - Positions p of the active list: rows p * B + k, as in the batch search.
 *    A check point first drops the sentences the last snapshot saw done (the
 *    alive keep their order), then puts joiners at free positions of the old
 *    layout (a dropped one's, or past the old list): the encoder writes
 *    their initial rows there, into the live buffer, and the step after
 *    gathers every row from its old position (old_pos), so the running
 *    sentences' rows are never copied or disturbed.
 *  - A done sentence's results are rebuilt from its slot's history
 *    (backtrack_slots) before the slot's next occupant joins (stream order),
 *    copied to the host with the next snapshot and delivered at the check
 *    after it.
 *
 * The host is at most one check ahead of the GPU: each check waits for the
 * previous check's event (done flags, results), as the batch search does.
 * Every pointer a step or an encoder pass reads is fixed for the whole
 * stream (header arrays, old positions at act_dev + N or the identity), so
 * both replay from the graph cache whenever their sizes recur.
 *
 * Input buffer layout (4-byte words, the same on host and device):
 *   [excluded 2][slot src_len N][slot max_len N]
 *   [joiners' src_len N][joiners' slot N][joiners' position N][done slots N]
 *   [row_ptr N * S + 1][cols nnz_cap][values nnz_cap]
 * The header goes up in one copy at every check where sentences join, the
 * done slots before it (backtrack), the joiners' CSR (time-major, as the
 * batch encoder reads it) in three copies. The host writes a pinned area
 * only after waiting for the event recorded after its last copy. */
#include "cuda_search_impl.h"

#include "sentence_stream.h"

#include <stdlib.h>
#include <string.h>

typedef struct stream_layout {
    int32_t *excluded, *slot_len, *slot_max_len, *join_len, *join_slot, *place_pos, *done_slot,
        *place_slot, *row_ptr, *cols;
    float *values;
} stream_layout;

static stream_layout layout_stream(void *base, int32_t N, int32_t S, int64_t nnz_cap)
{
    stream_layout l;
    int32_t *w = (int32_t *)base;
    l.excluded = w;
    l.slot_len = w + 2;
    l.slot_max_len = l.slot_len + N;
    l.join_len = l.slot_max_len + N;
    l.join_slot = l.join_len + N;
    l.place_pos = l.join_slot + N;
    l.done_slot = l.place_pos + N;
    l.place_slot = l.done_slot + N;
    l.row_ptr = l.place_slot + N;
    l.cols = l.row_ptr + (size_t)N * S + 1;
    l.values = (float *)(l.cols + nnz_cap);
    return l;
}

/* Host bookkeeping of one stream, allocated once at its start. */
typedef struct stream_state {
    void **slot_tag;    /* [N]: the sentence in each slot */
    int32_t *free_slot; /* [N]: a stack */
    int32_t n_free;
    void **pend_tag;    /* [N]: done sentences whose results come with the next snapshot */
    int32_t *pend_slot; /* [N]: their slots (the device copy is in the header) */
    int32_t *pend_len;  /* [N]: their source lengths (the slot may take a joiner first) */
    int32_t n_pend;
    void **pulled_tag;  /* [N]: what pull returned */
    int32_t *wait_slot; /* [N]: slots of the sentences being encoded beside the steps */
    int32_t n_wait;
    int32_t *pos_used;  /* [N]: scratch: old positions still taken */
    nmt_search_result result;
} stream_state;

static void state_free(stream_state *st)
{
    free(st->slot_tag);
    free(st->free_slot);
    free(st->pend_tag);
    free(st->pend_slot);
    free(st->pend_len);
    free(st->pulled_tag);
    free(st->wait_slot);
    free(st->pos_used);
}

/* Everything the stream needs once: host state, the identity positions, the
 * history for the longest max length, the beam state of every slot. */
static nmt_status stream_begin(nmt_cuda_search *self, const nmt_search_config *config,
                               stream_state *st, nmt_beam_device *b, int32_t *hist_len,
                               nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t N = self->config.max_sentences, S = self->config.max_src;
    NMT_ALLOC(st->slot_tag, N);
    NMT_ALLOC(st->free_slot, N);
    NMT_ALLOC(st->pend_tag, N);
    NMT_ALLOC(st->pend_slot, N);
    NMT_ALLOC(st->pend_len, N);
    NMT_ALLOC(st->pulled_tag, N);
    NMT_ALLOC(st->wait_slot, N);
    NMT_ALLOC(st->pos_used, N);
    for (int32_t s = 0; s < N; s++)
        st->free_slot[s] = N - 1 - s; /* slot 0 on top */
    st->n_free = N;
    *hist_len = nmt_cuda_search_hist_len(config, nmt_search_max_length(config, S));
    NMT_TRY(nmt_cuda_search_ensure_history(self, *hist_len, err));
    NMT_TRY(nmt_cuda_search_ensure_rules(self, config, *hist_len, err));
    if (!self->ident_dev) {
        NMT_CUDA_TRY(cudaMalloc((void **)&self->ident_dev, sizeof(int32_t) * (size_t)N));
        for (int32_t p = 0; p < N; p++)
            self->act_pinned[p] = p;
        NMT_CUDA_TRY(cudaMemcpyAsync(self->ident_dev, self->act_pinned, sizeof(int32_t) * N,
                                     cudaMemcpyHostToDevice, self->stream));
    }
    stream_layout host = layout_stream(self->input_host, N, S, self->nnz_cap);
    nmt_cuda_search_excluded(config, host.excluded);
    for (int32_t s = 0; s < N; s++)
        host.slot_len[s] = host.slot_max_len[s] = 1;
    *b = nmt_cuda_search_beam(self, config, *hist_len,
                              layout_stream(self->input_dev, N, S, self->nnz_cap).slot_max_len,
                              S);
    b->done_at = NULL; /* its checks copy the done flags (the snapshot in the loop) */
    nmt_cuda_search_beam_rules(self, config, NULL, b);
    NMT_TRY(nmt_cuda_beam_init(b, N, config->bos_id, 0, self->stream, err));
    /* The act_pinned copy above must land before the header is rewritten. */
    NMT_CUDA_TRY(cudaStreamSynchronize(self->stream));
cleanup:
    return status;
}

/* Delivers the results the last snapshot brought (results_host holds
 * st->n_pend sentences, in pend order). */
static void deliver_pending(nmt_cuda_search *self, const nmt_sentence_stream *src,
                            const nmt_search_config *config, int32_t hist_len, stream_state *st)
{
    nmt_beam_results r;
    nmt_beam_results_carve(self->results_host, st->n_pend, config->params.n_best, hist_len,
                           config->attention ? self->config.max_src : 0, &r);
    for (int32_t i = 0; i < st->n_pend; i++) {
        nmt_error e = {0};
        const nmt_status status =
            nmt_cuda_search_copy_result(&r, i, st->pend_len[i], &st->result, &e);
        if (status == NMT_STATUS_OK)
            src->deliver(src->self, st->pend_tag[i], &st->result, NMT_STATUS_OK, NULL);
        else
            src->deliver(src->self, st->pend_tag[i], NULL, status, e.message);
        nmt_search_result_clear(&st->result);
    }
    st->n_pend = 0;
}

/* The sentences encoded at the last check take free positions of the old
 * layout (a dropped sentence's, or past the list) and join the active list;
 * their slots and positions go to the header. Returns how many. */
static int32_t place_waiting(nmt_cuda_search *self, stream_state *st, const stream_layout *host,
                             int32_t *n_active)
{
    int32_t pos = 0;
    for (int32_t i = 0; i < st->n_wait; i++) {
        const int32_t s = st->wait_slot[i];
        while (st->pos_used[pos])
            pos++;
        st->pos_used[pos] = 1;
        host->place_slot[i] = s;
        host->place_pos[i] = pos;
        self->active_list[*n_active] = s;
        self->host_old[*n_active] = pos;
        (*n_active)++;
    }
    const int32_t n = st->n_wait;
    st->n_wait = 0;
    return n;
}

/* On the search's stream, once the encoder stream has finished their
 * encode: the placed sentences' rows and beam state. */
static nmt_status place_rows(nmt_cuda_search *self, const nmt_beam_device *b,
                             const nmt_search_config *config, const int32_t *slots,
                             const int32_t *positions, int32_t n, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const nmt_cuda_step_model *model = &self->model;
    NMT_CUDA_TRY(cudaStreamWaitEvent(self->stream, self->encoded_event, 0));
    NMT_TRY(model->place(model->self, self->cur, n, slots, positions,
                         nmt_search_width(&config->params), err));
    NMT_TRY(nmt_cuda_beam_join(b, slots, n, config->bos_id, self->stream, err));
cleanup:
    return status;
}

/* The joiners' encoder pass on the encoder stream, after everything the
 * search's stream has queued (their input copies): it runs beside the next
 * steps, which never read those slots. */
static nmt_status encode_beside(nmt_cuda_search *self, int32_t k, int32_t stride, int32_t beam,
                                const stream_layout *dev, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    cudaStream_t side = (cudaStream_t)self->model.encoder_stream;
    NMT_CUDA_TRY(cudaEventRecord(self->fork_event, self->stream));
    NMT_CUDA_TRY(cudaStreamWaitEvent(side, self->fork_event, 0));
    const nmt_cuda_encoder_input enc = {k, stride, self->active, dev->join_len, dev->row_ptr,
                                        dev->cols, dev->values, beam, dev->join_slot,
                                        self->config.max_src, NULL, 1};
    NMT_TRY(nmt_cuda_search_encode(self, &enc, side, err));
    NMT_CUDA_TRY(cudaEventRecord(self->encoded_event, side));
cleanup:
    return status;
}

/* Features of a pulled batch, or -1 if one of them is malformed (the CSR
 * check comes after, from nmt_cuda_search_check_sentences). */
static int64_t batch_nnz(const nmt_source_batch *batch)
{
    const int32_t n = batch->n_sentences;
    if (!batch->token_offset || !batch->row_ptr)
        return -1;
    return (int64_t)batch->row_ptr[batch->token_offset[n]] - batch->row_ptr[batch->token_offset[0]];
}

/* Checks a pulled batch (a refused one fails its sentences only, the
 * stream goes on), gives each sentence a free slot, its lengths in the
 * header and its features in the CSR (longest first). Returns how many
 * will be encoded: 0 or k. */
static int32_t take_joiners(nmt_cuda_search *self, const nmt_sentence_stream *src,
                            const nmt_search_config *config, const nmt_source_batch *batch,
                            int32_t k, stream_state *st, const stream_layout *host,
                            int32_t *stride, int64_t *nnz)
{
    if (k <= 0)
        return 0;
    nmt_error bad = {0};
    const int64_t features = batch_nnz(batch);
    nmt_status check = k > st->n_free
                           ? nmt_error_set(&bad, NMT_STATUS_ERROR_INTERNAL,
                                           "cuda stream: pull gave %d sentences for %d free "
                                           "rows", k, st->n_free)
                           : nmt_cuda_search_check_sentences(self, batch, &bad);
    if (check == NMT_STATUS_OK && (features < 0 || features > self->nnz_cap))
        check = nmt_error_set(&bad, NMT_STATUS_ERROR_ARGUMENT,
                              "cuda stream: %lld feature rows, the search holds %lld",
                              (long long)features, (long long)self->nnz_cap);
    if (check != NMT_STATUS_OK) {
        for (int32_t i = 0; i < k; i++)
            src->deliver(src->self, st->pulled_tag[i], NULL, check, bad.message);
        return 0;
    }
    *stride = nmt_cuda_search_sort(self, batch);
    for (int32_t i = 0; i < k; i++) {
        const int32_t from = self->order[i], s = st->free_slot[--st->n_free];
        st->slot_tag[s] = st->pulled_tag[from];
        host->join_len[i] = batch->src_len[from];
        host->join_slot[i] = s;
        host->slot_len[s] = batch->src_len[from];
        host->slot_max_len[s] = nmt_search_max_length(config, batch->src_len[from]);
        if (self->rules_host) /* sampling's key by slot (copied with the header) */
            self->rules_host[s] = batch->line_key ? batch->line_key[from] : 0;
        st->wait_slot[st->n_wait++] = s;
    }
    *nnz = nmt_cuda_search_pack(self, batch, k, *stride, host->row_ptr, host->cols,
                                host->values);
    return k;
}

/* A step of the stream search: over the slots' source lengths, cacheable,
 * never timed, and no step carries a product over to the next. */
static nmt_cuda_step_args stream_step(const nmt_beam_device *b, int32_t n_active, int32_t beam,
                                      int32_t stride, const stream_layout *dev,
                                      const int32_t *old_pos, const nmt_cuda_rules *rules)
{
    return (nmt_cuda_step_args){
        .b = b,
        .n_active = n_active,
        .beam = beam,
        .stride = stride,
        .src_len = dev->slot_len,
        .excluded = dev->excluded,
        .old_pos = old_pos,
        .timed_step = -1,
        .cacheable = 1,
        .rules = rules,
    };
}

nmt_status nmt_cuda_search_stream(nmt_cuda_search *self, const nmt_search_config *config,
                                  const nmt_sentence_stream *src, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    stream_state st;
    memset(&st, 0, sizeof st);
    if (!self || !config || !src || !src->pull || !src->deliver)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda stream: NULL argument");
    cudaStream_t stream = self->stream;
    const int32_t N = self->config.max_sentences, S = self->config.max_src;
    const int32_t B = nmt_search_width(&config->params);
    NMT_TRY(nmt_cuda_search_check_config(self, config, err));
    if (config->forced || config->params.return_alternatives)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED, "cuda stream: forced tokens "
                             "(prefixes, alternatives, scoring) run in batches");
    if (!self->model.encoder_stream || !self->model.place)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "cuda stream: the network has no encoder stream");
    if (config->params.coverage_penalty != NMT_COVERAGE_NONE)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "cuda stream: the coverage penalty (onmt rules) is batched");
    NMT_CUDA_TRY(cudaSetDevice(self->config.device));
    nmt_beam_device b;
    int32_t hist_len = 1;
    NMT_TRY(stream_begin(self, config, &st, &b, &hist_len, err));
    nmt_cuda_rules rules;
    NMT_TRY(nmt_cuda_search_rules(self, config, &rules, err));
    const nmt_cuda_rules *use_rules = rules.logit_rules || rules.sampling ? &rules : NULL;
    stream_layout host = layout_stream(self->input_host, N, S, self->nnz_cap);
    stream_layout dev = layout_stream(self->input_dev, N, S, self->nnz_cap);
    const size_t header_bytes = sizeof(int32_t) * (2 + 7 * (size_t)N);

    const int32_t every = src->check_every > 0 ? src->check_every : self->config.check_every;
    int32_t n_active = 0, since_check = 0;
    int ended = 0, have_snapshot = 0;
    for (;;) {
        if (n_active > 0 && since_check < every) {
            const nmt_cuda_step_args args =
                stream_step(&b, n_active, B, S, &dev, self->ident_dev, use_rules);
            NMT_TRY(nmt_cuda_search_step(self, &args, err));
            since_check++;
            continue;
        }
        /* A check point. */
        since_check = 0;
        const int32_t n_old = n_active;
        int changed = 0;
        memset(st.pos_used, 0, sizeof(int32_t) * (size_t)N);
        if (have_snapshot) {
            NMT_CUDA_TRY(cudaEventSynchronize(self->check_event));
            deliver_pending(self, src, config, hist_len, &st);
            int32_t alive = 0;
            for (int32_t p = 0; p < n_old; p++) {
                const int32_t s = self->active_list[p];
                if (self->done_host[s]) {
                    st.pend_tag[st.n_pend] = st.slot_tag[s];
                    st.pend_len[st.n_pend] = host.slot_len[s];
                    st.pend_slot[st.n_pend++] = s;
                    st.slot_tag[s] = NULL;
                    st.free_slot[st.n_free++] = s;
                    continue;
                }
                self->active_list[alive] = s;
                self->host_old[alive] = p;
                st.pos_used[p] = 1;
                alive++;
            }
            changed = alive < n_old;
            n_active = alive;
        } else {
            for (int32_t p = 0; p < n_old; p++) {
                self->host_old[p] = p;
                st.pos_used[p] = 1;
            }
        }
        /* Host side first: the dropped sentences' slots (backtrack), what
         * was encoded at the last check takes its rows now, new sentences
         * are pulled into free slots to be encoded beside the next steps;
         * one header copy carries it all. */
        memcpy(host.done_slot, st.pend_slot, sizeof(int32_t) * (size_t)st.n_pend);
        const int32_t n_placed = place_waiting(self, &st, &host, &n_active);
        changed |= n_placed > 0;
        int32_t k = 0, stride = 0;
        int64_t nnz = 0;
        if (!ended && st.n_free > 0) {
            const int wait = n_active == 0 && st.n_pend == 0;
            nmt_source_batch batch;
            memset(&batch, 0, sizeof batch);
            NMT_TRY(src->pull(src->self, st.n_free, wait, &batch, st.pulled_tag, &k, err));
            if (k == 0 && wait)
                ended = 1;
            k = take_joiners(self, src, config, &batch, k, &st, &host, &stride, &nnz);
        }
        /* Nothing running: the joiners take their rows at once. */
        const int32_t n_now = n_active == 0 ? place_waiting(self, &st, &host, &n_active) : 0;
        changed |= n_now > 0;
        /* The last check's encode reads the header's joiner arrays: the copy
         * that overwrites them waits for it. */
        if (n_placed > 0)
            NMT_CUDA_TRY(cudaStreamWaitEvent(stream, self->encoded_event, 0));
        NMT_CUDA_TRY(cudaMemcpyAsync(dev.excluded, host.excluded, header_bytes,
                                     cudaMemcpyHostToDevice, stream));
        if (k > 0 && rules.sampling)
            NMT_TRY(nmt_cuda_search_upload_keys(self, N, err));
        if (st.n_pend > 0) {
            /* Results of the sentences just dropped, before any slot of
             * theirs is reused (stream order). */
            nmt_beam_results r_dev;
            const size_t bytes = nmt_beam_results_carve(self->results_dev, st.n_pend,
                                                        config->params.n_best, hist_len,
                                                        config->attention ? S : 0, &r_dev);
            NMT_TRY(nmt_cuda_beam_backtrack_slots(&b, dev.done_slot, st.n_pend, &r_dev, stream,
                                                  err));
            NMT_CUDA_TRY(cudaMemcpyAsync(self->results_host, self->results_dev, bytes,
                                         cudaMemcpyDeviceToHost, stream));
        }
        if (n_placed > 0)
            NMT_TRY(place_rows(self, &b, config, dev.place_slot, dev.place_pos, n_placed, err));
        if (k > 0) {
            NMT_CUDA_TRY(cudaMemcpyAsync(dev.row_ptr, host.row_ptr,
                                         sizeof(int32_t) * ((size_t)stride * k + 1),
                                         cudaMemcpyHostToDevice, stream));
            if (nnz > 0) {
                NMT_CUDA_TRY(cudaMemcpyAsync(dev.cols, host.cols, sizeof(int32_t) * (size_t)nnz,
                                             cudaMemcpyHostToDevice, stream));
                NMT_CUDA_TRY(cudaMemcpyAsync(dev.values, host.values,
                                             sizeof(float) * (size_t)nnz,
                                             cudaMemcpyHostToDevice, stream));
            }
            NMT_TRY(encode_beside(self, k, stride, B, &dev, err));
        }
        if (n_now > 0) /* then n_placed was 0: the header's place arrays are these */
            NMT_TRY(place_rows(self, &b, config, dev.place_slot, dev.place_pos, n_now, err));
        if (n_active == 0) {
            /* Nothing to step: the results now, before waiting for more (and
             * the header's copy done before the host writes it again). */
            NMT_CUDA_TRY(cudaStreamSynchronize(stream));
            deliver_pending(self, src, config, hist_len, &st);
            have_snapshot = 0;
            if (ended && st.n_wait == 0)
                break;
            continue;
        }
        const int32_t *old_pos = self->ident_dev;
        if (changed) {
            memcpy(self->act_pinned, self->active_list, sizeof(int32_t) * (size_t)n_active);
            memcpy(self->act_pinned + N, self->host_old, sizeof(int32_t) * (size_t)n_active);
            NMT_CUDA_TRY(cudaMemcpyAsync(self->act_dev, self->act_pinned,
                                         sizeof(int32_t) * ((size_t)N + n_active),
                                         cudaMemcpyHostToDevice, stream));
            old_pos = self->act_dev + N;
        }
        /* The snapshot the next check reads (the host then waits for the
         * GPU to reach this point, while the steps after it are queued),
         * then the step with the list's new layout. */
        NMT_CUDA_TRY(cudaMemcpyAsync(self->done_host, b.done, sizeof(int32_t) * (size_t)N,
                                     cudaMemcpyDeviceToHost, stream));
        NMT_CUDA_TRY(cudaEventRecord(self->check_event, stream));
        have_snapshot = 1;
        const nmt_cuda_step_args args =
            stream_step(&b, n_active, B, S, &dev, old_pos, use_rules);
        NMT_TRY(nmt_cuda_search_step(self, &args, err));
        since_check = 1;
    }
    state_free(&st);
    return NMT_STATUS_OK;

cleanup:
    /* The search failed: every sentence it holds gets the error. */
    cudaStreamSynchronize(self->stream);
    if (self->model.encoder_stream)
        cudaStreamSynchronize((cudaStream_t)self->model.encoder_stream);
    if (st.slot_tag) {
        for (int32_t i = 0; i < st.n_pend; i++)
            src->deliver(src->self, st.pend_tag[i], NULL, status, err ? err->message : "");
        for (int32_t s = 0; s < N; s++)
            if (st.slot_tag[s])
                src->deliver(src->self, st.slot_tag[s], NULL, status, err ? err->message : "");
    }
    state_free(&st);
    return status;
}
