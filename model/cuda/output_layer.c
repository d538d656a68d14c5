/* output_layer.c: step 5 of the decoder on the device (model/cuda/cuda_model.h),
 * the output-layer part of the network and its workspace: logits,
 * log-softmax and the 2B best words of every row, over the whole vocabulary
 * or over LSH / TOP candidate lists (shrink/shrink.h, docs/lsh.md).
 *
 * Full:   cuBLAS GEMM (+ bias), fused softmax + top-K; or, set and where
 *         it runs, one fused product + softmax + top-K that writes no
 *         logits (kernels/output_topk.h).
 * TOP:    the same over the first n_always rows of W_out (ids 0..n_always-1).
 * LSH:    WTA codes of the feeds, cuckoo lookup, candidate lists by
 *         stream compaction (one per group: the batch, a sentence or a row;
 *         lookup and lists in one launch with no hit matrix from
 *         nmt_shrink_policy's rows, below as hits and lists), logits over
 *         the candidates (the always-kept
 *         prefix, ids 0..n_always-1 in every list, as one dense GEMM on a
 *         second stream beside the codes and lists; the
 *         rest gathered: WARP for a sentence's rows, GEMM for bigger groups,
 *         SDDMM per row), softmax + top-K over the candidates with the ids
 *         mapped back to words. The list sizes stay on the device: kernels
 *         are launched for the bound (V) and blocks past a list's end return.
 * The recall probe (--stats) is output_probe.c, off this path.
 * Host code only; nothing allocates after nmt_cuda_model_set_shrink. */
#include "align.h"
#include "cuda_model_impl.h"

#include "cuda_check.h"
#include "linear.h"
#include "lsh.h"
#include "output_topk.h"
#include "softmax_topk.h"

#include <stdlib.h>
#include <string.h>

/* The full layer's logits rows start on 128-byte boundaries (V = 4,778
 * floats is 19,112 bytes, not a multiple of 16), so the output GEMM's
 * stores and softmax + top-K's loads start every row aligned. The candidate
 * lists' logits keep rows of V in the same buffer. */
enum { kLogitsAlign = 32 };

static void layout_output(nmt_cuda_model *m, nmt_carver *c)
{
    const size_t R = (size_t)m->max_rows, V = (size_t)m->vocab, K = 2 * (size_t)m->beam;
    nmt_cuda_output_part *p = &m->out;
    p->ld_logits = (int32_t)nmt_align_up(V, kLogitsAlign);
    p->logits = (float *)nmt_carve(c, R * (size_t)p->ld_logits * sizeof(float));
    p->top_values = (float *)nmt_carve(c, R * K * sizeof(float));
    p->top_ids = (int32_t *)nmt_carve(c, R * K * sizeof(int32_t));
    p->lse = (float *)nmt_carve(c, R * sizeof(float));
    p->topk_workspace = nmt_carve(c, p->topk_workspace_bytes);
    p->stash = (float *)nmt_carve(c, R * (size_t)m->hidden * sizeof(float));
}

size_t nmt_cuda_output_part_bytes(nmt_cuda_model *m)
{
    m->out.topk_workspace_bytes = nmt_cuda_softmax_topk_workspace_size(m->max_rows, m->vocab,
                                                                       2 * m->beam);
    if (m->out.topk_workspace_bytes == SIZE_MAX)
        return SIZE_MAX;
    return nmt_cuda_arena_bytes(layout_output, m);
}

nmt_status nmt_cuda_output_part_create(nmt_cuda_model *m, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_output_part *p = &m->out;
    const nmt_shrink_policy policy = NMT_SHRINK_POLICY_DEFAULT;
    p->policy = policy;
    p->topk_workspace_bytes = nmt_cuda_softmax_topk_workspace_size(m->max_rows, m->vocab,
                                                                   2 * m->beam);
    if (p->topk_workspace_bytes == SIZE_MAX)
        return nmt_error_set(err, NMT_STATUS_ERROR_CUDA, "cuda model: cannot size the top-K "
                             "workspace (V %d, K %d)", m->vocab, 2 * m->beam);
    NMT_TRY(nmt_cuda_arena_carve(&p->arena, layout_output, m, err));
    /* Once: every softmax_topk call leaves its counters at zero again. */
    NMT_CUDA_TRY(cudaMemsetAsync(p->topk_workspace, 0, p->topk_workspace_bytes,
                                 (cudaStream_t)m->stream));
cleanup:
    return status;
}

