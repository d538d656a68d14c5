/* lstm_skinny.cu: one LSTM time step of a few rows in one launch
 * (kernels/lstm_cell.h, nmt_cuda_lstm_skinny_steps): the product and the
 * cell, for the encoder's step of a batch of up to NMT_SKINNY_MAX_ROWS
 * sentences (the recurrent product, beside its input GEMM's gates) and for
 * a decoder layer at up to that many rows (the whole product), each of
 * which was a GEMM and a cell launch.
 *
 * A warp owns hidden unit j: its four gate rows of w (j, H + j, 2H + j,
 * 3H + j) are the OUT = 4 rows of skinny::lane_dots, so after
 * skinny::warp_totals lane g * 8 + r holds gate g of row r; lanes r < rows
 * collect their row's four gates by shuffles and run the cell
 * (lstm_device.cuh) as nmt_cuda_lstm_cell does, adding in the same order,
 * so the result is the skinny GEMM's (with the same k split, weights and
 * rounding) followed by the cell's, bit for bit.
 * Writing h while other blocks still read x would race, so x must not
 * overlap h_out / h_out2 / c_out (the encoder reads step t - 1, writes t;
 * the decoder keeps the h it writes apart from its GEMM input rows).
 * A launch may carry two independent steps (blockIdx.y): the encoder's two
 * directions of a layer at one time step, a launch instead of two. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "cuda_ctx.h"
#include "linear.h"
#include "lstm_cell.h"
#include "lstm_device.cuh"
#include "skinny_device.cuh"

static constexpr int kWarps = 4;
static constexpr int kThreads = kWarps * kWarpSize;
static constexpr int kUnroll = 1; /* four gate rows a lane already: registers */

/* The steps of one launch (blockIdx.y picks one): a bidirectional layer's
 * two directions, independent of each other. */
struct skinny_steps {
    nmt_lstm_skinny_step s[NMT_LSTM_SKINNY_MAX_STEPS];
};

/* SPLIT warps share hidden unit j (kWarps / SPLIT units a block), each
 * taking every SPLIT-th run of k as nmt_cuda_linear_skinny's split does;
 * the first adds the others' totals in order and runs the cell. */
template <bool VEC, int SPLIT, typename W>
static __global__ void __launch_bounds__(kThreads)
    lstm_skinny_kernel(int hidden, int k, int x_round, const skinny_steps steps)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    __shared__ float partial[SPLIT > 1 ? kWarps : 1][kWarpSize];
    const nmt_lstm_skinny_step &st = steps.s[blockIdx.y];
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const int part = warp % SPLIT;
    const int j = blockIdx.x * (kWarps / SPLIT) + warp / SPLIT;
    const bool live = j < hidden;
    float acc[4][skinny::kMaxRows] = {};
    if (live) {
        const W *rows[4];
#pragma unroll
        for (int g = 0; g < 4; g++)
            rows[g] = static_cast<const W *>(st.w) + (int64_t)(g * hidden + j) * st.ldw;
        skinny::lane_dots<4, kUnroll, VEC>(st.n_dot, k, st.x, st.ldx, x_round, rows, acc, part,
                                           SPLIT);
    }
    float total = skinny::warp_totals<4>(acc); /* gate lane / 8, row lane % 8 */
    if (!skinny::add_split_totals<SPLIT>(total, partial))
        return;
    if (!live)
        return;
    const int r = lane % skinny::kMaxRows;
    float dot[4];
#pragma unroll
    for (int g = 0; g < 4; g++)
        dot[g] = __shfl_sync(kFullMask, total, g * skinny::kMaxRows + r);
    if (lane >= st.n_rows) /* lanes < kMaxRows only: n_rows <= kMaxRows */
        return;
    float a[4];
    if (st.gates_x) { /* the encoder: input gates + bias, then the recurrent product */
        const float *gx = st.gates_x + (int64_t)r * st.ld_x;
#pragma unroll
        for (int g = 0; g < 4; g++) {
            a[g] = __ldg(&gx[g * hidden + j]) + (st.bias ? __ldg(&st.bias[g * hidden + j]) : 0.0f);
            a[g] += r < st.n_dot ? dot[g] : 0.0f; /* the cell's gates_h: zero past n_dot */
        }
    } else { /* the whole product is the cell's gates_x: gates_x + bias */
#pragma unroll
        for (int g = 0; g < 4; g++) {
            a[g] = r < st.n_dot ? dot[g] : 0.0f;
            if (st.bias)
                a[g] += __ldg(&st.bias[g * hidden + j]);
        }
    }
    lstm_finish(a, r, r, j, hidden, st.c_prev, st.c_out, st.h_out, st.ld_h, st.h_out2, st.ld_h2);
}

