/* softmax_topk.cu: fused online softmax + top-K over rows of logits, the
 * front: the dispatch policy, the plan of a call, the workspace, and the
 * exported launchers (kernels/softmax_topk.h).
 *
 * Shapes: logits [n_rows, ld] (V = vocab words used per row), top_values and
 * top_ids [n_rows, k], lse [n_rows]. log p_w = z_w - lse with
 * lse = m + log d, (m, d) the running max and normalizer of Milakov &
 * Gimelshein, "Online normalizer calculation for softmax" (Alg. 3), merged
 * across threads, warps and blocks by their associative eq. 4:
 *     (m1, d1) + (m2, d2) = (M, d1 e^(m1-M) + d2 e^(m2-M)),  M = max(m1, m2).
 * Every candidate is a packed 64-bit key (Argueta & Chiang, "Accelerating
 * Sparse Matrix Operations in Neural Networks on GPUs", Alg. 4): the logit's
 * order-preserving bits above, ~id below, so one unsigned compare orders by
 * value and then by the lower id; 0 is the empty slot (-inf, id -1).
 *
 * Variants (nmt_softmax_topk_variant; AUTO picks by rows, V, K: auto_plan):
 *  row    (K + excluded ids <= 64, few rows: about one block of 1024 threads
 *         an SM or fewer; any rows over candidate lists, while the bound fits
 *         1024 threads): one block per row (softmax_topk_row.cu).
 *  fused  (K <= 64): one block (1..8 warps) per row, a warp-wide top-K in
 *         registers (softmax_topk_fused.cu).
 *  split  (K <= 64, rows < SMs): the fused kernel over slices of a row, the
 *         row's last block merging them (softmax_topk_fused.cu).
 *  warp   (K <= 64, many rows: at least warp_rows_per_sm x SMs): one warp
 *         a row, several rows a block (softmax_topk_fused.cu).
 *  atomic (64 < K <= 512): Argueta Alg. 4 (softmax_topk_atomic.cu).
 *  sort   (K > 512): (m, d) pass writing keys, CUB segmented radix sort,
 *         copy the first K (softmax_topk_sort.cu).
 * Nothing allocates: the caller's workspace (nmt_cuda_softmax_topk_workspace_size)
 * holds the split counters (first kCounterBytes, at zero between calls), the
 * split partials and the sort fallback's keys.
 * Excluded ids count in lse but are never selected.
 * Candidate lists (LSH, nmt_cuda_softmax_topk_candidates): the row, fused,
 * split and atomic kernels take the lists: row r reads only count[g] logits of
 * its group g, read on the device, split slices cut from that count in the
 * kernel; keys hold the candidate index, mapped to its word only on the rare
 * insertion test (excluded words) and when the outputs are written. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "cuda_ctx.h"
#include "softmax_topk.h"
#include "softmax_topk_device.cuh"
#include "softmax_topk_variants.cuh"

/* The dispatch's tuning thresholds, one place (the kernels' capacities are in
 * softmax_topk_device.cuh). Each was measured on an H100; the command after
 * a field times its alternatives (the bench program in the build directory,
 * dev/bench/bench_softmax_topk.cu; --variant takes a comma list). */
