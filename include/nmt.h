/* nmt.h: the one public header of the nmt library.
 *
 * An LSTM + attention sequence-to-sequence translator (model v1, see
 * docs/model-format.md) with batched beam search on the CPU or a CUDA GPU.
 *
 * Threads: an nmt_model is immutable once loaded and may be shared by any
 * number of threads. An nmt_translator owns workspaces (and, on CUDA, a stream
 * and a cuBLAS handle): use one translator per thread.
 *
 * Errors: every fallible call returns an nmt_status (0 ok, negative error) and,
 * when `err` is not NULL, fills it with a message naming what was wrong (file,
 * field, input line). The library never exits, aborts or prints to stdout. */
#ifndef NMT_H
#define NMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* nmt_status, nmt_error and nmt_status_string: the ground floor's status
 * types (core/nmt_status.h; the installed nmt.h carries them inline). */
#include "nmt_enums.h"
#include "nmt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NMT_VERSION_STRING "0.1.0"


typedef enum nmt_device {
    NMT_DEVICE_AUTO = 0, /* CUDA when built and a GPU exists, else the CPU */
    NMT_DEVICE_CPU = 1,
    NMT_DEVICE_CUDA = 2
} nmt_device;

/* Output-vocabulary shrinking (docs/lsh.md; its enums, and nmt_precision,
 * nmt_search_rules and nmt_cpu_isa, are nmt_enums.h's). */
typedef struct nmt_shrink_options {
    nmt_shrink_mode mode; /* default NMT_SHRINK_NONE */
    int k, u, w;          /* WTA hashing {K, u, W}, default 8, 3, 500 */
    int top;              /* T: the most frequent target words always scored, default 2000 */
    int threshold;        /* t: a word is a candidate when >= t bands match, default 6 */
    nmt_lsh_share share;  /* default NMT_LSH_SHARE_SENTENCE */
    unsigned seed;        /* permutations and hash tables, default 1 */
    nmt_lsh_lists lists;  /* default NMT_LSH_LISTS_AUTO; the CPU ignores it */
} nmt_shrink_options;

/* Matrices the model file stores sparse (docs/model-format.md, section SPRS). */
typedef enum nmt_sparse {
    NMT_SPARSE_AUTO = 0, /* the CPU multiplies them in CSR form (SpMM); CUDA where its SpMM
                            was measured faster than the dense GEMM of the precision at the
                            step's row count, else the dense expansion (default) */
    NMT_SPARSE_ON = 1,   /* the CSR form, always (an error when the model has no sparse
                            matrix) */
    NMT_SPARSE_OFF = 2   /* the dense expansion everywhere (the same results on the CPU) */
} nmt_sparse;

/* The CPU's kernels (nmt_options.cpu_kernels). */
typedef enum nmt_cpu_kernels {
    NMT_CPU_KERNELS_AUTO = 0,      /* fast (default) */
    NMT_CPU_KERNELS_BLAS = 1,      /* fast's network on the BLAS's SGEMM (an error when built
                                      without a BLAS, and under batch invariance where a probe
                                      finds the BLAS's rows moving with the row count, as
                                      OpenBLAS's Haswell/Zen kernels do) */
    NMT_CPU_KERNELS_REFERENCE = 2, /* the plain-C oracle: double sums, a sentence at a time */
    NMT_CPU_KERNELS_FAST = 3       /* every dense product on the engine's own vectorized,
                                      threaded fp32 product (nmt_options.cpu_isa), the
                                      encoder batched over the sentences, the cells,
                                      attention and softmax in vectorized fp32 */
} nmt_cpu_kernels;

