/* lstm_cell.cu: the fused LSTM pointwise step, gate order i, f, g, o (PyTorch):
 *   gates = gates_x[r] + gates_h[r] + bias        ([4*hidden] each)
 *   c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g);  h = sigmoid(o) * tanh(c)
 * for n_rows rows. gates_x rows are ld_x floats apart, gates_h rows 4*hidden,
 * c rows hidden, h rows ld_h. One thread per (row, unit): it reads its four
 * gates, c_prev (its row's, or with c_rows the row named there), and writes
 * c and h once; c_prev may alias c_out without c_rows (each element is read
 * before the same thread writes it); h16, when given, gets h rounded to 16
 * bits. The pointwise math is lstm_device.cuh's. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "device.cuh"
#include "half_device.cuh"
#include "lstm_cell.h"
#include "lstm_device.cuh"

static constexpr int kThreads = 256;

/* a: the launcher's arguments by value, h16 moved into h16_out. */
static __global__ void __launch_bounds__(kThreads)
    lstm_cell_kernel(const nmt_lstm_cell_args a, const nmt_half_out h16_out)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    const int32_t j = blockIdx.x * blockDim.x + threadIdx.x, hidden = a.hidden;
    if (j >= hidden)
        return;
    float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (a.bias) {
#pragma unroll
        for (int g = 0; g < 4; g++)
            b[g] = __ldg(&a.bias[g * hidden + j]);
    }
    for (int32_t r = blockIdx.y; r < a.n_rows; r += gridDim.y) {
        const float *gx = a.gates_x + (int64_t)r * a.ld_x;
        float v[4];
#pragma unroll
        for (int g = 0; g < 4; g++)
            v[g] = __ldg(&gx[g * hidden + j]) + b[g];
        if (a.gates_h) {
            const float *gh = a.gates_h + (int64_t)r * 4 * hidden;
#pragma unroll
            for (int g = 0; g < 4; g++)
                v[g] += __ldg(&gh[g * hidden + j]);
        }
        const int64_t c_row = a.c_rows ? __ldg(&a.c_rows[r]) : r;
        const float h = lstm_finish(v, r, c_row, j, hidden, a.c_prev, a.c_out, a.h_out, a.ld_h,
                                    a.h_out2, a.ld_h2);
        half_out_put(h16_out, r, j, h);
    }
}

extern "C" nmt_status nmt_cuda_lstm_cell(const nmt_lstm_cell_args *a, void *stream,
                                         nmt_error *err)
{
    NMT_ARG_CHECK(a && a->n_rows >= 0 && a->hidden >= 0);
    NMT_ARG_CHECK(a->ld_x >= 4 * a->hidden && a->ld_h >= a->hidden &&
                  (!a->h_out2 || a->ld_h2 >= a->hidden) && half_out_ok(a->h16, a->hidden));
    if (a->n_rows == 0 || a->hidden == 0)
        return NMT_STATUS_OK;
    NMT_ARG_CHECK(a->gates_x && a->c_prev && a->c_out && a->h_out);
    NMT_ARG_CHECK(!a->c_rows || a->c_prev != a->c_out); /* other rows' c_prev: no aliasing */
    unsigned rows = (unsigned)(a->n_rows < 65535 ? a->n_rows : 65535);
    dim3 grid((unsigned)((a->hidden + kThreads - 1) / kThreads), rows);
    nmt_launch_pdl(lstm_cell_kernel, grid, kThreads, 0, (cudaStream_t)stream, *a,
                   half_out_of(a->h16));
    NMT_LAUNCH_RETURN("lstm_cell_kernel");
    return NMT_STATUS_OK;
}