struct nmt_softmax_topk_policy {
    /* K (of the V words) above which the sort fallback replaces the atomic
     * variant; candidate lists (no sort mapping) refuse a K above it.
     * bench_softmax_topk --variant atomic,sort --rows 4,60 --ks 256,512,1024 */
    int atomic_max_k = 512;
    /* The split variant while rows < this x SMs: fewer rows leave SMs idle.
     * bench_softmax_topk --variant fused,split --rows 1,12,60,132,264 --ks 10 */
    int split_rows_below_sms = 1;
    /* ... aiming at this many blocks an SM over all rows, */
    int split_blocks_per_sm = 2;
    /* ... each slice at least this many words (a multiple of 4). Small rows
     * are latency-bound, and shorter slices and warps did not speed them up
     * (docs/performance.md).
     * bench_softmax_topk --variant split,fused --rows 5 --vocabs 4778 --ks 1,10,50 */
    int split_min_words = 1024;
    /* The warp variant from this many rows an SM (full vocabulary; lists are
     * usually far shorter than their bound, the row variant's case). Beyond
     * it the rows alone give every SM enough warps, and the fused kernel's
     * per-warp seed, insertions and merge, paid up to 8 times a row, cost
     * more than they spread.
     * bench_softmax_topk --variant fused,warp --rows 320,640,1056,2560,5120
     *     --vocabs 4778,10240,30004 --ks 10 */
    int warp_rows_per_sm = 8;
    /* Fused and split: warps a block ~ words / this (K <= 32, one slot a lane), */
    int fused_words_per_warp = 512;
    /* ... and for K > 32 (two slots a lane), where insertions, not loads,
     * bound the time: a warp's list costs ~K (1 + ln(words / K)) of them,
     * so fewer, longer warps.
     * bench_softmax_topk --variant fused --rows 512,4000 --ks 10,50 */
    int fused_words_per_warp_two_slots = 1024;
    /* Row: threads a block ~ V / this (half that up to a row an SM: its SM
     * has nothing else to run), so blocks of several rows share an SM; */
    int row_words_per_thread = 16;
    /* ... the row variant while rows x threads <= SMs x this (beyond it the
     * fused kernel keeps every SM busy).
     * bench_softmax_topk --variant row,fused --rows 12,60,120,512 --vocabs 32000,50000 --ks 5,10 */
    int row_threads_per_sm = 1024;
    /* Row over candidate lists: at least this many threads a block. Lists are
     * usually far shorter than their bound max_count (LSH: a few thousand
     * words of V = 35k), so a plan from the bound sent many rows to the fused
     * kernel's 8 warps a row (docs/lsh.md).
     * bench_softmax_topk --variant row,fused --rows 768 --vocabs 35000 --lists 2300 --ks 10 */
    int row_list_min_threads = 128;
    /* Sort fallback: rows a pass x V at most (CUB's int offsets, workspace). */
    int sort_chunk_words = 1 << 25;
};
static constexpr nmt_softmax_topk_policy kPolicy{};
static_assert(kPolicy.split_min_words % 4 == 0,
              "split slices start 16-byte aligned when ld % 4 == 0");
static_assert(kPolicy.atomic_max_k <= kAtomicMaxK, "the atomic variant's shared memory");

/* ---- plan ------------------------------------------------------------------ */

/* The device's SMs (an A100's 108 when the runtime cannot tell). */
static int multiprocessor_count(void)
{
    const int sms = nmt_cuda_sm_count(-1);
    return sms > 0 ? sms : 108;
}

/* Split variant: blocks a row, before the cut into 4-word multiples. */
static int split_count(int32_t n_rows, int32_t vocab, int sms)
{
    int splits = (kPolicy.split_blocks_per_sm * sms + n_rows - 1) / n_rows;
    int by_size = vocab / kPolicy.split_min_words;
    splits = splits > by_size ? by_size : splits;
    return splits > kMaxSplits ? kMaxSplits : (splits < 1 ? 1 : splits);
}

/* Fused (splits 1) and split: the slices, then the warps a block. */
static FusedPlan fused_plan(int32_t vocab, int k_run, int splits)
{
    FusedPlan p = {splits, vocab, 1};
    /* Slices are multiples of 4 words so each starts aligned when ld % 4 == 0. */
    if (p.splits > 1) {
        p.chunk = ((vocab + p.splits - 1) / p.splits + 3) & ~3;
        p.splits = (vocab + p.chunk - 1) / p.chunk;
    }
    const int per_warp =
        k_run > kWarpSize ? kPolicy.fused_words_per_warp_two_slots : kPolicy.fused_words_per_warp;
    int warps = (p.chunk + per_warp - 1) / per_warp;
    p.warps = warps < 1 ? 1 : (warps > kMaxWarps ? kMaxWarps : warps);
    return p;
}

/* AUTO's slices a row: the split variant while rows are few. */
static int auto_splits(int32_t n_rows, int32_t vocab, int sms)
{
    if (n_rows < kPolicy.split_rows_below_sms * sms && n_rows <= kCounterSlots)
        return split_count(n_rows, vocab, sms);
    return 1;
}