/* Translation options. Initialize with nmt_options_init, then override. */
typedef struct nmt_options {
    int beam_size;       /* B, default 5 */
    int n_best;          /* N <= B hypotheses returned per line, default 1 */
    float alpha;         /* length penalty: score / len^alpha, default 1.0 */
    float max_len_a;     /* max target length floor(a*S + b), default 2 */
    int max_len_b;       /* default 10 */
    int batch_size;      /* sentences decoded together at most, default 32; CUDA halves it
                            at create while the device runs out of memory creating the
                            translator (nmt_stats.batch_size says the size chosen) */
    int max_line_bytes;  /* longer input lines are refused, default 4096 */
    int max_src_tokens;  /* lines with more tokens are refused, default 256 */
    int unk_replace;     /* replace UNK by the most attended source word, default 1 */
    nmt_device device;   /* default NMT_DEVICE_AUTO */
    int device_index;    /* CUDA device ordinal, default 0 */
    nmt_shrink_options shrink; /* default: off (full softmax) */
    int collect_stats;   /* fill nmt_stats: 0 off (default); 1 sentences, steps and
                            wall time (free); 2 also the output layer's GPU time
                            (events) and, with shrinking on, recall (slower: the
                            full softmax is computed too) */
    int cuda_graphs;     /* CUDA: replay decoder steps and encoder passes that recur
                            as CUDA graphs (fewer launches), default 1; 0 launches
                            every kernel (the same results) */
    int warmup;          /* CUDA: decode small synthetic batches when the translator
                            is created (~0.5 s at 2,048 sentences), so that the first
                            real batches do not pay one-time CUDA/cuBLAS costs
                            (~150 ms), default 1 */
    nmt_precision precision; /* CUDA: the GEMMs' arithmetic, default NMT_PRECISION_AUTO
                                (as translate's and nmt-server's). At each precision a
                                line's outputs have the same bits in any batch
                                (docs/decoding.md, "Batch invariance") */
    int check_every;     /* CUDA: the host reads the sentences' done flags every this
                            many steps (1..64, default 1): finished sentences leave
                            the batch and the loop stops at most 2x this many steps
                            after the GPU knows; never a wait on the step in flight */
    int input_tokens;    /* 1: lines are pre-tokenized, tokens separated by whitespace and
                            taken as they are (docs/tokenization.md); 0: raw text, split by
                            the engine's tokenizer or, when the model file says
                            tokenizer=sentencepiece, by its SentencePiece model; -1
                            (default): as the model file says (tokenizer=pretokenized: 1) */
    int output_tokens;   /* 1: hypotheses are the target tokens separated by single spaces,
                            not detokenized; 0: text (a SentencePiece model's pieces joined
                            by its decoder); -1 (default): as the model file says */
    int max_batch_tokens; /* a batch holds at most this many source tokens (lines sorted
                             longest first; a longer line goes alone) as well as at most
                             batch_size lines; 0 (default): only batch_size */
    nmt_search_rules search_rules; /* default NMT_SEARCH_RULES_V1 */
    int64_t max_memory;  /* CUDA: bytes of device memory the translator may allocate, 0
                            (default): no cap. Before creating its backend the translator
                            measures what the backend allocates for (batch_size, beam_size,
                            max_src_tokens): weights, the network's workspaces, the search's
                            buffers (not the CUDA context, cuBLAS's handles or the shrink
                            wing); over the cap it halves batch_size until it fits
                            (nmt_stats.batch_size says the size chosen); when even one
                            sentence does not fit, create fails with
                            NMT_STATUS_ERROR_MEMORY naming the need and the cap. The CPU
                            ignores it */
    nmt_sparse sparse;   /* sparse matrices, default NMT_SPARSE_AUTO */
    int attention_weights; /* 1: every hypothesis carries its soft attention weights, its
                              target tokens and the line its source tokens
                              (nmt_hypothesis.attention, .tokens, nmt_result.src_tokens;
                              docs/decoding.md, "Attention weights and token scores"); the
                              search then keeps a weights history (memory: on CUDA about
                              batch_size x (2 max_src_tokens + 10) x beam_size x
                              max_src_tokens floats, three times). 0 (default): none */
    int batch_invariant; /* 1 (default): every output of a line (text, scores, token
                            scores, alignment, attention) has the same bits whatever it
                            is batched with, on a given device kind and precision
                            (docs/decoding.md, "Batch invariance"); 0: CUDA may run
                            faster kernels whose last bits depend on the batch */
    nmt_cpu_kernels cpu_kernels; /* CPU: default NMT_CPU_KERNELS_AUTO. All keep batch
                                    invariance; their outputs differ by fp32 rounding */
    int threads;         /* CPU, fast and blas: threads a product may use, 0 (default):
                            the machine's cores (nmt_cpu_default_threads(1)). OpenBLAS
                            keeps one count for the process: with blas, give every
                            translator of a process the same */
    int return_alternatives; /* 1: a line's n_best hypotheses are alternatives: the n_best
                                best words at its first free position (after its target
                                prefix, nmt_translate_batch_prefix; else the first), EOS
                                excepted, in that order, each continued by the beam
                                (CTranslate2's return_alternatives; docs/decoding.md,
                                "Target prefixes"); needs batch_size >= n_best. 0
                                (default): the beam's n-best list */
    nmt_cpu_isa cpu_isa; /* CPU, fast: the instructions of its product, default
                            NMT_CPU_ISA_AUTO (the best this CPU runs); a path the CPU
                            lacks is an error at create. The paths' last bits differ:
                            one path everywhere gives every machine the same bits */

    /* Random sampling and the logit rules (docs/decoding.md), CTranslate2's
     * options of the same names; none works with shrink. Sampling takes no
     * return_alternatives; nmt_score_batch none of them (nor the coverage
     * penalty). A prefix's tokens are taken as the model scores them (each
     * sample takes them, drawing after them): the logit rules shape the
     * words after them. */
    int sampling_topk;   /* 1 (default): the beam search; 0: sample from the whole
                            vocabulary; K in 2..512: sample from the K likeliest words.
                            Sampling takes beam_size 1 and draws n_best samples a line
                            (at most the translator's beam_size or n_best, whichever is
                            larger); it follows the v1 rules */
    float sampling_topp; /* (0, 1], default 1: sample from the smallest set of the top-K
                            whose probability is at least this (< 1 needs K in 2..512) */
    float sampling_temperature; /* (0, 100], default 1: sample from softmax(logits / T) */
    uint64_t seed;       /* sampling: a line's samples depend on the seed, the line's key
                            (nmt_prepared_set_line_keys; its index in the call by
                            default) and nothing else, default 0 */
    int min_length;      /* EOS never ends a hypothesis of fewer target tokens (except at
                            the max length), default 0 */
    int no_repeat_ngram_size; /* N > 0: a word that would repeat an N-gram of its
                                 hypothesis is never generated, default 0 (off) */
    float repetition_penalty; /* (0, 100], default 1 (off): the logit of a word the
                                 hypothesis holds is divided by this when positive,
                                 multiplied when negative (CTRL) */
    int ban_unk;         /* 1: UNK is never generated (OpenNMT-py's -ban_unk_token,
                            CTranslate2's disable_unk), default 0 */
    const char *suppress; /* NULL (default), or target token sequences never generated:
                             one a line, tokens separated by spaces, as the target
                             vocabulary spells them (read at create) */
    nmt_coverage_penalty coverage_penalty; /* default NMT_COVERAGE_NONE; needs search_rules
                                              onmt (OpenNMT-py's -coverage_penalty) */
    float coverage_beta; /* 0..100, default 0 (OpenNMT-py's -beta) */
    int fused_output;    /* CUDA, 16-bit: 1 runs the output layer as one fused product,
                            log-softmax and top-K that never writes the logits
                            (docs/performance.md, "Fused output layer") where the step
                            reads no logits (no sampling, logit rule, prefix, ensemble
                            or shrinking); the same words, lse's last bits differ.
                            0: the GEMM, then softmax + top-K. Default 0 */
} nmt_options;

