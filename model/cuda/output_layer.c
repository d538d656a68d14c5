/* output_layer.c: step 5 of the decoder on the device (model/cuda/cuda_model.h):
 * logits, log-softmax and the 2B best words of every row, over the whole
 * vocabulary or over LSH / TOP candidate lists (model/shrink.h, docs/lsh.md).
 *
 * Full:   cuBLAS GEMM (+ bias), fused softmax + top-K.
 * TOP:    the same over the first n_always rows of W_out (ids 0..n_always-1).
 * LSH:    WTA codes of the feeds, cuckoo lookup, candidate lists by
 *         stream compaction (one per group: the batch, a sentence or a row;
 *         from 128 rows lookup and lists in one launch with no hit matrix,
 *         below as hits and lists), logits over the candidates (the always-kept
 *         prefix, ids 0..n_always-1 in every list, as one dense GEMM on a
 *         second stream beside the codes and lists; the
 *         rest gathered: WARP for a sentence's rows, GEMM for bigger groups,
 *         SDDMM per row), softmax + top-K over the candidates with the ids
 *         mapped back to words. The list sizes stay on the device: kernels
 *         are launched for the bound (V) and blocks past a list's end return.
 * Host code only; nothing allocates after nmt_cuda_model_set_shrink. */
#include "align.h"
#include "cuda_model.h"

#include "cuda_check.h"
#include "linear.h"
#include "lsh.h"
#include "softmax_topk.h"

#include <stdlib.h>
#include <string.h>

enum { kNaiveLookupRows = 128 }; /* rows from which the naive lookup is faster */
enum { kDirectListRows = 128 };  /* rows from which NMT_LIST_BUILDER_AUTO builds lists directly */
enum { kDensePrefixWords = 64 };  /* n_always from which the prefix is a dense GEMM (one
                                     gathered tile below) */

/* Every list starts with ids 0..n_always-1 at their own index (kernels/lsh.h),
 * so those logits are one dense GEMM over the first rows of W_out for all
 * rows, as TOP's layer: per group they would be gathered again and again
 * (64 sentence lists at batch 64 read the top-T rows 64 times). The
 * gathered kernel takes the rest. The prefix's width, 0 for none. */
static int32_t dense_prefix(const nmt_shrink *s)
{
    return s->n_always >= kDensePrefixWords ? s->n_always : 0;
}

/* Lists a step can need at most: one per group. */
static int32_t max_groups(const nmt_cuda_model *m, nmt_list_share share)
{
    if (share == NMT_LIST_SHARE_ROW)
        return m->max_rows;
    if (share == NMT_LIST_SHARE_SENTENCE)
        return m->max_sentences;
    return 1;
}

/* Offsets of every shrink buffer in one arena (base 0 measures). */
typedef struct shrink_layout {
    size_t perm, slots, hash, words, packed_slots, packed_words, codes, hits, cand, count, ws,
        direct, full_logits, full_values, full_ids, stats, total;
    int64_t packed_vectors; /* the direct builder's packed buckets (nmt_lsh_pack); -1: none */
} shrink_layout;