/* Does the row kernel at t threads hold its candidates (k' = k_thr threads x
 * their words, a head or tail word included) for rows of `words`? */
static bool row_candidates_fit(int64_t k_thr, int32_t words, int64_t t)
{
    const int64_t words_a_thread = 4 * ((words / 4 + t - 1) / t) + 1;
    return k_thr <= kRegisterK && k_thr * words_a_thread <= kRowCandKeys;
}

/* AUTO's occupancy limit of the row kernel: rows x t threads within
 * row_threads_per_sm an SM. */
static bool row_occupancy_fits(int32_t n_rows, int64_t t, int sms)
{
    return (int64_t)n_rows * t <= (int64_t)sms * kPolicy.row_threads_per_sm;
}

/* Row kernel: threads a block, or 0 where it cannot run: k' = K + n_excluded
 * above kRegisterK, or a candidate bound (k' threads x their words) over
 * kRowCandKeys. ~V / row_words_per_thread threads (half that per thread up to
 * a row an SM). With `occupancy`, also 0 for more rows than row_threads_per_sm
 * threads an SM (AUTO's limit). */
static int row_plan_threads(int32_t n_rows, int32_t vocab, int k_run, int n_excluded, int sms,
                            bool occupancy)
{
    const int per_thread = n_rows <= sms ? kPolicy.row_words_per_thread / 2
                                         : kPolicy.row_words_per_thread;
    int64_t t = ((int64_t)vocab + per_thread - 1) / per_thread;
    t = (t + kWarpSize - 1) / kWarpSize * kWarpSize; /* vocab >= 1: at least a warp */
    t = t > kRowMaxThreads ? kRowMaxThreads : t;
    if (!row_candidates_fit((int64_t)k_run + n_excluded, vocab, t) ||
        (occupancy && !row_occupancy_fits(n_rows, t, sms)))
        return 0;
    return (int)t;
}

/* Row kernel over candidate lists (CAND): threads a block, or 0. The kernel
 * only needs its candidate bound to hold for a list as long as max_count:
 * the fewest threads that meet it, at least row_list_min_threads; no
 * occupancy limit (most blocks read a short list). */
static int row_plan_threads_lists(int32_t max_count, int k_run, int n_excluded)
{
    for (int t = kPolicy.row_list_min_threads; t <= kRowMaxThreads; t += kWarpSize)
        if (row_candidates_fit((int64_t)k_run + n_excluded, max_count, t))
            return t;
    return 0;
}

/* What a call runs. vocab: the row length or, with candidates, max_count. */
struct Plan {
    nmt_softmax_topk_variant variant;
    int k_sel;       /* the K words found among at most V (the rest is the tail) */
    int k_run;       /* the register variants' K: k_sel, at least 1 (k = 0 still yields lse) */
    int row_threads; /* row */
    bool row_warp_md; /* row: the warp kernel's (m, d) (batch invariance) */
    FusedPlan fused; /* fused and split */
};

/* AUTO: sort above atomic_max_k (full vocabulary), atomic above kRegisterK,
 * else row where it applies, else warp for many rows, else fused or split.
 * invariant: a row's lse must not change with the rows beside it, so one
 * (m, d) at every row count, the warp kernel's: the row kernel computing it
 * as the warp kernel does (WARP_MD, kStagedRowThreads threads) while AUTO's
 * occupancy limit holds, else warp (a row a warp, the fastest at many
 * rows); over candidate lists fused with one slice (its warps from V alone). */