typedef struct nmt_model nmt_model;
typedef struct nmt_translator nmt_translator;

/* One hypothesis of one input line. */
typedef struct nmt_hypothesis {
    char *text;       /* detokenized UTF-8 (output_tokens: the tokens), owned by the result */
    float score;      /* log-probability / length^alpha (length counts EOS) */
    float log_prob;   /* sum of token log-probabilities, EOS included */
    int n_tokens;     /* target tokens, EOS excluded */
    int *alignment;   /* [n_tokens]: for each target token, the source token (0-based, as
                         tokenized) it attended most; owned by the result */
    float *token_scores; /* [n_tokens + 1]: the log-probability of each target token, then
                            the EOS's (0 for a hypothesis the onmt rules cut at the max
                            length, which has none); they sum to log_prob up to float
                            rounding; owned by the result */
    float *attention;    /* attention_weights: [n_tokens x n_src] (nmt_result.n_src), row t
                            the attention weights of target token t over the source tokens
                            (each row sums to 1; alignment[t] is its largest); else NULL.
                            Owned by the result */
    char **tokens;       /* attention_weights: [n_tokens] the target tokens the text is made
                            of (unknown words replaced, not detokenized); else NULL. Owned */
} nmt_hypothesis;

/* The outcome for one input line: either hypotheses or a per-line error.
 * A bad line never fails the batch: its status says why, the others translate. */
typedef struct nmt_result {
    nmt_status status;
    char message[256];
    int n_hypotheses;
    nmt_hypothesis *hypotheses; /* best first */
    int n_src;                  /* the line's source tokens, as tokenized (0: an empty or
                                   refused line) */
    char **src_tokens;          /* attention_weights: [n_src] those tokens; else NULL. Owned */
} nmt_result;

void nmt_options_init(nmt_options *options);

/* sizeof of a public struct by its name ("nmt_options", "nmt_hypothesis",
 * "nmt_result", "nmt_stats", "nmt_error", "nmt_service_options",
 * "nmt_request_options", "nmt_service_stats", "nmt_shrink_options",
 * "nmt_pipeline_options", "nmt_pipeline_window", "nmt_pipeline_stats"), 0 for
 * another name: a binding (python/nmt) checks its own layouts against the
 * library it loaded, so a library of another version is refused at load
 * instead of misread. */
size_t nmt_struct_size(const char *name);

/* Loads and validates a model file; refuses malformed files with the reason. */
nmt_status nmt_model_load(const char *path, nmt_model **model, nmt_error *err);
void nmt_model_free(nmt_model *model);

/* A short human-readable description (sizes, vocabularies). */
const char *nmt_model_describe(const nmt_model *model);

/* The number of visible CUDA devices: 0 when the library was built without
 * CUDA or no GPU is visible (so it also reads as "is CUDA available"). */
int nmt_cuda_available(void);

/* The threads each of `workers` CPU translators of one process gets
 * when nmt_options.threads is 0: the machine's cores divided among them, at
 * least 1 (CTranslate2's inter_threads x intra_threads). */
int nmt_cpu_default_threads(int workers);

nmt_status nmt_translator_create(const nmt_model *model, const nmt_options *options,
                                 nmt_translator **translator, nmt_error *err);
void nmt_translator_free(nmt_translator *translator);