/* Every list starts with ids 0..n_always-1 at their own index (kernels/lsh.h),
 * so those logits are one dense GEMM over the first rows of W_out for all
 * rows, as TOP's layer: per group they would be gathered again and again
 * (64 sentence lists at batch 64 read the top-T rows 64 times). The
 * gathered kernel takes the rest. The prefix's width, 0 for none. */
static int32_t dense_prefix(const nmt_shrink *s, const nmt_shrink_policy *policy)
{
    return s->n_always >= policy->dense_prefix_min_words ? s->n_always : 0;
}

/* LSH with a dense prefix runs the prefix's GEMM on a side stream. */
static int has_side(const nmt_shrink *s, const nmt_shrink_policy *policy)
{
    return s->mode == NMT_SHRINK_LSH && dense_prefix(s, policy) > 0;
}

/* Lists a step can need at most: one per group. */
static int32_t max_groups(const nmt_cuda_model *m, nmt_lsh_share share)
{
    if (share == NMT_LSH_SHARE_ROW)
        return m->max_rows;
    if (share == NMT_LSH_SHARE_SENTENCE)
        return m->max_sentences;
    return 1;
}

/* Offsets of every shrink buffer in one arena (base 0 measures). */
typedef struct shrink_layout {
    size_t perm, slots, hash, words, packed_slots, packed_words, codes, hits, cand, count, ws,
        direct, total;
    int64_t packed_vectors; /* the direct builder's packed buckets (nmt_lsh_pack); -1: none */
} shrink_layout;

/* Rows the two-step (hits) builder can see at a step: every row with HITS;
 * with AUTO only steps of fewer rows than the direct builder takes from
 * (the hit matrix is [rows, V]: 1.2 GB at 10,240 rows of 30,000 words). */
static size_t hits_rows(const nmt_cuda_model *m, const nmt_shrink *s,
                        const nmt_shrink_policy *policy)
{
    const size_t R = (size_t)m->max_rows;
    if (s->lists == NMT_LSH_LISTS_DIRECT)
        return 0;
    if (s->lists == NMT_LSH_LISTS_AUTO && policy->direct_lists_min_rows >= 1 &&
        (size_t)policy->direct_lists_min_rows - 1 < R)
        return (size_t)policy->direct_lists_min_rows - 1;
    return R;
}

/* t: the index's tables (their sizes only); packed_vectors: the direct
 * builder's packed buckets (nmt_lsh_pack_vectors; -1: none). */
static shrink_layout layout_shrink(const nmt_cuda_model *m, const nmt_shrink *s,
                                   const nmt_shrink_policy *policy, const nmt_lsh_tables *t,
                                   int64_t packed_vectors)
{
    shrink_layout l;
    memset(&l, 0, sizeof l);
    const size_t R = (size_t)m->max_rows, V = (size_t)m->vocab;
    const size_t G = (size_t)max_groups(m, s->share), i4 = sizeof(int32_t);
    if (s->mode != NMT_SHRINK_LSH)
        t = NULL;
    const size_t W = t ? (size_t)t->w : 0;
    size_t at = 0;
#define PLACE(field, bytes) (l.field = at, at = nmt_align_up(at + (bytes), 256))
    PLACE(perm, t ? (size_t)t->u * W * (size_t)t->k * i4 : 0);
    PLACE(slots, t ? W * ((size_t)1 << t->table_bits) * sizeof(nmt_lsh_slot) : 0);
    PLACE(hash, W * 4 * sizeof(uint32_t));
    PLACE(words, W * V * i4);
    l.packed_vectors = t && s->lists != NMT_LSH_LISTS_HITS ? packed_vectors : -1;
    const int packed = l.packed_vectors >= 0;
    PLACE(packed_slots, packed ? W * ((size_t)1 << t->table_bits) * sizeof(nmt_lsh_slot) : 0);
    PLACE(packed_words, packed ? (size_t)l.packed_vectors * 8 * sizeof(uint16_t) : 0);
    PLACE(codes, R * W * i4);
    PLACE(hits, t ? hits_rows(m, s, policy) * V * i4 : 0); /* two-step lists */
    PLACE(cand, G * V * i4);
    PLACE(count, G * i4);
    PLACE(ws, nmt_cuda_lsh_candidates_workspace_size((int32_t)G, (int32_t)V));
    PLACE(direct, t && s->lists != NMT_LSH_LISTS_HITS
                      ? nmt_cuda_lsh_direct_workspace_size((int32_t)G, (int32_t)V)
                      : 0);
#undef PLACE
    l.total = at;
    return l;
}