static shrink_layout layout_shrink(const nmt_cuda_model *m, const nmt_shrink *s, int stats)
{
    shrink_layout l;
    memset(&l, 0, sizeof l);
    const size_t R = (size_t)m->max_rows, V = (size_t)m->vocab, B = (size_t)m->beam;
    const size_t G = (size_t)max_groups(m, s->share), i4 = sizeof(int32_t);
    const nmt_lsh_tables *t = s->mode == NMT_SHRINK_METHOD_LSH ? s->tables : NULL;
    const size_t W = t ? (size_t)t->w : 0;
    size_t at = 0;
#define PLACE(field, bytes) (l.field = at, at = nmt_align_up(at + (bytes), 256))
    PLACE(perm, t ? (size_t)t->u * W * (size_t)t->k * i4 : 0);
    PLACE(slots, t ? W * ((size_t)1 << t->table_bits) * sizeof(nmt_lsh_slot) : 0);
    PLACE(hash, W * 4 * sizeof(uint32_t));
    PLACE(words, W * V * i4);
    l.packed_vectors = t && s->lists != NMT_LIST_BUILDER_HITS ? nmt_lsh_pack_vectors(t, s->n_always)
                                                           : -1;
    const int packed = l.packed_vectors >= 0;
    PLACE(packed_slots, packed ? W * ((size_t)1 << t->table_bits) * sizeof(nmt_lsh_slot) : 0);
    PLACE(packed_words, packed ? (size_t)l.packed_vectors * 8 * sizeof(uint16_t) : 0);
    PLACE(codes, R * W * i4);
    PLACE(hits, t && s->lists != NMT_LIST_BUILDER_DIRECT ? R * V * i4 : 0); /* two-step lists */
    PLACE(cand, G * V * i4);
    PLACE(count, G * i4);
    PLACE(ws, nmt_cuda_lsh_candidates_workspace_size((int32_t)G, (int32_t)V));
    PLACE(direct, t && s->lists != NMT_LIST_BUILDER_HITS
                      ? nmt_cuda_lsh_direct_workspace_size((int32_t)G, (int32_t)V)
                      : 0);
    PLACE(full_logits, stats ? R * V * sizeof(float) : 0);
    PLACE(full_values, stats ? R * B * sizeof(float) : 0);
    PLACE(full_ids, stats ? R * B * i4 : 0);
    PLACE(stats, 3 * sizeof(unsigned long long));
#undef PLACE
    l.total = at;
    return l;
}

/* The direct builder's packed buckets of the host tables t (kernels/lsh.h,
 * nmt_lsh_pack), words >= below, into the arena; m->lsh points at them. */
static nmt_status upload_packed(nmt_cuda_model *m, const nmt_lsh_tables *t, int32_t below,
                                const shrink_layout *l, char *base, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const size_t slot_bytes = (size_t)t->w * ((size_t)1 << t->table_bits) * sizeof(nmt_lsh_slot);
    const size_t word_bytes = (size_t)l->packed_vectors * 8 * sizeof(uint16_t);
    nmt_lsh_slot *slots = (nmt_lsh_slot *)malloc(slot_bytes);
    uint16_t *words = (uint16_t *)malloc(word_bytes > 0 ? word_bytes : 1);
    if (!slots || !words) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                               "cuda shrink: out of memory for %zu bytes of packed buckets",
                               slot_bytes + word_bytes);
        goto cleanup;
    }
    nmt_lsh_pack(t, below, slots, words);
    NMT_CUDA_TRY(cudaMemcpy(base + l->packed_slots, slots, slot_bytes, cudaMemcpyHostToDevice));
    NMT_CUDA_TRY(cudaMemcpy(base + l->packed_words, words, word_bytes, cudaMemcpyHostToDevice));
    m->lsh.packed_slots = (const nmt_lsh_slot *)(base + l->packed_slots);
    m->lsh.packed_words = (const uint16_t *)(base + l->packed_words);
    m->lsh.packed_below = below;
cleanup:
    free(slots);
    free(words);
    return status;
}

