/* encoder.cu: the model v1 encoder on the device for a whole batch
 * (model/cuda/cuda_model.h; the oracle is model/cpu/encoder.c).
 *
 * N-hot embedding of every token of the batch in one launch, straight into
 * the time-major layout (row t * n + i; the host built the CSR in that order,
 * padding rows empty). Then for each layer and direction: one GEMM over all
 * time steps for w_ih x + b_ih, and the recurrence. Batch-invariant, a batch
 * of at most NMT_SKINNY_MAX_ROWS sentences (batch 1) runs a layer's whole
 * recurrence, both directions, in one launch (nmt_cuda_lstm_recurrence: the
 * chain's sums) where it fits the device; otherwise per time step one
 * recurrent GEMM over the sentences still active at that step followed by
 * the LSTM cell. Without batch invariance, where up to NMT_SKINNY_MAX_ROWS
 * sentences are active, the two are one fused launch
 * (nmt_cuda_lstm_skinny_steps, its k split over warps), and a batch of at
 * most that many runs both directions in one launch a time step: faster
 * than the one-launch recurrence, whose sums are chains. The sentences are
 * sorted longest first, so the active ones at step t are the prefix
 * [0, active[t]).
 * - Forward: rows past a sentence's end are no longer touched, so its c and
 *   h (at t = len - 1) stay final; padding never enters.
 * - Backward: runs t = stride - 1 .. 0; sentence i starts at its own last
 *   token t = len_i - 1 with zero state: its recurrent gates are zeroed (the
 *   rows [active[t+1], active[t]) have no predecessor) and its c is still the
 *   zero it was set to before the direction began.
 * The top layer is copied to the sentence-major memory bank (zero past each
 * length), keys = memory W_a^T in one GEMM, and the decoder's slot-0 rows get
 * [fwd final; bwd final] of every layer.
 * Sentences joining a running search (continuous batching) set the input's
 * slot, mem_stride and dec_pos: their memory and keys go to their slots of
 * the search's bank and their initial state to their own decoder rows, and
 * nothing else of the search's state is touched. */
#include "cuda_model_impl.h"

#include "cuda_check.h"
#include "linear.h"
#include "lstm_cell.h"
#include "nhot.h"

#include <string.h>

static const int THREADS = 256;

static void layout_encoder(nmt_cuda_model *m, nmt_carver *c)
{
    const size_t N = (size_t)m->max_sentences, S = (size_t)m->max_src;
    const size_t E = (size_t)m->emb, H = (size_t)m->hidden, half = (size_t)m->half;
    const size_t f = sizeof(float);
    nmt_cuda_encoder_part *p = &m->enc;
    p->x = (float *)nmt_carve(c, S * N * E * f);
    p->out[0] = (float *)nmt_carve(c, S * N * H * f);
    p->out[1] = (float *)nmt_carve(c, S * N * H * f);
    p->gates_x = (float *)nmt_carve(c, S * N * 4 * half * f);
    const size_t pair_n = N < NMT_SKINNY_MAX_ROWS ? N : NMT_SKINNY_MAX_ROWS;
    p->gates_x_pair = (float *)nmt_carve(c, S * pair_n * 4 * half * f);
    p->gates_h = (float *)nmt_carve(c, N * 4 * half * f);
    p->c[0] = (float *)nmt_carve(c, N * half * f);
    p->c[1] = (float *)nmt_carve(c, N * half * f);
    p->memory = (float *)nmt_carve(c, N * S * H * f);
    p->keys = (float *)nmt_carve(c, N * S * H * f);
    for (int32_t l = 0; l < m->dec_layers; l++) {
        p->init_h[l] = (float *)nmt_carve(c, N * H * f);
        p->init_c[l] = (float *)nmt_carve(c, N * H * f);
    }
}

/* The arena and the side context's own workspace. */
size_t nmt_cuda_encoder_part_bytes(nmt_cuda_model *m)
{
    return nmt_cuda_arena_bytes(layout_encoder, m) + nmt_cuda_ctx_device_bytes();
}

nmt_status nmt_cuda_encoder_part_create(nmt_cuda_model *m, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_TRY(nmt_cuda_arena_carve(&m->enc.arena, layout_encoder, m, err));
    NMT_TRY(nmt_cuda_ctx_create_side(m->ctx, &m->enc.side_ctx, err));
cleanup:
    return status;
}

