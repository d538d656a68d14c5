/* beam_search.c (decoder/cuda/): one batch of the GPU beam search
 * (cuda_search.h), the twin of decoder/beam_search.c: host-side validation,
 * sorting and packing, then the step loop that only launches, then one copy
 * of the finished hypotheses.
 *
 * Rows: row p * B + k is slot k of the sentence at position p of the active
 * list. Every check_every steps the host reads which sentences were done at
 * the previous check (an event recorded check_every steps earlier, so it
 * never waits on the step it just launched), stops if every sentence is
 * done, and otherwise compacts the list: the alive sentences move to a
 * prefix through the reorder gather that runs anyway (rows.parent maps a new
 * row to the old layout), so done sentences stop costing work. A done
 * sentence still in the list (done since the last snapshot) costs its rows
 * for at most 2 * check_every steps; its beam block returns at once.
 * Rows: beam_init is followed by step 1's rows; then each beam step writes
 * the next step's rows and moves the step number on (nmt_beam_next_rows),
 * and prepare_rows runs again only after a compaction (old_pos).
 * Launches: each step and the encoder pass go through the graph cache
 * (search_step.c), which replays them once their launches recur.
 * Done flags: the beam step writes the step number at which a sentence
 * became done into mapped host memory (nmt_beam_device.done_at), so no copy
 * sits in the stream between two steps (at batch 1 each would hold the next
 * step back). When the host has waited for a check's event, a sentence
 * counts as done if its entry carries this batch's tag and a step number at
 * most the check's: later steps may already be writing theirs, and the
 * results must not outrun them. The host clears a batch's entries before
 * the batch; the tag keeps a late write of an earlier batch (one stopped by
 * an error) from counting. */
#include "cuda_search_impl.h"

#include "forced_search.h"

#include <stdlib.h>
#include <string.h>

/* Batches of at most this many sentences round the steps' source stride and
 * history length up to octaves (nmt_cuda_search_run): where graphs matter
 * most, and the history's memory, doubled at worst, is small. */
enum { kBucketSentences = 8 };