/* An ensemble (docs/decoding.md, "Ensembles"): one translator over n_models
 * models (1..NMT_MAX_ENSEMBLE_MODELS, each outliving it) that sums their
 * log-probabilities at each step, log p(w) = sum_i weights[i] * log p_i(w),
 * for the beam search to rank and add up. weights NULL: 1 / n_models each
 * (OpenNMT-py's mean of log-probabilities); else each >= 0, not all 0, used
 * as given, not normalized (Marian's --weights). The models must share the
 * target vocabulary and the source side (vocabulary, feature rows,
 * tokenizer): models that differ are refused (NMT_STATUS_ERROR_ARGUMENT)
 * with the first difference named. The first model gives the tokenizer, the
 * text, the alignment and the attention weights, and its file's weights
 * decide precision auto. Shrinking is refused; on CUDA the members share
 * one stream and the service runs an ensemble in batches (no continuous
 * batching). nmt_translator_create(model, ...) is this with one model. */
nmt_status nmt_translator_create_ensemble(const nmt_model *const *models, const float *weights,
                                          int n_models, const nmt_options *options,
                                          nmt_translator **translator, nmt_error *err);

/* The device the translator actually runs on (never NMT_DEVICE_AUTO). */
nmt_device nmt_translator_device(const nmt_translator *translator);

/* Translates n_lines lines (UTF-8, no newline). results[i] receives line i's
 * outcome; release each with nmt_result_clear. Returns an error only when the
 * whole batch failed (device error, host out of memory); per-line problems are
 * reported in results[i].status. A batch the device has no memory for is
 * decoded again as two halves (down to one sentence): the same translations;
 * a sentence that does not fit alone gets NMT_STATUS_ERROR_MEMORY with the
 * cause in its message, and the other lines are translated. */
nmt_status nmt_translate_batch(nmt_translator *translator, const char *const *lines, int n_lines,
                               nmt_result *results, nmt_error *err);

/* nmt_translate_batch where line i's translation continues its target
 * prefix target_prefixes[i] (NULL or "": none): text tokenized as the
 * source is (input_tokens, the model's SentencePiece), each token a word of
 * the target vocabulary (an unknown one is UNK, its text kept in the
 * output). Every hypothesis starts with the prefix's tokens, whose log
 * probabilities count in its scores; the search is free after them
 * (docs/decoding.md, "Target prefixes"). A prefix that cannot be used (more
 * tokens than the longest translation of a max_src_tokens-token line,
 * floor(max_len_a x max_src_tokens + max_len_b) - 1; a special token; bad
 * UTF-8) is that line's error; so is any prefix on a translator that
 * shrinks its output layer (NMT_STATUS_ERROR_ARGUMENT for the call: a forced
 * word need not be a candidate). target_prefixes may be NULL (none at
 * all). */
nmt_status nmt_translate_batch_prefix(nmt_translator *translator, const char *const *lines,
                                      const char *const *target_prefixes, int n_lines,
                                      nmt_result *results, nmt_error *err);

/* Scores line i's given translation targets[i] (forced decoding; OpenNMT-py's
 * -tgt, CTranslate2's score_batch, marian-scorer): results[i] has one
 * hypothesis whose text is targets[i] as given, log_prob the sum of its
 * tokens' log-probabilities and the EOS's, score that normalized by the
 * length penalty as a translation's (alpha, search_rules), token_scores
 * each token's log-probability then the EOS's, alignment and, with
 * attention_weights, the attention rows and tokens. Targets are tokenized
 * and limited as prefixes are (nmt_translate_batch_prefix); a pair that
 * cannot be scored (an empty source, a bad target) is that line's error
 * and the others are scored. The output layer is the full softmax
 * whatever the shrinking. On CUDA the targets run as one teacher-forced
 * pass at batch width, with no beam. */
nmt_status nmt_score_batch(nmt_translator *translator, const char *const *sources,
                           const char *const *targets, int n_lines, nmt_result *results,
                           nmt_error *err);

/* nmt_translate_batch in two halves, for a pipeline that prepares the next
 * lines while the translator decodes the last ones. prepare does the host
 * work that comes before decoding (each line checked and tokenized, the
 * lines ordered by length); it reads only the translator's model and input
 * options, so it may run on another thread while any translator of that
 * model decodes. translate_prepared decodes them with a translator of the
 * same model and input options (max_line_bytes, max_src_tokens,
 * input_tokens; NMT_STATUS_ERROR_ARGUMENT otherwise) into results[0 ..
 * n_lines), exactly as nmt_translate_batch would; once, then free it. */
typedef struct nmt_prepared nmt_prepared;
nmt_status nmt_translator_prepare(const nmt_translator *translator, const char *const *lines,
                                  int n_lines, nmt_prepared **prepared, nmt_error *err);
nmt_status nmt_translate_prepared(nmt_translator *translator, nmt_prepared *prepared,
                                  nmt_result *results, nmt_error *err);
void nmt_prepared_free(nmt_prepared *prepared); /* NULL: nothing */
/* nmt_translator_prepare for nmt_translate_batch_prefix: line i's
 * translation continues target_prefixes[i] (NULL or "": none; NULL array:
 * none at all), checked and limited as there; nmt_translate_prepared
 * decodes them as nmt_translate_batch_prefix would. With
 * nmt_prepared_set_line_keys, a prefixed line samples alike in any call. */