nmt_status nmt_cuda_model_set_shrink(nmt_cuda_model *m, const nmt_shrink *shrink,
                                     int collect_stats, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!m || m->shrink_arena)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda shrink: no model, or set twice");
    NMT_TRY(nmt_shrink_check(shrink, m->hidden, m->vocab, "cuda", err));
    const nmt_lsh_tables *t = shrink->tables;
    const shrink_layout l = layout_shrink(m, shrink, collect_stats);
    cudaStream_t stream = (cudaStream_t)m->stream;
    NMT_CUDA_TRY(cudaMalloc(&m->shrink_arena, l.total));
    char *base = (char *)m->shrink_arena;
    m->shrink = *shrink;
    m->lsh_codes = (int32_t *)(base + l.codes);
    m->lsh_hits = (int32_t *)(base + l.hits);
    m->cand = (int32_t *)(base + l.cand);
    m->cand_count = (int32_t *)(base + l.count);
    m->cand_workspace = base + l.ws;
    m->cand_workspace_bytes = l.direct - l.ws;
    m->direct_workspace = base + l.direct;
    m->direct_workspace_bytes = l.full_logits - l.direct;
    m->lsh_stats = (unsigned long long *)(base + l.stats);
    if (collect_stats) {
        m->full_logits = (float *)(base + l.full_logits);
        m->full_top_values = (float *)(base + l.full_values);
        m->full_top_ids = (int32_t *)(base + l.full_ids);
    }
    memset(&m->lsh, 0, sizeof m->lsh);
    if (shrink->mode == NMT_SHRINK_METHOD_LSH) {
        const size_t W = (size_t)t->w, V = (size_t)t->vocab;
        m->lsh = *t;
        m->lsh.perm = (const int32_t *)(base + l.perm);
        m->lsh.slots = (const nmt_lsh_slot *)(base + l.slots);
        m->lsh.hash = (const uint32_t *)(base + l.hash);
        m->lsh.bucket_words = (const int32_t *)(base + l.words);
        NMT_CUDA_TRY(cudaMemcpyAsync(base + l.perm, t->perm,
                                     (size_t)t->u * W * (size_t)t->k * sizeof(int32_t),
                                     cudaMemcpyHostToDevice, stream));
        NMT_CUDA_TRY(cudaMemcpyAsync(base + l.slots, t->slots,
                                     W * ((size_t)1 << t->table_bits) * sizeof(nmt_lsh_slot),
                                     cudaMemcpyHostToDevice, stream));
        NMT_CUDA_TRY(cudaMemcpyAsync(base + l.hash, t->hash, W * 4 * sizeof(uint32_t),
                                     cudaMemcpyHostToDevice, stream));
        NMT_CUDA_TRY(cudaMemcpyAsync(base + l.words, t->bucket_words, W * V * sizeof(int32_t),
                                     cudaMemcpyHostToDevice, stream));
        if (shrink->n_always > 0 && shrink->lists != NMT_LIST_BUILDER_HITS) {
            /* Each bucket's words below n_always, counted once for the direct builder. */
            NMT_TRY(nmt_cuda_lsh_slots_skip(&m->lsh, (nmt_lsh_slot *)(base + l.slots),
                                            shrink->n_always, stream, err));
            m->lsh.skip_below = shrink->n_always;
        }
        if (l.packed_vectors >= 0)
            NMT_TRY(upload_packed(m, t, shrink->n_always, &l, base, err));
    }
    /* Hits start (and every candidates call leaves them) at zero; so do the
     * counters of the candidates workspace and the stats. */
    NMT_CUDA_TRY(cudaMemsetAsync(base + l.hits, 0, l.cand - l.hits, stream));
    NMT_CUDA_TRY(cudaMemsetAsync(base + l.ws, 0, l.full_logits - l.ws, stream)); /* and direct */
    NMT_CUDA_TRY(cudaMemsetAsync(base + l.stats, 0, 3 * sizeof(unsigned long long), stream));
    if (shrink->mode == NMT_SHRINK_METHOD_TOP) {
        /* The fixed list, for nmt_cuda_output_recall only: ids [0, n_always). */
        int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * ((size_t)shrink->n_always + 1));
        if (!ids) {
            status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "cuda shrink: out of memory");
            goto cleanup;
        }
        for (int32_t i = 0; i < shrink->n_always; i++)
            ids[i] = i;
        ids[shrink->n_always] = shrink->n_always;
        cudaError_t e1 = cudaMemcpy(m->cand, ids, sizeof(int32_t) * (size_t)shrink->n_always,
                                    cudaMemcpyHostToDevice);
        cudaError_t e2 = cudaMemcpy(m->cand_count, ids + shrink->n_always, sizeof(int32_t),
                                    cudaMemcpyHostToDevice);
        free(ids);
        NMT_CUDA_TRY(e1);
        NMT_CUDA_TRY(e2);
    }
    if (shrink->mode == NMT_SHRINK_METHOD_LSH && dense_prefix(shrink) > 0) {
        cudaEvent_t fork = NULL, join = NULL;
        NMT_TRY(nmt_cuda_ctx_create_side(m->ctx, &m->side_ctx, err));
        NMT_CUDA_TRY(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
        m->fork_event = fork;
        NMT_CUDA_TRY(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
        m->join_event = join;
    }
    /* The host tables may be freed once this returns. */
    NMT_CUDA_TRY(cudaStreamSynchronize(stream));
    m->shrink.tables = NULL;
    m->has_shrink = 1;
    return NMT_STATUS_OK;
cleanup:
    nmt_cuda_model_free_shrink(m);
    return status;
}

void nmt_cuda_model_free_shrink(nmt_cuda_model *m)
{
    nmt_cuda_ctx_free(m->side_ctx); /* synchronizes its stream first */
    if (m->fork_event)
        cudaEventDestroy((cudaEvent_t)m->fork_event);
    if (m->join_event)
        cudaEventDestroy((cudaEvent_t)m->join_event);
    if (m->shrink_arena)
        cudaFree(m->shrink_arena);
    m->side_ctx = NULL;
    m->fork_event = m->join_event = NULL;
    m->shrink_arena = NULL;
}

nmt_status nmt_cuda_output_layer(nmt_cuda_model *m, int32_t n_rows, int32_t beam,
                                 const int32_t *excluded, int32_t n_excluded, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    void *stream = m->stream;
    const int32_t H = m->hidden, V = m->vocab;
    const float *feed = m->feed[m->cur];
    const nmt_device_weights *w = &m->w;
    if (n_rows < 1 || n_rows > m->max_rows || beam < 1 || beam > m->beam)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda output layer: %d rows (max %d), beam %d (max %d)", n_rows,
                             m->max_rows, beam, m->beam);
    if (!m->has_shrink) {
        NMT_TRY(nmt_cuda_model_linear(m, n_rows, V, H, feed, m->feed_ld, w->out_w, H, m->out_w2,
                                      w->out_b, m->logits, V, err));
        NMT_TRY(nmt_cuda_softmax_topk(n_rows, V, m->logits, V, 2 * beam, excluded, n_excluded,
                                      m->top_values, m->top_ids, m->lse, m->topk_workspace,
                                      m->topk_workspace_bytes, stream, err));
        return NMT_STATUS_OK;
    }
    const nmt_shrink *s = &m->shrink;
    if (s->mode == NMT_SHRINK_METHOD_TOP) {
        /* TOP's list is ids [0, n_always): the first rows of W_out (the specials,
         * then the most frequent words), a smaller dense layer with no list to
         * build or map, as in the paper's baseline. Same result as the CPU's
         * candidates path with no hits. */
        NMT_TRY(nmt_cuda_model_linear(m, n_rows, s->n_always, H, feed, m->feed_ld, w->out_w, H,
                                      m->out_w2, w->out_b, m->logits, V, err));
        NMT_TRY(nmt_cuda_softmax_topk(n_rows, s->n_always, m->logits, V, 2 * beam, excluded,
                                      n_excluded, m->top_values, m->top_ids, m->lse,
                                      m->topk_workspace, m->topk_workspace_bytes, stream, err));
        return NMT_STATUS_OK;
    }
    const int32_t rpg = nmt_shrink_rows_per_group(s, n_rows, beam);
    const int32_t dense = dense_prefix(s);
    NMT_TRY(nmt_cuda_lsh_codes(n_rows, feed, m->feed_ld, &m->lsh, m->lsh_codes, stream, err));
    if (dense > 0) {
        /* The prefix's GEMM needs only the feeds: on the side stream, beside
         * the lists (a latency-bound kernel with issue slots to spare), joined
         * before the softmax; its columns [0, dense) are not the gathered
         * kernel's. Forked after the codes and ranked below the model's
         * stream, so the list builder's blocks are placed first and the GEMM
         * fills the room they leave (forked first, its blocks held the SMs
         * and the builder's last blocks started up to 22 us late, by a
         * per-block timer on the H100). */
        cudaStream_t side = (cudaStream_t)nmt_cuda_ctx_stream(m->side_ctx);
        NMT_CUDA_TRY(cudaEventRecord((cudaEvent_t)m->fork_event, (cudaStream_t)stream));
        NMT_CUDA_TRY(cudaStreamWaitEvent(side, (cudaEvent_t)m->fork_event, 0));
        NMT_TRY(nmt_cuda_model_linear_on(m, m->side_ctx, n_rows, dense, H, feed, m->feed_ld,
                                         w->out_w, H, m->out_w2, w->out_b, m->logits, V, err));
        NMT_CUDA_TRY(cudaEventRecord((cudaEvent_t)m->join_event, side));
    }
    const int direct = s->lists == NMT_LIST_BUILDER_DIRECT ||
                       (s->lists == NMT_LIST_BUILDER_AUTO && n_rows >= kDirectListRows);
    if (direct) { /* lookup and lists in one launch */
        NMT_TRY(nmt_cuda_lsh_candidates_direct(n_rows, rpg, m->lsh_codes, m->row_live, &m->lsh,
                                               s->threshold, s->n_always, m->cand, V,
                                               m->cand_count, m->direct_workspace,
                                               m->direct_workspace_bytes, stream, err));
    } else {
        /* The warp-cooperative walk (the paper's Fig. 4b) wins while few rows
         * leave the GPU idle; with many rows every thread already has work and
         * its shuffles only cost (bench_lsh on the H100: 1.2-1.6x faster at 12
         * rows, 0.44-0.93x at 768; the switch at 128 lies between the two
         * measured sizes, untuned; docs/lsh.md). */
        const nmt_lsh_lookup lookup = n_rows >= kNaiveLookupRows ? NMT_LSH_LOOKUP_NAIVE
                                                                 : NMT_LSH_LOOKUP_WARP;
        NMT_TRY(nmt_cuda_lsh_hits(n_rows, m->lsh_codes, m->row_live, &m->lsh, lookup,
                                  m->lsh_hits, stream, err));
        NMT_TRY(nmt_cuda_lsh_candidates(n_rows, rpg, V, m->lsh_hits, s->threshold, s->n_always,
                                        m->cand, V, m->cand_count, m->cand_workspace,
                                        m->cand_workspace_bytes, stream, err));
    }
    NMT_TRY(nmt_cuda_lsh_logits(n_rows, rpg, H, feed, m->feed_ld, w->out_w, w->out_b, m->cand,
                                V, m->cand_count, dense, V, m->logits, V, NMT_LSH_LOGITS_AUTO,
                                stream, err));
    if (dense > 0)
        NMT_CUDA_TRY(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)m->join_event, 0));
    NMT_TRY(nmt_cuda_softmax_topk_candidates(n_rows, rpg, m->logits, V, m->cand, V,
                                             m->cand_count, V, 2 * beam, excluded, n_excluded,
                                             m->top_values, m->top_ids, m->lse,
                                             m->topk_workspace, m->topk_workspace_bytes, stream,
                                             err));