void *nmt_cuda_encoder_side_stream(const nmt_cuda_model *m)
{
    return nmt_cuda_ctx_stream(m->enc.side_ctx);
}

/* memory[slot_i, j, :] = j < len_i ? top[j * n + i, :] : 0 for j < stride, the
 * bank's rows mem_stride positions apart (slot NULL: slot_i = i); len_i is at
 * most top's time steps, so stride may exceed them. */
static __global__ void to_sentence_major(int32_t n, int32_t stride, int32_t hidden,
                                         const int32_t *src_len, const float *top,
                                         const int32_t *slot, int32_t mem_stride,
                                         float *memory)
{
    int64_t total = (int64_t)n * stride * hidden;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        int32_t d = (int32_t)(e % hidden);
        int64_t row = e / hidden;
        int32_t j = (int32_t)(row % stride), i = (int32_t)(row / stride);
        int64_t at = ((int64_t)(slot ? slot[i] : i) * mem_stride + j) * hidden + d;
        memory[at] = j < src_len[i] ? top[((int64_t)j * n + i) * hidden + d] : 0.0f;
    }
}

/* Decoder row dec_pos[i] * beam (slot 0; dec_pos NULL: i) of layer l =
 * [fwd h at len-1; bwd h at 0], c = [fwd c; bwd c] (the final running c of
 * each direction); h and c rows are hidden floats apart (the decoder's
 * h_last and c, or the side staging). */
static __global__ void encoder_finals(int32_t n, int32_t half, int32_t beam,
                                      const int32_t *src_len, const int32_t *dec_pos,
                                      const float *out, const float *c_fwd, const float *c_bwd,
                                      float *dec_h, float *dec_c)
{
    const int32_t hidden = 2 * half;
    int64_t total = (int64_t)n * hidden;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        int32_t i = (int32_t)(e / hidden), d = (int32_t)(e % hidden);
        /* (the side encode passes the slots as dec_pos, beam 1, the staging) */
        int64_t row = (int64_t)(dec_pos ? dec_pos[i] : i) * beam;
        int64_t dst = row * hidden + d;
        if (d < half) {
            int64_t t = src_len[i] - 1;
            dec_h[dst] = out[(t * n + i) * hidden + d];
            dec_c[dst] = c_fwd[(int64_t)i * half + d];
        } else {
            dec_h[dst] = out[(int64_t)i * hidden + d];
            dec_c[dst] = c_bwd[(int64_t)i * half + (d - half)];
        }
    }
}

/* The decoder rows a joining sentence starts from, in one row buffer (h:
 * the decoder's h_last, which the first step gathers; h and c rows hidden
 * floats apart). */
struct decoder_rows {
    float *h[NMT_MAX_LAYERS], *c[NMT_MAX_LAYERS];
    float *feed;
    int32_t feed_ld, layers;
};

/* Rows dec_pos[i] * beam + k (dec_pos NULL: i) of a row buffer: h and c
 * of slot 0 from the staging of slot[i] (a side encode's), zeros for the
 * other slots, every feed, and every row when slot is NULL (a whole batch:
 * one launch, where five memsets were five graph nodes in a row). */
static __global__ void set_decoder_rows(int32_t n, int32_t beam, int32_t hidden,
                                        const int32_t *slot, const int32_t *dec_pos,
                                        decoder_rows r, decoder_rows staged)
{
    int64_t total = (int64_t)n * beam * hidden;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        int32_t d = (int32_t)(e % hidden);
        int64_t q = e / hidden;
        int32_t k = (int32_t)(q % beam), i = (int32_t)(q / beam);
        int64_t row = (int64_t)(dec_pos ? dec_pos[i] : i) * beam + k;
        const int staged_row = slot && k == 0;
        int64_t from = staged_row ? (int64_t)slot[i] * hidden + d : 0;
        for (int32_t l = 0; l < r.layers; l++) {
            r.h[l][row * hidden + d] = staged_row ? staged.h[l][from] : 0.0f;
            r.c[l][row * hidden + d] = staged_row ? staged.c[l][from] : 0.0f;
        }
        r.feed[row * r.feed_ld + d] = 0.0f;
    }
}