nmt_status nmt_translator_prepare_prefix(const nmt_translator *translator,
                                         const char *const *lines,
                                         const char *const *target_prefixes, int n_lines,
                                         nmt_prepared **prepared, nmt_error *err);
/* Sampling: line i of the prepared call draws from the random streams keyed
 * by the seed and keys[i] (copied; one per line) instead of its index i, so
 * a line keeps its samples in any call (translate keys a line by its number
 * in the input). Before nmt_translate_prepared. */
nmt_status nmt_prepared_set_line_keys(nmt_prepared *prepared, const uint64_t *keys,
                                      nmt_error *err);

void nmt_result_clear(nmt_result *result);

/* Counters summed over every nmt_translate_batch call of a translator made
 * with collect_stats (zeros otherwise). Rows are hypotheses; a row-step is
 * one live hypothesis scored at one step. */
typedef struct nmt_stats {
    int64_t sentences;       /* lines translated */
    int64_t steps;           /* decoder steps, summed over batches */
    double decode_seconds;   /* wall time inside nmt_translate_batch */
    double output_layer_ms;  /* CUDA: GPU time of the output layer (logits, softmax,
                                top-K, and the LSH work), events; -1 on the CPU */
    int64_t row_steps;       /* live row-steps (shrinking on; CUDA) */
    int64_t recall_hits;     /* row-steps whose full-softmax top-B words are all candidates */
    int64_t candidate_words; /* candidate words scored, summed over row-steps */
    int64_t graph_runs;      /* CUDA: decoder steps and encoder passes run as CUDA graphs
                                (captured or replayed; cuda_graphs) */
    int64_t eager_runs;      /* CUDA: the same, launched kernel by kernel */
    int64_t batch_size;      /* the batch size the translator runs with: options.batch_size,
                                or less where max_memory lowered it (always filled) */
    int64_t split_batches;   /* batches decoded again as two halves after the device ran
                                out of memory */
    int64_t device_memory_bytes; /* CUDA: the most device memory the backend held at once
                                    (weights, workspaces, search buffers; as max_memory
                                    counts them); 0 on the CPU */
    int64_t device_memory_used;  /* CUDA: the device's bytes in use, every process's
                                    (cudaMemGetInfo), when that peak was reached */
    int64_t sparse_matrices;     /* matrices multiplied in CSR form (options.sparse): on the
                                    CPU each one the file stores sparse; on CUDA those run
                                    as SpMM at some row count */
    int64_t precision;           /* the nmt_precision the GEMMs run in (NMT_PRECISION_AUTO
                                    resolved; on the CPU NMT_PRECISION_FP32, or INT8 when
                                    asked; always filled) */
    /* Where the translator's creation went (CUDA; 0 on the CPU): the
     * context (stream, cuBLAS handles and workspace; the first on a device
     * also starts the CUDA runtime), the networks (weights uploaded and
     * converted, workspaces), and the warm-up (0 when skipped). */
    double startup_context_seconds;
    double startup_upload_seconds;
    double startup_warmup_seconds;
} nmt_stats;

nmt_status nmt_translator_stats(const nmt_translator *translator, nmt_stats *stats,
                                nmt_error *err);

/* ---- the host pipeline: a stream of lines, in input order -----------------
 *
 * A file (or lines the caller pushes) through translators (engine/pipeline.c,
 * docs/scale-out.md). One reader cuts the input into windows of lines; a pool
 * of host threads checks and tokenizes each window in parts (what
 * nmt_translator_prepare does; its lines sorted by length); each translator,
 * on a thread of its own, takes the oldest window ready and decodes it
 * (nmt_translate_prepared); the pool turns its results into output bytes
 * (the format) in parts; and nmt_pipeline_next gives the windows back in
 * input order. Memory is bounded by the windows in flight, whatever the
 * input's length. A translator whose window fails (a device error) takes no
 * more windows: that window is translated again by the others, and a window
 * fails only once every translator has (nmt_pipeline_translator_failed
 * names each). */
typedef struct nmt_pipeline nmt_pipeline;

/* What each input line's target line is (nmt_pipeline_options.targets). */
typedef enum nmt_targets {
    NMT_TARGETS_NONE = 0,   /* no target lines: nmt_translate_batch */
    NMT_TARGETS_PREFIX = 1, /* the prefix its translation continues (an empty one: none), as
                               nmt_translate_batch_prefix */
    NMT_TARGETS_SCORE = 2   /* the translation to score, as nmt_score_batch */
} nmt_targets;

/* The output bytes nmt_pipeline_window.text holds. */
typedef enum nmt_pipeline_output {
    NMT_PIPELINE_OUTPUT_NONE = 0,  /* none: the results only */
    NMT_PIPELINE_OUTPUT_TEXT = 1,  /* a line each: the best hypothesis's text (a refused
                                      line: an empty line) */
    NMT_PIPELINE_OUTPUT_SCORES = 2 /* a line each: its score ("%.9g", -inf for a refused
                                      line), a tab, the text */
} nmt_pipeline_output;

