/* lstm_skinny.cu: one LSTM time step of a few rows in one launch
 * (kernels/lstm_cell.h, nmt_cuda_lstm_skinny): the recurrent product and
 * the cell, for the encoder's step of a batch of up to NMT_SKINNY_MAX_ROWS
 * sentences, which was a GEMM and a cell launch a step (a quarter of a
 * batch-1 sentence's kernel time).
 *
 * A warp owns hidden unit j: its four gate rows of w (j, H + j, 2H + j,
 * 3H + j) are the OUT = 4 rows of skinny::lane_dots, so after
 * skinny::warp_totals lane g * 8 + r holds gate g of row r; lanes r < rows
 * collect their row's four gates by shuffles and run the cell
 * (lstm_device.cuh) as nmt_cuda_lstm_cell does, adding in the same order,
 * so the result is the skinny GEMM's (without a k split) followed by the
 * cell's, bit for bit.
 * Writing h while other blocks still read x would race, so x must not
 * overlap h_out / h_out2 / c_out (the encoder reads step t - 1, writes t).
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

template <bool VEC>
static __global__ void __launch_bounds__(kThreads)
    lstm_skinny_kernel(int hidden, int k, const skinny_steps steps)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    const nmt_lstm_skinny_step &st = steps.s[blockIdx.y];
    const int lane = threadIdx.x % kWarpSize;
    const int j = blockIdx.x * kWarps + threadIdx.x / kWarpSize;
    if (j >= hidden)
        return;
    const float *rows[4];
#pragma unroll
    for (int g = 0; g < 4; g++)
        rows[g] = st.w + (int64_t)(g * hidden + j) * st.ldw;
    float acc[4][skinny::kMaxRows] = {};
    skinny::lane_dots<4, kUnroll, VEC>(st.n_dot, k, st.x, st.ldx, NMT_SKINNY_X_F32, rows, acc);
    const float total = skinny::warp_totals<4>(acc); /* gate lane / 8, row lane % 8 */
    const int r = lane % skinny::kMaxRows;
    float dot[4];
#pragma unroll
    for (int g = 0; g < 4; g++)
        dot[g] = __shfl_sync(kFullMask, total, g * skinny::kMaxRows + r);
    if (lane >= st.n_rows) /* lanes < kMaxRows only: n_rows <= kMaxRows */
        return;
    const float *gx = st.gates_x + (int64_t)r * st.ld_x;
    float a[4];
#pragma unroll
    for (int g = 0; g < 4; g++) {
        a[g] = __ldg(&gx[g * hidden + j]) + (st.bias ? __ldg(&st.bias[g * hidden + j]) : 0.0f);
        a[g] += r < st.n_dot ? dot[g] : 0.0f; /* the cell's gates_h: zero past n_dot */
    }
    lstm_finish(a, r, j, hidden, st.c_prev, st.c_out, st.h_out, st.ld_h, st.h_out2, st.ld_h2);
}

/* NMT_STATUS_OK when st is a step the kernel takes; *vec: its vector path. */
static nmt_status check_step(const nmt_lstm_skinny_step *st, int32_t hidden, int32_t k,
                             bool *vec, nmt_error *err)
{
    NMT_ARG_CHECK(st->n_rows >= 1 && st->n_rows <= NMT_SKINNY_MAX_ROWS && st->n_dot >= 0 &&
                  st->n_dot <= st->n_rows && st->ldw >= k);
    NMT_ARG_CHECK(st->n_dot == 0 || (st->ldx >= k && st->x));
    NMT_ARG_CHECK(st->ld_x >= 4 * hidden && st->ld_h >= hidden &&
                  (!st->h_out2 || st->ld_h2 >= hidden));
    NMT_ARG_CHECK(st->w && st->gates_x && st->c_prev && st->c_out && st->h_out);
    *vec = *vec && k % skinny::kVec == 0 && st->ldw % skinny::kVec == 0 &&
           st->ldx % skinny::kVec == 0 &&
           (uintptr_t)st->w % (skinny::kVec * sizeof(float)) == 0 && (uintptr_t)st->x % 16 == 0;
    return NMT_STATUS_OK;
}

extern "C" nmt_status nmt_cuda_lstm_skinny_steps(nmt_cuda_ctx *ctx, int32_t hidden, int32_t k,
                                                 const nmt_lstm_skinny_step *steps,
                                                 int n_steps, nmt_error *err)
{
    NMT_ARG_CHECK(ctx && hidden >= 1 && k >= 1 && steps && n_steps >= 1 &&
                  n_steps <= NMT_LSTM_SKINNY_MAX_STEPS);
    skinny_steps all;
    bool vec = true;
    for (int i = 0; i < n_steps; i++) {
        const nmt_status status = check_step(&steps[i], hidden, k, &vec, err);
        if (status != NMT_STATUS_OK)
            return status;
        all.s[i] = steps[i];
    }
    const dim3 grid((unsigned)((hidden + kWarps - 1) / kWarps), (unsigned)n_steps);
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    if (vec)
        nmt_launch_pdl(lstm_skinny_kernel<true>, grid, kThreads, 0, stream, hidden, k, all);
    else
        nmt_launch_pdl(lstm_skinny_kernel<false>, grid, kThreads, 0, stream, hidden, k, all);
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
    return nmt_cuda_lstm_skinny_steps(ctx, hidden, k, &step, 1, err);
}