/* Row buffer buf's pointers, and with staged the staging's. */
static decoder_rows rows_of(const nmt_cuda_model *m, int buf, int staged)
{
    decoder_rows r;
    memset(&r, 0, sizeof r);
    for (int32_t l = 0; l < m->dec_layers; l++) {
        r.h[l] = staged ? m->enc.init_h[l] : m->dec.h_last[l];
        r.c[l] = staged ? m->enc.init_c[l] : m->dec.c[buf][l];
    }
    r.feed = staged ? NULL : m->dec.feed[buf];
    r.feed_ld = m->dec.feed_ld;
    r.layers = m->dec_layers;
    return r;
}

static int grid_for(int64_t total)
{
    int64_t blocks = (total + THREADS - 1) / THREADS;
    if (blocks < 1)
        blocks = 1;
    return blocks > 65535 ? 65535 : (int)blocks;
}

/* A direction's time step number `step`: its t, the rows active at t, and
 * how many of them have a predecessor (n_rec; sentences are sorted longest
 * first, so both are prefixes). */
typedef struct enc_time {
    int32_t t, t_prev, active, n_rec;
} enc_time;

static enc_time time_of(const nmt_cuda_encoder_input *in, int reverse, int32_t step)
{
    const int32_t stride = in->src_stride;
    enc_time e;
    e.t = reverse ? stride - 1 - step : step;
    e.t_prev = reverse ? e.t + 1 : e.t - 1;
    e.active = in->active[e.t];
    const int32_t prev_active = e.t_prev >= 0 && e.t_prev < stride ? in->active[e.t_prev] : 0;
    e.n_rec = e.active < prev_active ? e.active : prev_active;
    return e;
}

/* The fused few-row step of a direction at time e (gates_x: its input
 * GEMM's output, rows t * n + i). */
static nmt_lstm_skinny_step fused_step(const nmt_cuda_model *m, const nmt_cuda_encoder_input *in,
                                       const nmt_lstm_weights *lstm, const float *gates_x,
                                       int reverse, enc_time e, float *out, float *c)
{
    const int32_t n = in->n_sentences, half = m->half, H = m->hidden, g = 4 * half;
    const int32_t col = reverse ? half : 0;
    const nmt_lstm_skinny_step st = {
        .n_rows = e.active,
        .n_dot = e.n_rec,
        .x = e.n_rec > 0 ? out + (int64_t)e.t_prev * n * H + col : NULL,
        .ldx = H,
        .w = lstm->w_hh,
        .ldw = half,
        .gates_x = gates_x + (int64_t)e.t * n * g,
        .ld_x = g,
        .bias = lstm->b_hh,
        .c_prev = c,
        .c_out = c,
        .h_out = out + (int64_t)e.t * n * H + col,
        .ld_h = H,
        .h_out2 = NULL,
        .ld_h2 = 0};
    return st;
}

/* One direction of one layer: writes h into out[t * n + i, col .. col + half)
 * and leaves the running c of every sentence in c (final once done). */
static nmt_status run_direction(nmt_cuda_model *m, nmt_cuda_ctx *ctx,
                                const nmt_cuda_encoder_input *in, const nmt_lstm_weights *lstm,
                                const nmt_cuda_weight *w_ih, const float *x, int32_t in_dim,
                                int reverse, float *out, float *c, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    const int32_t n = in->n_sentences, stride = in->src_stride, half = m->half, H = m->hidden;
    const int32_t g = 4 * half, col = reverse ? half : 0;
    NMT_TRY(nmt_cuda_model_gemm_on(m, ctx, NMT_GEMM_SITE_ENCODER, stride * n, g, in_dim, x,
                                   in_dim, NULL, w_ih, lstm->b_ih, m->enc.gates_x, g, err));
    NMT_CUDA_TRY(cudaMemsetAsync(c, 0, sizeof(float) * (size_t)n * half, stream));
    for (int32_t step = 0; step < stride; step++) {
        const enc_time e = time_of(in, reverse, step);
        if (e.active <= NMT_SKINNY_MAX_ROWS && !nmt_cuda_ctx_batch_invariant(ctx)) {
            /* the batch's tail: one launch (its sums are the skinny kernel's) */
            const nmt_lstm_skinny_step st =
                fused_step(m, in, lstm, m->enc.gates_x, reverse, e, out, c);
            NMT_TRY(nmt_cuda_lstm_skinny_steps(ctx, half, half, &st, 1, NULL, err));
            continue;
        }
        if (e.n_rec > 0)
            NMT_TRY(nmt_cuda_linear(ctx, e.n_rec, g, half, out + (int64_t)e.t_prev * n * H + col,
                                    H, lstm->w_hh, half, NULL, 0, m->enc.gates_h, g, err));
        if (e.n_rec < e.active)
            NMT_CUDA_TRY(cudaMemsetAsync(m->enc.gates_h + (int64_t)e.n_rec * g, 0,
                                         sizeof(float) * (size_t)(e.active - e.n_rec) * g,
                                         stream));
        const nmt_lstm_cell_args cell = {
            .n_rows = e.active, .hidden = half, .gates_x = m->enc.gates_x + (int64_t)e.t * n * g,
            .ld_x = g, .gates_h = m->enc.gates_h, .bias = lstm->b_hh, .c_prev = c, .c_out = c,
            .h_out = out + (int64_t)e.t * n * H + col, .ld_h = H};
        NMT_TRY(nmt_cuda_lstm_cell(&cell, stream, err));
    }
cleanup:
    return status;
}