/* A caller's output: writes results[0 .. n) (the input's lines first_line
 * .. first_line + n - 1, 0-based) to out; 0, or -1 when a write failed.
 * Called on the pool's threads, for parts of windows in any order. */
typedef int (*nmt_pipeline_format)(void *self, int64_t first_line, const nmt_result *results,
                                   int n, FILE *out);

typedef struct nmt_pipeline_options {
    int window_lines; /* lines sorted by length and batched together, 1..1048576; 0
                         (default): 8 x batch_size, at most 65536 */
    int host_threads; /* threads that tokenize and format, 0 (default): the machine's cores;
                         -1: none: nmt_pipeline_next reads, prepares, translates (the
                         first translator) and formats each window on the calling thread
                         (interactive use: no hand-off between threads on an answer's
                         path) */
    int translators;  /* translators that will be added (default 1): the last window of a
                         file, when its end cuts it short, is split among them so that a
                         short input keeps every one busy */
    int dry_run;      /* 1: no translator: each line's one hypothesis is its own tokens
                         through the detokenizer (score 0), so the pipeline measures the
                         host alone; 0 (default) */
    nmt_pipeline_output output;  /* default NMT_PIPELINE_OUTPUT_TEXT */
    nmt_pipeline_format format;  /* not NULL: the output instead of `output` */
    void *format_self;
    nmt_targets targets;         /* default NMT_TARGETS_NONE; else a target line beside each
                                    input line, from a second file (nmt_pipeline_read_fd); not
                                    in a dry run, nor with pushed lines */
    const char *target_name;     /* a refused target line's name in its line's error (a
                                    program's option, say); NULL (default): "target line" */
} nmt_pipeline_options;

void nmt_pipeline_options_init(nmt_pipeline_options *options);

/* A pipeline for translators of `model` with `options` (their input options
 * and batch size: max_line_bytes, max_src_tokens, input_tokens, batch_size,
 * max_batch_tokens; and, for a dry run, output_tokens). Starts the pool;
 * windows are read and prepared as soon as an input is given, before any
 * translator is added (a device's start-up overlaps the reading). */
nmt_status nmt_pipeline_create(const nmt_model *model, const nmt_options *options,
                               const nmt_pipeline_options *pipeline_options,
                               nmt_pipeline **pipeline, nmt_error *err);
/* Stops reading (a wait on the input is interrupted), lets each translator
 * finish its window, and frees everything in flight. The translators stay
 * the caller's. NULL: nothing. */
void nmt_pipeline_free(nmt_pipeline *pipeline);

/* Adds a translator (not owned; at most 64; of the pipeline's model and
 * input options, NMT_STATUS_ERROR_ARGUMENT otherwise): a thread of its own
 * takes windows from now on. Not in a dry run. */
nmt_status nmt_pipeline_add_translator(nmt_pipeline *pipeline, nmt_translator *translator,
                                       nmt_error *err);

/* The input, one of the two ways. read_fd: a thread reads fd (not closed
 * here) in large reads, skips skip_lines lines (line numbers stay the whole
 * input's), then reads at most limit_lines (-1: all). A line's "\n" or
 * "\r\n" is not part of it; a last line without one counts. A line longer
 * than max_line_bytes, or with a NUL byte, gets a per-line
 * NMT_STATUS_ERROR_INPUT (only max_line_bytes + 1 of its bytes are kept).
 * target_fd: with options.targets, the target lines' file (not closed
 * here), read a line for each input line (skipped alike); a target line
 * too long, with a NUL byte, or missing (the file ended first) is its
 * line's NMT_STATUS_ERROR_INPUT; else -1. */
nmt_status nmt_pipeline_read_fd(nmt_pipeline *pipeline, int fd, int target_fd,
                                int64_t skip_lines, int64_t limit_lines, nmt_error *err);
/* push: copies lines (C strings) into windows. Returns how many it took: all
 * of them with wait != 0 (it waits for room), else those the windows in
 * flight had room for (take a window with nmt_pipeline_next to make room);
 * -1 with err when the pipeline reads a file, has targets, or has ended. end: no more
 * lines (a partial window is handed on). */
int nmt_pipeline_push(nmt_pipeline *pipeline, const char *const *lines, int n_lines, int wait,
                      nmt_error *err);
void nmt_pipeline_end(nmt_pipeline *pipeline);

/* One window's lines, translated, in input order. */
typedef struct nmt_pipeline_window {
    int64_t first_line;   /* 0-based number of its first line in the input (skipped lines
                             count) */
    int n_lines;
    nmt_result *results;  /* [n_lines], the pipeline's until nmt_pipeline_release */
    const char *text;     /* the output bytes (options.output or format); NULL for none */
    size_t text_bytes;
    int translator;       /* the translator (in the order added) that translated it, or
                             that failed last; -1 in a dry run or when the host failed */
    nmt_status status;    /* OK; else no translator could translate it (every one failed;
                             each result then holds the error) or the host ran out of
                             memory, and `error` says why */
    nmt_error error;
} nmt_pipeline_window;