static Plan auto_plan(int32_t n_rows, int32_t vocab, int32_t k, int32_t n_excluded, bool cand,
                      bool invariant = false)
{
    Plan p = {};
    p.k_sel = k < vocab ? k : vocab;
    if (!cand && p.k_sel > kPolicy.atomic_max_k) {
        p.variant = NMT_SOFTMAX_TOPK_SORT;
        return p;
    }
    if (p.k_sel > kRegisterK) {
        p.variant = NMT_SOFTMAX_TOPK_ATOMIC;
        return p;
    }
    p.k_run = p.k_sel > 0 ? p.k_sel : 1;
    if (invariant && !cand) { /* two kernels, the warp kernel's (m, d): the same bits */
        const int sms = multiprocessor_count();
        p.row_warp_md = row_candidates_fit((int64_t)p.k_run + n_excluded, vocab,
                                           kStagedRowThreads) &&
                        row_occupancy_fits(n_rows, kStagedRowThreads, sms);
        p.variant = p.row_warp_md ? NMT_SOFTMAX_TOPK_ROW : NMT_SOFTMAX_TOPK_WARP;
        p.row_threads = p.row_warp_md ? kStagedRowThreads : 0;
        return p;
    }
    if (invariant) {
        p.fused = fused_plan(vocab, p.k_run, 1);
        p.variant = NMT_SOFTMAX_TOPK_FUSED;
        return p;
    }
    const int sms = multiprocessor_count();
    p.row_threads = cand ? row_plan_threads_lists(vocab, p.k_run, n_excluded)
                         : row_plan_threads(n_rows, vocab, p.k_run, n_excluded, sms, true);
    if (p.row_threads > 0) {
        p.variant = NMT_SOFTMAX_TOPK_ROW;
        return p;
    }
    if (!cand && (int64_t)n_rows >= (int64_t)kPolicy.warp_rows_per_sm * sms) {
        p.variant = NMT_SOFTMAX_TOPK_WARP;
        return p;
    }
    p.fused = fused_plan(vocab, p.k_run, auto_splits(n_rows, vocab, sms));
    p.variant = p.fused.splits > 1 ? NMT_SOFTMAX_TOPK_SPLIT : NMT_SOFTMAX_TOPK_FUSED;
    return p;
}

static nmt_status cannot_run(nmt_softmax_topk_variant variant, const char *why, nmt_error *err)
{
    return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                         "nmt_cuda_softmax_topk: variant %s cannot run this call: %s",
                         nmt_cuda_softmax_topk_variant_name(variant), why);
}

/* A variant asked for by name: its plan, or UNSUPPORTED where its kernel
 * cannot take the call (AUTO's occupancy and size preferences do not apply). */
static nmt_status named_plan(nmt_softmax_topk_variant variant, int32_t n_rows, int32_t vocab,
                             int32_t k, int32_t n_excluded, bool cand, Plan *p, nmt_error *err)
{
    *p = Plan{};
    p->variant = variant;
    p->k_sel = k < vocab ? k : vocab;
    p->k_run = p->k_sel > 0 ? p->k_sel : 1;
    const int sms = multiprocessor_count();
    switch (variant) {
    case NMT_SOFTMAX_TOPK_SORT: /* lse goes out with the first key */
        if (cand || k < 1)
            return cannot_run(variant, "no candidate lists, and K >= 1", err);
        return NMT_STATUS_OK;
    case NMT_SOFTMAX_TOPK_ATOMIC:
        if (p->k_sel < 1 || p->k_sel > kAtomicMaxK)
            return cannot_run(variant, "K (at most V) outside [1, 6144]", err);
        return NMT_STATUS_OK;
    case NMT_SOFTMAX_TOPK_ROW:
        p->row_threads = cand ? row_plan_threads_lists(vocab, p->k_run, n_excluded)
                              : row_plan_threads(n_rows, vocab, p->k_run, n_excluded, sms, false);
        return p->row_threads > 0
                   ? NMT_STATUS_OK
                   : cannot_run(variant, "K + excluded ids over 64, or K x a thread's words "
                                         "over the block's 4096 candidates", err);
    case NMT_SOFTMAX_TOPK_WARP:
        return p->k_run > kRegisterK ? cannot_run(variant, "K over 64", err) : NMT_STATUS_OK;
    case NMT_SOFTMAX_TOPK_FUSED:
    case NMT_SOFTMAX_TOPK_SPLIT:
        if (p->k_run > kRegisterK)
            return cannot_run(variant, "K over 64", err);
        if (variant == NMT_SOFTMAX_TOPK_FUSED) {
            p->fused = fused_plan(vocab, p->k_run, 1);
            return NMT_STATUS_OK;
        }
        if (n_rows > kCounterSlots)
            return cannot_run(variant, "more than 1024 rows", err);
        p->fused = fused_plan(vocab, p->k_run, split_count(n_rows, vocab, sms));
        return p->fused.splits > 1
                   ? NMT_STATUS_OK
                   : cannot_run(variant, "one slice a row (V under twice the slice minimum, "
                                         "or rows over the SMs' split blocks)", err);
    default:
        return cannot_run(variant, "not a variant", err);
    }
}