/* The direct builder's packed buckets of the host tables t (shrink/lsh_index.h,
 * nmt_lsh_pack), words >= below, into the arena; p->lsh points at them. */
static nmt_status upload_packed(nmt_cuda_output_part *p, const nmt_lsh_tables *t, int32_t below,
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
    p->lsh.packed_slots = (const nmt_lsh_slot *)(base + l->packed_slots);
    p->lsh.packed_words = (const uint16_t *)(base + l->packed_words);
    p->lsh.packed_below = below;
cleanup:
    free(slots);
    free(words);
    return status;
}

/* The host tables t on the device (LSH). */
static nmt_status upload_index(nmt_cuda_model *m, const nmt_shrink *shrink,
                               const shrink_layout *l, char *base, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_output_part *p = &m->out;
    cudaStream_t stream = (cudaStream_t)m->stream;
    const nmt_lsh_tables *t = shrink->tables;
    const size_t W = (size_t)t->w, V = (size_t)t->vocab;
    p->lsh = *t;
    p->lsh.perm = (const int32_t *)(base + l->perm);
    p->lsh.slots = (const nmt_lsh_slot *)(base + l->slots);
    p->lsh.hash = (const uint32_t *)(base + l->hash);
    p->lsh.bucket_words = (const int32_t *)(base + l->words);
    NMT_CUDA_TRY(cudaMemcpyAsync(base + l->perm, t->perm,
                                 (size_t)t->u * W * (size_t)t->k * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, stream));
    NMT_CUDA_TRY(cudaMemcpyAsync(base + l->slots, t->slots,
                                 W * ((size_t)1 << t->table_bits) * sizeof(nmt_lsh_slot),
                                 cudaMemcpyHostToDevice, stream));
    NMT_CUDA_TRY(cudaMemcpyAsync(base + l->hash, t->hash, W * 4 * sizeof(uint32_t),
                                 cudaMemcpyHostToDevice, stream));
    NMT_CUDA_TRY(cudaMemcpyAsync(base + l->words, t->bucket_words, W * V * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, stream));
    if (shrink->n_always > 0 && shrink->lists != NMT_LSH_LISTS_HITS) {
        /* Each bucket's words below n_always, counted once for the direct builder. */
        NMT_TRY(nmt_cuda_lsh_slots_skip(&p->lsh, (nmt_lsh_slot *)(base + l->slots),
                                        shrink->n_always, stream, err));
        p->lsh.skip_below = shrink->n_always;
    }
    if (l->packed_vectors >= 0)
        NMT_TRY(upload_packed(p, t, shrink->n_always, l, base, err));
cleanup:
    return status;
}

/* TOP's fixed list, ids [0, n_always), for the recall probe only. */
static nmt_status write_top_list(nmt_cuda_output_part *p, int32_t n_always, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n_always + 1));
    if (!ids)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "cuda shrink: out of memory");
    for (int32_t i = 0; i < n_always; i++)
        ids[i] = i;
    ids[n_always] = n_always;
    NMT_CUDA_TRY(cudaMemcpy(p->cand, ids, sizeof(int32_t) * (size_t)n_always,
                            cudaMemcpyHostToDevice));
    NMT_CUDA_TRY(cudaMemcpy(p->cand_count, ids + n_always, sizeof(int32_t),
                            cudaMemcpyHostToDevice));