cleanup:
    return status;
}

nmt_status nmt_cuda_output_recall(nmt_cuda_model *m, int32_t n_rows, int32_t beam,
                                  const int32_t *excluded, int32_t n_excluded, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t H = m->hidden, V = m->vocab;
    if (!m->has_shrink || !m->full_logits)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda output recall: needs shrinking and collect_stats");
    NMT_TRY(nmt_cuda_linear(m->ctx, n_rows, V, H, m->feed[m->cur], m->feed_ld, m->w.out_w, H,
                            m->w.out_b, 0, m->full_logits, V, err));
    NMT_TRY(nmt_cuda_softmax_topk(n_rows, V, m->full_logits, V, beam, excluded, n_excluded,
                                  m->full_top_values, m->full_top_ids, NULL, m->topk_workspace,
                                  m->topk_workspace_bytes, m->stream, err));
    /* TOP: one list for every row (set up by nmt_cuda_model_set_shrink). */
    const int32_t rpg = m->shrink.mode == NMT_SHRINK_METHOD_TOP
                            ? n_rows
                            : nmt_shrink_rows_per_group(&m->shrink, n_rows, beam);
    NMT_TRY(nmt_cuda_lsh_recall(n_rows, rpg,
                                m->row_live, m->full_top_ids, beam, m->cand, V, m->cand_count,
                                m->lsh_stats, m->stream, err));
cleanup:
    return status;
}
