/* lstm_cell.cu: the fused LSTM pointwise step, gate order i, f, g, o (PyTorch):
 *   gates = gates_x[r] + gates_h[r] + bias        ([4*hidden] each)
 *   c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g);  h = sigmoid(o) * tanh(c)
 * for n_rows rows. gates_x rows are ld_x floats apart, gates_h rows 4*hidden,
 * c rows hidden, h rows ld_h. One thread per (row, unit): it reads its four
 * gates, c_prev, and writes c and h once; c_prev may alias c_out (each element
 * is read before the same thread writes it); h16, when given, gets h
 * rounded to 16 bits. The pointwise math is lstm_device.cuh's. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "cuda_check.h"
#include "device.cuh"
#include "half_device.cuh"
#include "lstm_cell.h"
#include "lstm_device.cuh"

static constexpr int kThreads = 256;

static __global__ void __launch_bounds__(kThreads)
    lstm_cell_kernel(int32_t n_rows, int32_t hidden, const float *__restrict__ gates_x,
                     int32_t ld_x, const float *__restrict__ gates_h,
                     const float *__restrict__ bias, const float *c_prev, float *c_out,
                     float *__restrict__ h_out, int32_t ld_h, float *__restrict__ h_out2,
                     int32_t ld_h2, nmt_half_out h16)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    const int32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= hidden)
        return;
    float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (bias) {
#pragma unroll
        for (int g = 0; g < 4; g++)
            b[g] = __ldg(&bias[g * hidden + j]);
    }
    for (int32_t r = blockIdx.y; r < n_rows; r += gridDim.y) {
        const float *gx = gates_x + (int64_t)r * ld_x;
        float a[4];
#pragma unroll
        for (int g = 0; g < 4; g++)
            a[g] = __ldg(&gx[g * hidden + j]) + b[g];
        if (gates_h) {
            const float *gh = gates_h + (int64_t)r * 4 * hidden;
#pragma unroll
            for (int g = 0; g < 4; g++)
                a[g] += __ldg(&gh[g * hidden + j]);
        }
        const float h = lstm_finish(a, r, j, hidden, c_prev, c_out, h_out, ld_h, h_out2, ld_h2);
        half_out_put(h16, r, j, h);
    }
}

extern "C" nmt_status nmt_cuda_lstm_cell(int32_t n_rows, int32_t hidden, const float *gates_x,
                                         int32_t ld_x, const float *gates_h, const float *bias,
                                         const float *c_prev, float *c_out, float *h_out,
                                         int32_t ld_h, float *h_out2, int32_t ld_h2,
                                         const nmt_half_out *h16, void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && hidden >= 0);
    NMT_ARG_CHECK(ld_x >= 4 * hidden && ld_h >= hidden && (!h_out2 || ld_h2 >= hidden));
    NMT_ARG_CHECK(half_out_ok(h16, hidden));
    NMT_ARG_CHECK(n_rows == 0 || hidden == 0 || (gates_x && c_prev && c_out && h_out));
    if (n_rows == 0 || hidden == 0)
        return NMT_STATUS_OK;
    unsigned rows = (unsigned)(n_rows < 65535 ? n_rows : 65535);
    dim3 grid((unsigned)((hidden + kThreads - 1) / kThreads), rows);
    nmt_launch_pdl(lstm_cell_kernel, grid, kThreads, 0, (cudaStream_t)stream, n_rows, hidden,
                   gates_x, ld_x, gates_h, bias, c_prev, c_out, h_out, ld_h, h_out2, ld_h2,
                   half_out_of(h16));
    NMT_LAUNCH_RETURN("lstm_cell_kernel");
    return NMT_STATUS_OK;
}