nmt_status nmt_cuda_search_check_config(const nmt_cuda_search *self,
                                        const nmt_search_config *config, nmt_error *err)
{
    const nmt_status bad = NMT_STATUS_ERROR_ARGUMENT;
    const int32_t V = self->model.vocab_size;
    /* The beam at most the one the search was sized for. */
    if (nmt_search_params_check(&config->params, self->config.beam, err) != NMT_STATUS_OK ||
        nmt_search_params_check_rules(&config->params, config->rules, err) != NMT_STATUS_OK)
        return bad;
    const int32_t ids[3] = {config->pad_id, config->bos_id, config->eos_id};
    for (int i = 0; i < 3; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return nmt_error_set(err, bad, "cuda search: special id %d outside [0, %d)", ids[i],
                                 V);
    if (config->eos_id == config->pad_id || config->eos_id == config->bos_id)
        return nmt_error_set(err, bad, "cuda search: eos_id equals pad_id or bos_id");
    if (config->rules != NMT_SEARCH_RULES_V1 && config->rules != NMT_SEARCH_RULES_ONMT)
        return nmt_error_set(err, bad, "cuda search: rules %d unknown", (int)config->rules);
    if (config->attention && !self->config.attention)
        return nmt_error_set(err, bad, "cuda search: attention weights asked for, but the "
                             "search was created without their history");
    /* Shrunk lists start with ids 0..3, so EOS's column is its id (beam step). */
    if (self->model.shrunk && config->eos_id > 3)
        return nmt_error_set(err, bad, "cuda search: shrinking needs eos_id < 4 (got %d)",
                             config->eos_id);
    return nmt_cuda_search_check_rules(self, config, err);
}

nmt_status nmt_cuda_search_check_sentences(const nmt_cuda_search *self,
                                           const nmt_source_batch *batch, nmt_error *err)
{
    const nmt_status bad = NMT_STATUS_ERROR_ARGUMENT;
    const int32_t n = batch->n_sentences, src_rows = self->config.src_rows;
    if (n < 1 || n > self->config.max_sentences)
        return nmt_error_set(err, bad, "cuda search: %d sentences outside [1, %d]", n,
                             self->config.max_sentences);
    if (!batch->src_len || !batch->token_offset || !batch->row_ptr)
        return nmt_error_set(err, bad, "cuda search: NULL batch array");
    for (int32_t s = 0; s < n; s++) {
        const int32_t len = batch->src_len[s], first = batch->token_offset[s];
        if (len < 1 || len > self->config.max_src || first < 0 || batch->token_offset[s + 1] - first != len)
            return nmt_error_set(err, bad, "cuda search: sentence %d: %d tokens (max %d) or "
                                 "token_offset [%d, %d) disagrees", s, len, self->config.max_src, first,
                                 batch->token_offset[s + 1]);
        for (int32_t tok = first; tok < first + len; tok++) {
            /* The device N-hot lookup trusts the CSR: check it here. */
            if (batch->row_ptr[tok + 1] < batch->row_ptr[tok])
                return nmt_error_set(err, bad, "cuda search: sentence %d: row_ptr decreases", s);
            for (int32_t e = batch->row_ptr[tok]; e < batch->row_ptr[tok + 1]; e++)
                if (!batch->cols || !batch->values || batch->cols[e] < 0 ||
                    batch->cols[e] >= src_rows)
                    return nmt_error_set(err, bad, "cuda search: sentence %d: feature row %d "
                                         "outside [0, %d)", s, batch->cols ? batch->cols[e] : -1,
                                         src_rows);
        }
    }
    return NMT_STATUS_OK;
}

int32_t nmt_cuda_search_sort(nmt_cuda_search *self, const nmt_source_batch *batch)
{
    const int32_t n = batch->n_sentences;
    memset(self->counts, 0, sizeof(int32_t) * (size_t)(self->config.max_src + 2));
    for (int32_t s = 0; s < n; s++)
        self->counts[batch->src_len[s]]++;
    int32_t at = 0;
    for (int32_t len = self->config.max_src; len >= 1; len--) {
        int32_t c = self->counts[len];
        self->counts[len] = at;
        at += c;
    }
    for (int32_t s = 0; s < n; s++)
        self->order[self->counts[batch->src_len[s]]++] = s;
    const int32_t stride = batch->src_len[self->order[0]];
    int32_t i = n;
    for (int32_t t = 0; t < stride; t++) {
        while (i > 0 && batch->src_len[self->order[i - 1]] <= t)
            i--;
        self->active[t] = i;
    }
    return stride;
}

/* Offsets of the packed input (same on host and device), in 4-byte words. */
typedef struct input_layout {
    int32_t *excluded, *src_len, *max_len, *row_ptr, *cols;
    float *values;
    size_t bytes;
} input_layout;

static input_layout layout_input(void *base, int32_t n, int32_t stride, int64_t nnz)
{
    input_layout l;
    int32_t *w = (int32_t *)base;
    const size_t rows = (size_t)stride * (size_t)n;
    l.excluded = w;
    l.src_len = w + 2;
    l.max_len = l.src_len + n;
    l.row_ptr = l.max_len + n;
    l.cols = l.row_ptr + rows + 1;
    l.values = (float *)(l.cols + nnz);
    l.bytes = sizeof(int32_t) * (2 + 2 * (size_t)n + rows + 1 + 2 * (size_t)nnz);
    return l;
}

int32_t nmt_cuda_search_octave(int32_t v, int32_t cap)
{
    int64_t p = 1;
    while (p < v)
        p *= 2;
    return p <= cap ? (int32_t)p : (v > cap ? v : cap);
}

int32_t nmt_cuda_search_hist_len(const nmt_search_config *config, int32_t longest)
{
    /* v1's last token is always the EOS (no history row); an onmt
     * hypothesis cut at the max length keeps its last word. */
    if (config->rules == NMT_SEARCH_RULES_ONMT)
        return longest;
    return longest > 1 ? longest - 1 : 1;
}

void nmt_cuda_search_excluded(const nmt_search_config *config, int32_t excluded[2])
{
    /* v1 masks PAD and BOS out of the top-K; onmt masks nothing, and -1
     * (the top-K kernels compare ids) is no word. */
    const int onmt = config->rules == NMT_SEARCH_RULES_ONMT;
    excluded[0] = onmt ? -1 : config->pad_id;
    excluded[1] = onmt ? -1 : config->bos_id;
}

nmt_beam_device nmt_cuda_search_beam(const nmt_cuda_search *self, const nmt_search_config *config,
                                     int32_t hist_len, const int32_t *max_len,
                                     int32_t src_stride)
{
    nmt_beam_device b = self->beam_dev;
    /* Without attention the step records no weights (its launches, and so
     * its graph key, are those of a search without a weights history). */
    b.hist_weights = config->attention ? self->beam_dev.hist_weights : NULL;
    b.weights_stride =
        config->attention || config->params.coverage_penalty != NMT_COVERAGE_NONE ? src_stride
                                                                                   : 0;
    b.beam = nmt_search_width(&config->params);
    b.eos_id = config->eos_id;
    b.alpha = config->params.alpha;
    b.hist_len = hist_len;
    b.rules = (int32_t)config->rules;
    b.n_best = config->params.n_best;
    b.max_len = max_len;
    if (config->forced)
        b.forced = self->forced_view;
    else
        memset(&b.forced, 0, sizeof b.forced);
    return b;
}

int64_t nmt_cuda_search_pack(const nmt_cuda_search *self, const nmt_source_batch *batch,
                             int32_t n, int32_t stride, int32_t *row_ptr, int32_t *cols,
                             float *values)
{
    int32_t e = 0;
    for (int32_t t = 0; t < stride; t++) {
        for (int32_t i = 0; i < n; i++) {
            const int32_t s = self->order[i];
            row_ptr[(size_t)t * n + i] = e;
            if (t >= batch->src_len[s])
                continue;
            const int32_t tok = batch->token_offset[s] + t;
            for (int32_t q = batch->row_ptr[tok]; q < batch->row_ptr[tok + 1]; q++) {
                cols[e] = batch->cols[q];
                values[e] = batch->values[q];
                e++;
            }
        }
    }
    row_ptr[(size_t)stride * n] = e;
    return e;
}

nmt_status nmt_cuda_search_copy_result(const nmt_beam_results *r, int32_t i, int32_t n_src,
                                       nmt_search_result *out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t n_hyps = r->n_hypotheses[i];
    *out = (nmt_search_result){0, NULL};
    if (n_hyps < 0 || n_hyps > r->n_best)
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                             "cuda search: sentence %d has %d hypotheses", i, n_hyps);
    if (r->attention && (n_src < 1 || n_src > r->src_stride))
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                             "cuda search: sentence %d: %d source tokens, rows of %d", i, n_src,
                             r->src_stride);
    NMT_ALLOC(out->hypotheses, n_hyps);
    for (int32_t h = 0; h < n_hyps; h++) {
        const size_t o = (size_t)i * r->n_best + h;
        nmt_search_hypothesis *hyp = &out->hypotheses[h];
        const int32_t length = r->length[o];
        if (length < 0 || length > r->max_tokens)
            return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL,
                                 "cuda search: hypothesis of %d tokens", length);
        out->n_hypotheses = h + 1; /* from here on, clear frees it */
        NMT_ALLOC(hyp->tokens, length);
        NMT_ALLOC(hyp->attn_argmax, length);
        NMT_ALLOC(hyp->token_scores, (size_t)length + 1);
        if (r->attention)
            NMT_ALLOC(hyp->attention, length > 0 ? (size_t)length * (size_t)n_src : 1);
        hyp->length = length;
        hyp->n_src = n_src;
        hyp->score = r->score[o];
        hyp->log_prob = r->log_prob[o];
        if (length > 0) {
            memcpy(hyp->tokens, r->tokens + o * r->max_tokens, sizeof(int32_t) * length);
            memcpy(hyp->attn_argmax, r->attn + o * r->max_tokens, sizeof(int32_t) * length);
        }
        memcpy(hyp->token_scores, r->token_scores + o * ((size_t)r->max_tokens + 1),
               sizeof(float) * ((size_t)length + 1));
        for (int32_t t = 0; r->attention && t < length; t++)
            memcpy(hyp->attention + (size_t)t * n_src,
                   r->attention + (o * r->max_tokens + t) * (size_t)r->src_stride,
                   sizeof(float) * (size_t)n_src);
    }
