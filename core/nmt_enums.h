/* nmt_enums.h: the enums the public API and the library's floors share, one
 * definition each (the ground floor's, core/, so every floor can use them).
 * The public header include/nmt.h includes this file, and the installed
 * nmt.h carries it inline, as it does nmt_status.h. */
#ifndef NMT_ENUMS_H
#define NMT_ENUMS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Models an ensemble holds at most (nmt_translator_create_ensemble). */
enum { NMT_MAX_ENSEMBLE_MODELS = 8 };

/* Output-vocabulary shrinking (docs/lsh.md): score only a candidate list per
 * step instead of the whole target vocabulary. The log-softmax then
 * normalizes over the candidates (model-v1, step 5). */
typedef enum nmt_shrink_mode {
    NMT_SHRINK_NONE = 0, /* full softmax (default) */
    NMT_SHRINK_LSH = 1,  /* LSH (Shi, Xu & Knight): hashed candidates + the T most frequent words */
    NMT_SHRINK_TOP = 2   /* the TOP baseline: only the T most frequent words */
} nmt_shrink_mode;

/* Which hypotheses share one candidate list. */
typedef enum nmt_lsh_share {
    NMT_LSH_SHARE_BATCH = 0,    /* all hypotheses of the batch (one GEMM) */
    NMT_LSH_SHARE_SENTENCE = 1, /* the hypotheses of one sentence */
    NMT_LSH_SHARE_ROW = 2       /* none: each hypothesis its own list (SDDMM) */
} nmt_lsh_share;

/* How the CUDA engine builds the LSH lists (the same lists either way). */
typedef enum nmt_lsh_lists {
    NMT_LSH_LISTS_HITS = 0,   /* hit counts in a [rows, V] matrix, then compaction */
    NMT_LSH_LISTS_DIRECT = 1, /* counts in shared memory, no hit matrix
                                 (kernels/cuda/lsh_direct.cu) */
    NMT_LSH_LISTS_AUTO = 2    /* default: HITS for steps of few rows, DIRECT for many
                                 (the switch and its measurement: docs/lsh.md, "Automatic choices") */
} nmt_lsh_lists;

/* The arithmetic of the GEMMs (docs/performance.md, "Precision").
 * Log-softmax, top-K and the beam scores are fp32 in every mode; the CPU
 * backend is fp32 except for INT8, and ignores the others. */
typedef enum nmt_precision {
    NMT_PRECISION_FP32 = 0,   /* cuBLAS sgemm: fp32 math throughout */
    NMT_PRECISION_TF32X2 = 1, /* from 64 rows a step: the decoder's GEMMs on TF32 tensor
                                 cores with activations split in two TF32 parts, ~22-bit
                                 inputs and fp32 sums; needs weights exact in TF32 (every
                                 fp16 model file) */
    NMT_PRECISION_BF16 = 2,   /* bf16 tensor cores with fp32 sums for the encoder's input
                                 and attention-key projections, the decoder LSTMs, W_c and
                                 the output layer: weights kept in bf16 on the device,
                                 activations rounded to bf16 (8-bit mantissa) */
    NMT_PRECISION_FP16 = 3,   /* the same in fp16 (11-bit mantissa; an fp16 model file's
                                 weights exactly) */
    NMT_PRECISION_AUTO = 4,   /* the default: the model file's, fp16 where every weight it
                                 stores is fp16 (exact in fp16; the fastest,
                                 docs/performance.md, "Defaults"), else fp32 (the CPU:
                                 fp32). nmt_stats.precision says which ran */
    NMT_PRECISION_INT8 = 5    /* the CPU's fast kernels only: the decoder step's products
                                 in int8 with per-row scales and exact int32 sums
                                 (kernels/linear_int8.h; AVX-512 VNNI or AVX2, refused
                                 without either and on --cpu-isa generic);
                                 CUDA refuses it */
} nmt_precision;

/* Which beam-search rules the translator follows (docs/decoding.md, "Search rules"). */
typedef enum nmt_search_rules {
    NMT_SEARCH_RULES_V1 = 0,  /* model-v1's (docs/model-v1.md), the default: 2B candidates
                                 a step, done with B finished, EOS forced at the max length */
    NMT_SEARCH_RULES_ONMT = 1 /* OpenNMT-py 3.5.1's beam search with onmt_translate's
                                 defaults: its output for a converted model (pair with
                                 max_len_a 1.25, max_len_b 5, unk_replace 0 for all of
                                 onmt_translate's defaults). CPU and CUDA (a CUDA
                                 service batches it: no continuous batching) */
} nmt_search_rules;

/* The instructions the CPU's own product runs on (kernels/linear_fixed.h).
 * Each path sums in its own lanes, so their last bits differ: one path on
 * every machine gives every machine the same bits. */
typedef enum nmt_cpu_isa {
    NMT_CPU_ISA_AUTO = 0,    /* the best this CPU runs (default) */
    NMT_CPU_ISA_GENERIC = 1, /* portable C, any CPU: 8 lanes, no fused multiply-add */
    NMT_CPU_ISA_AVX2 = 2,    /* AVX2, FMA and F16C (x86-64 since 2013-2015): 8 lanes */
    NMT_CPU_ISA_AVX512 = 3   /* AVX-512F: 16 lanes */
} nmt_cpu_isa;
/* The coverage penalty of finished hypotheses (docs/decoding.md, "Coverage
 * penalty"): OpenNMT-py's -coverage_penalty, applied by the onmt rules. */
typedef enum nmt_coverage_penalty {
    NMT_COVERAGE_NONE = 0,   /* the default */
    NMT_COVERAGE_WU = 1,     /* Wu et al. (GNMT): beta * -sum_j log(min(coverage_j, 1)) */
    NMT_COVERAGE_SUMMARY = 2 /* OpenNMT-py's: beta * (sum_j max(coverage_j, 1) - source
                                length) */
} nmt_coverage_penalty;

#ifdef __cplusplus
}
#endif

#endif /* NMT_ENUMS_H */
