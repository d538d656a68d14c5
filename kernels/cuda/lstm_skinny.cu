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
 * overlap h_out / h_out2 / c_out (the encoder reads step t - 1, writes t). */
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

template <bool VEC>
static __global__ void __launch_bounds__(kThreads)
    lstm_skinny_kernel(int n_rows, int n_dot, int hidden, int k, const float *__restrict__ x,
                       int ldx, const float *__restrict__ w, int ldw,
                       const float *__restrict__ gates_x, int ld_x,
                       const float *__restrict__ bias, const float *c_prev, float *c_out,
                       float *__restrict__ h_out, int ld_h, float *__restrict__ h_out2,
                       int ld_h2)
{
    const int lane = threadIdx.x % kWarpSize;
    const int j = blockIdx.x * kWarps + threadIdx.x / kWarpSize;
    if (j >= hidden)
        return;
    const float *rows[4];
#pragma unroll
    for (int g = 0; g < 4; g++)
        rows[g] = w + (int64_t)(g * hidden + j) * ldw;
    float acc[4][skinny::kMaxRows] = {};
    skinny::lane_dots<4, kUnroll, VEC>(n_dot, k, x, ldx, NMT_SKINNY_X_F32, rows, acc);
    const float total = skinny::warp_totals<4>(acc); /* gate lane / 8, row lane % 8 */
    const int r = lane % skinny::kMaxRows;
    float dot[4];
#pragma unroll
    for (int g = 0; g < 4; g++)
        dot[g] = __shfl_sync(kFullMask, total, g * skinny::kMaxRows + r);
    if (lane >= n_rows) /* lanes < kMaxRows only: n_rows <= kMaxRows */
        return;
    const float *gx = gates_x + (int64_t)r * ld_x;
    float a[4];
#pragma unroll
    for (int g = 0; g < 4; g++) {
        a[g] = __ldg(&gx[g * hidden + j]) + (bias ? __ldg(&bias[g * hidden + j]) : 0.0f);
        a[g] += r < n_dot ? dot[g] : 0.0f; /* the cell's gates_h: zero past n_dot */
    }
    lstm_finish(a, r, j, hidden, c_prev, c_out, h_out, ld_h, h_out2, ld_h2);
}

extern "C" nmt_status nmt_cuda_lstm_skinny(nmt_cuda_ctx *ctx, int32_t n_rows, int32_t n_dot,
                                           int32_t hidden, int32_t k, const float *x,
                                           int32_t ldx, const float *w, int32_t ldw,
                                           const float *gates_x, int32_t ld_x,
                                           const float *bias, const float *c_prev,
                                           float *c_out, float *h_out, int32_t ld_h,
                                           float *h_out2, int32_t ld_h2, nmt_error *err)
{
    NMT_ARG_CHECK(ctx && n_rows >= 1 && n_rows <= NMT_SKINNY_MAX_ROWS && n_dot >= 0 &&
                  n_dot <= n_rows && hidden >= 1 && k >= 1 && ldw >= k);
    NMT_ARG_CHECK(n_dot == 0 || (nmt_linear_skinny_fits(n_dot, k) && ldx >= k && x));
    NMT_ARG_CHECK(ld_x >= 4 * hidden && ld_h >= hidden && (!h_out2 || ld_h2 >= hidden));
    NMT_ARG_CHECK(w && gates_x && c_prev && c_out && h_out);
    const bool vec = k % skinny::kVec == 0 && ldw % skinny::kVec == 0 &&
                     ldx % skinny::kVec == 0 && (uintptr_t)w % (skinny::kVec * sizeof(float)) == 0 &&
                     (uintptr_t)x % 16 == 0;
    const dim3 grid((unsigned)((hidden + kWarps - 1) / kWarps));
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    if (vec)
        lstm_skinny_kernel<true><<<grid, kThreads, 0, stream>>>(
            n_rows, n_dot, hidden, k, x, ldx, w, ldw, gates_x, ld_x, bias, c_prev, c_out, h_out,
            ld_h, h_out2, ld_h2);
    else
        lstm_skinny_kernel<false><<<grid, kThreads, 0, stream>>>(
            n_rows, n_dot, hidden, k, x, ldx, w, ldw, gates_x, ld_x, bias, c_prev, c_out, h_out,
            ld_h, h_out2, ld_h2);
    NMT_LAUNCH_RETURN("lstm_skinny_kernel");
    return NMT_STATUS_OK;
}