cleanup:
    return status;
}

/* What a batch's start decided, for its steps. */
typedef struct batch_start {
    int32_t n, longest, hist_len, mem_stride;
    input_layout dev;
} batch_start;

/* The start of a batch: checks, the longest-first order, the history's and
 * the memory bank's sizes, the packed input on the device and the encoder
 * pass. Every batch starts from row buffer 0, whatever the batch before it
 * left live, so its encoder pass has one key (at batch 1: one graph a
 * length, not one a buffer and a length). */
static nmt_status start_batch(nmt_cuda_search *self, const nmt_source_batch *batch,
                              const nmt_search_config *config, batch_start *out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_TRY(nmt_cuda_search_check_config(self, config, err));
    NMT_TRY(nmt_cuda_search_check_sentences(self, batch, err));
    NMT_CUDA_TRY(cudaSetDevice(self->config.device));
    cudaStream_t stream = self->stream;
    const int32_t n = batch->n_sentences, B = nmt_search_width(&config->params);
    const int32_t stride = nmt_cuda_search_sort(self, batch);
    NMT_TRY(nmt_cuda_search_upload_forced(self, config, n, &self->forced_view, err));

    /* Max lengths (room for forced tokens) and history size; features to pack. */
    int32_t longest = 1;
    int64_t nnz = 0;
    for (int32_t s = 0; s < n; s++) {
        const int32_t first = batch->token_offset[s], len = batch->src_len[s];
        int32_t max_len = nmt_forced_max_length(config, s, len);
        longest = max_len > longest ? max_len : longest;
        nnz += batch->row_ptr[first + len] - batch->row_ptr[first];
    }
    int32_t hist_len = nmt_cuda_search_hist_len(config, longest);
    /* A few sentences: the steps see the memory bank's stride and the
     * history's length rounded up to powers of two, so their launches (the
     * graph key) depend on the length's octave, not on the length, and a
     * sentence of a length not seen before replays graphs captured for
     * others (batch 1: docs/performance.md, "Batch-1 latency"). The
     * attention reads each sentence's own positions only; the encoder keeps
     * the exact length. */
    int32_t mem_stride = stride;
    if (n <= kBucketSentences) {
        mem_stride = nmt_cuda_search_octave(stride, self->config.max_src);
        /* No more history than the longest source could need: the
         * buffers are sized for it (search_buffers.c). */
        const int32_t most = nmt_cuda_search_hist_len(
            config, nmt_search_max_length(config, self->config.max_src));
        hist_len = nmt_cuda_search_octave(hist_len, most);
    }
    NMT_TRY(nmt_cuda_search_ensure_input(self, nnz, err));
    NMT_TRY(nmt_cuda_search_ensure_history(self, hist_len, err));
    NMT_TRY(nmt_cuda_search_ensure_rules(self, config, hist_len, err));
    if (nmt_search_sampling(&config->params)) { /* each sentence's key, in sorted order */
        for (int32_t i = 0; i < n; i++)
            self->rules_host[i] =
                batch->line_key ? batch->line_key[self->order[i]] : (uint64_t)self->order[i];
        NMT_TRY(nmt_cuda_search_upload_keys(self, n, err));
    }

    /* Pack: time-major CSR (row t * n + i, padding rows empty) and the rest. */
    input_layout host = layout_input(self->input_host, n, stride, nnz);
    input_layout dev = layout_input(self->input_dev, n, stride, nnz);
    nmt_cuda_search_excluded(config, host.excluded);
    for (int32_t i = 0; i < n; i++) {
        host.src_len[i] = batch->src_len[self->order[i]];
        host.max_len[i] = nmt_forced_max_length(config, self->order[i], host.src_len[i]);
    }
    nmt_cuda_search_pack(self, batch, n, stride, host.row_ptr, host.cols, host.values);
    NMT_CUDA_TRY(cudaMemcpyAsync(self->input_dev, self->input_host, host.bytes,
                                 cudaMemcpyHostToDevice, stream));
    for (int32_t p = 0; p < n; p++)
        self->active_list[p] = self->act_pinned[p] = p;
    NMT_CUDA_TRY(cudaMemcpyAsync(self->act_dev, self->act_pinned, sizeof(int32_t) * n,
                                 cudaMemcpyHostToDevice, stream));

    self->cur = 0;
    const nmt_cuda_encoder_input enc = {n, stride, self->active, dev.src_len, dev.row_ptr,
                                        dev.cols, dev.values, B, NULL, mem_stride, NULL, 0};
    NMT_TRY(nmt_cuda_search_encode(self, &enc, self->stream, err));
    *out = (batch_start){n, longest, hist_len, mem_stride, dev};
cleanup:
    return status;
}

