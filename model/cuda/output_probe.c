/* output_probe.c: the shrunk output layer's recall probe (model/cuda/cuda_model.h),
 * on only under collect_stats 2 (--stats with timing) with shrinking: after
 * the shrunk layer of a step it scores the full vocabulary too, takes each
 * row's top-B words and counts the live rows whose B words all made its
 * candidate list (kernels/lsh.h, nmt_cuda_lsh_recall; the CPU twin is
 * model/cpu/output_layer.c's counters). Its buffers are its own, allocated
 * only when asked for, so the production layer carries none of it. */
#include "cuda_model_impl.h"

#include "cuda_check.h"
#include "linear.h"
#include "lsh.h"
#include "softmax_topk.h"

static void layout_probe(nmt_cuda_model *m, nmt_carver *c)
{
    const size_t R = (size_t)m->max_rows, V = (size_t)m->vocab, B = (size_t)m->beam;
    nmt_cuda_probe_part *p = &m->probe;
    p->full_logits = (float *)nmt_carve(c, R * V * sizeof(float));
    p->full_top_values = (float *)nmt_carve(c, R * B * sizeof(float));
    p->full_top_ids = (int32_t *)nmt_carve(c, R * B * sizeof(int32_t));
    p->counts = (unsigned long long *)nmt_carve(c, 3 * sizeof(unsigned long long));
}

nmt_status nmt_cuda_probe_part_create(nmt_cuda_model *m, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (m->probe.arena)
        return NMT_STATUS_OK;
    NMT_TRY(nmt_cuda_arena_carve(&m->probe.arena, layout_probe, m, err));
    NMT_CUDA_TRY(cudaMemsetAsync(m->probe.counts, 0, 3 * sizeof(unsigned long long),
                                 (cudaStream_t)m->stream));
cleanup:
    return status;
}

int nmt_cuda_output_probe_on(const nmt_cuda_model *m)
{
    return m->out.has_shrink && m->probe.arena != NULL;
}

nmt_status nmt_cuda_output_probe(nmt_cuda_model *m, int buf, int32_t n_rows, int32_t beam,
                                 const nmt_cuda_rows *rows, const int32_t *excluded,
                                 int32_t n_excluded, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t H = m->hidden, V = m->vocab;
    const nmt_cuda_output_part *out = &m->out;
    nmt_cuda_probe_part *p = &m->probe;
    if (!nmt_cuda_output_probe_on(m))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda output probe: needs shrinking and collect_stats");
    if (n_rows < 1 || n_rows > m->max_rows || beam < 1 || beam > m->beam ||
        (buf != 0 && buf != 1) || !rows)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda output probe: %d rows (max %d), beam %d, buffer %d", n_rows,
                             m->max_rows, beam, buf);
    NMT_TRY(nmt_cuda_linear(m->ctx, n_rows, V, H, m->dec.feed[buf], m->dec.feed_ld, m->w.out_w,
                            H, m->w.out_b, 0, p->full_logits, V, err));
    NMT_TRY(nmt_cuda_softmax_topk(n_rows, V, p->full_logits, V, beam, excluded, n_excluded,
                                  p->full_top_values, p->full_top_ids, NULL, out->topk_workspace,
                                  out->topk_workspace_bytes, m->stream, err));
    /* TOP: one list for every row (written by nmt_cuda_model_set_shrink). */
    const nmt_cand_lists lists = {
        .words = out->cand,
        .ld = V,
        .count = out->cand_count,
        .rows_per_group = out->shrink.mode == NMT_SHRINK_TOP
                              ? n_rows
                              : nmt_shrink_rows_per_group(&out->shrink, n_rows, beam),
    };
    NMT_TRY(nmt_cuda_lsh_recall(n_rows, rows->live, p->full_top_ids, beam, lists, p->counts,
                                m->stream, err));
cleanup:
    return status;
}

nmt_status nmt_cuda_output_probe_counts(const nmt_cuda_model *m, int64_t counts[3], int reset,
                                        nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    unsigned long long c[3] = {0, 0, 0};
    if (nmt_cuda_output_probe_on(m)) {
        NMT_TRY(nmt_cuda_ctx_activate(m->ctx, err));
        NMT_CUDA_TRY(cudaMemcpyAsync(c, m->probe.counts, sizeof c, cudaMemcpyDeviceToHost,
                                     (cudaStream_t)m->stream));
        if (reset)
            NMT_CUDA_TRY(cudaMemsetAsync(m->probe.counts, 0, sizeof c, (cudaStream_t)m->stream));
        NMT_CUDA_TRY(cudaStreamSynchronize((cudaStream_t)m->stream));
    }
    for (int i = 0; i < 3; i++)
        counts[i] = (int64_t)c[i];
cleanup:
    return status;
}
