/* lstm_recurrence.cu: a bidirectional LSTM layer's recurrence over all its
 * time steps in one launch, for a batch of a few sentences
 * (kernels/lstm_cell.h, nmt_cuda_lstm_recurrence; the C twin is
 * nmt_cpu_lstm_recurrence).
 *
 * The per-step pair it replaces (a chain GEMM, then the cell) is two
 * launches of a microsecond's work each, every step of each direction,
 * behind a few microseconds of launch and dependency latency apiece. One
 * thread-block cluster a direction keeps w_hh in its blocks' shared memory
 * (block b: units [b U, (b + 1) U) of each gate, U = half / 8) and runs the
 * steps back to back: each block sums its gate rows for the running rows,
 * runs the cell on its units, and stores the new h into every block's
 * shared memory (distributed shared memory): by asynchronous remote stores
 * counted on each receiver's mbarrier (the default), or plain stores and
 * one cluster barrier a step (NMT_RECURRENCE_HANDOFF_BARRIER). h lives in
 * shared memory as [unit][row], so a thread's w value serves four rows
 * through one 16-byte read.
 *
 * Arithmetic: each gate sum is one fmaf chain over k from 0 (the
 * batch-invariant GEMM's, linear_chain.cu), then (gates_x + b_hh) + gates_h
 * and lstm_device.cuh's pointwise step, as lstm_cell.cu adds them: the same
 * bits as the per-step pair. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "device.cuh"
#include "lstm_cell.h"
#include "lstm_device.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int kCtas = 8;                                /* a direction's cluster */
constexpr int kThreads = 256;
constexpr int kRows = NMT_SKINNY_MAX_ROWS;              /* sentences at most */
constexpr int kRowsThread = 4;                          /* rows one w value serves */
constexpr int kGateRows = kThreads / (kRows / kRowsThread); /* a block's w rows at most */
static_assert(kRows % kRowsThread == 0 && kRowsThread == 4, "one float4 of h a step");
static_assert(kGateRows / 4 * kRows <= kThreads, "a cell (unit, row) a thread");

/* A block's shared memory in floats: w [4U][half + 1] (rows one bank
 * apart), h [2][half][kRows] (double-buffered across steps) and the gate
 * sums [kRows][4U]. */
struct recurrence_smem {
    int w, h, gates, total;
};

__host__ __device__ inline recurrence_smem smem_of(int half)
{
    const int U = half / kCtas, G = 4 * U;
    recurrence_smem s;
    s.w = 0;
    s.h = s.w + (G * (half + 1) + 3) / 4 * 4; /* 16-byte aligned for the float4 reads */
    s.gates = s.h + 2 * half * kRows;
    s.total = s.gates + kRows * G;
    return s;
}

/* The cluster barrier in halves: arrive (release: this thread's stores to
 * shared memory anywhere in the cluster are seen after the wait) and wait
 * (acquire). */
__device__ __forceinline__ void cluster_arrive()
{
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait()
{
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/* The asynchronous handoff (Hopper): a remote 4-byte store that counts its
 * bytes down on the receiving block's mbarrier, which completes a phase
 * once its one arrival (the receiver's expect_tx) and all the bytes it
 * expects are in. */
__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(uint64_t *bar)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    asm volatile("{\n.reg .pred done;\n"
                 "wait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n}" ::"r"(smem_u32(bar)),
                 "r"(parity)
                 : "memory");
}
/* v into block rank's copy of *dst, counted on its copy of *bar. */
__device__ __forceinline__ void store_remote(float *dst, uint64_t *bar, int rank, float v)
{
    uint32_t rdst, rbar;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rdst) : "r"(smem_u32(dst)), "r"(rank));
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(smem_u32(bar)), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                     rdst),
                 "r"(__float_as_uint(v)), "r"(rbar)
                 : "memory");
}

/* R of a thread's four rows, each one chain over k: acc[i] += h[p][r0 + i] w[p],
 * the operands of the next kChunk terms loaded while these are summed (the
 * chain's latency, not the loads', sets the pace). half % kChunk == 0. */
constexpr int kChunk = 8;
template <int R>
__device__ __forceinline__ void gate_chains(const float *w, const float *h, int half, int r0,
                                            float (&acc)[kRowsThread])
{
    float wc[kChunk];
    float4 hc[kChunk];
    const auto load = [&](int p0, float (&wv)[kChunk], float4 (&hv)[kChunk]) {
#pragma unroll
        for (int i = 0; i < kChunk; i++) {
            wv[i] = w[p0 + i];
            hv[i] = *reinterpret_cast<const float4 *>(&h[(p0 + i) * kRows + r0]);
        }
    };
    load(0, wc, hc);
    for (int p0 = 0; p0 < half; p0 += kChunk) {
        float wn[kChunk];
        float4 hn[kChunk];
        if (p0 + kChunk < half)
            load(p0 + kChunk, wn, hn);
#pragma unroll
        for (int i = 0; i < kChunk; i++) {
            acc[0] = fmaf(hc[i].x, wc[i], acc[0]);
            if (R > 1)
                acc[1] = fmaf(hc[i].y, wc[i], acc[1]);
            if (R > 2) {
                acc[2] = fmaf(hc[i].z, wc[i], acc[2]);
                acc[3] = fmaf(hc[i].w, wc[i], acc[3]);
            }
        }
#pragma unroll
        for (int i = 0; i < kChunk; i++) {
            wc[i] = wn[i];
            hc[i] = hn[i];
        }
    }
}