nmt_status nmt_cuda_search_encode_only(nmt_cuda_search *self, const nmt_source_batch *batch,
                                       const nmt_search_config *config,
                                       nmt_cuda_encoded *encoded, nmt_error *err)
{
    batch_start start;
    const nmt_status status = start_batch(self, batch, config, &start, err);
    if (status == NMT_STATUS_OK && encoded)
        *encoded = (nmt_cuda_encoded){start.mem_stride, start.dev.src_len};
    return status;
}

nmt_status nmt_cuda_search_run(nmt_cuda_search *self, const nmt_source_batch *batch,
                               const nmt_search_config *config, nmt_search_result *results,
                               nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!self || !batch || !config || !results)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda search: NULL argument");
    for (int32_t i = 0; i < batch->n_sentences; i++)
        results[i] = (nmt_search_result){0, NULL};
    batch_start start;
    NMT_TRY(start_batch(self, batch, config, &start, err));
    cudaStream_t stream = self->stream;
    const int32_t n = start.n, B = nmt_search_width(&config->params), longest = start.longest;
    const int32_t hist_len = start.hist_len, mem_stride = start.mem_stride;
    const input_layout dev = start.dev;
    const int timed = self->config.timed;
    if (timed)
        NMT_TRY(nmt_cuda_search_ensure_events(self, longest, err));

    nmt_beam_device b = nmt_cuda_search_beam(self, config, hist_len, dev.max_len, mem_stride);
    nmt_cuda_search_beam_rules(self, config, dev.src_len, &b);
    nmt_cuda_rules rules;
    NMT_TRY(nmt_cuda_search_rules(self, config, &rules, err));
    const int use_rules = rules.logit_rules || rules.sampling;
    /* A tag of its own: writes of another batch that land late never count
     * for this one. The host clears the entries itself: beam_init doing so
     * (a kernel writing host memory just before the overlapped launches of
     * the first steps) made those steps read stale state when a second
     * process shared the GPU (docs/perf/steps.md, "Done flags in mapped
     * host memory"); the clear also keeps an entry 32,767 batches old from
     * matching a recycled tag. */
    self->done_tag = self->done_tag % 32767 + 1;
    const int32_t tag = self->done_tag;
    for (int32_t s = 0; s < n; s++)
        self->done_at_host[s] = 0;
    NMT_TRY(nmt_cuda_beam_init(&b, n, config->bos_id, tag, stream, err));
    /* Step 1's rows; each beam step writes the next step's (rows_from_beam). */
    NMT_TRY(nmt_cuda_beam_prepare_rows(&b, n, self->act_dev, NULL, self->row_tokens,
                                       self->row_sentence, self->row_parent, self->row_live, 1,
                                       stream, err));

    int32_t n_active = n, steps_run = 0;
    int all_done = 0; /* seen at a check: the loop stopped early */
    const int32_t *old_pos = NULL; /* set for the step after a compaction */
    int32_t checked = 0; /* the step the check event follows (0: none yet) */
    const volatile int32_t *done_at = self->done_at_host;
    int left = 0; /* the step before left layer 0's product (a few rows) */
    for (int32_t step = 1; step <= longest; step++) {
        /* A step right after a compaction (old_pos) or with timing events
         * runs eagerly; the others go through the graph cache. Rows only
         * shrink, so a step that left the product is followed by one that
         * can take it (through a compaction too: parents are old rows). */
        const int carry_out = n_active * B <= self->model.carry_rows;
        const nmt_cuda_step_args args = {
            .b = &b,
            .n_active = n_active,
            .beam = B,
            .stride = mem_stride,
            .src_len = dev.src_len,
            .excluded = dev.excluded,
            .old_pos = old_pos,
            .timed_step = timed ? steps_run : -1,
            .cacheable = old_pos == NULL,
            .rows_from_beam = 1,
            .carried_in = left,
            .carry_out = carry_out,
            .rules = use_rules ? &rules : NULL,
        };
        NMT_TRY(nmt_cuda_search_step(self, &args, err));
        left = carry_out;
        old_pos = NULL;
        steps_run++;
        if (step % self->config.check_every != 0 || step == longest)
            continue;
        if (checked) {
            /* The step of check_every steps ago: done on the GPU unless the
             * host is less than that many steps ahead of it. */
            NMT_CUDA_TRY(cudaEventSynchronize(self->check_event));
            int32_t alive = 0;
            for (int32_t p = 0; p < n_active; p++) {
                const int32_t at = nmt_done_at_step(done_at[self->active_list[p]], tag, step);
                if (at > 0 && at <= checked)
                    continue;
                self->active_list[alive] = self->active_list[p];
                self->host_old[alive] = p;
                alive++;
            }
            if (alive == 0) {
                all_done = 1;
                break;
            }
            if (alive < n_active) {
                memcpy(self->act_pinned, self->active_list, sizeof(int32_t) * alive);
                memcpy(self->act_pinned + alive, self->host_old, sizeof(int32_t) * alive);
                NMT_CUDA_TRY(cudaMemcpyAsync(self->act_dev, self->act_pinned,
                                             sizeof(int32_t) * 2 * alive,
                                             cudaMemcpyHostToDevice, stream));
                old_pos = self->act_dev + alive;
                n_active = alive;
            }
        }
        NMT_CUDA_TRY(cudaEventRecord(self->check_event, stream));
        checked = step;
    }

    nmt_beam_results r_dev, r_host;
    const int32_t weights_stride = config->attention ? mem_stride : 0;
    const size_t result_bytes = nmt_beam_results_carve(self->results_dev, n, config->params.n_best,
                                                       hist_len, weights_stride, &r_dev);
    nmt_beam_results_carve(self->results_host, n, config->params.n_best, hist_len, weights_stride,
                           &r_host);
    /* Every sentence was done at the last check, so the step launched after
     * it changes no state the backtrack reads (a done sentence's beam step
     * and attention record return at once): the results need not wait for
     * it. At batch 1 that step is one of ~13 (docs/performance.md, "Batch-1
     * latency"). The timed run's events need the whole stream anyway. */
    cudaStream_t results_stream = stream;
    if (all_done && !timed) {
        NMT_CUDA_TRY(cudaStreamWaitEvent(self->finish_stream, self->check_event, 0));
        results_stream = self->finish_stream;
    }
    NMT_TRY(nmt_cuda_beam_backtrack(&b, n, &r_dev, results_stream, err));
    NMT_CUDA_TRY(cudaMemcpyAsync(self->results_host, self->results_dev, result_bytes,
                                 cudaMemcpyDeviceToHost, results_stream));
    NMT_CUDA_TRY(cudaStreamSynchronize(results_stream));
    if (timed)
        for (int32_t i = 0; i < steps_run; i++) {
            float ms = 0.0f;
            NMT_CUDA_TRY(cudaEventElapsedTime(&ms, self->layer_events[2 * i],
                                              self->layer_events[2 * i + 1]));
            self->counts_now.output_layer_ms += ms;
        }
    for (int32_t i = 0; i < n; i++)
        NMT_TRY(nmt_cuda_search_copy_result(&r_host, i, batch->src_len[self->order[i]],
                                            &results[self->order[i]], err));
    return NMT_STATUS_OK;

cleanup:
    /* Leave no work in flight on the pinned buffers the next batch reuses. */
    cudaStreamSynchronize(self->stream);
    cudaStreamSynchronize(self->finish_stream);
    for (int32_t i = 0; i < batch->n_sentences; i++)
        nmt_search_result_clear(&results[i]);
    return status;
}