/* ---- workspace --------------------------------------------------------------- */

/* Split workspace: counters, then (m, d) and k_run keys of every slice. */
static size_t split_bytes(size_t parts, int k_run)
{
    return kCounterBytes + nmt_align_up(parts * sizeof(float2), 256) +
           parts * k_run * sizeof(uint64_t);
}

static nmt_status workspace_too_small(size_t have, size_t need, nmt_error *err)
{
    return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                         "nmt_cuda_softmax_topk: workspace of %zu bytes, the call needs %zu "
                         "(nmt_cuda_softmax_topk_workspace_size)", have, need);
}

/* Launches the plan's variant; the workspace is checked against its need. */
static nmt_status run_plan(const Plan &p, const SoftmaxTopkCall &c, bool cand, void *workspace,
                           size_t workspace_bytes, cudaStream_t stream, nmt_error *err)
{
    switch (p.variant) {
    case NMT_SOFTMAX_TOPK_SORT: {
        const SortPlan plan = nmt_softmax_topk_sort_plan(c.n_rows, c.vocab,
                                                         kPolicy.sort_chunk_words);
        NMT_CUDA_RETURN(plan.error);
        if (!workspace || workspace_bytes < plan.total)
            return workspace_too_small(workspace_bytes, plan.total, err);
        return nmt_softmax_topk_sort(c, plan, (char *)workspace, stream, err);
    }
    case NMT_SOFTMAX_TOPK_ATOMIC:
        return nmt_softmax_topk_atomic(c, cand, p.k_sel, stream, err);
    case NMT_SOFTMAX_TOPK_ROW:
        return nmt_softmax_topk_row(c, cand, p.k_run, p.row_threads, p.row_warp_md, stream, err);
    case NMT_SOFTMAX_TOPK_WARP:
        return nmt_softmax_topk_warp(c, cand, p.k_run, stream, err);
    default: { /* fused, split */
        float2 *part_md = NULL;
        uint64_t *part_keys = NULL;
        uint32_t *row_done = NULL;
        if (p.fused.splits > 1) {
            const size_t parts = (size_t)c.n_rows * p.fused.splits;
            const size_t need = split_bytes(parts, p.k_run);
            if (!workspace || workspace_bytes < need)
                return workspace_too_small(workspace_bytes, need, err);
            char *ws = (char *)workspace;
            row_done = (uint32_t *)ws;
            part_md = (float2 *)(ws + kCounterBytes);
            part_keys =
                (uint64_t *)(ws + kCounterBytes + nmt_align_up(parts * sizeof(float2), 256));
        }
        return nmt_softmax_topk_fused(c, cand, p.k_run, p.fused, part_md, part_keys, row_done,
                                      stream, err);
    }
    }
}

/* ---- exported ------------------------------------------------------------- */

extern "C" const char *nmt_cuda_softmax_topk_variant_name(nmt_softmax_topk_variant variant)
{
    switch (variant) {
    case NMT_SOFTMAX_TOPK_AUTO: return "auto";
    case NMT_SOFTMAX_TOPK_ROW: return "row";
    case NMT_SOFTMAX_TOPK_FUSED: return "fused";
    case NMT_SOFTMAX_TOPK_SPLIT: return "split";
    case NMT_SOFTMAX_TOPK_ATOMIC: return "atomic";
    case NMT_SOFTMAX_TOPK_SORT: return "sort";
    case NMT_SOFTMAX_TOPK_WARP: return "warp";
    case NMT_SOFTMAX_TOPK_AUTO_INVARIANT: return "auto-invariant";
    }
    return "unknown";
}