cleanup:
    free(ids);
    return status;
}

nmt_status nmt_cuda_model_set_shrink(nmt_cuda_model *m, const nmt_shrink *shrink, int probe,
                                     nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!m || m->out.shrink_arena)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "cuda shrink: no model, or set twice");
    NMT_TRY(nmt_shrink_check(shrink, m->hidden, m->vocab, "cuda", err));
    nmt_cuda_output_part *p = &m->out;
    const nmt_lsh_tables *tables = shrink->mode == NMT_SHRINK_LSH ? shrink->tables : NULL;
    const shrink_layout l =
        layout_shrink(m, shrink, &p->policy, tables,
                      tables ? nmt_lsh_pack_vectors(tables, shrink->n_always) : -1);
    cudaStream_t stream = (cudaStream_t)m->stream;
    NMT_CUDA_TRY(cudaMalloc(&p->shrink_arena, l.total));
    p->shrink_bytes = l.total;
    char *base = (char *)p->shrink_arena;
    p->shrink = *shrink;
    p->lsh_codes = (int32_t *)(base + l.codes);
    p->lsh_hits = (int32_t *)(base + l.hits);
    p->cand = (int32_t *)(base + l.cand);
    p->cand_count = (int32_t *)(base + l.count);
    p->cand_workspace = base + l.ws;
    p->cand_workspace_bytes = l.direct - l.ws;
    p->direct_workspace = base + l.direct;
    p->direct_workspace_bytes = l.total - l.direct;
    memset(&p->lsh, 0, sizeof p->lsh);
    if (shrink->mode == NMT_SHRINK_LSH)
        NMT_TRY(upload_index(m, shrink, &l, base, err));
    /* Hits start (and every candidates call leaves them) at zero; so do the
     * counters of the candidates and direct workspaces. */
    NMT_CUDA_TRY(cudaMemsetAsync(base + l.hits, 0, l.cand - l.hits, stream));
    NMT_CUDA_TRY(cudaMemsetAsync(base + l.ws, 0, l.total - l.ws, stream)); /* and direct */
    if (shrink->mode == NMT_SHRINK_TOP)
        NMT_TRY(write_top_list(p, shrink->n_always, err));
    if (has_side(shrink, &p->policy))
        NMT_TRY(nmt_cuda_side_create(m, &p->side, err));
    if (probe)
        NMT_TRY(nmt_cuda_probe_part_create(m, err));
    /* The host tables may be freed once this returns. */
    NMT_CUDA_TRY(cudaStreamSynchronize(stream));
    p->shrink.tables = NULL;
    p->has_shrink = 1;
    return NMT_STATUS_OK;
cleanup:
    nmt_cuda_output_part_free_shrink(m);
    return status;
}

int nmt_cuda_model_shrunk(const nmt_cuda_model *m)
{
    return m->out.has_shrink;
}

void nmt_cuda_output_part_free_shrink(nmt_cuda_model *m)
{
    nmt_cuda_output_part *p = &m->out;
    nmt_cuda_side_free(&p->side); /* synchronizes its stream first */
    if (p->shrink_arena)
        cudaFree(p->shrink_arena);
    p->shrink_arena = NULL;
    p->shrink_bytes = 0;
    p->has_shrink = 0;
}

size_t nmt_cuda_model_shrink_bytes(const nmt_cuda_model *m)
{
    const nmt_cuda_output_part *p = &m->out;
    return p->shrink_bytes + (p->side.ctx ? nmt_cuda_ctx_device_bytes() : 0);
}

