/* lstm_gathered.cu: the LSTM cell of a layer whose gate products were made
 * before the beam step chose its rows (kernels/lstm_cell.h,
 * nmt_cuda_lstm_cell_gathered): a row's gates are a table row picked by its
 * token plus a product row picked by its parent, so the step's first layer
 * starts with no GEMM and no separate gather.
 *
 * One thread a (row, unit), as lstm_cell.cu, adding table + bias + proj in
 * the order nmt_cuda_lstm_cell adds gates_x + bias + gates_h, the pointwise
 * math lstm_device.cuh's; then the thread copies its unit of each parent
 * row the next layers gather (their h and c), which the step's separate
 * gather launch did before. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "device.cuh"
#include "lstm_cell.h"
#include "lstm_device.cuh"

static constexpr int kThreads = 128; /* a 5-row step at H 512: 20 blocks */

static __global__ void __launch_bounds__(kThreads) lstm_gathered_kernel(const nmt_lstm_gathered g)
{
    pdl_enter(); /* device.cuh: launched by nmt_launch_pdl */
    const int32_t j = blockIdx.x * blockDim.x + threadIdx.x, H = g.hidden;
    if (j >= H)
        return;
    for (int32_t r = blockIdx.y; r < g.n_rows; r += gridDim.y) {
        const int64_t tok = g.token[r], par = g.parent[r];
        const float *tx = g.table + tok * 4 * H, *px = g.proj + par * 4 * H;
        float a[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
            a[q] = __ldg(&tx[q * H + j]);
            if (g.bias)
                a[q] += __ldg(&g.bias[q * H + j]);
            a[q] += px[q * H + j]; /* written by the step before: not through __ldg */
        }
        float c;
        const float h = lstm_pointwise(a, g.c_prev[par * H + j], &c);
        g.c_out[(int64_t)r * H + j] = c;
#pragma unroll
        for (int i = 0; i < NMT_LSTM_GATHERED_OUTS; i++)
            if (g.h_out[i])
                g.h_out[i][(int64_t)r * g.ld_h[i] + j] = h;
        for (int32_t i = 0; i < g.n_copies; i++)
            g.copies[i].dst[(int64_t)r * g.copies[i].ld_dst + j] =
                g.copies[i].src[par * g.copies[i].ld_src + j];
    }
}

extern "C" nmt_status nmt_cuda_lstm_cell_gathered(const nmt_lstm_gathered *g, void *stream,
                                                  nmt_error *err)
{
    NMT_ARG_CHECK(g && g->n_rows >= 0 && g->hidden >= 0);
    NMT_ARG_CHECK(g->n_copies >= 0 && g->n_copies <= NMT_LSTM_GATHERED_COPIES);
    if (g->n_rows == 0 || g->hidden == 0)
        return NMT_STATUS_OK;
    NMT_ARG_CHECK(g->token && g->parent && g->table && g->proj && g->c_prev && g->c_out &&
                  g->h_out[0]);
    for (int i = 0; i < NMT_LSTM_GATHERED_OUTS; i++)
        NMT_ARG_CHECK(!g->h_out[i] || g->ld_h[i] >= g->hidden);
    for (int32_t i = 0; i < g->n_copies; i++)
        NMT_ARG_CHECK(g->copies[i].src && g->copies[i].dst &&
                      g->copies[i].ld_src >= g->hidden && g->copies[i].ld_dst >= g->hidden);
    const unsigned rows = (unsigned)(g->n_rows < 65535 ? g->n_rows : 65535);
    const dim3 grid((unsigned)((g->hidden + kThreads - 1) / kThreads), rows);
    nmt_launch_pdl(lstm_gathered_kernel, grid, kThreads, 0, (cudaStream_t)stream, *g);
    NMT_LAUNCH_RETURN("lstm_gathered_kernel");
    return NMT_STATUS_OK;
}