extern "C" nmt_softmax_topk_variant nmt_cuda_softmax_topk_pick(int32_t n_rows, int32_t vocab,
                                                              int32_t k, int32_t n_excluded,
                                                              int candidates)
{
    if (n_rows < 1 || vocab < 1 || k < 0 || n_excluded < 0 ||
        (candidates && k > kPolicy.atomic_max_k))
        return NMT_SOFTMAX_TOPK_AUTO;
    return auto_plan(n_rows, vocab, k, n_excluded, candidates != 0).variant;
}

extern "C" size_t nmt_cuda_softmax_topk_variant_workspace_size(nmt_softmax_topk_variant variant,
                                                               int32_t n_rows, int32_t vocab,
                                                               int32_t k)
{
    size_t need = kCounterBytes;
    if (n_rows < 1 || vocab < 1 || k < 0)
        return need;
    const int sms = multiprocessor_count();
    const int k_sel = k < vocab ? k : vocab;
    const bool any = variant == NMT_SOFTMAX_TOPK_AUTO;
    if (any || variant == NMT_SOFTMAX_TOPK_SPLIT) {
        /* Any call with fewer rows (more slices a row), a smaller V or K needs no more. */
        const int k_run = k_sel < 1 ? 1 : (k_sel > kRegisterK ? kRegisterK : k_sel);
        for (int32_t r = 1; r <= n_rows && r <= kCounterSlots; r++) {
            const int splits = any ? auto_splits(r, vocab, sms) : split_count(r, vocab, sms);
            const FusedPlan p = fused_plan(vocab, k_run, splits);
            size_t b = p.splits > 1 ? split_bytes((size_t)r * p.splits, k_run) : 0;
            need = b > need ? b : need;
        }
    }
    if ((any && k_sel > kPolicy.atomic_max_k) || variant == NMT_SOFTMAX_TOPK_SORT) {
        SortPlan p = nmt_softmax_topk_sort_plan(n_rows, vocab, kPolicy.sort_chunk_words);
        if (p.error != cudaSuccess)
            return SIZE_MAX;
        need = p.total > need ? p.total : need;
    }
    return need;
}

extern "C" size_t nmt_cuda_softmax_topk_workspace_size(int32_t n_rows, int32_t vocab, int32_t k)
{
    return nmt_cuda_softmax_topk_variant_workspace_size(NMT_SOFTMAX_TOPK_AUTO, n_rows, vocab, k);
}

extern "C" nmt_status nmt_cuda_softmax_topk_variant(
    int32_t n_rows, int32_t vocab, const float *logits, int32_t ld, int32_t k,
    const int32_t *excluded, int32_t n_excluded, float *top_values, int32_t *top_ids, float *lse,
    void *workspace, size_t workspace_bytes, nmt_softmax_topk_variant variant, void *stream,
    nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && vocab >= 1 && ld >= vocab && k >= 0 && n_excluded >= 0);
    NMT_ARG_CHECK(n_rows == 0 || logits);
    NMT_ARG_CHECK(k == 0 || n_rows == 0 || (top_values && top_ids));
    NMT_ARG_CHECK(n_excluded == 0 || excluded);
    NMT_ARG_CHECK((int64_t)n_rows * (k > 1 ? k : 1) <= INT32_MAX);
    NMT_ARG_CHECK((uintptr_t)workspace % 256 == 0);
    NMT_ARG_CHECK(variant >= NMT_SOFTMAX_TOPK_AUTO && variant <= NMT_SOFTMAX_TOPK_AUTO_INVARIANT);
    if (n_rows == 0)
        return NMT_STATUS_OK;
    Plan plan;
    if (variant == NMT_SOFTMAX_TOPK_AUTO || variant == NMT_SOFTMAX_TOPK_AUTO_INVARIANT) {
        plan = auto_plan(n_rows, vocab, k, n_excluded, false,
                         variant == NMT_SOFTMAX_TOPK_AUTO_INVARIANT);
    } else {
        nmt_status status = named_plan(variant, n_rows, vocab, k, n_excluded, false, &plan, err);
        if (status != NMT_STATUS_OK)
            return status;
    }
    const SoftmaxTopkCall call = {n_rows, vocab, logits, ld, k, excluded, n_excluded,
                                  top_values, top_ids, lse, nmt_cand_lists{}};
    return run_plan(plan, call, false, workspace, workspace_bytes, (cudaStream_t)stream, err);
}