size_t nmt_cuda_shrink_part_bytes(const nmt_cuda_model *m, const nmt_shrink *shrink)
{
    if (!shrink)
        return 0;
    const nmt_shrink_policy policy = NMT_SHRINK_POLICY_DEFAULT;
    nmt_lsh_tables t;
    memset(&t, 0, sizeof t);
    int64_t packed = -1;
    if (shrink->mode == NMT_SHRINK_LSH) {
        const nmt_lsh_index_config *c = &shrink->index;
        if (c->w < 1 || c->k < 1 || c->u < 1 || m->vocab < 1)
            return SIZE_MAX;
        t.k = c->k, t.u = c->u, t.w = c->w, t.dim = m->hidden, t.vocab = m->vocab;
        /* The index's first table size for at most V codes a band; a band
         * whose cuckoo insertion fails grows it, which this does not foresee. */
        t.table_bits = nmt_lsh_first_table_bits(m->vocab);
        /* Packed buckets (nmt_lsh_pack_vectors): a bucket of n words takes
         * ceil(n / 8) vectors, so a band's V words in at most V buckets
         * take at most V / 8 + V. */
        if (m->vocab <= 65535)
            packed = (int64_t)c->w * ((int64_t)m->vocab / 8 + 1 + m->vocab);
    }
    const shrink_layout l = layout_shrink(m, shrink, &policy, &t, packed);
    return l.total + (has_side(shrink, &policy) ? nmt_cuda_ctx_device_bytes() : 0);
}

/* LSH: codes, lists and logits over the lists, then softmax + top-K. */
static nmt_status shrunk_layer(nmt_cuda_model *m, const float *feed, int32_t n_rows,
                               int32_t beam, const int32_t *live, const int32_t *excluded,
                               int32_t n_excluded, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_output_part *p = &m->out;
    void *stream = m->stream;
    const int32_t H = m->hidden, V = m->vocab, ld = m->dec.feed_ld;
    const nmt_device_weights *w = &m->w;
    const nmt_shrink *s = &p->shrink;
    const nmt_cand_lists lists = {
        .words = p->cand,
        .ld = V,
        .count = p->cand_count,
        .rows_per_group = nmt_shrink_rows_per_group(s, n_rows, beam),
    };
    const int32_t dense = dense_prefix(&p->shrink, &p->policy);
    NMT_TRY(nmt_cuda_lsh_codes(n_rows, feed, ld, &p->lsh, p->lsh_codes, stream, err));
    if (dense > 0) {
        /* The prefix's GEMM needs only the feeds: on the side stream, beside
         * the lists (a latency-bound kernel with issue slots to spare), joined
         * before the softmax; its columns [0, dense) are not the gathered
         * kernel's. Forked after the codes and ranked below the model's
         * stream, so the list builder's blocks are placed first and the GEMM
         * fills the room they leave (forked first, its blocks would hold the
         * SMs and delay the builder's last blocks). */
        NMT_TRY(nmt_cuda_side_fork(m, &p->side, err));
        NMT_TRY(nmt_cuda_model_gemm_on(m, p->side.ctx, NMT_GEMM_SITE_OUTPUT_SIDE, n_rows, dense,
                                       H, feed, ld, NULL, &m->gw.out, w->out_b, p->logits, V,
                                       err));
        NMT_TRY(nmt_cuda_side_done(&p->side, err));
    }
    const int direct = s->lists == NMT_LSH_LISTS_DIRECT ||
                       (s->lists == NMT_LSH_LISTS_AUTO &&
                        n_rows >= p->policy.direct_lists_min_rows);
    if (direct) { /* lookup and lists in one launch */
        NMT_TRY(nmt_cuda_lsh_candidates_direct(n_rows, p->lsh_codes, live, &p->lsh,
                                               s->threshold, s->n_always, lists,
                                               p->direct_workspace, p->direct_workspace_bytes,
                                               stream, err));
    } else {
        const nmt_lsh_lookup lookup = n_rows >= p->policy.naive_lookup_min_rows
                                          ? NMT_LSH_LOOKUP_NAIVE
                                          : NMT_LSH_LOOKUP_WARP;
        NMT_TRY(nmt_cuda_lsh_hits(n_rows, p->lsh_codes, live, &p->lsh, lookup, p->lsh_hits,
                                  stream, err));
        NMT_TRY(nmt_cuda_lsh_candidates(n_rows, V, p->lsh_hits, s->threshold, s->n_always,
                                        lists, p->cand_workspace, p->cand_workspace_bytes,
                                        stream, err));
    }
    const nmt_lsh_logits_args logits_args = {
        .n_rows = n_rows,
        .dim = H,
        .x = feed,
        .ldx = ld,
        .out_w = w->out_w,
        .out_b = w->out_b,
        .lists = lists,
        .first = dense,
        .logits = p->logits,
        .ld = V,
    };
    NMT_TRY(nmt_cuda_lsh_logits(&logits_args, V, NMT_LSH_LOGITS_AUTO, stream, err));
    if (dense > 0)
        NMT_TRY(nmt_cuda_side_join(m, &p->side, err));
    NMT_TRY(nmt_cuda_softmax_topk_candidates(n_rows, p->logits, V, lists, V, 2 * beam, excluded,
                                             n_excluded, p->top_values, p->top_ids, p->lse,
                                             p->topk_workspace, p->topk_workspace_bytes, stream,
                                             err));
cleanup:
    return status;
}