/* Both directions of layer l for a batch of up to NMT_SKINNY_MAX_ROWS
 * sentences (a batch-1 encoder): their input GEMMs, then a launch a time
 * step carrying both directions' fused steps (forward t, backward
 * stride - 1 - t), half the launches of run_direction twice and the same
 * results. uniform (every sentence of the stride's length): every row
 * starts at a direction's first step, which reads a zero cell (c_prev
 * NULL) instead of a cleared one. */
static nmt_status run_layer_paired(nmt_cuda_model *m, nmt_cuda_ctx *ctx,
                                   const nmt_cuda_encoder_input *in, int32_t l, const float *x,
                                   int32_t in_dim, float *out, int uniform, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    const int32_t n = in->n_sentences, stride = in->src_stride, half = m->half, g = 4 * half;
    const nmt_lstm_weights *lstm[2] = {&m->w.enc_fwd[l], &m->w.enc_bwd[l]};
    float *gates_x[2] = {m->enc.gates_x, m->enc.gates_x_pair};
    for (int d = 0; d < 2; d++) {
        NMT_TRY(nmt_cuda_model_gemm_on(m, ctx, NMT_GEMM_SITE_ENCODER, stride * n, g, in_dim, x,
                                       in_dim, NULL, &m->gw.enc_ih[d][l], lstm[d]->b_ih,
                                       gates_x[d], g, err));
        if (!uniform)
            NMT_CUDA_TRY(cudaMemsetAsync(m->enc.c[d], 0, sizeof(float) * (size_t)n * half,
                                         stream));
    }
    for (int32_t step = 0; step < stride; step++) {
        nmt_lstm_skinny_step st[2];
        for (int d = 0; d < 2; d++) {
            st[d] = fused_step(m, in, lstm[d], gates_x[d], d, time_of(in, d, step), out,
                               m->enc.c[d]);
            if (uniform && step == 0)
                st[d].c_prev = NULL;
        }
        NMT_TRY(nmt_cuda_lstm_skinny_steps(ctx, half, half, st, 2, NULL, err));
    }
cleanup:
    return status;
}

/* Layer l's recurrence as nmt_cuda_lstm_recurrence takes it (out and the
 * input GEMMs' outputs as run_layer_recurrent fills them). */
static nmt_lstm_recurrence recurrence_of(const nmt_cuda_model *m, const nmt_cuda_encoder_input *in,
                                        int32_t l, float *out)
{
    const nmt_lstm_weights *lstm[2] = {&m->w.enc_fwd[l], &m->w.enc_bwd[l]};
    nmt_lstm_recurrence rec = {.n = in->n_sentences, .stride = in->src_stride,
                               .half = m->half, .src_len = in->src_len, .out = out};
    for (int d = 0; d < 2; d++) {
        rec.gates_x[d] = d ? m->enc.gates_x_pair : m->enc.gates_x;
        rec.w_hh[d] = lstm[d]->w_hh;
        rec.b_hh[d] = lstm[d]->b_hh;
        rec.c_final[d] = m->enc.c[d];
    }
    return rec;
}