/* ASYNC: the handoff by remote stores on mbarriers (no cluster barrier a
 * step; a block's own barrier keeps its gate sums from being overwritten
 * early); else by the cluster barrier. A block sends h of step s + 1 into a
 * peer's buffer only after the peer's h of step s reached it, so the peer
 * has read that buffer's step s - 1 h: double buffering needs no more. */
template <bool ASYNC>
__global__ void __cluster_dims__(kCtas, 1, 1) __launch_bounds__(kThreads)
    lstm_recurrence_kernel(const nmt_lstm_recurrence a)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    pdl_enter();
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank(), d = blockIdx.x / kCtas, tid = threadIdx.x;
    const int n = a.n, half = a.half, U = half / kCtas, G = 4 * U, H = 2 * half;
    extern __shared__ float4 smem_raw[];
    float *smem = reinterpret_cast<float *>(smem_raw);
    const recurrence_smem lay = smem_of(half);
    float *s_w = smem + lay.w, *s_h = smem + lay.h, *s_g = smem + lay.gates;
    __shared__ int s_len[kRows];

    /* Block row q U + u is w_hh's row q half + rank U + u, loaded as float4s
     * (16-byte rows: half % 8 == 0, w_hh aligned), kW4 a thread in flight;
     * consecutive threads take consecutive rows, so the stores into the
     * padded rows fall in distinct banks. */
    const float *w_hh = d ? a.w_hh[1] : a.w_hh[0]; /* no local copy of the array */
    const int row4 = half / 4, total4 = G * row4;
    constexpr int kW4 = 16;
    for (int base = tid; base < total4; base += kThreads * kW4) {
        float4 v[kW4];
#pragma unroll
        for (int i = 0; i < kW4; i++) {
            const int e = base + i * kThreads, row = e % G, c4 = e / G;
            const int q = row / U, u = row % U;
            if (e < total4)
                v[i] = __ldg(reinterpret_cast<const float4 *>(
                                 w_hh + ((int64_t)q * half + rank * U + u) * half) + c4);
        }
#pragma unroll
        for (int i = 0; i < kW4; i++) {
            const int e = base + i * kThreads, row = e % G, c4 = e / G;
            float *dst = s_w + row * (half + 1) + 4 * c4;
            if (e < total4) {
                dst[0] = v[i].x;
                dst[1] = v[i].y;
                dst[2] = v[i].z;
                dst[3] = v[i].w;
            }
        }
    }
    if (tid < n)
        s_len[tid] = a.src_len[tid];
    __shared__ alignas(8) uint64_t s_bar[2]; /* ASYNC: h of steps 2i + 2 and 2i + 1 */
    if (ASYNC && tid == 0) {
        mbar_init(&s_bar[0]);
        mbar_init(&s_bar[1]);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    cluster.sync(); /* every block resident before any writes into its h */

    /* This thread's cell: unit cj of row cr (U n <= kThreads), its c in a
     * register; its bias, and each step's gates_x loaded a step ahead, so
     * the loads' latency hides behind the barrier and the next sums. */
    const float *gates_x = d ? a.gates_x[1] : a.gates_x[0];
    const float *b_hh = d ? a.b_hh[1] : a.b_hh[0];
    const int cu = tid % U, cr = tid / U, cj = rank * U + cu;
    float bias[4] = {0.0f, 0.0f, 0.0f, 0.0f}, gx[4] = {0.0f, 0.0f, 0.0f, 0.0f}, c = 0.0f;
    const auto time_of = [&](int s) { return d ? a.stride - 1 - s : s; };
    const auto load_gx = [&](int s) {
        const int t = time_of(s);
        if (s < a.stride && cr < nmt_lstm_recurrence_active(s_len, n, a.stride, t)) {
            const float *row = gates_x + ((int64_t)t * n + cr) * 4 * half;
#pragma unroll
            for (int q = 0; q < 4; q++)
                gx[q] = __ldg(&row[q * half + cj]);
        }
    };
    if (cr < n) {
#pragma unroll
        for (int q = 0; q < 4; q++)
            bias[q] = __ldg(&b_hh[q * half + cj]);
    }
    load_gx(0);
    const int lr = tid % kGateRows, r0 = tid / kGateRows * kRowsThread;
    for (int s = 0; s < a.stride; s++) {
        const int t = time_of(s), t_prev = d ? t + 1 : t - 1;
        const int active = nmt_lstm_recurrence_active(s_len, n, a.stride, t);
        const int n_rec = min(active, nmt_lstm_recurrence_active(s_len, n, a.stride, t_prev));
        const float *h = s_h + (s & 1) * half * kRows;
        float *h_next = s_h + ((s + 1) & 1) * half * kRows;
        const bool send = !ASYNC || s + 1 < a.stride; /* ASYNC: nothing past the last */
        if (ASYNC) {
            if (s > 0) /* h of step s: the (s - 1) / 2-th use of its buffer's barrier */
                mbar_wait(&s_bar[s & 1], ((s - 1) >> 1) & 1);
            if (tid == 0 && send)
                mbar_expect(&s_bar[(s + 1) & 1], (uint32_t)(active * half * sizeof(float)));
        }
        const int rows = min(kRowsThread, n_rec - r0);
        if (lr < G && rows > 0) {
            float acc[kRowsThread] = {0.0f, 0.0f, 0.0f, 0.0f};
            const float *w = s_w + lr * (half + 1);
            if (rows == 1)
                gate_chains<1>(w, h, half, r0, acc);
            else if (rows == 2)
                gate_chains<2>(w, h, half, r0, acc);
            else
                gate_chains<4>(w, h, half, r0, acc);
#pragma unroll
            for (int i = 0; i < kRowsThread; i++)
                if (i < rows)
                    s_g[(r0 + i) * G + lr] = acc[i];
        }
        __syncthreads();
        float hv = 0.0f;
        if (cr < active) {
            float v[4];
#pragma unroll
            for (int q = 0; q < 4; q++) {
                v[q] = gx[q] + bias[q];
                v[q] += cr < n_rec ? s_g[cr * G + q * U + cu] : 0.0f;
            }
            hv = lstm_pointwise(v, c, &c);
            for (int b = 0; b < kCtas && send; b++) {
                if (ASYNC)
                    store_remote(&h_next[cj * kRows + cr], &s_bar[(s + 1) & 1], b, hv);
                else
                    cluster.map_shared_rank(h_next, b)[cj * kRows + cr] = hv;
            }
        }
        /* The barrier hands h_next over and frees h; the global store and the
         * next step's loads go between its arrive and its wait, so its
         * release does not wait for them. */
        if (!ASYNC)
            cluster_arrive();
        if (cr < active)
            a.out[((int64_t)t * n + cr) * H + d * half + cj] = hv;
        load_gx(s + 1);
        if (ASYNC)
            __syncthreads(); /* the cells have read the gate sums */
        else
            cluster_wait();
    }
    if (ASYNC)
        cluster.sync(); /* no block leaves while a peer may still store into it */
    if (cr < n)
        (d ? a.c_final[1] : a.c_final[0])[(int64_t)cr * half + cj] = c;
#endif
}

} /* namespace */

