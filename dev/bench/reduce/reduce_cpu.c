/* reduce_cpu.c: CPU multi-mode reduction and broadcast add (reduce.h), the
 * oracle of reduce.cu.
 * Both walk explicit coordinates: reduce_sum visits each output element and
 * sums its reduced sub-tensor in double; broadcast_add maps every element's
 * coordinates onto y's axes. */
#include "reduce.h"

#include "error.h"

nmt_status nmt_reduce_check_shape(const char *op, int32_t ndim, const int64_t *dims,
                                  uint32_t mask, nmt_error *err)
{
    if (ndim < 1 || ndim > NMT_REDUCE_MAX_DIMS || !dims)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: ndim %d outside [1, %d]", op,
                             ndim, NMT_REDUCE_MAX_DIMS);
    for (int32_t a = 0; a < ndim; a++)
        if (dims[a] < 1)
            return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: dims[%d] = %lld < 1", op,
                                 a, (long long)dims[a]);
    if (mask >> ndim)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "%s: mask 0x%x names an axis >= ndim %d", op, (unsigned)mask, ndim);
    return NMT_STATUS_OK;
}

/* Row-major strides of the full tensor. */
static void full_strides(int32_t ndim, const int64_t *dims, int64_t *strides)
{
    int64_t stride = 1;
    for (int32_t a = ndim - 1; a >= 0; a--) {
        strides[a] = stride;
        stride *= dims[a];
    }
}

/* Advances coordinates over the axes selected by `mask` (last axis fastest);
 * returns 0 once they wrap around to all zeros. */
static int next_coords(int32_t ndim, const int64_t *dims, uint32_t mask, int64_t *coords)
{
    for (int32_t a = ndim - 1; a >= 0; a--) {
        if (!(mask >> a & 1u))
            continue;
        if (++coords[a] < dims[a])
            return 1;
        coords[a] = 0;
    }
    return 0;
}

nmt_status nmt_cpu_reduce_sum(int32_t ndim, const int64_t *dims, uint32_t reduce_mask,
                              const float *x, float *out, nmt_error *err)
{
    nmt_status status = nmt_reduce_check_shape("reduce_sum", ndim, dims, reduce_mask, err);
    if (status != NMT_STATUS_OK)
        return status;
    uint32_t all = (1u << ndim) - 1u;
    uint32_t keep_mask = all & ~reduce_mask;
    int64_t strides[NMT_REDUCE_MAX_DIMS];
    full_strides(ndim, dims, strides);

    int64_t coords[NMT_REDUCE_MAX_DIMS] = {0};
    int64_t out_index = 0;
    do { /* over the kept axes, in order: the output's row-major order */
        for (int32_t a = 0; a < ndim; a++)
            if (reduce_mask >> a & 1u)
                coords[a] = 0;
        double sum = 0.0;
        do { /* over the reduced axes */
            int64_t offset = 0;
            for (int32_t a = 0; a < ndim; a++)
                offset += coords[a] * strides[a];
            sum += (double)x[offset];
        } while (next_coords(ndim, dims, reduce_mask, coords));
        out[out_index++] = (float)sum;
    } while (next_coords(ndim, dims, keep_mask, coords));
    return NMT_STATUS_OK;
}

nmt_status nmt_cpu_broadcast_add(int32_t ndim, const int64_t *dims, const float *x,
                                 uint32_t y_mask, const float *y, float *out, nmt_error *err)
{
    nmt_status status = nmt_reduce_check_shape("broadcast_add", ndim, dims, y_mask, err);
    if (status != NMT_STATUS_OK)
        return status;
    /* Strides of y: row-major over its own axes, 0 along the repeated ones. */
    int64_t y_strides[NMT_REDUCE_MAX_DIMS];
    int64_t stride = 1;
    for (int32_t a = ndim - 1; a >= 0; a--) {
        y_strides[a] = (y_mask >> a & 1u) ? stride : 0;
        if (y_mask >> a & 1u)
            stride *= dims[a];
    }
    uint32_t all = (1u << ndim) - 1u;
    int64_t coords[NMT_REDUCE_MAX_DIMS] = {0};
    int64_t index = 0;
    do {
        int64_t y_offset = 0;
        for (int32_t a = 0; a < ndim; a++)
            y_offset += coords[a] * y_strides[a];
        out[index] = x[index] + y[y_offset];
        index++;
    } while (next_coords(ndim, dims, all, coords));
    return NMT_STATUS_OK;
}