static int recurrence_fits(const nmt_cuda_model *m, const nmt_cuda_encoder_input *in, int32_t l)
{
    const nmt_lstm_recurrence rec = recurrence_of(m, in, l, NULL);
    return nmt_cuda_lstm_recurrence_fits(&rec);
}

/* Both directions of layer l for a batch of up to NMT_SKINNY_MAX_ROWS
 * sentences in one launch after their input GEMMs (nmt_cuda_lstm_recurrence:
 * the chain's sums, so the bits of run_direction's invariant steps). */
static nmt_status run_layer_recurrent(nmt_cuda_model *m, nmt_cuda_ctx *ctx,
                                      const nmt_cuda_encoder_input *in, int32_t l,
                                      const float *x, int32_t in_dim, float *out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t g = 4 * m->half;
    const nmt_lstm_recurrence rec = recurrence_of(m, in, l, out);
    for (int d = 0; d < 2; d++)
        NMT_TRY(nmt_cuda_model_gemm_on(m, ctx, NMT_GEMM_SITE_ENCODER, rec.stride * rec.n, g,
                                       in_dim, x, in_dim, NULL, &m->gw.enc_ih[d][l],
                                       d ? m->w.enc_bwd[l].b_ih : m->w.enc_fwd[l].b_ih,
                                       (float *)rec.gates_x[d], g, err));
    NMT_TRY(nmt_cuda_lstm_recurrence(&rec, nmt_cuda_ctx_stream(ctx), err));
cleanup:
    return status;
}

