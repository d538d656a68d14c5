/* side_stream.c: a second stream beside the model's, for work that needs
 * only inputs already made and whose result is wanted a few launches later
 * (cuda_model_impl.h, nmt_cuda_side): the LSH layer's dense prefix GEMM
 * (output_layer.c) and the decoder's carried product of layer 0
 * (decoder_step.cu). Forked from the model's stream by one event and joined
 * back by another, so the pattern captures into a CUDA graph as two
 * branches. Host code. */
#include "cuda_model_impl.h"

#include "cuda_check.h"

nmt_status nmt_cuda_side_create(const nmt_cuda_model *m, nmt_cuda_side *side, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    cudaEvent_t fork = NULL, join = NULL;
    /* the lowest priority: the model's stream places its blocks first */
    NMT_TRY(nmt_cuda_ctx_create_side(m->ctx, &side->ctx, err));
    NMT_CUDA_TRY(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    side->fork_event = fork;
    NMT_CUDA_TRY(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    side->join_event = join;
cleanup:
    return status;
}

void nmt_cuda_side_free(nmt_cuda_side *side)
{
    nmt_cuda_ctx_free(side->ctx); /* synchronizes its stream first */
    if (side->fork_event)
        cudaEventDestroy((cudaEvent_t)side->fork_event);
    if (side->join_event)
        cudaEventDestroy((cudaEvent_t)side->join_event);
    side->ctx = NULL;
    side->fork_event = side->join_event = NULL;
}

nmt_status nmt_cuda_side_fork(const nmt_cuda_model *m, const nmt_cuda_side *side,
                              nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_CUDA_TRY(cudaEventRecord((cudaEvent_t)side->fork_event, (cudaStream_t)m->stream));
    NMT_CUDA_TRY(cudaStreamWaitEvent((cudaStream_t)nmt_cuda_ctx_stream(side->ctx),
                                     (cudaEvent_t)side->fork_event, 0));
cleanup:
    return status;
}

nmt_status nmt_cuda_side_done(const nmt_cuda_side *side, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_CUDA_TRY(cudaEventRecord((cudaEvent_t)side->join_event,
                                 (cudaStream_t)nmt_cuda_ctx_stream(side->ctx)));
cleanup:
    return status;
}

nmt_status nmt_cuda_side_join(const nmt_cuda_model *m, const nmt_cuda_side *side,
                              nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    NMT_CUDA_TRY(cudaStreamWaitEvent((cudaStream_t)m->stream, (cudaEvent_t)side->join_event, 0));
cleanup:
    return status;
}
