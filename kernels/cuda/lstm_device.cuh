/* lstm_device.cuh: the LSTM's pointwise step for one (row, unit), shared by
 * the cell kernel (lstm_cell.cu) and the fused few-row step
 * (lstm_skinny.cu), so both give the same bits from the same gates.
 * Gate order i, f, g, o (PyTorch); accurate expf / tanhf (no fast math):
 * the CPU oracle is compared at ~1e-6. */
#ifndef NMT_KERNELS_CUDA_LSTM_DEVICE_CUH
#define NMT_KERNELS_CUDA_LSTM_DEVICE_CUH

#include <math.h>
#include <stdint.h>

static __device__ __forceinline__ float lstm_sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

/* a: the four gate pre-activations; returns h, *c = the new cell. */
static __device__ __forceinline__ float lstm_pointwise(const float (&a)[4], float c_prev,
                                                       float *c)
{
    *c = lstm_sigmoid(a[1]) * c_prev + lstm_sigmoid(a[0]) * tanhf(a[2]);
    return lstm_sigmoid(a[3]) * tanhf(*c);
}

/* Row r, unit j of the step, from row c_row of c_prev (r, or the row's
 * parent; c_prev NULL: a zero cell, the first step of a recurrence whose c
 * was not cleared): c_out (rows hidden apart; may be c_prev when c_row is
 * r), h_out (rows ld_h apart) and, when not NULL, h_out2 (rows ld_h2
 * apart). Returns h. */
static __device__ __forceinline__ float lstm_finish(const float (&a)[4], int64_t r, int64_t c_row,
                                                   int j, int hidden, const float *c_prev,
                                                   float *c_out, float *h_out, int ld_h,
                                                   float *h_out2, int ld_h2)
{
    float c;
    const float h = lstm_pointwise(a, c_prev ? c_prev[c_row * hidden + j] : 0.0f, &c);
    c_out[r * hidden + j] = c;
    h_out[r * ld_h + j] = h;
    if (h_out2)
        h_out2[r * ld_h2 + j] = h;
    return h;
}

#endif /* NMT_KERNELS_CUDA_LSTM_DEVICE_CUH */