/* The next window in input order: NMT_STATUS_OK with *window (give it back
 * with nmt_pipeline_release), or with *window NULL once every line read is
 * given; NMT_STATUS_BUSY with wait 0 when it is not translated yet, and with
 * pushed lines when none is in flight (push more, or end);
 * NMT_STATUS_ERROR_IO or _MEMORY (with err: "after line N: ...") when
 * reading the input failed, once every window before is given. From one
 * thread. */
nmt_status nmt_pipeline_next(nmt_pipeline *pipeline, int wait, nmt_pipeline_window **window,
                             nmt_error *err);
void nmt_pipeline_release(nmt_pipeline *pipeline, nmt_pipeline_window *window);

typedef struct nmt_pipeline_stats {
    int64_t lines_read;     /* input lines read, the skipped ones included */
    int64_t windows;        /* windows handed to the translators (or echoed) */
    double decode_seconds;  /* wall time while at least one translator decoded */
    int64_t translators;    /* translators added */
    int64_t translators_failed;
    int64_t host_threads;   /* the pool's threads */
    int64_t input_ended;    /* 1 once the whole input is read (its windows may be in flight) */
} nmt_pipeline_stats;

void nmt_pipeline_stats_get(nmt_pipeline *pipeline, nmt_pipeline_stats *stats);
/* 1 when translator i (in the order added) failed, with its error in err;
 * 0 while it works. */
int nmt_pipeline_translator_failed(nmt_pipeline *pipeline, int i, nmt_error *err);

/* ---- the service: many callers, one sentence each ------------------------
 *
 * A thread-safe, asynchronous front over translators (engine/service.c):
 * any thread submits a line and gets a request handle back at once; worker
 * threads (workers_per_device on each device, or cpu_workers on the CPU) take queued requests
 * in arrival order, batch the ones with the same search options, translate
 * them and complete the handles (and call the callback, if any). A
 * sentence's translation does not depend on what it was batched with: the
 * service answers what nmt_translate_batch answers for the same options. */
typedef struct nmt_service nmt_service;
typedef struct nmt_request nmt_request;

typedef struct nmt_service_options {
    nmt_options translator;  /* each worker's translator; beam_size is the largest beam a
                                request may ask for, batch_size the most sentences a batch
                                holds (default 256 here); device AUTO/CPU/CUDA as for a
                                translator */
    int n_devices;           /* CUDA: workers on these device ordinals (0: one worker on
                                translator.device_index; -1: one on every visible device) */
    const int *devices;
    int cpu_workers;         /* CPU: worker threads, each with its own translator, default 1 */
    int queue_capacity;      /* requests waiting at most; more are refused with
                                NMT_STATUS_BUSY, default 4096 */
    int max_delay_us;        /* a worker with fewer than batch_size waiting requests waits
                                this long after the oldest one arrived for more, default 100
                                (docs/perf/service.md, "Batching delay") */
    int max_batch_tokens;    /* a batch holds at most this many source tokens in all (a longer
                                sentence goes alone; tokens as the translator counts them, a
                                SentencePiece model's pieces); 0 (default): only batch_size
                                limits */
    int continuous;          /* CUDA: 1: continuous batching: each device keeps one beam
                                search running; requests join it at its next join point
                                while it has free rows and leave as soon as they are done;
                                max_delay_us and max_batch_tokens then do not apply.
                                0 (default, docs/perf/service.md "Continuous batching"):
                                batches (wait max_delay_us, translate, repeat). The CPU
                                always batches. */
    int join_every;          /* continuous batching: steps between the points where finished
                                requests leave and queued ones join (1..1000), default 4
                                (docs/perf/service.md, "Continuous batching") */
    int workers_per_device;  /* CUDA: workers (each a translator) on each device (1..16),
                                default 2: one decodes while another gathers its batch and
                                answers the last (docs/perf/service.md, "Workers") */
} nmt_service_options;

void nmt_service_options_init(nmt_service_options *options);

/* Per-request search options; every field at its init value means "the
 * service's" (nmt_request_options_init). */
typedef struct nmt_request_options {
    int beam_size;       /* 1..the service's beam_size; 0: the service's */
    int n_best;          /* 1..beam_size; 0: the service's */
    float alpha;         /* < 0: the service's */
    float max_len_a;     /* < 0: the service's */
    int max_len_b;       /* < 0: the service's */
    int shrink;          /* -1: the service's; 0: full softmax; 1: the service's shrinking
                            (refused when the service has none) */
    double deadline_ms;  /* > 0: complete with NMT_STATUS_DEADLINE unless translated within
                            this many milliseconds of submit; 0: none */
    const char *target_prefix; /* NULL: none; else the translation continues this prefix
                                  (nmt_translate_batch_prefix; copied at submit) */
    int return_alternatives;   /* -1: the service's; 0 or 1 (nmt_options) */
    const char *target;        /* NULL: translate; else score this translation of the line
                                  instead (nmt_score_batch; copied at submit): the result's
                                  one hypothesis carries its scores */
    /* Sampling and the logit rules (nmt_options' fields of the same names): */
    int sampling_topk;          /* -1: the service's */
    float sampling_topp;        /* < 0: the service's */
    float sampling_temperature; /* < 0: the service's */
    int64_t seed;               /* < 0: the service's */
    uint64_t line_key;          /* the request's random streams' key besides the seed,
                                   default 0 */
    int min_length;             /* < 0: the service's */
    int no_repeat_ngram_size;   /* < 0: the service's */
    float repetition_penalty;   /* < 0: the service's */
    int ban_unk;                /* < 0: the service's */
    const char *suppress;       /* NULL: the service's; "" none (read at submit) */
    int coverage_penalty;       /* < 0: the service's; else an nmt_coverage_penalty */
    float coverage_beta;        /* < 0: the service's */
} nmt_request_options;