size_t nmt_cuda_output_fused_bytes(const nmt_cuda_model *m)
{
    return nmt_cuda_output_topk_workspace_size(m->max_rows, m->vocab, 2 * m->beam);
}

nmt_status nmt_cuda_model_set_fused_output(nmt_cuda_model *m, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_output_part *p = &m->out;
    if (p->fused_workspace || !m->half16.on) /* fp32: the layer never fuses */
        return NMT_STATUS_OK;
    const size_t bytes = nmt_cuda_output_fused_bytes(m);
    NMT_CUDA_TRY(cudaMalloc(&p->fused_workspace, bytes));
    p->fused_workspace_bytes = bytes;
cleanup:
    return status;
}

/* The words a dense layer scores: every word, TOP's first n_always (the
 * specials, then the most frequent words: a smaller dense layer with no
 * list to build or map, as in the paper's baseline; the same result as the
 * CPU's candidates path with no hits), or 0 for LSH's lists. */
static int32_t dense_cols(const nmt_cuda_model *m)
{
    const nmt_cuda_output_part *p = &m->out;
    if (!p->has_shrink)
        return m->vocab;
    return p->shrink.mode == NMT_SHRINK_TOP ? p->shrink.n_always : 0;
}

uint16_t *nmt_cuda_model_feed16(const nmt_cuda_model *m, int32_t rows)
{
    const int32_t H = m->hidden, cols = dense_cols(m);
    if (!m->half16.on || m->half16.shadows_off || cols == 0 ||
        nmt_cuda_model_skinny_runs(m, m->ctx, NMT_GEMM_SITE_DECODER, rows, H, 2 * H,
                                   &m->gw.attn_c))
        return NULL;
    const int fused = m->out.fused_workspace && cols == m->vocab;
    return fused || nmt_cuda_model_gemm_reads_x16(m, NMT_GEMM_SITE_OUTPUT, rows, cols, H,
                                                  &m->gw.out)
               ? m->half16.feed16
               : NULL;
}

/* The fused layer's call over the full vocabulary (its 16-bit W_out and the
 * activations rounded as the unfused GEMM rounds them: feed16, the step's
 * shadow, else rounded here), or *runs 0 where it does not run. The logits
 * keep logits_word's column only. */
