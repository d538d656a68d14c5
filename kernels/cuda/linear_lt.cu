/* linear_lt.cu: y = x . w^T (+ bias) as one cublasLtMatmul with a plan
 * chosen once per shape class: every fp32 (non-accumulating) and 16-bit
 * GEMM of linear.cu.
 *
 * With a bias, cuBLASLt's epilogue (CUBLASLT_EPILOGUE_BIAS) adds it inside
 * the GEMM instead of a second pass over y (add_bias_kernel in linear.cu),
 * which at the output layer would read and write [rows, V] once more.
 * Without a bias it replaces cublasSgemm and cublasGemmEx, which run cuBLAS's
 * heuristic on the host at every call and, for the 16-bit types, chose
 * slower kernels (bench_gemm_algos).
 *
 * The view is linear.cu's: row-major [r, c] with leading dimension ld is the
 * column-major [c, r] matrix with that ld, so in cuBLASLt's column-major terms
 *     D (n x m, ldy) = op_T(A = w, k x n, ldw) . (B = x, k x m, ldx) + bias
 * with the bias broadcast along D's columns (its length is D's rows, n).
 * C is D (beta = 0).
 *
 * The heuristic runs on the host and costs more than a small GEMM, so its
 * choice is cached in one process-wide table (no allocation: a fixed array
 * under a mutex), keyed by the device, the input type, the rows, n, k, the
 * leading dimensions, the pointers' alignments (the heuristic assumes
 * 256-byte aligned buffers unless told, and a slice of a wider matrix is
 * not) and the context's batch invariance. Descriptors live on the stack
 * (the *Init calls). A shape the heuristic has no algorithm for is
 * remembered too, and reported as not run.
 *
 * Plans are keyed by plan_rows(m), m rounded up to two classes an octave,
 * and the class's algorithm runs at m: a batch's decoder steps meet ~150 row
 * buckets a GEMM and the encoder a new row count a batch and a time step,
 * and asking the heuristic for each cost more host time than the steps'
 * kernels. Batch-invariant (the default), the heuristic may offer only
 * algorithms that do not split k, and the first tiled one is taken
 * (fixed_order): those sum each output as one chain over k whatever the
 * tile, so the class changes the time, never a row's bits
 * (bench_gemm_algos --invariance, test_gpu_invariance). Without invariance
 * fp32 may split k by the row count, and the class can change a row's last
 * bits. An algorithm cuBLASLt refuses at m falls back to the heuristic at m,
 * cached under the exact key. */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <mutex>

#include "cuda_check.h"
#include "cuda_ctx.h"
#include "linear_lt.h"