void nmt_request_options_init(nmt_request_options *options);

/* Called once per request from the thread that completes it (a worker, or
 * the caller of nmt_request_cancel / nmt_service_shutdown), with the
 * request's result (valid during the call, and until nmt_request_free for a
 * kept handle). It must not block for long: it holds up the worker. */
typedef void (*nmt_request_callback)(nmt_request *request, const nmt_result *result,
                                     void *user);

/* Creates the workers and their translators (and warms them up). */
nmt_status nmt_service_create(const nmt_model *model, const nmt_service_options *options,
                              nmt_service **service, nmt_error *err);
/* The same over an ensemble (nmt_translator_create_ensemble's models and
 * weights): every worker's translators decode with all the models. */
nmt_status nmt_service_create_ensemble(const nmt_model *const *models, const float *weights,
                                       int n_models, const nmt_service_options *options,
                                       nmt_service **service, nmt_error *err);

/* Queues one line (copied). *request (when request is not NULL) is the
 * handle, to be released with nmt_request_free; with request NULL the
 * service releases it after the callback. Returns at once:
 * NMT_STATUS_BUSY when the queue is full, NMT_STATUS_CLOSED after shutdown,
 * NMT_STATUS_ERROR_ARGUMENT for bad options (nothing queued in each case).
 * options may be NULL (the service's). */
nmt_status nmt_service_submit(nmt_service *service, const char *line,
                              const nmt_request_options *options,
                              nmt_request_callback callback, void *user,
                              nmt_request **request, nmt_error *err);

/* Waits until the request is complete or timeout_ms passed (< 0: no limit);
 * returns 1 when complete, 0 on timeout. */
int nmt_request_wait(nmt_request *request, double timeout_ms);
/* 1 when complete (never blocks). */
int nmt_request_done(const nmt_request *request);
/* The outcome once complete (NULL before): status OK with hypotheses, a
 * per-line error as nmt_translate_batch gives, or NMT_STATUS_CANCELLED /
 * NMT_STATUS_DEADLINE / a service error. */
const nmt_result *nmt_request_result(const nmt_request *request);
/* Cancels a request not yet complete: a queued one completes at once with
 * NMT_STATUS_CANCELLED; one being translated completes so when its batch
 * ends. No effect on a complete request. */
void nmt_request_cancel(nmt_request *request);
/* Releases the handle (cancelling the request if not complete). */
void nmt_request_free(nmt_request *request);

typedef struct nmt_service_stats {
    int64_t queued, running;           /* now */
    int64_t submitted, completed;      /* completed counts every outcome below */
    int64_t failed;                    /* completed with a line or service error */
    int64_t cancelled, expired;        /* NMT_STATUS_CANCELLED, NMT_STATUS_DEADLINE */
    int64_t rejected;                  /* submits refused with NMT_STATUS_BUSY */
    int64_t batches, batch_sentences;  /* batches translated and their sentences */
    int64_t device_memory_used;        /* CUDA: bytes in use on the workers' devices (every
                                          process's, cudaMemGetInfo); 0 on the CPU */
    int64_t device_memory_total;       /* CUDA: those devices' memory; 0 on the CPU */
} nmt_service_stats;

void nmt_service_stats_get(nmt_service *service, nmt_service_stats *stats);

/* Stops taking requests (later submits: NMT_STATUS_CLOSED), then with drain
 * translates everything queued, without it cancels what is queued
 * (NMT_STATUS_CANCELLED); batches already running finish either way. Returns
 * when the workers have stopped; *finished and *cancelled (may be NULL) count
 * the queued requests translated and cancelled by the shutdown (a repeated
 * call gives the first one's counts). Any thread may call it, several at
 * once; from a request's callback it only stops intake and returns at once
 * (the workers stop after their batches). */
void nmt_service_shutdown(nmt_service *service, int drain, int64_t *finished,
                          int64_t *cancelled);
/* Shuts down without draining if still running, then frees the service.
 * Request handles stay valid until their nmt_request_free (every request is
 * complete by then). Not from a request's callback, and not while another
 * thread still calls the service or cancels one of its requests. */
void nmt_service_free(nmt_service *service);

#ifdef __cplusplus
}
#endif

#endif /* NMT_H */