extern "C" int nmt_cuda_lstm_recurrence_fits(const nmt_lstm_recurrence *a)
{
    const int32_t n = a->n, half = a->half;
    if (n < 1 || n > kRows || half < kCtas || half % kCtas != 0 || 4 * (half / kCtas) > kGateRows)
        return 0;
    for (int d = 0; d < 2; d++)
        if ((uintptr_t)a->w_hh[d] % 16 != 0) /* the float4 loads */
            return 0;
    int device = 0, major = 0, optin = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
            cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return major >= 9 && (size_t)smem_of(half).total * sizeof(float) + kRows * sizeof(int) <=
                             (size_t)optin;
}

extern "C" nmt_status nmt_cuda_lstm_recurrence(const nmt_lstm_recurrence *a, void *stream,
                                               nmt_error *err)
{
    NMT_ARG_CHECK(a && a->n >= 1 && a->stride >= 1 && a->src_len && a->out &&
                  a->handoff >= NMT_RECURRENCE_HANDOFF_DEFAULT &&
                  a->handoff <= NMT_RECURRENCE_HANDOFF_ASYNC);
    for (int d = 0; d < 2; d++)
        NMT_ARG_CHECK(a->gates_x[d] && a->w_hh[d] && a->b_hh[d] && a->c_final[d]);
    if (!nmt_cuda_lstm_recurrence_fits(a))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "lstm recurrence: %d sentences of %d units a direction do not fit "
                             "(at most %d sentences; units a multiple of %d up to %d; w_hh "
                             "16-byte aligned; sm_90)",
                             a->n, a->half, kRows, kCtas, kGateRows / 4 * kCtas);
    const size_t smem = (size_t)smem_of(a->half).total * sizeof(float);
    const bool async = a->handoff != NMT_RECURRENCE_HANDOFF_BARRIER;
    void (*kernel)(nmt_lstm_recurrence) =
        async ? lstm_recurrence_kernel<true> : lstm_recurrence_kernel<false>;
    NMT_CUDA_RETURN(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem));
    nmt_launch_pdl(kernel, dim3(2 * kCtas), dim3(kThreads), smem, (cudaStream_t)stream, *a);
    NMT_LAUNCH_RETURN("lstm_recurrence_kernel");
    return NMT_STATUS_OK;
}