nmt_status nmt_cuda_encode(nmt_cuda_model *m, int buf, const nmt_cuda_encoder_input *in,
                           nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_cuda_ctx *ctx = in->side ? m->enc.side_ctx : m->ctx;
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    const nmt_model *model = m->model;
    const int32_t n = in->n_sentences, stride = in->src_stride, H = m->hidden;
    const int32_t E = m->emb, beam = in->beam;
    const int64_t rows = (int64_t)stride * n, dec_rows = (int64_t)n * beam;
    const int init = model->hp.dec_init_from_encoder;
    const float *x = m->enc.x;
    int32_t in_dim = E;
    float *top = NULL;
    const int32_t mem_stride = in->mem_stride > 0 ? in->mem_stride : stride;
    if (n < 1 || n > m->max_sentences || stride < 1 || stride > m->max_src || beam < 1 ||
        beam > m->beam || in->active[0] != n || (buf != 0 && buf != 1) ||
        mem_stride < stride || mem_stride > m->max_src || (in->side && !in->slot))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda encode: %d sentences, stride %d (bank %d), beam %d, "
                             "active[0] %d", n, stride, mem_stride, beam, in->active[0]);

    /* Every sentence as long as the longest: no padding rows to keep finite,
     * and every row of a direction starts at its first step (c_prev NULL). */
    const int uniform = in->active[stride - 1] == n;
    NMT_TRY(nmt_cuda_nhot_lookup((int32_t)rows, E, model->hp.src_rows, in->row_ptr, in->cols,
                                 in->values, m->w.src_embedding, m->enc.x, stream, err));
    if (in->side) {
        /* The rows are placed later (nmt_cuda_encoder_place); zero staging
         * stands for a model without encoder-initialized state. */
        if (!init)
            for (int32_t l = 0; l < m->dec_layers; l++) {
                NMT_CUDA_TRY(cudaMemsetAsync(m->enc.init_h[l], 0,
                                             sizeof(float) * (size_t)m->max_sentences * H, stream));
                NMT_CUDA_TRY(cudaMemsetAsync(m->enc.init_c[l], 0,
                                             sizeof(float) * (size_t)m->max_sentences * H, stream));
            }
    } else {
        const decoder_rows none = rows_of(m, buf, 1);
        set_decoder_rows<<<grid_for(dec_rows * H), THREADS, 0, stream>>>(
            n, beam, H, NULL, in->dec_pos, rows_of(m, buf, 0), none);
        NMT_LAUNCH_TRY("set_decoder_rows");
    }

    for (int32_t l = 0; l < m->enc_layers; l++) {
        float *out = m->enc.out[l % 2];
        /* Padding rows are never written by a direction: keep them finite. */
        if (!uniform)
            NMT_CUDA_TRY(cudaMemsetAsync(out, 0, sizeof(float) * rows * H, stream));
        if (nmt_cuda_ctx_batch_invariant(ctx) && recurrence_fits(m, in, l)) {
            NMT_TRY(run_layer_recurrent(m, ctx, in, l, x, in_dim, out, err));
        } else if (n <= NMT_SKINNY_MAX_ROWS && !nmt_cuda_ctx_batch_invariant(ctx)) {
            NMT_TRY(run_layer_paired(m, ctx, in, l, x, in_dim, out, uniform, err));
        } else {
            NMT_TRY(run_direction(m, ctx, in, &m->w.enc_fwd[l], &m->gw.enc_ih[0][l], x, in_dim,
                                  0, out, m->enc.c[0], err));
            NMT_TRY(run_direction(m, ctx, in, &m->w.enc_bwd[l], &m->gw.enc_ih[1][l], x, in_dim,
                                  1, out, m->enc.c[1], err));
        }
        if (init && in->side) {
            encoder_finals<<<grid_for((int64_t)n * H), THREADS, 0, stream>>>(
                n, m->half, 1, in->src_len, in->slot, out, m->enc.c[0], m->enc.c[1],
                m->enc.init_h[l], m->enc.init_c[l]);
            NMT_LAUNCH_TRY("encoder_finals");
        } else if (init) {
            encoder_finals<<<grid_for((int64_t)n * H), THREADS, 0, stream>>>(
                n, m->half, beam, in->src_len, in->dec_pos, out, m->enc.c[0], m->enc.c[1],
                m->dec.h_last[l], m->dec.c[buf][l]);
            NMT_LAUNCH_TRY("encoder_finals");
        }
        x = out;
        in_dim = H;
        top = out;
    }
    if (!in->slot) {
        /* Sentence i at i * mem_stride, zeros past its length (a bank wider
         * than the batch's longest: the search's octaves, beam_search.c). */
        const int64_t bank_rows = (int64_t)n * mem_stride;
        to_sentence_major<<<grid_for(bank_rows * H), THREADS, 0, stream>>>(
            n, mem_stride, H, in->src_len, top, NULL, mem_stride, m->enc.memory);
        NMT_LAUNCH_TRY("to_sentence_major");
        /* keys[i, j] = W_a m_j; zero rows of memory give zero keys (no bias). */
        NMT_TRY(nmt_cuda_model_gemm_on(m, ctx, NMT_GEMM_SITE_ENCODER, (int32_t)bank_rows, H, H,
                                       m->enc.memory, H, NULL, &m->gw.attn_a, NULL, m->enc.keys,
                                       H, err));
    } else {
        /* Joining sentences go to their slots of the running search's bank:
         * the keys are computed time-major (the same rows, so the same
         * products) into the free ping-pong buffer, then both are scattered. */
        float *keys_tm = m->enc.out[m->enc_layers % 2];
        NMT_TRY(nmt_cuda_model_gemm_on(m, ctx, NMT_GEMM_SITE_ENCODER, (int32_t)rows, H, H, top,
                                       H, NULL, &m->gw.attn_a, NULL, keys_tm, H, err));
        to_sentence_major<<<grid_for(rows * H), THREADS, 0, stream>>>(
            n, stride, H, in->src_len, top, in->slot, mem_stride, m->enc.memory);
        NMT_LAUNCH_TRY("to_sentence_major");
        to_sentence_major<<<grid_for(rows * H), THREADS, 0, stream>>>(
            n, stride, H, in->src_len, keys_tm, in->slot, mem_stride, m->enc.keys);
        NMT_LAUNCH_TRY("to_sentence_major");
    }
cleanup:
    return status;
}

nmt_status nmt_cuda_encoder_place(nmt_cuda_model *m, int buf, int32_t n, const int32_t *slot,
                                  const int32_t *dec_pos, int32_t beam, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t H = m->hidden;
    if (n < 1 || n > m->max_sentences || beam < 1 || beam > m->beam || (buf != 0 && buf != 1))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "cuda encoder place: %d sentences, beam %d, buffer %d", n, beam, buf);
    set_decoder_rows<<<grid_for((int64_t)n * beam * H), THREADS, 0, (cudaStream_t)m->stream>>>(
        n, beam, H, slot, dec_pos, rows_of(m, buf, 0), rows_of(m, buf, 1));
    NMT_LAUNCH_TRY("set_decoder_rows");
cleanup:
    return status;
}