/* NMT_STATUS_OK when st is a step the kernel takes; *vec: its vector path. */
static nmt_status check_step(const nmt_lstm_skinny_step *st, int32_t hidden, int32_t k,
                             nmt_weight_type w_type, bool *vec, nmt_error *err)
{
    NMT_ARG_CHECK(st->n_rows >= 1 && st->n_rows <= NMT_SKINNY_MAX_ROWS && st->n_dot >= 0 &&
                  st->n_dot <= st->n_rows && st->ldw >= k);
    NMT_ARG_CHECK(st->n_dot == 0 || (st->ldx >= k && st->x));
    NMT_ARG_CHECK((!st->gates_x || st->ld_x >= 4 * hidden) && st->ld_h >= hidden &&
                  (!st->h_out2 || st->ld_h2 >= hidden));
    NMT_ARG_CHECK(st->w && st->c_out && st->h_out); /* c_prev NULL: zero */
    *vec = *vec && skinny::vector_path(k, st->ldw, st->ldx, st->w, w_type, st->x);
    return NMT_STATUS_OK;
}

template <bool VEC, typename W>
static void launch_split(int split, dim3 grid, cudaStream_t stream, int hidden, int k,
                         int x_round, const skinny_steps &all)
{
    if (split == 4)
        nmt_launch_pdl(lstm_skinny_kernel<VEC, 4, W>, grid, kThreads, 0, stream, hidden, k,
                       x_round, all);
    else if (split == 2)
        nmt_launch_pdl(lstm_skinny_kernel<VEC, 2, W>, grid, kThreads, 0, stream, hidden, k,
                       x_round, all);
    else
        nmt_launch_pdl(lstm_skinny_kernel<VEC, 1, W>, grid, kThreads, 0, stream, hidden, k,
                       x_round, all);
}

template <typename W>
static void launch_form(bool vec, int split, dim3 grid, cudaStream_t stream, int hidden, int k,
                        int x_round, const skinny_steps &all)
{
    if (vec)
        launch_split<true, W>(split, grid, stream, hidden, k, x_round, all);
    else
        launch_split<false, W>(split, grid, stream, hidden, k, x_round, all);
}

extern "C" nmt_status nmt_cuda_lstm_skinny_steps(nmt_cuda_ctx *ctx, int32_t hidden, int32_t k,
                                                 const nmt_lstm_skinny_step *steps,
                                                 int n_steps, const nmt_lstm_skinny_form *form,
                                                 nmt_error *err)
{
    NMT_ARG_CHECK(ctx && hidden >= 1 && k >= 1 && steps && n_steps >= 1 &&
                  n_steps <= NMT_LSTM_SKINNY_MAX_STEPS);
    const nmt_lstm_skinny_form f = form ? *form : nmt_lstm_skinny_form{NMT_WEIGHT_F32,
                                                                       NMT_SKINNY_X_F32, 1};
    NMT_ARG_CHECK(f.w_type >= NMT_WEIGHT_F32 && f.w_type <= NMT_WEIGHT_FP16 &&
                  f.x_round >= NMT_SKINNY_X_F32 && f.x_round <= NMT_SKINNY_X_FP16 &&
                  (f.split == 1 || f.split == 2 || f.split == 4));
    skinny_steps all;
    bool vec = true;
    for (int i = 0; i < n_steps; i++) {
        const nmt_status status = check_step(&steps[i], hidden, k, f.w_type, &vec, err);
        if (status != NMT_STATUS_OK)
            return status;
        all.s[i] = steps[i];
    }
    const int units = kWarps / f.split; /* hidden units a block */
    const dim3 grid((unsigned)((hidden + units - 1) / units), (unsigned)n_steps);
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    const int xr = (int)f.x_round;
    switch (f.w_type) {
    case NMT_WEIGHT_F32:
        launch_form<float>(vec, f.split, grid, stream, hidden, k, xr, all);
        break;
    case NMT_WEIGHT_BF16:
        launch_form<__nv_bfloat16>(vec, f.split, grid, stream, hidden, k, xr, all);
        break;
    case NMT_WEIGHT_FP16:
        launch_form<__half>(vec, f.split, grid, stream, hidden, k, xr, all);
        break;
    }
    NMT_LAUNCH_RETURN("lstm_skinny_kernel");
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_lstm_skinny(nmt_cuda_ctx *ctx, int32_t n_rows, int32_t n_dot,
                                           int32_t hidden, int32_t k, const float *x,
                                           int32_t ldx, const float *w, int32_t ldw,
                                           const float *gates_x, int32_t ld_x,
                                           const float *bias, const float *c_prev,
                                           float *c_out, float *h_out, int32_t ld_h,
                                           float *h_out2, int32_t ld_h2, nmt_error *err)
{
    const nmt_lstm_skinny_step step = {n_rows, n_dot, x,     ldx,   w,    ldw,    gates_x,
                                       ld_x,   bias,  c_prev, c_out, h_out, ld_h, h_out2,
                                       ld_h2};
    return nmt_cuda_lstm_skinny_steps(ctx, hidden, k, &step, 1, NULL, err);
}