extern "C" nmt_status nmt_cuda_softmax_topk(int32_t n_rows, int32_t vocab, const float *logits,
                                            int32_t ld, int32_t k, const int32_t *excluded,
                                            int32_t n_excluded, float *top_values,
                                            int32_t *top_ids, float *lse, void *workspace,
                                            size_t workspace_bytes, void *stream, nmt_error *err)
{
    return nmt_cuda_softmax_topk_variant(n_rows, vocab, logits, ld, k, excluded, n_excluded,
                                         top_values, top_ids, lse, workspace, workspace_bytes,
                                         NMT_SOFTMAX_TOPK_AUTO, stream, err);
}

extern "C" nmt_status nmt_cuda_softmax_topk_candidates_variant(
    int32_t n_rows, const float *logits, int64_t ld, nmt_cand_lists lists, int32_t max_count,
    int32_t k, const int32_t *excluded, int32_t n_excluded, float *top_values, int32_t *top_ids,
    float *lse, void *workspace, size_t workspace_bytes, nmt_softmax_topk_variant variant,
    void *stream, nmt_error *err)
{
    NMT_ARG_CHECK(n_rows >= 0 && lists.rows_per_group >= 1 && max_count >= 1 && k >= 0);
    NMT_ARG_CHECK(ld >= max_count && lists.ld >= max_count && n_excluded >= 0);
    NMT_ARG_CHECK(n_rows == 0 || (logits && lists.words && lists.count));
    NMT_ARG_CHECK(k == 0 || n_rows == 0 || (top_values && top_ids));
    NMT_ARG_CHECK(n_excluded == 0 || excluded);
    NMT_ARG_CHECK((int64_t)n_rows * (k > 1 ? k : 1) <= INT32_MAX);
    NMT_ARG_CHECK((uintptr_t)workspace % 256 == 0);
    NMT_ARG_CHECK(variant >= NMT_SOFTMAX_TOPK_AUTO && variant <= NMT_SOFTMAX_TOPK_AUTO_INVARIANT);
    if ((variant == NMT_SOFTMAX_TOPK_AUTO || variant == NMT_SOFTMAX_TOPK_AUTO_INVARIANT) &&
        k > kPolicy.atomic_max_k) /* no sort mapping */
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "nmt_cuda_softmax_topk_candidates: K = %d, at most %d with "
                             "candidate lists", k, kPolicy.atomic_max_k);
    if (n_rows == 0)
        return NMT_STATUS_OK;
    Plan plan;
    if (variant == NMT_SOFTMAX_TOPK_AUTO || variant == NMT_SOFTMAX_TOPK_AUTO_INVARIANT) {
        plan = auto_plan(n_rows, max_count, k, n_excluded, true,
                         variant == NMT_SOFTMAX_TOPK_AUTO_INVARIANT);
    } else {
        nmt_status status = named_plan(variant, n_rows, max_count, k, n_excluded, true, &plan,
                                       err);
        if (status != NMT_STATUS_OK)
            return status;
    }
    const SoftmaxTopkCall call = {n_rows, max_count, logits, ld, k, excluded, n_excluded,
                                  top_values, top_ids, lse, lists};
    return run_plan(plan, call, true, workspace, workspace_bytes, (cudaStream_t)stream, err);
}

extern "C" nmt_status nmt_cuda_softmax_topk_candidates(
    int32_t n_rows, const float *logits, int64_t ld, nmt_cand_lists lists, int32_t max_count,
    int32_t k, const int32_t *excluded, int32_t n_excluded, float *top_values, int32_t *top_ids,
    float *lse, void *workspace, size_t workspace_bytes, void *stream, nmt_error *err)
{
    return nmt_cuda_softmax_topk_candidates_variant(
        n_rows, logits, ld, lists, max_count, k, excluded, n_excluded, top_values, top_ids, lse,
        workspace, workspace_bytes, NMT_SOFTMAX_TOPK_AUTO, stream, err);
}