static nmt_status fused_layer(nmt_cuda_model *m, const float *feed, const uint16_t *feed16,
                              int32_t n_rows, int32_t beam, const int32_t *excluded,
                              int32_t n_excluded, int32_t logits_word, int *runs, nmt_error *err)
{
    nmt_cuda_output_part *p = &m->out;
    const nmt_cuda_weight *w = &m->gw.out;
    void *scratch = m->half16.on ? m->half16.scratch[NMT_GEMM_SITE_OUTPUT] : NULL;
    const void *x16 = feed16 ? (const void *)feed16 : scratch;
    const nmt_output_topk_args a = {
        .kind = m->half16.kind, .n_rows = n_rows, .vocab = m->vocab, .k = m->hidden,
        .x = (const uint16_t *)x16, .ldx = m->hidden, .w = (const uint16_t *)w->w16,
        .ldw = w->ld16, .bias = m->w.out_b, .top_k = 2 * beam, .excluded = excluded,
        .n_excluded = n_excluded, .top_values = p->top_values, .top_ids = p->top_ids,
        .lse = p->lse, .keep = p->logits, .ld_keep = p->ld_logits, .keep_word = logits_word,
        .workspace = p->fused_workspace, .workspace_bytes = p->fused_workspace_bytes,
    };
    *runs = p->fused_workspace && x16 && w->w16 && !p->has_shrink && logits_word >= 0 &&
            logits_word < m->vocab && nmt_cuda_output_topk_supports(&a);
    if (!*runs)
        return NMT_STATUS_OK;
    if (!feed16) {
        const nmt_status status = nmt_cuda_to_half(m->ctx, m->half16.kind, n_rows, m->hidden,
                                                   feed, m->dec.feed_ld, scratch, err);
        if (status != NMT_STATUS_OK)
            return status;
    }
    return nmt_cuda_output_topk(&a, m->stream, err);
}

nmt_status nmt_cuda_output_layer(nmt_cuda_model *m, int buf, int32_t n_rows, int32_t beam,
                                 const nmt_cuda_rows *rows, const int32_t *excluded,
                                 int32_t n_excluded, int32_t logits_word, nmt_cuda_scores *out,
                                 nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_output_part *p = &m->out;
    void *stream = m->stream;
    const int32_t H = m->hidden, V = m->vocab;
    if (n_rows < 1 || n_rows > m->max_rows || beam < 1 || beam > m->beam ||
        (buf != 0 && buf != 1) || !rows || !out)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda output layer: %d rows (max %d), beam %d (max %d), buffer %d",
                             n_rows, m->max_rows, beam, m->beam, buf);
    const float *feed = m->dec.feed[buf];
    const nmt_device_weights *w = &m->w;
    const int32_t cols = dense_cols(m); /* full: V; TOP: n_always; LSH: 0 */
    const int32_t ld = cols > 0 ? p->ld_logits : V;
    /* The feed's shadow, where the step before wrote it for these rows. */
    const uint16_t *feed16 = m->dec.feed16_buf == buf && m->dec.feed16_rows == n_rows
                                 ? nmt_cuda_model_feed16(m, n_rows)
                                 : NULL;
    int fused = 0;
    if (cols == V)
        NMT_TRY(fused_layer(m, feed, feed16, n_rows, beam, excluded, n_excluded, logits_word,
                            &fused, err));
    if (fused) {
        /* top-K, lse and logits_word's logits are in place */
    } else if (cols > 0) {
        NMT_TRY(nmt_cuda_model_gemm(m, NMT_GEMM_SITE_OUTPUT, n_rows, cols, H, feed,
                                    m->dec.feed_ld, feed16, &m->gw.out, w->out_b, p->logits, ld,
                                    err));
        const nmt_softmax_topk_variant topk = nmt_cuda_ctx_batch_invariant(m->ctx)
                                                  ? NMT_SOFTMAX_TOPK_AUTO_INVARIANT
                                                  : NMT_SOFTMAX_TOPK_AUTO;
        NMT_TRY(nmt_cuda_softmax_topk_variant(n_rows, cols, p->logits, ld, 2 * beam, excluded,
                                              n_excluded, p->top_values, p->top_ids, p->lse,
                                              p->topk_workspace, p->topk_workspace_bytes, topk,
                                              stream, err));
    } else {
        NMT_TRY(shrunk_layer(m, feed, n_rows, beam, rows->live, excluded, n_excluded, err));
    }
    NMT_TRY(nmt_cuda_decoder_join(m, err));
    *out = (nmt_cuda_scores){p->top_values, p->top_ids, p->logits, ld, p->lse,
                             m->dec.attn_argmax};
cleanup:
    return status;
}