namespace {

struct PlanKey {
    int32_t device, type, m, n, k, ldx, ldw, ldy;
    int32_t align_x, align_w, align_y, align_bias;
    int32_t exact;     /* m is the call's rows, not its class (the fallback) */
    int32_t invariant; /* chosen among the fixed-order algorithms (choose) */
};
static_assert(sizeof(PlanKey) == 14 * sizeof(int32_t), "no padding in the key");

struct Plan {
    PlanKey key;
    int state; /* 0 empty, 1 has an algorithm, 2 the heuristic found none */
    cublasLtMatmulAlgo_t algo;
};

/* Shapes a process meets: a few per GEMM site and row bucket (the decoder
 * rounds its row counts up to buckets, model/cuda/gemm.c). When the table is
 * full a new shape asks the heuristic on every call: slower, still right. */
constexpr int kPlans = 2048;
Plan g_plans[kPlans];
std::mutex g_plans_mutex;

int32_t alignment(const void *p)
{
    const uintptr_t a = (uintptr_t)p;
    const uintptr_t low = a & (~a + 1); /* lowest set bit; 0 for NULL */
    return low == 0 || low > 256 ? 256 : (int32_t)low;
}

uint32_t hash_key(const PlanKey &key)
{
    uint32_t h = 2166136261u; /* FNV-1a over the key's bytes */
    const unsigned char *b = reinterpret_cast<const unsigned char *>(&key);
    for (size_t i = 0; i < sizeof key; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

/* The slot holding key, or the empty slot where it belongs; NULL when full. */
Plan *find_slot(const PlanKey &key)
{
    const uint32_t h = hash_key(key);
    for (int probe = 0; probe < kPlans; probe++) {
        Plan *p = &g_plans[(h + (uint32_t)probe) % kPlans];
        if (p->state == 0 || memcmp(&p->key, &key, sizeof key) == 0)
            return p;
    }
    return NULL;
}

/* The call's descriptors, initialized in place. */
struct Descriptors {
    cublasLtMatmulDescOpaque_t op;
    cublasLtMatrixLayoutOpaque_t a, b, d;
};

cublasStatus_t describe(Descriptors *s, cudaDataType_t type, int32_t m, int32_t n, int32_t k,
                        int32_t ldx, int32_t ldw, int32_t ldy, const float *bias)
{
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    const cublasLtEpilogue_t epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    cublasStatus_t st;
    if ((st = cublasLtMatmulDescInit(&s->op, CUBLAS_COMPUTE_32F, CUDA_R_32F)) ||
        (st = cublasLtMatmulDescSetAttribute(&s->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                             sizeof trans_a)) ||
        (st = cublasLtMatmulDescSetAttribute(&s->op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                             sizeof trans_b)) ||
        (st = cublasLtMatmulDescSetAttribute(&s->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                             sizeof epilogue)) ||
        (bias && (st = cublasLtMatmulDescSetAttribute(&s->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                      &bias, sizeof bias))) ||
        (st = cublasLtMatrixLayoutInit(&s->a, type, k, n, ldw)) ||
        (st = cublasLtMatrixLayoutInit(&s->b, type, k, m, ldx)) ||
        (st = cublasLtMatrixLayoutInit(&s->d, CUDA_R_32F, n, m, ldy)))
        return st;
    return CUBLAS_STATUS_SUCCESS;
}

/* Heuristic results read for the first fixed-order algorithm. */
constexpr int kInvariantCandidates = 8;

/* 1 when algo sums each output in one fixed order whatever m: no split of k
 * (the preference already excludes them) and a tiled kernel. cuBLAS's
 * untiled few-row kernels reduce k across threads in an order of their own;
 * every tiled algorithm offered for the model's shapes gives the bits of a
 * plain chain over k (fp32: fmaf from k = 0; 16-bit: mma k16 blocks in order,
 * linear_chain.cu), measured by bench_gemm_algos --invariance. */
bool fixed_order(const cublasLtMatmulAlgo_t *algo)
{
    uint32_t tile = 0, split = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                             sizeof tile, &written) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                                             sizeof split, &written) != CUBLAS_STATUS_SUCCESS)
        return false;
    return tile != CUBLASLT_MATMUL_TILE_UNDEFINED && split <= 1;
}

/* The heuristic's first choice under the context's workspace (invariant: its
 * first fixed-order one); *found 0: none. */
cublasStatus_t choose(cublasLtHandle_t lt, Descriptors *s, const PlanKey &key,
                      size_t workspace_bytes, cublasLtMatmulAlgo_t *algo, int *found)
{
    cublasLtMatmulPreferenceOpaque_t pref;
    const uint32_t align[4] = {(uint32_t)key.align_w, (uint32_t)key.align_x,
                               (uint32_t)key.align_y, (uint32_t)key.align_y};
    const uint32_t no_split = CUBLASLT_REDUCTION_SCHEME_NONE;
    cublasStatus_t st;
    if ((st = cublasLtMatmulPreferenceInit(&pref)) ||
        (st = cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &workspace_bytes, sizeof workspace_bytes)) ||
        (st = cublasLtMatmulPreferenceSetAttribute(
             &pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align[0], sizeof align[0])) ||
        (st = cublasLtMatmulPreferenceSetAttribute(
             &pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align[1], sizeof align[1])) ||
        (st = cublasLtMatmulPreferenceSetAttribute(
             &pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align[2], sizeof align[2])) ||
        (st = cublasLtMatmulPreferenceSetAttribute(
             &pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align[3], sizeof align[3])) ||
        (key.invariant &&
         (st = cublasLtMatmulPreferenceSetAttribute(
              &pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &no_split, sizeof no_split))))
        return st;
    cublasLtMatmulHeuristicResult_t results[kInvariantCandidates];
    int returned = 0;
    st = cublasLtMatmulAlgoGetHeuristic(lt, &s->op, &s->a, &s->b, &s->d, &s->d, &pref,
                                        key.invariant ? kInvariantCandidates : 1, results,
                                        &returned);
    *found = 0;
    for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < returned && !*found; i++)
        if (results[i].state == CUBLAS_STATUS_SUCCESS &&
            (!key.invariant || fixed_order(&results[i].algo))) {
            *algo = results[i].algo;
            *found = 1;
        }
    /* NOT_SUPPORTED: no algorithm for these operands; not an error here. */
    return st == CUBLAS_STATUS_NOT_SUPPORTED ? CUBLAS_STATUS_SUCCESS : st;
}

/* Above this many rows every m shares one plan, chosen at this many: the
 * encoder's input GEMMs (time steps x sentences rows) would otherwise meet
 * a class no warm-up reached with each longer batch, and at these sizes
 * every tile the heuristic offers fills the GPU. */
constexpr int32_t kPlanRowsCap = 16384;

/* The rows a call's plan is chosen for (the header comment): m up to 4 rows,
 * else the first of 2^j and 3 * 2^(j-1) at or above m, at most
 * kPlanRowsCap. */
int32_t plan_rows(int32_t m)
{
    if (m <= 4)
        return m;
    if (m >= kPlanRowsCap)
        return kPlanRowsCap;
    for (int32_t p = 4; p <= INT32_MAX / 2; p *= 2) {
        if (p >= m)
            return p;
        if (p + p / 2 >= m)
            return p + p / 2;
    }
    return m;
}

/* The cached algorithm of key, or on a miss the heuristic's for key's shape
 * (its rows key.m, with `bias` or none), cached under key; *found 0 when it
 * has none. Descriptors are built only on a miss: a hit, nearly every call,
 * costs the lookup. */
cublasStatus_t plan_for(cublasLtHandle_t lt, cudaDataType_t type, const float *bias,
                        const PlanKey &key, size_t workspace_bytes, cublasLtMatmulAlgo_t *algo,
                        int *found)
{
    std::lock_guard<std::mutex> lock(g_plans_mutex);
    Plan *p = find_slot(key);
    if (p && p->state != 0) {
        *found = p->state == 1;
        *algo = p->algo;
        return CUBLAS_STATUS_SUCCESS;
    }
    Descriptors s;
    cublasStatus_t st = describe(&s, type, key.m, key.n, key.k, key.ldx, key.ldw, key.ldy, bias);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    st = choose(lt, &s, key, workspace_bytes, algo, found);
    if (st == CUBLAS_STATUS_SUCCESS && p) {
        p->key = key;
        p->state = *found ? 1 : 2;
        p->algo = *algo;
    }
    return st;
}

} // namespace

nmt_status nmt_cuda_linear_lt(nmt_cuda_ctx *ctx, cudaDataType_t type, int32_t m, int32_t n,
                              int32_t k, const void *x, int32_t ldx, const void *w, int32_t ldw,
                              const float *bias, float *y, int32_t ldy, int *ran, nmt_error *err)
{
    *ran = 0;
    NMT_ARG_CHECK(ctx && m >= 1 && n >= 1 && k >= 1 && x && w && y && ldx >= k && ldw >= k &&
                  ldy >= n);
    cublasLtHandle_t lt = (cublasLtHandle_t)nmt_cuda_ctx_cublaslt(ctx);
    size_t workspace_bytes = 0;
    void *workspace = nmt_cuda_ctx_workspace(ctx, &workspace_bytes);
    Descriptors s;
    NMT_CUBLAS_RETURN(describe(&s, type, m, n, k, ldx, ldw, ldy, bias));

    /* All int32: no padding, so the key hashes and compares as bytes. */
    const int32_t m_plan = plan_rows(m);
    PlanKey key = {}; /* C++17: no designated initializers */
    key.device = nmt_cuda_ctx_device(ctx);
    key.type = (int32_t)type;
    key.m = m_plan;
    key.n = n;
    key.k = k;
    key.ldx = ldx;
    key.ldw = ldw;
    key.ldy = ldy;
    key.align_x = alignment(x);
    key.align_w = alignment(w);
    key.align_y = alignment(y);
    key.align_bias = bias ? alignment(bias) : 0;
    key.invariant = nmt_cuda_ctx_batch_invariant(ctx);
    cublasLtMatmulAlgo_t algo = {}; /* stays unset when the heuristic has none */
    int found = 0;
    const float alpha = 1.0f, beta = 0.0f;
    cudaStream_t stream = (cudaStream_t)nmt_cuda_ctx_stream(ctx);
    const auto matmul = [&]() {
        return cublasLtMatmul(lt, &s.op, &alpha, w, &s.a, x, &s.b, &beta, y, &s.d, y, &s.d,
                              &algo, workspace, workspace_bytes, stream);
    };
    NMT_CUBLAS_RETURN(plan_for(lt, type, bias, key, workspace_bytes, &algo, &found));
    cublasStatus_t st = found ? matmul() : CUBLAS_STATUS_NOT_SUPPORTED;
    if (m_plan != m && (!found || st == CUBLAS_STATUS_NOT_SUPPORTED ||
                        st == CUBLAS_STATUS_INVALID_VALUE)) {
        key.m = m; /* the class's algorithm does not run at m: the exact plan */
        key.exact = 1;
        NMT_CUBLAS_RETURN(plan_for(lt, type, bias, key, workspace_bytes, &algo, &found));
        if (found)
            st = matmul();
    }
    if (!found)
        return NMT_STATUS_OK;
    NMT_CUBLAS_RETURN(st);
    *ran = 1;
    return NMT_STATUS_OK;
}
